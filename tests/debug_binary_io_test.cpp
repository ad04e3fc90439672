// engine/debug/binary_io.hpp: the byte format shared by the debug files, and its errors on bad input.
#include "debug/binary_io.hpp"

#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <string_view>

using namespace ebt::debug;
using namespace std::string_view_literals;

namespace {
constexpr std::string_view kMagic = "EBTTEST\0"sv;

io::ByteReader reader_of(const io::ByteWriter& w, std::size_t size) { return io::ByteReader(w.bytes().data(), size, "t.bin"); }
std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const FileFormatError& e) {
        return e.what();
    }
    return "no error";
}
}  // namespace

TEST_CASE("binary_io: values written are read back in order, varints at their limits included") {
    io::ByteWriter w;
    w.header(kMagic, 3);
    w.u8(0xAB);
    w.u32(0xDEADBEEF);
    w.u64(0x0123456789ABCDEFull);
    w.f64(-2.5);
    for (std::uint64_t v : {0ull, 127ull, 128ull, 16383ull, 16384ull, ~0ull}) w.varint(v);
    w.string("bark_alarm");
    w.string("");
    CHECK(w.size() == 8 + 4 + 1 + 4 + 8 + 8 + (1 + 1 + 2 + 2 + 3 + 10) + 11 + 1);

    io::ByteReader r = reader_of(w, w.size());
    CHECK(r.header(kMagic, "test file", 1, 3) == 3);
    CHECK(r.u8() == 0xAB);
    CHECK(r.u32() == 0xDEADBEEF);
    CHECK(r.u64() == 0x0123456789ABCDEFull);
    CHECK(r.f64() == -2.5);
    for (std::uint64_t v : {0ull, 127ull, 128ull, 16383ull, 16384ull, ~0ull}) CHECK(r.varint() == v);
    CHECK(r.string() == "bark_alarm");
    CHECK(r.string().empty());
    CHECK(r.at_end());
}

TEST_CASE("binary_io: a wrong magic, an unread version, a truncation and corrupt varints are named with the offset") {
    io::ByteWriter w;
    w.header(kMagic, 7);
    w.u64(42);
    CHECK(error_of([&] { reader_of(w, w.size()).header("EBTLOG\0\0"sv, "trace log", 1, 1); }) ==
          "t.bin: byte 0: not trace log (its first bytes are not the trace log magic)");
    CHECK(error_of([&] { reader_of(w, w.size()).header(kMagic, "test file", 1, 2); }) ==
          "t.bin: byte 12: test file format version 7; this build of ebt reads versions 1 to 2");
    CHECK(error_of([&] {
              auto r = reader_of(w, w.size() - 1);
              r.header(kMagic, "test file", 1, 7);
              r.u64();
          }) == "t.bin: byte 12: truncated: the file ends inside a 64-bit integer");

    io::ByteWriter bad;
    for (int i = 0; i < 11; ++i) bad.u8(0xFF);
    CHECK(error_of([&] { reader_of(bad, bad.size()).varint(); }) == "t.bin: byte 10: corrupt: a varint overflows 64 bits");
    io::ByteWriter big;
    big.varint(5000);
    CHECK(error_of([&] { reader_of(big, big.size()).varint_at_most(100, "node index"); }) ==
          "t.bin: byte 2: corrupt: node index 5000 (at most 100)");
    io::ByteWriter long_string;
    long_string.varint(50);
    long_string.raw("abc", 3);
    CHECK(error_of([&] { reader_of(long_string, long_string.size()).string(); }) ==
          "t.bin: byte 1: truncated: the file ends inside a string");
}
