// The two small hash functions ebt uses wherever it needs reproducible numbers: FNV-1a over bytes
// (World::state_hash, the arena's state hash) and splitmix64 (the random selectors' draws, the
// arena's random numbers). One definition, so that the engine and the scenarios hash alike.
//
// An implementation detail, not part of the API: ebt.hpp does not include it, and it may change
// between versions. It lives under include/ebt/ (not engine/) only because scenarios/ and the
// samples, which see ebt's public include directory and not its private one, use it too.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ebt::detail {

/// FNV-1a, 64 bits, over the bytes it is fed in order. A value type: make one per hash, feed it,
/// read value(). Hashing an object feeds its object representation, so feed only types without
/// padding bytes (integers, floating point, enums, bool) for a hash that is the same on every run.
class Fnv1a {
public:
    void bytes(const void* data, std::size_t n) {
        const auto* p = static_cast<const unsigned char*>(data);
        for (std::size_t i = 0; i < n; ++i) {
            value_ ^= p[i];
            value_ *= kPrime;
        }
    }
    template <class T>
    void operator()(const T& v) { bytes(&v, sizeof v); }
    std::uint64_t value() const { return value_; }

private:
    static constexpr std::uint64_t kOffsetBasis = 1469598103934665603ull;
    static constexpr std::uint64_t kPrime = 1099511628211ull;
    std::uint64_t value_ = kOffsetBasis;
};

/// splitmix64 as a function of its counter: the output for counter `x` (Steele, Lea and Flood).
constexpr std::uint64_t splitmix64(std::uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/// splitmix64 as a generator: the next number from `state`, which it advances.
constexpr std::uint64_t splitmix64_next(std::uint64_t& state) {
    const std::uint64_t out = splitmix64(state);
    state += 0x9E3779B97F4A7C15ull;
    return out;
}

}  // namespace ebt::detail
