// libFuzzer target over the arena's save-file reader (scenarios/arena_scenario.hpp, ArenaSave;
// ebt_arena --load): any input must either be refused with ebt::debug::FileFormatError (or
// SnapshotError, for a World snapshot of another tree), or give an ArenaSave from which an Arena is
// restored that saves again to bytes that restore to an Arena saving the same bytes. Each input is
// tried twice: as it is, and with its checksum (the last 8 bytes) recomputed, so that mutations get
// past the checksum into the sections. A save naming a tree file is read but not restored (that
// would load whatever file the input names). Restored arenas are not stepped: a file forged with a
// valid checksum may hold a state that passes the reader's checks but that a run never makes
// (docs/snapshots.md, "Errors"). Anything else (another exception, a crash, a sanitizer report, a
// hang) is a bug. Built by fuzz/CMakeLists.txt (linked with ebt_scenarios); run with fuzz/run.sh.
// Seeds: fuzz/corpus_arena_save/ (saves of small arenas in both modes, with LOD, with an alarm up).
#include "arena_scenario.hpp"

#include <ebt/debug/file_error.hpp>
#include <ebt/detail/hash.hpp>
#include <ebt/snapshot.hpp>

#include <cstdio>
#include <cstdlib>
#include <span>
#include <vector>

namespace {

using ebt::scenarios::Arena;
using ebt::scenarios::ArenaConfig;
using ebt::scenarios::ArenaSave;

void try_load(const std::vector<std::byte>& bytes) {
    try {
        const ArenaSave save = ArenaSave::read(bytes, "fuzz.ebtarena");
        if (!save.config().tree_file.empty()) return;
        const Arena arena(save, ArenaConfig{});
        const std::vector<std::byte> saved = arena.save();
        const Arena again(ArenaSave::read(saved, "saved.ebtarena"), ArenaConfig{});
        if (again.save() != saved || again.hash() != arena.hash()) {
            std::fprintf(stderr, "a restored arena saved again does not restore to the same bytes and hash\n");
            std::abort();
        }
    } catch (const ebt::debug::FileFormatError&) {
    } catch (const ebt::SnapshotError&) {
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::vector<std::byte> bytes(size);
    for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<std::byte>(data[i]);
    try_load(bytes);
    if (bytes.size() > 8) {  // again with the checksum made to match
        ebt::detail::Fnv1a h;
        for (std::size_t i = 0; i + 8 < bytes.size(); ++i) h(static_cast<std::uint8_t>(bytes[i]));
        const std::uint64_t sum = h.value();
        for (int i = 0; i < 8; ++i) bytes[bytes.size() - 8 + static_cast<std::size_t>(i)] = static_cast<std::byte>(sum >> (8 * i));
        try_load(bytes);
    }
    return 0;
}
