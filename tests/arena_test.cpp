// The arena (scenarios/arena_scenario.hpp), the ebt_arena sample's world: polling and event runs of
// the same seed stay in lockstep and end in the same state hash, with and without AI LOD; the game is
// plausible (everyone patrols at first, guards attack, flee and answer squad alarms); the SVG; the
// save file (Arena::save, ArenaSave::read): a run continued from it ends as the uninterrupted one,
// and a bad file is refused with its file, byte and problem.
#include "arena_scenario.hpp"

#include <ebt/debug/file_error.hpp>
#include <ebt/detail/hash.hpp>
#include <ebt/snapshot.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
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
           a.stunned == b.stunned && a.knocked_back == b.knocked_back &&
           a.intruders_active == b.intruders_active && a.squads_alarmed == b.squads_alarmed;
}

}  // namespace

TEST_CASE("arena: the guards' tree is the passive requests, then the seeds' guard tree plus the squad response") {
    Arena arena(small(Mode::Event));
    CHECK(arena.tree().describe() ==
          "0 ActiveSelector [children abort LowerPriority]\n"
          "  1 Sequence [guard, abort LowerPriority]\n"
          "    2 Condition stun_request\n"
          "    3 Action Stunned\n"
          "  4 Sequence [guard, abort LowerPriority]\n"
          "    5 Condition knockback_request\n"
          "    6 Action Knockback\n"
          "  7 Sequence [guard, abort LowerPriority]\n"
          "    8 Condition enemy_seen\n"
          "    9 ActiveSelector [children abort LowerPriority]\n"
          "      10 Sequence [guard, abort LowerPriority]\n"
          "        11 Condition health_low\n"
          "        12 Action Runaway\n"
          "      13 Monitor [guard, abort Both]\n"
          "        14 Condition !enemy_dead\n"
          "        15 Action Attack\n"
          "  16 Sequence [guard, abort LowerPriority]\n"
          "    17 Condition squad.alarm\n"
          "    18 Condition !health_low\n"
          "    19 Action Respond\n"
          "  20 Action Patrol\n");
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
        CHECK(event_updates == poll_updates);
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
        REQUIRE(c.patrol + c.respond + c.attack + c.flee + c.stunned + c.knocked_back == 300);
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
    // Guards, legend dots (7) and alarm rings; routes (one per squad) and intruder diamonds.
    CHECK(circles == 300u + 7u + static_cast<std::size_t>(c.squads_alarmed));
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
                for (int frame = 0; frame < 90; ++frame) {  // intruders are in, fights are on
                    if (frame == 80) original.request_stun(7, 2.0);  // saved stunned: its Stunned action suspended
                    if (frame == 88) original.request_knockback(8, 1.0);  // saved while pushed
                    original.step();
                }
                CHECK(original.counts().attack + original.counts().flee + original.counts().respond > 0);
                CHECK(original.activity(7) == scenarios::Activity::Stunned);
                CHECK(original.activity(8) == scenarios::Activity::Knockback);
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
    for (std::size_t i = 14; i < 22; ++i) hz.at(i) = std::byte{0};  // at(): GCC 12 -O2 warns (stringop-overflow) on the memset [] becomes
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

    // An empty World snapshot (its length 0; found by the fuzzer: reading 0 bytes into an empty
    // buffer passed a null pointer to memcpy, undefined behaviour that UBSan stops on).
    const std::array<std::byte, 8> snap_magic = {std::byte{'E'}, std::byte{'B'}, std::byte{'T'}, std::byte{'S'},
                                                 std::byte{'N'}, std::byte{'A'}, std::byte{'P'}, std::byte{0}};
    const auto world_at = std::search(good.begin(), good.end(), snap_magic.begin(), snap_magic.end());
    REQUIRE(world_at != good.end());
    std::size_t length_bytes = 1;  // the LEB128 length in front of the World snapshot
    for (std::size_t n = world_end - static_cast<std::size_t>(world_at - good.begin()); n >= 0x80; n >>= 7) ++length_bytes;
    std::vector<std::byte> empty_world(good.begin(), world_at - static_cast<std::ptrdiff_t>(length_bytes));
    empty_world.push_back(std::byte{0});
    empty_world.resize(empty_world.size() + 8);
    reseal(empty_world);
    CHECK(restore_error(empty_world) == "run.arena: byte " + std::to_string(empty_world.size() - 8) +
                                            ": not ebt snapshot (its first bytes are not the ebt snapshot magic)");
}

namespace {

/// `bytes` (an arena save file) with its World snapshot replaced by `world` (a World snapshot), the
/// checksum made to match.
std::vector<std::byte> with_world(const std::vector<std::byte>& bytes, const std::vector<std::byte>& world) {
    const std::array<std::byte, 8> snap_magic = {std::byte{'E'}, std::byte{'B'}, std::byte{'T'}, std::byte{'S'},
                                                 std::byte{'N'}, std::byte{'A'}, std::byte{'P'}, std::byte{0}};
    const auto at = std::search(bytes.begin(), bytes.end(), snap_magic.begin(), snap_magic.end());
    REQUIRE(at != bytes.end());
    std::size_t length_bytes = 1;  // the LEB128 length in front of the World snapshot
    for (std::size_t n = bytes.size() - 8 - static_cast<std::size_t>(at - bytes.begin()); n >= 0x80; n >>= 7) ++length_bytes;
    std::vector<std::byte> out(bytes.begin(), at - static_cast<std::ptrdiff_t>(length_bytes));
    for (std::size_t n = world.size();; n >>= 7) {
        out.push_back(static_cast<std::byte>((n & 0x7F) | (n >= 0x80 ? 0x80 : 0)));
        if (n < 0x80) break;
    }
    out.insert(out.end(), world.begin(), world.end());
    out.resize(out.size() + 8);
    reseal(out);
    return out;
}

}  // namespace

// Found by the arena save fuzzer: a World snapshot that restores but does not fit the arena's guards
// made the constructor throw with the guards destroyed before the World, whose agents' moves then
// wrote freed guards as they ended (AddressSanitizer: heap-use-after-free).
TEST_CASE("arena save: a World snapshot of another arena is refused, and the half-built arena is torn down safely") {
    Arena arena(small(Mode::Event));
    for (int frame = 0; frame < 40; ++frame) arena.step();
    ArenaConfig other_config = small(Mode::Event);
    other_config.agents = 200;
    Arena other(other_config);
    for (int frame = 0; frame < 40; ++frame) other.step();
    const std::vector<std::byte> spliced = with_world(arena.save(), save_world(other.world()));
    const std::string error = restore_error(spliced);
    CHECK(error.ends_with("corrupt: the World snapshot holds 200 agents for 300 guards"));
    // The arena the file came from is untouched and goes on.
    arena.step();
    CHECK(restore_error(arena.save()) == "(restored)");
}

// ---- passive requests (docs/patterns.md, "Passive requests") -----------------------------------------

namespace {

/// Guard 7's lifecycle events, one string per event: "frame label:I", "frame label:U(status)" (not
/// a running update), "frame label:T(status)"; labels are action names and node kinds with indices.
struct GuardTrace : TraceListener {
    const Tree* tree = nullptr;
    std::vector<std::string> lines;
    void on_event(const TraceEvent& e) override {
        if (!e.is_lifecycle()) return;
        if (e.kind == TraceKind::Update && e.status == Status::Running) return;
        std::string name = tree->kind(e.node) == NodeKind::Action ? tree->label(e.node)
                                                                   : std::string(to_string(tree->kind(e.node))) + "#" + std::to_string(e.node);
        std::string line = std::to_string(e.tick) + " " + name;
        if (e.kind == TraceKind::Initialize) line += ":I";
        else line += std::string(e.kind == TraceKind::Update ? ":U(" : ":T(") + to_string(e.status) + ")";
        lines.push_back(line);
    }
};

}  // namespace

/// The first frame and guard (after `after`) where a guard attacks, in a run of `config`.
std::pair<int, int> first_attack(ArenaConfig config, int after) {
    config.listener = nullptr;
    Arena pilot(config);
    for (int frame = 0; frame < 400; ++frame) {
        if (frame >= after)
            for (int g = 0; g < pilot.guards(); ++g)
                if (pilot.activity(g) == scenarios::Activity::Attack) return {frame, g};
        pilot.step();
    }
    return {-1, -1};
}

TEST_CASE("arena: a stun request aborts what the guard does, holds it for its time, then it goes back to patrolling") {
    for (Mode mode : {Mode::Event, Mode::Polling}) {
        INFO(to_string(mode));
        GuardTrace trace;
        ArenaConfig config = small(mode);
        config.listener = &trace;
        config.listener_agent = 7;
        Arena arena(config);
        trace.tree = &arena.tree();
        for (int frame = 0; frame < 10; ++frame) arena.step();
        REQUIRE(arena.activity(7) == scenarios::Activity::Patrol);
        trace.lines.clear();
        arena.request_stun(7, 1.0);  // the game's request, between frames
        arena.step();                // frame 10: the request branch aborts Patrol
        CHECK(trace.lines == std::vector<std::string>{"10 Patrol:T(Aborted)", "10 Sequence#1:I", "10 Stunned:I"});
        CHECK(arena.activity(7) == scenarios::Activity::Stunned);
        CHECK(arena.counts().stunned == 1);
        // Taken up: the game cleared the request (the tree never writes it); the stun goes on.
        CHECK_FALSE(arena.world().at(arena.handle(7)).blackboard().get<bool>("stun_request"));
        trace.lines.clear();
        for (int frame = 11; frame < 30; ++frame) arena.step();
        CHECK(trace.lines.empty());  // 1 s = 20 frames stunned, without an update
        CHECK(arena.activity(7) == scenarios::Activity::Stunned);
        for (int frame = 30; frame < 40; ++frame) arena.step();
        CHECK(trace.lines == std::vector<std::string>{"30 Stunned:T(Success)", "30 Sequence#1:T(Success)",
                                                      "30 ActiveSelector#0:T(Success)", "31 ActiveSelector#0:I",
                                                      "31 Patrol:I"});
        CHECK(arena.activity(7) == scenarios::Activity::Patrol);
    }
}

TEST_CASE("arena: a stun request aborts an attack (the whole fight branch ends Aborted); the fight goes on after it") {
    std::vector<std::string> traces[2];
    for (Mode mode : {Mode::Event, Mode::Polling}) {
        INFO(to_string(mode));
        ArenaConfig config = small(mode);
        config.intruders = 40;
        const auto [at, guard] = first_attack(config, 40);
        REQUIRE(at > 0);
        GuardTrace trace;
        config.listener = &trace;
        config.listener_agent = guard;
        Arena arena(config);
        trace.tree = &arena.tree();
        for (int frame = 0; frame < at; ++frame) arena.step();
        REQUIRE(arena.activity(guard) == scenarios::Activity::Attack);
        trace.lines.clear();
        arena.request_stun(guard, 0.5);
        arena.step();
        const std::string f = std::to_string(at);
        CHECK(trace.lines == std::vector<std::string>{f + " Attack:T(Aborted)", f + " Monitor#13:T(Aborted)",
                                                      f + " ActiveSelector#9:T(Aborted)", f + " Sequence#7:T(Aborted)",
                                                      f + " Sequence#1:I", f + " Stunned:I"});
        for (int frame = at + 1; frame < at + 30; ++frame) arena.step();
        traces[mode == Mode::Event ? 0 : 1] = trace.lines;
    }
    CHECK(traces[0] == traces[1]);
}

TEST_CASE("arena: a knockback request aborts what the guard does, pushes it for 0.4 s, then it goes back to patrolling") {
    for (Mode mode : {Mode::Event, Mode::Polling}) {
        INFO(to_string(mode));
        GuardTrace trace;
        ArenaConfig config = small(mode);
        config.listener = &trace;
        config.listener_agent = 7;
        Arena arena(config);
        trace.tree = &arena.tree();
        for (int frame = 0; frame < 10; ++frame) arena.step();
        trace.lines.clear();
        arena.request_knockback(7, 0.0);
        for (int frame = 10; frame < 25; ++frame) {
            arena.step();
            if (frame == 10) {
                CHECK(arena.activity(7) == scenarios::Activity::Knockback);
                CHECK(arena.counts().knocked_back == 1);
                CHECK_FALSE(arena.world().at(arena.handle(7)).blackboard().get<bool>("knockback_request"));
            }
        }
        CHECK(trace.lines == std::vector<std::string>{"10 Patrol:T(Aborted)", "10 Sequence#4:I", "10 Knockback:I",
                                                      "18 Knockback:U(Success)", "18 Knockback:T(Success)",
                                                      "18 Sequence#4:T(Success)", "18 ActiveSelector#0:T(Success)",
                                                      "19 ActiveSelector#0:I", "19 Patrol:I"});
        CHECK(arena.activity(7) == scenarios::Activity::Patrol);
    }
}

TEST_CASE("arena: a stun request preempts a knockback; a knockback waits for the stun to end") {
    for (Mode mode : {Mode::Event, Mode::Polling}) {
        INFO(to_string(mode));
        GuardTrace trace;
        ArenaConfig config = small(mode);
        config.listener = &trace;
        config.listener_agent = 7;
        Arena arena(config);
        trace.tree = &arena.tree();
        for (int frame = 0; frame < 10; ++frame) arena.step();
        trace.lines.clear();
        arena.request_knockback(7, 1.0);
        arena.step();  // 10
        arena.request_stun(7, 0.25);
        arena.step();  // 11: the stun aborts the knockback
        arena.request_knockback(7, 2.0);
        for (int frame = 12; frame < 30; ++frame) arena.step();
        CHECK(trace.lines == std::vector<std::string>{
                                 "10 Patrol:T(Aborted)", "10 Sequence#4:I", "10 Knockback:I",
                                 "11 Knockback:T(Aborted)", "11 Sequence#4:T(Aborted)", "11 Sequence#1:I", "11 Stunned:I",
                                 "16 Stunned:T(Success)", "16 Sequence#1:T(Success)", "16 ActiveSelector#0:T(Success)",
                                 "17 ActiveSelector#0:I", "17 Sequence#4:I", "17 Knockback:I",
                                 "25 Knockback:U(Success)", "25 Knockback:T(Success)", "25 Sequence#4:T(Success)",
                                 "25 ActiveSelector#0:T(Success)", "26 ActiveSelector#0:I", "26 Patrol:I"});
    }
}

TEST_CASE("arena: intruders in a fight stun and knock back guards on their own; both modes agree") {
    ArenaConfig config = small(Mode::Event);
    config.intruders = 40;
    Arena event(config);
    config.mode = Mode::Polling;
    Arena poll(config);
    int max_stunned = 0, max_knocked = 0;
    for (int frame = 0; frame < 300; ++frame) {
        event.step();
        poll.step();
        REQUIRE(event.hash() == poll.hash());
        max_stunned = std::max(max_stunned, event.counts().stunned);
        max_knocked = std::max(max_knocked, event.counts().knocked_back);
    }
    CHECK(max_stunned > 0);
    CHECK(max_knocked > 0);
    CHECK(event.totals().stuns > 0);
    CHECK(event.totals().knockbacks > 0);
}
