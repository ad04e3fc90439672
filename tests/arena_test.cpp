// The arena (scenarios/arena_scenario.hpp), the ebt_arena sample's world: polling and event runs of
// the same seed stay in lockstep and end in the same state hash, with and without AI LOD; the game is
// plausible (everyone patrols at first, guards attack, flee and answer squad alarms); the SVG; the
// save file (Arena::save, ArenaSave::read): a run continued from it ends as the uninterrupted one,
// and a bad file is refused with its file, byte and problem.
#include "arena_scenario.hpp"
#include "support/guard_tree_text.hpp"

#include <ebt/debug/file_error.hpp>
#include <ebt/detail/hash.hpp>
#include <ebt/snapshot.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

using namespace ebt;
using scenarios::Arena;
using scenarios::ArenaConfig;
using scenarios::ArenaCounts;

namespace {

ArenaConfig small(Mode mode, bool lod = false, std::uint64_t seed = 1) {
    ArenaConfig c;
    c.agents = 300;
    c.seed = seed;
    c.mode = mode;
    c.lod = lod;
    return c;
}

bool same(const ArenaCounts& a, const ArenaCounts& b) {
    return a.patrol == b.patrol && a.respond == b.respond && a.attack == b.attack && a.flee == b.flee &&
           a.intruders_active == b.intruders_active && a.squads_alarmed == b.squads_alarmed;
}

}  // namespace

TEST_CASE("arena: the guards' tree is the seeds' guard tree plus the squad response") {
    Arena arena(small(Mode::Event));
    CHECK(arena.tree().describe() ==
          test::kGuardRootAndFightDescribed +
          "  10 Sequence [guard, abort LowerPriority]\n"
          "    11 Condition squad.alarm\n"
          "    12 Condition !health_low\n"
          "    13 Action Respond\n"
          "  14 Action Patrol\n");
    CHECK(arena.guards() == 300);
    CHECK(arena.squads() == 25);
    CHECK(arena.world().size() == 300);
    CHECK(arena.handle(7).index == 7);  // guard i is slot i
}

TEST_CASE("arena: poll and event runs of the same seed stay in lockstep and end in the same hash") {
    for (const bool lod : {false, true}) {
        CAPTURE(lod);
        Arena poll(small(Mode::Polling, lod));
        Arena event(small(Mode::Event, lod));
        REQUIRE(poll.hash() == event.hash());
        std::uint64_t poll_guards = 0, event_guards = 0, poll_updates = 0, event_updates = 0;
        for (int frame = 0; frame < 100; ++frame) {  // 5 s at 20 Hz
            CAPTURE(frame);
            const auto p = poll.step(), e = event.step();
            poll_guards += p.ai.guards_evaluated;
            event_guards += e.ai.guards_evaluated;
            poll_updates += p.ai.behaviors_updated;
            event_updates += e.ai.behaviors_updated;
            REQUIRE(p.ai.behaviors_updated == e.ai.behaviors_updated);  // the same leaf updates
            REQUIRE(same(poll.counts(), event.counts()));
            if (frame % 20 == 19) REQUIRE(poll.hash() == event.hash());
        }
        CHECK(poll.world().state_hash() == event.world().state_hash());
        CHECK(poll.sim_hash() == event.sim_hash());
        CHECK(poll.hash() == event.hash());
        CHECK(poll.totals().attacks == event.totals().attacks);
        // Event mode re-checks guards only when their keys change.
        CHECK(event_guards * 5 < poll_guards);
        if (lod) CHECK(poll_updates < 300u * 100u);  // far guards tick every 4th frame
        else CHECK(poll_updates == 300u * 100u);
    }
}

TEST_CASE("arena: runs are reproducible; the seed and LOD change the outcome") {
    Arena a(small(Mode::Event)), b(small(Mode::Event)), other_seed(small(Mode::Event, false, 2)), lod(small(Mode::Event, true));
    for (int frame = 0; frame < 60; ++frame) {
        a.step();
        b.step();
        other_seed.step();
        lod.step();
    }
    CHECK(a.hash() == b.hash());
    CHECK(a.hash() != other_seed.hash());
    CHECK(a.hash() != lod.hash());
}

TEST_CASE("arena: guards patrol, then attack intruders, answer squad alarms and flee when hurt") {
    ArenaConfig config = small(Mode::Event);
    config.intruders = 40;  // a busy night, so that guards get hurt within a few seconds
    Arena arena(config);
    arena.step();
    const ArenaCounts first = arena.counts();
    CHECK(first.patrol == 300);  // intruders slip in from the first second on
    CHECK(first.intruders_active == 0);
    int max_attack = 0, max_respond = 0, max_flee = 0, max_alarms = 0;
    for (int frame = 1; frame < 200; ++frame) {  // 10 s
        arena.step();
        const ArenaCounts c = arena.counts();
        REQUIRE(c.patrol + c.respond + c.attack + c.flee == 300);
        max_attack = std::max(max_attack, c.attack);
        max_respond = std::max(max_respond, c.respond);
        max_flee = std::max(max_flee, c.flee);
        max_alarms = std::max(max_alarms, c.squads_alarmed);
    }
    CHECK(max_attack > 0);
    CHECK(max_respond > 0);
    CHECK(max_flee > 0);
    CHECK(max_alarms > 0);
    CHECK(arena.totals().intruders_killed > 0);
    CHECK(arena.totals().flights > 0);
    CHECK(arena.counts().intruders_active > 0);
    for (int g = 0; g < 300; ++g) {
        CHECK(arena.health(g) > 0.0);
        CHECK(arena.health(g) <= 100.0);
    }
}

TEST_CASE("arena: write_svg draws the routes, every guard and the intruders") {
    Arena arena(small(Mode::Event));
    for (int frame = 0; frame < 80; ++frame) arena.step();
    const auto path = std::filesystem::temp_directory_path() / "ebt_arena_test.svg";
    arena.write_svg(path.string());
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    const std::string svg = text.str();
    std::filesystem::remove(path);
    CHECK(svg.rfind("<svg", 0) == 0);
    CHECK(svg.find("</svg>") != std::string::npos);
    std::size_t circles = 0, polygons = 0;
    for (std::size_t at = svg.find("<circle"); at != std::string::npos; at = svg.find("<circle", at + 1)) ++circles;
    for (std::size_t at = svg.find("<polygon"); at != std::string::npos; at = svg.find("<polygon", at + 1)) ++polygons;
    const ArenaCounts c = arena.counts();
    // Guards, legend dots (5) and alarm rings; routes (one per squad) and intruder diamonds.
    CHECK(circles == 300u + 5u + static_cast<std::size_t>(c.squads_alarmed));
    CHECK(polygons == 25u + static_cast<std::size_t>(c.intruders_active));
    CHECK_THROWS_AS(arena.write_svg("/nonexistent-dir/x.svg"), std::runtime_error);
}

TEST_CASE("arena: bad configurations are refused") {
    ArenaConfig c;
    c.agents = 0;
    CHECK_THROWS_AS(Arena{c}, std::invalid_argument);
    c.agents = 10;
    c.hz = 0;
    CHECK_THROWS_AS(Arena{c}, std::invalid_argument);
}

#if EBT_HAS_XML
TEST_CASE("arena: samples/arena.xml is the built-in tree; a run from it ends in the same hash") {
    const std::string file = std::string(EBT_SOURCE_DIR) + "/samples/arena.xml";
    for (Mode mode : {Mode::Polling, Mode::Event}) {
        ArenaConfig built = small(mode);
        ArenaConfig loaded = small(mode);
        loaded.tree_file = file;
        Arena a(built), b(loaded);
        CHECK(b.tree().describe() == a.tree().describe());
        for (int frame = 0; frame < 100; ++frame) {
            a.step();
            b.step();
        }
        CHECK(a.hash() == b.hash());
    }
    ArenaConfig missing = small(Mode::Event);
    missing.tree_file = std::string(EBT_SOURCE_DIR) + "/samples/no-such-tree.xml";
    CHECK_THROWS_AS(Arena{missing}, BuildError);
}
#else
TEST_CASE("arena: a build without XML (EBT_XML=OFF) refuses a tree file with a clear error") {
    ArenaConfig c = small(Mode::Event);
    c.tree_file = std::string(EBT_SOURCE_DIR) + "/samples/arena.xml";
    CHECK_THROWS_WITH_AS(Arena{c},
                         "ArenaConfig::tree_file needs XML support, which this build of ebt does not have (EBT_XML=OFF)",
                         std::invalid_argument);
}
#endif

// ---- the save file (docs/snapshots.md, "In the arena") ----------------------------------------------

namespace {

/// Recomputes the save file's trailing checksum (FNV-1a of every byte before it), so that a change
/// made on purpose reaches the reader's other checks.
void reseal(std::vector<std::byte>& bytes) {
    detail::Fnv1a h;
    for (std::size_t i = 0; i + 8 < bytes.size(); ++i) h(static_cast<std::uint8_t>(bytes[i]));
    const std::uint64_t sum = h.value();
    for (int i = 0; i < 8; ++i) bytes[bytes.size() - 8 + static_cast<std::size_t>(i)] = static_cast<std::byte>(sum >> (8 * i));
}

std::string read_error(const std::vector<std::byte>& bytes) {
    try {
        static_cast<void>(scenarios::ArenaSave::read(bytes, "run.arena"));
    } catch (const debug::FileFormatError& e) {
        return e.what();
    }
    return "(read)";
}

std::string restore_error(const std::vector<std::byte>& bytes) {
    try {
        const scenarios::ArenaSave save = scenarios::ArenaSave::read(bytes, "run.arena");
        Arena again(save, ArenaConfig{});
    } catch (const debug::FileFormatError& e) {
        return e.what();
    }
    return "(restored)";
}

}  // namespace

TEST_CASE("arena save: a run continued from its save file ends in the same hash, frame by frame, at any thread count") {
    for (Mode mode : {Mode::Event, Mode::Polling})
        for (bool lod : {false, true})
            for (std::uint32_t threads : {1u, 2u}) {
                INFO(to_string(mode), ", LOD ", lod, ", threads ", threads);
                Arena original(small(mode, lod));
                for (int frame = 0; frame < 90; ++frame) original.step();  // intruders are in, fights are on
                CHECK(original.counts().attack + original.counts().flee + original.counts().respond > 0);
                const std::vector<std::byte> bytes = original.save();

                const scenarios::ArenaSave save = scenarios::ArenaSave::read(bytes, "run.arena");
                CHECK(save.frame() == 90);
                CHECK(save.time() == 4'500'000);
                CHECK(save.config().agents == 300);
                CHECK(save.config().mode == mode);
                CHECK(save.config().lod == lod);
                CHECK(save.config().intruders == original.intruders());
                ArenaConfig runtime;
                runtime.threads = threads;
                Arena continued(save, runtime);
                CHECK(continued.frame() == 90);
                CHECK(continued.hash() == original.hash());
                CHECK(continued.save() == bytes);  // everything came back
                for (int frame = 90; frame < 200; ++frame) {
                    original.step();
                    continued.step();
                    REQUIRE(continued.hash() == original.hash());
                }
                CHECK(same(continued.counts(), original.counts()));
                CHECK(continued.totals().attacks == original.totals().attacks);
                CHECK(continued.totals().intruders_killed == original.totals().intruders_killed);
            }
}

TEST_CASE("arena save: the guards' lifecycle traces go on as if nothing happened") {
    struct Lines : TraceListener {
        std::vector<std::string> lines;
        void on_event(const TraceEvent& e) override {
            if (e.is_lifecycle())
                lines.push_back(std::to_string(e.tick) + " " + std::to_string(e.node) + " " + to_string(e.kind) + " " +
                                to_string(e.status));
        }
    } whole, before, after;
    ArenaConfig config = small(Mode::Event);
    config.listener_agent = 7;
    config.listener = &whole;
    Arena original(config);
    config.listener = &before;
    Arena first(config);
    for (int frame = 0; frame < 150; ++frame) {
        original.step();
        if (frame < 60) first.step();
    }
    ArenaConfig runtime;
    runtime.listener_agent = 7;
    runtime.listener = &after;
    Arena second(scenarios::ArenaSave::read(first.save(), "run.arena"), runtime);
    for (int frame = 60; frame < 150; ++frame) second.step();
    std::vector<std::string> joined = before.lines;
    joined.insert(joined.end(), after.lines.begin(), after.lines.end());
    CHECK(whole.lines.size() > 10u);
    CHECK(joined == whole.lines);
}

TEST_CASE("arena save: a foreign, newer, truncated or corrupt file is refused naming the file, the byte and the problem") {
    Arena arena(small(Mode::Event));
    for (int frame = 0; frame < 40; ++frame) arena.step();
    const std::vector<std::byte> good = arena.save();

    std::vector<std::byte> foreign = good;
    foreign[0] = std::byte{'X'};
    CHECK(read_error(foreign) == "run.arena: byte 0: not ebt arena save (its first bytes are not the ebt arena save magic)");

    std::vector<std::byte> newer = good;
    newer[8] = std::byte{2};
    CHECK(read_error(newer) == "run.arena: byte 12: ebt arena save format version 2; this build of ebt reads versions 1 to 1");

    // Cut short: inside the configuration, and before the World snapshot's bytes.
    CHECK(read_error(std::vector<std::byte>(good.begin(), good.begin() + 20)) ==
          "run.arena: byte 14: truncated: the file ends inside a 64-bit integer");
    CHECK(read_error(std::vector<std::byte>(good.begin(), good.end() - 100)).find(
              "truncated: the file ends before the ") != std::string::npos);
    CHECK(read_error({}) == "run.arena: byte 0: not ebt arena save (its first bytes are not the ebt arena save magic)");

    // A byte changed anywhere: the checksum (the last 8 bytes) no longer matches.
    std::vector<std::byte> changed = good;
    changed[good.size() / 2] ^= std::byte{0x10};
    CHECK(read_error(changed) == "run.arena: byte " + std::to_string(good.size() - 8) +
                                     ": corrupt: the checksum does not match the content (the file was cut short, damaged or changed after it was written)");
    std::vector<std::byte> longer = good;
    longer.push_back(std::byte{0});
    CHECK(read_error(longer) == "run.arena: byte " + std::to_string(good.size()) + ": corrupt: 1 byte after the checksum");

    // Values the reader checks (the checksum made to match): header 12 bytes, agents 300 (2 bytes),
    // hz (8), seed (8), then the mode byte at 30 and the LOD byte at 31.
    std::vector<std::byte> mode = good;
    mode[30] = std::byte{7};
    reseal(mode);
    CHECK(read_error(mode) == "run.arena: byte 30: corrupt: the mode is 7 (at most 1)");
    std::vector<std::byte> hz = good;
    for (int i = 14; i < 22; ++i) hz[static_cast<std::size_t>(i)] = std::byte{0};
    reseal(hz);
    CHECK(read_error(hz) == "run.arena: byte 14: corrupt: the frame rate (hz) is 0, not within [1e-06, 1e+06]");

    // The World snapshot inside: its own errors name the arena file and the byte in it.
    const std::size_t world_end = good.size() - 8;  // the world's bytes end where the checksum starts
    std::vector<std::byte> world = good;
    world[world_end - 1] ^= std::byte{0x01};  // the last byte of the World snapshot's own checksum
    reseal(world);
    const std::string world_error = restore_error(world);
    CHECK(world_error == "run.arena: byte " + std::to_string(world_end - 8) +
                             ": corrupt: the checksum does not match the content (the file was cut short, damaged or changed "
                             "after it was written)");
    CHECK(restore_error(good) == "(restored)");
}
