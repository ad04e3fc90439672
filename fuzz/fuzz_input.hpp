// What the file-reader fuzzers do with libFuzzer's input before handing it to a reader: copy it into
// the byte vector the readers take, and, for formats that end in an FNV-1a checksum, make that
// checksum match again so that a mutation reaches the content instead of being refused at the last
// 8 bytes. Used by snapshot_fuzzer.cpp and arena_save_fuzzer.cpp.
#pragma once

#include <ebt/detail/hash.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ebt::fuzz {

inline std::vector<std::byte> input_bytes(const std::uint8_t* data, std::size_t size) {
    std::vector<std::byte> bytes(size);
    for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<std::byte>(data[i]);
    return bytes;
}

/// Rewrites the last 8 bytes of `bytes` as the little-endian FNV-1a of the bytes from `hashed_from`
/// up to them (the formats differ in where their checksum starts: a snapshot's after its 12-byte
/// header, an arena save's at byte 0). Returns false, changing nothing, when `bytes` is too short to
/// hold `hashed_from` bytes and the checksum.
inline bool reseal_checksum(std::vector<std::byte>& bytes, std::size_t hashed_from) {
    constexpr std::size_t kChecksum = 8;
    if (bytes.size() < hashed_from + kChecksum) return false;
    detail::Fnv1a h;
    h.bytes(bytes.data() + hashed_from, bytes.size() - hashed_from - kChecksum);
    std::uint64_t sum = h.value();
    for (std::size_t i = bytes.size() - kChecksum; i < bytes.size(); ++i, sum >>= 8) bytes[i] = static_cast<std::byte>(sum & 0xFF);
    return true;
}

}  // namespace ebt::fuzz
