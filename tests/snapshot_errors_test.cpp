// Bad snapshots (<ebt/snapshot.hpp>): truncated, corrupted, foreign, of another version, or forged
// with a valid checksum; each refused with debug::FileFormatError naming the file, the byte offset and
// what is wrong, never a crash, and without calling any action. Also: the fuzzer's seeds restore.
#include <ebt/debug/file_error.hpp>
#include <ebt/detail/hash.hpp>
#include <ebt/snapshot.hpp>

#include "../fuzz/snapshot_fuzz_tree.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>

using namespace ebt;
using namespace std::chrono_literals;

namespace {

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const debug::FileFormatError& e) {
        return e.what();
    } catch (const std::exception& e) {
        return std::string("not a FileFormatError: ") + e.what();
    }
    return "no error";
}

/// A guard-like tree whose one action counts its terminations (none must come from a refused restore).
struct Fixture {
    int terminated = 0;
    Registry registry;
    Tree tree;
    Fixture() {
        ActionSpec patrol;
        patrol.update = [](ActionContext&) { return Status::Running; };
        patrol.on_terminate = [this](ActionContext&, Status) { ++terminated; };
        registry.add_action("Patrol", patrol);
        tree = TreeBuilder("guard", registry).key<std::string>("bark", "halt").sequence().action("Patrol").back().end();
    }
    std::vector<std::byte> saved() {
        Agent agent(tree);
        agent.tick(50ms);
        agent.tick(50ms);
        std::vector<std::byte> bytes = save_agent(agent);
        return bytes;  // (the agent's destruction terminates Patrol once: counted before the caller resets)
    }
    std::string restore(const std::vector<std::byte>& bytes) {
        return error_of([&] { (void)restore_agent(tree, bytes, {.source = "snap.bin"}); });
    }
};

/// Recomputes the checksum, as a forger would.
void reseal(std::vector<std::byte>& bytes) {
    detail::Fnv1a h;
    h.bytes(bytes.data() + 12, bytes.size() - 20);
    std::uint64_t sum = h.value();
    for (std::size_t i = 0; i < 8; ++i, sum >>= 8) bytes[bytes.size() - 8 + i] = static_cast<std::byte>(sum & 0xFF);
}

// The fixture's engine image (the layout of format version 3): the two nodes' statuses (bytes 0-1), their
// flags (2-5), the queue (6-11), the Sequence's cursor, Patrol's run id.
constexpr std::size_t kFlags = 2;
constexpr std::size_t kStatuses = 0;

// Where the engine image starts in the fixture's snapshot: header 12, kind 1, name "guard" 6, hash 8,
// node and key counts 1 + 1, mode and flags 2, seed, clock, next deadline and ticks 32, five statistics
// 5, queue head and size 2, the image's size 1.
constexpr std::size_t kImage = 12 + 1 + 6 + 8 + 2 + 2 + 32 + 5 + 2 + 1;

}  // namespace

TEST_CASE("snapshot errors: every truncation is refused with the offset and what is wrong") {
    Fixture f;
    const std::vector<std::byte> bytes = f.saved();
    f.terminated = 0;
    CHECK(f.restore({}) == "snap.bin: byte 0: not ebt snapshot (its first bytes are not the ebt snapshot magic)");
    CHECK(f.restore({bytes.begin(), bytes.begin() + 10}) == "snap.bin: byte 8: truncated: the file ends inside a 32-bit integer");
    CHECK(f.restore({bytes.begin(), bytes.begin() + 15}) ==
          "snap.bin: byte 12: truncated: the snapshot ends before its content and checksum");
    CHECK(f.restore({bytes.begin(), bytes.end() - 1}) ==
          "snap.bin: byte " + std::to_string(bytes.size() - 9) +
              ": corrupt: the checksum does not match the content (the file was cut short, damaged or changed after it was written)");
    for (std::size_t size = 0; size < bytes.size(); ++size) {
        CAPTURE(size);
        CHECK(f.restore({bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(size)}).rfind("snap.bin: byte ", 0) == 0);
    }
    CHECK(f.terminated == 0);
}

TEST_CASE("snapshot errors: every corrupted byte is refused; a foreign file or another version is named") {
    Fixture f;
    const std::vector<std::byte> bytes = f.saved();
    f.terminated = 0;
    for (std::size_t at = 0; at < bytes.size(); ++at)
        for (const std::uint8_t flip : {0x01, 0x80, 0xFF}) {
            CAPTURE(at);
            std::vector<std::byte> bad = bytes;
            bad[at] ^= static_cast<std::byte>(flip);
            CHECK(f.restore(bad).rfind("snap.bin: byte ", 0) == 0);
        }
    std::vector<std::byte> other_version = bytes;
    other_version[8] = std::byte{4};
    CHECK(f.restore(other_version) == "snap.bin: byte 12: ebt snapshot format version 4; this build of ebt reads versions 3 to 3");
    const std::string log = "EBTLOG\0\0 a trace log, not a snapshot";
    std::vector<std::byte> foreign(log.size());
    std::memcpy(foreign.data(), log.data(), log.size());
    CHECK(f.restore(foreign) == "snap.bin: byte 0: not ebt snapshot (its first bytes are not the ebt snapshot magic)");
    std::vector<std::byte> other_kind = bytes;
    other_kind[12] = std::byte{9};
    reseal(other_kind);
    CHECK(f.restore(other_kind) == "snap.bin: byte 12: a snapshot of kind 9, not 1 (one agent)");
    CHECK(f.terminated == 0);
}

TEST_CASE("snapshot errors: a snapshot of format version 1 or 2 (another layout of the state block) is refused, saying why") {
    // Files saved by ebt before version 2 and before version 3: the fuzzer's agent seed event_tick5 and its
    // world seed, as they were (tests/data/snapshots/).
    const auto read = [](const char* name) {
        std::ifstream in(std::filesystem::path(EBT_SOURCE_DIR) / "tests" / "data" / "snapshots" / name, std::ios::binary);
        const std::vector<char> chars{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
        std::vector<std::byte> bytes(chars.size());
        std::memcpy(bytes.data(), chars.data(), chars.size());
        return bytes;
    };
    const Tree tree = fuzz::snapshot_tree();
    struct OldFiles {
        const char* agent;
        const char* world;
        std::string why;
    };
    const OldFiles old_files[] = {
        {"v1_agent_event_tick5.ebtsnap", "v1_world_frame6.ebtsnap",
         "ebt snapshot format version 1; this build of ebt reads versions 3 to 3 (version 1 laid an agent's state block out "
         "differently: a version-1 snapshot cannot be restored by this build)"},
        {"v2_agent_event_tick5.ebtsnap", "v2_world_frame6.ebtsnap",
         "ebt snapshot format version 2; this build of ebt reads versions 3 to 3 (version 2 laid an agent's state block out "
         "differently: a version-2 snapshot cannot be restored by this build)"}};
    for (const OldFiles& old : old_files) {
        CAPTURE(old.agent);
        const std::vector<std::byte> agent = read(old.agent);
        REQUIRE(agent.size() > 12);
        CHECK(error_of([&] { (void)restore_agent(tree, agent, {.source = "old.ebtsnap"}); }) == "old.ebtsnap: byte 12: " + old.why);
        const std::vector<std::byte> world = read(old.world);
        REQUIRE(world.size() > 12);
        CHECK(error_of([&] {
                  World w;
                  restore_world(w, std::span(&tree, 1), world, {.source = "old_world.ebtsnap"});
              }) == "old_world.ebtsnap: byte 12: " + old.why);
    }
}

TEST_CASE("snapshot errors: a forged snapshot with a valid checksum is refused by the state checks, calling no action") {
    Fixture f;
    const std::vector<std::byte> bytes = f.saved();
    f.terminated = 0;
    REQUIRE(f.restore(bytes) == "no error");  // the fixture's offsets are right: the sealed original restores
    f.terminated = 0;

    std::vector<std::byte> status = bytes;
    status[kImage + kStatuses + 0] = std::byte{9};  // the root's status
    reseal(status);
    CHECK(f.restore(status) == "snap.bin: byte " + std::to_string(kImage) +
                                   ": corrupt: the agent's state is not one the engine makes: node 0 has status 9 (no such status)");

    std::vector<std::byte> orphan = bytes;
    orphan[kImage + kStatuses + 0] = std::byte{0};  // root Invalid, its running child left as it is
    reseal(orphan);
    CHECK(f.restore(orphan) == "snap.bin: byte " + std::to_string(kImage) +
                                   ": corrupt: the agent's state is not one the engine makes: node 1 is running under node 0, which is not");

    // Patrol (node 1) running but not queued: the scheduler's own invariants catch it.
    std::vector<std::byte> unqueued = bytes;
    const std::size_t flags = kImage + kFlags;
    unqueued[flags + 2 * 1] &= static_cast<std::byte>(0xFE);
    reseal(unqueued);
    const std::string said = f.restore(unqueued);
    CHECK(said == "snap.bin: byte " + std::to_string(kImage) +
                      ": corrupt: the agent's state breaks a scheduler invariant: node 1 (Patrol) is in the queue but not marked queued");
    CHECK(f.terminated == 0);  // the refused agents were destroyed without aborting their "running" Patrol

    std::vector<std::byte> head = bytes;
    head[kImage - 3] = std::byte{50};  // queue head
    reseal(head);
    CHECK(f.restore(head) == "snap.bin: byte " + std::to_string(kImage - 2) + ": corrupt: queue head 50 (at most 2)");

    std::vector<std::byte> trailing = bytes;
    trailing.insert(trailing.end() - 8, std::byte{0});
    reseal(trailing);
    CHECK(f.restore(trailing) == "snap.bin: byte " + std::to_string(bytes.size() - 8) + ": corrupt: 1 bytes after the agent");
}

TEST_CASE("snapshot errors: the snapshot fuzzer's seeds restore into its tree (agents) and into a World (the world seed)") {
    const Tree tree = fuzz::snapshot_tree();
    int seeds = 0, worlds = 0;
    for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(EBT_SOURCE_DIR) / "fuzz" / "corpus_snapshot")) {
        std::ifstream in(entry.path(), std::ios::binary);
        const std::vector<char> chars{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
        std::vector<std::byte> bytes(chars.size());
        std::memcpy(bytes.data(), chars.data(), chars.size());
        CAPTURE(entry.path().string());
        if (entry.path().filename().string().starts_with("world_")) {
            World world;
            restore_world(world, std::span(&tree, 1), bytes, {.source = entry.path().string()});
            CHECK(save_world(world) == bytes);
            // The seed is what the world run saves (snapshot_fuzz_tree.hpp).
            World run;
            fuzz::snapshot_world_run(run);
            CHECK(save_world(run) == bytes);
            ++worlds;
            continue;
        }
        Agent agent = restore_agent(tree, bytes, {.source = entry.path().string()});
        CHECK(save_agent(agent) == bytes);
        ++seeds;
    }
    CHECK(seeds == 6);
    CHECK(worlds == 1);
}
