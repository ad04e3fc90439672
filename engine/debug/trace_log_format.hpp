// The trace log's byte format, shared by its writer (trace_log_writer.cpp) and reader
// (trace_log_reader.cpp). Private to the engine; docs/debugging.md ("Trace logs") describes it for
// people.
//
//   file    = header block*            header: "EBTLOG\0\0", u32 version (binary_io.hpp)
//   block   = u8 kind, u32 length, length bytes
//             kind 'R': records; kind 'E': the end of the log (a varint: the number of records), last
//   records are read in order, with two pieces of state carried from record to record and block to
//   block: the current agent and the current tick.
//     kTree    varint id (the next unused one), string name, varint node count, per node: string path,
//              u8 NodeKind; varint key count, per key: string name, string type name
//     kAgent   varint slot index, varint generation, varint tree id: the records after it are this agent's
//     kTick    varint zigzag(delta): the current tick moves by delta
//     kEvent+k (k = TraceKind) varint node; Update/Terminate: u8 Status; Guard/ConditionEvaluated:
//              u8 result; Error: string message
//     kChange  varint key id, string value as text
#pragma once

#include <cstdint>
#include <string_view>

namespace ebt::debug::tracelog {

using namespace std::string_view_literals;

inline constexpr std::string_view kMagic = "EBTLOG\0\0"sv;
inline constexpr std::uint32_t kVersion = 1;
inline constexpr const char* kKindName = "trace log";

inline constexpr std::uint8_t kRecordsBlock = 'R';
inline constexpr std::uint8_t kEndBlock = 'E';
inline constexpr std::size_t kBlockHeaderBytes = 5;  // kind + u32 length

inline constexpr std::uint8_t kTree = 0x01;
inline constexpr std::uint8_t kAgent = 0x02;
inline constexpr std::uint8_t kTick = 0x03;
inline constexpr std::uint8_t kEvent = 0x10;  // + TraceKind (0..5)
inline constexpr std::uint8_t kEventLast = kEvent + 5;
inline constexpr std::uint8_t kChange = 0x20;

/// Signed deltas as unsigned varints: 0, -1, 1, -2, 2 ... become 0, 1, 2, 3, 4 ...
inline std::uint64_t zigzag(std::int64_t v) noexcept {
    return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
}
inline std::int64_t unzigzag(std::uint64_t v) noexcept {
    return static_cast<std::int64_t>(v >> 1) ^ -static_cast<std::int64_t>(v & 1);
}

}  // namespace ebt::debug::tracelog
