// Little-endian binary writing and bounds-checked reading for ebt's debug files (trace logs,
// recordings). Private to the engine's tools.
//
// Every file starts with the same header: an 8-byte magic naming the kind of file ("EBTLOG\0\0"), a
// u32 format version, then the kind's own content. Integers are little-endian; counts and ids that
// are usually small are LEB128 varints; strings are a varint length then the bytes.
//
// ByteReader never reads past its end: each read checks, and a short or malformed input throws
// debug::FileFormatError naming the file and the offset. Fuzzers feed it arbitrary bytes.
#pragma once

#include <ebt/debug/file_error.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace ebt::debug::io {

/// Appends encoded values to a byte buffer (the caller writes the buffer out).
class ByteWriter {
public:
    void u8(std::uint8_t v) { bytes_.push_back(static_cast<std::byte>(v)); }
    void u32(std::uint32_t v) { fixed(v, 4); }
    void u64(std::uint64_t v) { fixed(v, 8); }
    void f64(double v) {
        std::uint64_t bits;
        std::memcpy(&bits, &v, sizeof bits);
        u64(bits);
    }
    /// LEB128: 7 bits per byte, low bits first, high bit set on every byte but the last.
    void varint(std::uint64_t v) {
        while (v >= 0x80) {
            u8(static_cast<std::uint8_t>(v | 0x80));
            v >>= 7;
        }
        u8(static_cast<std::uint8_t>(v));
    }
    void raw(const void* data, std::size_t size) {
        // resize + memcpy rather than insert: GCC 12 at -O2 reports false -Warray-bounds and
        // -Wstringop-overflow on vector<std::byte>::insert of a range inlined here.
        if (size == 0) return;
        const std::size_t at = bytes_.size();
        bytes_.resize(at + size);
        std::memcpy(bytes_.data() + at, data, size);
    }
    void string(std::string_view s) {
        varint(s.size());
        raw(s.data(), s.size());
    }
    /// The file header: `magic` (exactly 8 bytes) and the format version.
    void header(std::string_view magic, std::uint32_t version) {
        raw(magic.data(), magic.size());
        u32(version);
    }

    const std::vector<std::byte>& bytes() const noexcept { return bytes_; }
    std::size_t size() const noexcept { return bytes_.size(); }
    void clear() noexcept { bytes_.clear(); }

private:
    void fixed(std::uint64_t v, int n) {
        for (int i = 0; i < n; ++i) u8(static_cast<std::uint8_t>(v >> (8 * i)));
    }
    std::vector<std::byte> bytes_;
};

/// Reads encoded values from a byte range it does not own; `file` names it in errors.
class ByteReader {
public:
    ByteReader(const std::byte* data, std::size_t size, std::string file, std::uint64_t base_offset = 0)
        : data_(data), size_(size), file_(std::move(file)), base_(base_offset) {}

    bool at_end() const noexcept { return pos_ == size_; }
    std::size_t remaining() const noexcept { return size_ - pos_; }
    /// The offset of the next byte in the file (for messages and indexes).
    std::uint64_t offset() const noexcept { return base_ + pos_; }

    std::uint8_t u8() {
        need(1, "a byte");
        return static_cast<std::uint8_t>(data_[pos_++]);
    }
    std::uint32_t u32() { return static_cast<std::uint32_t>(fixed(4, "a 32-bit integer")); }
    std::uint64_t u64() { return fixed(8, "a 64-bit integer"); }
    double f64() {
        const std::uint64_t bits = u64();
        double v;
        std::memcpy(&v, &bits, sizeof v);
        return v;
    }
    std::uint64_t varint() {
        std::uint64_t v = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            need(1, "a varint");
            const auto b = static_cast<std::uint8_t>(data_[pos_++]);
            if (shift == 63 && b > 1) fail("corrupt: a varint overflows 64 bits");
            v |= static_cast<std::uint64_t>(b & 0x7F) << shift;
            if (!(b & 0x80)) return v;
        }
        fail("corrupt: a varint longer than 10 bytes");
    }
    /// A varint that must be at most `max` (a count, an index): `what` names it in the error.
    std::uint64_t varint_at_most(std::uint64_t max, const char* what) {
        const std::uint64_t v = varint();
        if (v > max) fail("corrupt: " + std::string(what) + " " + std::to_string(v) + " (at most " + std::to_string(max) + ")");
        return v;
    }
    /// A count of items of at least one byte each that follow (`what` names them): more than the bytes
    /// left means the file ends before them (truncated, as ran_out() then says).
    std::uint64_t count(const char* what) {
        const std::uint64_t n = varint();
        if (n > remaining()) {
            ran_out_ = true;
            fail("truncated: the file ends before the " + std::to_string(n) + " " + what + " it announces");
        }
        return n;
    }
    std::string string(std::size_t max_size = 1 << 20) {
        const std::size_t n = static_cast<std::size_t>(varint_at_most(max_size, "string length"));
        need(n, "a string");
        std::string s(reinterpret_cast<const char*>(data_ + pos_), n);
        pos_ += n;
        return s;
    }
    void raw(void* out, std::size_t size) {
        need(size, "raw bytes");
        if (size == 0) return;  // `out` may be null then (an empty vector's data()): memcpy must not see it
        std::memcpy(out, data_ + pos_, size);
        pos_ += size;
    }
    /// Checks the header: the magic must match (else "not a <kind> file") and the version must be
    /// one this build reads (else "format version V; this build reads versions A to B").
    std::uint32_t header(std::string_view magic, const char* kind, std::uint32_t min_version, std::uint32_t max_version) {
        if (remaining() < magic.size() || std::memcmp(data_ + pos_, magic.data(), magic.size()) != 0)
            fail(std::string("not ") + kind + " (its first bytes are not the " + kind + " magic)");
        pos_ += magic.size();
        const std::uint32_t version = u32();
        if (version < min_version || version > max_version)
            fail(std::string(kind) + " format version " + std::to_string(version) + "; this build of ebt reads versions " +
                 std::to_string(min_version) + " to " + std::to_string(max_version));
        return version;
    }

    [[noreturn]] void fail(const std::string& problem) const { throw FileFormatError(file_, offset(), problem); }
    /// Whether a read failed because the bytes ended inside the value (a file cut short), rather
    /// than on a value that is wrong.
    bool ran_out() const noexcept { return ran_out_; }

private:
    void need(std::size_t n, const char* what) {
        if (n > size_ - pos_) {
            ran_out_ = true;
            fail(std::string("truncated: the file ends inside ") + what);
        }
    }
    std::uint64_t fixed(int n, const char* what) {
        need(static_cast<std::size_t>(n), what);
        std::uint64_t v = 0;
        for (int i = 0; i < n; ++i) v |= static_cast<std::uint64_t>(static_cast<std::uint8_t>(data_[pos_ + i])) << (8 * i);
        pos_ += static_cast<std::size_t>(n);
        return v;
    }

    const std::byte* data_;
    std::size_t size_;
    std::size_t pos_ = 0;
    std::string file_;
    std::uint64_t base_;
    bool ran_out_ = false;
};

}  // namespace ebt::debug::io
