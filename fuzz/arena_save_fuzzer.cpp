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
#include "fuzz_input.hpp"

#include <ebt/debug/file_error.hpp>
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
    std::vector<std::byte> bytes = ebt::fuzz::input_bytes(data, size);
    try_load(bytes);
    if (ebt::fuzz::reseal_checksum(bytes, 0)) try_load(bytes);  // the checksum covers every byte before it
    return 0;
}
