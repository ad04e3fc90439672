// libFuzzer target over the snapshot reader (<ebt/snapshot.hpp>): any input must either be refused
// with ebt::debug::FileFormatError (or SnapshotError, for a snapshot of another tree), or restore an
// agent that lists its suspended actions and saves again to a snapshot that restores to the same
// bytes; each input is also tried as a world snapshot (restore_world), with the same round trip. Each input is tried twice: as it is, and with its checksum (the last 8 bytes) recomputed,
// so that mutations get past the checksum into the records. Anything else (another exception, a
// crash, a sanitizer report, a hang) is a bug. Restored agents are not ticked: a snapshot forged with
// a valid checksum may hold a state that passes the reader's checks but that the engine never makes
// (docs/snapshots.md, "Errors"). Built by fuzz/CMakeLists.txt; run with fuzz/run.sh SECONDS.
// Seeds: fuzz/corpus_snapshot/ (snapshots of snapshot_fuzz_tree.hpp's runs: agents, and a world).
#include "fuzz_input.hpp"
#include "snapshot_fuzz_tree.hpp"

#include <ebt/debug/file_error.hpp>
#include <ebt/snapshot.hpp>
#include <ebt/world.hpp>

#include <cstdio>
#include <cstdlib>
#include <span>
#include <vector>

namespace {

void try_restore(const std::vector<std::byte>& bytes) {
    static const ebt::Tree tree = ebt::fuzz::snapshot_tree();
    try {
        ebt::Agent agent = ebt::restore_agent(tree, bytes, {.source = "fuzz.ebtsnap"});
        static_cast<void>(ebt::suspended_actions(agent));
        const std::vector<std::byte> saved = ebt::save_agent(agent);
        const std::vector<std::byte> again = ebt::save_agent(ebt::restore_agent(tree, saved));
        if (again != saved) {
            std::fprintf(stderr, "a restored snapshot saved again does not restore to the same bytes\n");
            std::abort();
        }
    } catch (const ebt::debug::FileFormatError&) {
    } catch (const ebt::SnapshotError&) {
    }
    // The same bytes as a world snapshot: refused, or restored into a World that saves again to bytes
    // that restore to the same bytes.
    try {
        ebt::World world;
        ebt::restore_world(world, std::span(&tree, 1), bytes, {.source = "fuzz.ebtsnap"});
        const std::vector<std::byte> saved = ebt::save_world(world);
        ebt::World again;
        ebt::restore_world(again, std::span(&tree, 1), saved);
        if (ebt::save_world(again) != saved) {
            std::fprintf(stderr, "a restored world snapshot saved again does not restore to the same bytes\n");
            std::abort();
        }
    } catch (const ebt::debug::FileFormatError&) {
    } catch (const ebt::SnapshotError&) {
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::vector<std::byte> bytes = ebt::fuzz::input_bytes(data, size);
    try_restore(bytes);
    constexpr std::size_t kHeader = 12;  // magic and version, before the checksummed bytes
    if (ebt::fuzz::reseal_checksum(bytes, kHeader)) try_restore(bytes);
    return 0;
}
