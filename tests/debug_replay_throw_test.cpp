// Record and replay of a World whose step threw (docs/debugging.md, "A step that threw"): the
// recording says where each thrown step was cut short (a Threw record, format version 3), and the
// replay makes its own step throw at the same place, with the same state after every frame, in both
// modes, for recordings made at 1 and 2 threads; a throw it cannot reproduce stops it, saying so.
#include "support/one_action_recording.hpp"
#include "support/temp_files.hpp"

#include <ebt/debug/file_error.hpp>
#include <ebt/debug/record.hpp>
#include <ebt/debug/replay.hpp>
#include <ebt/detail/engine_access.hpp>  // tick_numbered: an agent ticked ahead of its World
#include <ebt/ebt.hpp>
#include <ebt/signals.hpp>

#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

using namespace ebt;
using namespace std::chrono_literals;

namespace replay_throw_test {
/// A recordable value (named, with a binary form) whose copy throws while `crate_copies_refused` is
/// set: the publish of a shared key of it throws, and so does the join of a spawn that copies it.
bool crate_copies_refused = false;
struct Crate {
    int n = 0;
    Crate() = default;
    explicit Crate(int v) : n(v) {}
    Crate(const Crate& other) : n(other.n) { refuse_if_asked(); }
    Crate& operator=(const Crate& other) {
        refuse_if_asked();
        n = other.n;
        return *this;
    }
    bool operator==(const Crate&) const = default;
    static void refuse_if_asked() {
        if (crate_copies_refused) throw std::runtime_error("crate copy refused");
    }
};
}  // namespace replay_throw_test
using replay_throw_test::Crate;
using replay_throw_test::crate_copies_refused;

template <> struct ebt::BlackboardValue<Crate> {
    static std::uint64_t hash(const Crate& c) { return static_cast<std::uint64_t>(c.n); }
    static std::string format(const Crate& c) { return std::to_string(c.n); }
    static bool parse(std::string_view text, Crate& out) {
        if (text.empty()) return false;
        out = Crate{std::stoi(std::string(text))};
        return true;
    }
    static void save(const Crate& c, ValueWriter& out) { out.i64(c.n); }
    static void load(ValueReader& in, Crate& out) { out.n = static_cast<int>(in.i64()); }
};

namespace {

std::filesystem::path temp_file(const std::string& name) { return test::temp_file("ebt_replay_throw_test", name); }
using test::read_bytes;

/// What a recorded run of the depot game left: the file, the state hash after every frame, and the
/// handles the game saw.
struct DepotRun {
    std::vector<std::byte> bytes;
    std::vector<std::uint64_t> hashes;  // after frame 0, 1, ...
    std::vector<std::string> thrown;    // "frame: message" of each step that threw
    AgentHandle refused_recruit, joined_recruit, late;
};

/// The depot game, recorded at `threads` threads with its agents in `mode`: haulers that patrol, and
/// haul while the depot's alarm is up, and a lookout. Ten frames; two steps throw: frame 3's publish,
/// at the depot's `crate` key (its alarm and count were published, its crate and tail and the yard's
/// gate not), and frame 6's end: a change slot of the depot's `count`, as frame 6 publishes it,
/// recruits two agents (before the parallel phase, where a spawn is allowed at 2 threads too), and
/// the first (a hauler: its `load` crate to copy) cannot join while the second does. Before frame 8 the game spawns
/// one more agent, which takes the refused recruit's slot.
DepotRun record_depot(std::uint32_t threads, Mode mode) {
    Registry game;
    game.add_type<Crate>("ReplayCrate");
    game.add_action("Patrol", [](ActionContext&) { return Status::Running; });
    game.add_action("Haul", [](ActionContext&) { return Status::Running; });
    DepotRun run;
    World world(WorldOptions{.threads = threads});
    Tree hauler, boss;
    const auto file = temp_file("depot.ebtrec");
    {
        debug::Recorder recorder(game);
        hauler = TreeBuilder("hauler", recorder.registry())
                     .shared_key<bool>("depot", "alarm")
                     .shared_key<int>("depot", "count")
                     .shared_key<Crate>("depot", "crate")
                     .shared_key<int>("depot", "tail")
                     .shared_key<int>("yard", "gate")
                     .key<Crate>("load", Crate{})
                     .active_selector()
                         .sequence().check("depot.alarm").action("Haul").back()
                         .action("Patrol")
                     .back()
                     .end();
        boss = TreeBuilder("lookout", recorder.registry()).action("Patrol").end();
        recorder.start(world, file);
        SharedBlackboard& depot = world.create_shared("depot");
        SharedBlackboard& yard = world.create_shared("yard");
        const KeyId count = 1;  // the depot's keys as the hauler declares them: alarm, count, crate, tail
        const auto recruiting = depot.changes().connect([&](const SharedBlackboard&, KeyId key) {
            if (world.frame() != 6 || key != count) return;
            run.refused_recruit = world.spawn(hauler, {.mode = mode, .shared = {{"depot", &depot}, {"yard", &yard}}});
            run.joined_recruit = world.spawn(boss, {.mode = mode});
            // The first recruit's join copies its key's initial crate into its block: refused. (Not an
            // initial value given to spawn: Value's copy constructor, which copies those as the agent
            // is made, does not free its storage when the value's copy throws; LeakSanitizer reports it.)
            crate_copies_refused = true;
        });
        for (int i = 0; i < 4; ++i) world.spawn(hauler, {.mode = mode, .shared = {{"depot", &depot}, {"yard", &yard}}});
        world.spawn(boss, {.mode = mode});
        for (std::uint64_t frame = 0; frame < 10; ++frame) {
            if (frame == 3) {
                depot.set("alarm", true);
                depot.set("count", 4);
                depot.set("crate", Crate{9});
                depot.set("tail", 7);
                yard.set("gate", 2);
                crate_copies_refused = true;  // the publish's copy of the crate: refused
            }
            if (frame == 6) depot.set("count", 5);
            if (frame == 8) run.late = world.spawn(boss, {.mode = mode});
            try {
                world.step(50ms);
            } catch (const std::exception& e) {
                run.thrown.push_back(std::to_string(frame) + ": " + e.what());
            }
            crate_copies_refused = false;
            run.hashes.push_back(world.state_hash());
            if (frame == 3) {
                // What the game sees after the throw: the depot's keys before `crate` were published.
                CHECK(depot.get<bool>("alarm"));
                CHECK(depot.get<int>("count") == 4);
                CHECK(depot.get<Crate>("crate").n == 0);
                CHECK(depot.get<int>("tail") == 0);
                CHECK(yard.get<int>("gate") == 0);
            }
        }
        CHECK(recorder.frames() == 10);
        recorder.stop();
    }
    CHECK(run.thrown == std::vector<std::string>{"3: crate copy refused", "6: crate copy refused"});
    CHECK_FALSE(world.alive(run.refused_recruit));
    CHECK(world.alive(run.joined_recruit));
    CHECK(run.late.index == run.refused_recruit.index);  // its slot, freed at frame 6's end
    CHECK(world.size() == 7);
    run.bytes = read_bytes(file);
    std::filesystem::remove(file);
    return run;
}

using test::record_one_action;  // (support/one_action_recording.hpp)

std::string replay_summary(std::vector<std::byte> bytes) {
    try {
        debug::Replay replay(std::move(bytes), "rec");
        replay.run();
        return replay.summary();
    } catch (const debug::FileFormatError& e) {
        return e.what();
    }
}

}  // namespace

TEST_CASE("replay throw: steps that threw (a publish, a join) replay with the same state after every frame, in both modes, recorded at 1 and 2 threads") {
    for (const std::uint32_t threads : {1u, 2u}) {
        for (const Mode recorded : {Mode::Event, Mode::Polling}) {
            CAPTURE(threads);
            CAPTURE(to_string(recorded));
            const DepotRun run = record_depot(threads, recorded);
            for (const Mode mode : {Mode::Event, Mode::Polling}) {
                CAPTURE(to_string(mode));
                debug::ReplayOptions options;
                options.mode = mode;
                debug::Replay replay(run.bytes, "rec", options);
                for (std::size_t frame = 0; frame < run.hashes.size(); ++frame) {
                    CAPTURE(frame);
                    REQUIRE(replay.step());
                    CHECK(replay.world().state_hash() == run.hashes[frame]);
                }
                CHECK_FALSE(replay.step());
                CHECK(replay.finished());
                CHECK_FALSE(replay.divergence());
                CHECK(replay.summary() == "identical after 10 frames; the steps of frames 3, 6 threw, as recorded");
                REQUIRE(replay.thrown_steps().size() == 2);
                CHECK(replay.thrown_steps()[0].frame == 3);
                CHECK(replay.thrown_steps()[0].message == "crate copy refused");
                CHECK(replay.thrown_steps()[1].frame == 6);
                CHECK(replay.thrown_steps()[1].message == "crate copy refused");
                World& w = replay.world();
                CHECK_FALSE(w.alive(run.refused_recruit));
                CHECK(w.alive(run.joined_recruit));
                CHECK(w.alive(run.late));
                CHECK(w.size() == 7);
            }
        }
    }
}

TEST_CASE("replay throw: a recorded throw the replay does not make is a divergence at that frame") {
    DepotRun run = record_depot(1, Mode::Event);
    // Frame 3's Threw record (tag 19, stage Publish) changed to the stage Join with no join refused:
    // the replay no longer makes its publish throw, so every key is published and the agents tick, which
    // the recorded frame did not.
    const std::string message = "crate copy refused";
    std::size_t threw_at = 0;
    for (std::size_t i = 0; i + 2 + message.size() < run.bytes.size(); ++i) {
        if (run.bytes[i] != std::byte{19} || run.bytes[i + 1] != std::byte{0}) continue;  // Threw, stage Publish
        threw_at = i;
        break;
    }
    REQUIRE(threw_at != 0);
    run.bytes[threw_at + 1] = std::byte{2};
    debug::Replay replay(run.bytes, "rec");
    CHECK_FALSE(replay.run());
    // The alarm reached the haulers: the first one's Patrol is aborted where the recorded frame had stopped.
    CHECK(replay.summary() == "frame 3, agent {0, 1}, node /ActiveSelector/Action 'Patrol'[1]: expected the end of a frame "
                              "whose step threw 'crate copy refused', got Terminate(Aborted)");
    CHECK(replay.frames() == 3);
}

TEST_CASE("replay throw: a step that threw as an agent's tick was refused stops the replay before that frame, saying so") {
    // The agent's tick is refused because it was ticked ahead of the world (engine-internal here;
    // a game can only get there by misusing an agent, which a recording does not hold).
    Registry game;
    debug::Recorder recorder(game);
    const Tree tree = TreeBuilder("waiter", recorder.registry()).wait(10s).end();
    const auto file = temp_file("refused.ebtrec");
    World world;
    recorder.start(world, file);
    const AgentHandle a = world.spawn(tree, {.mode = Mode::Polling});  // ticked every frame
    world.spawn(tree);
    for (std::uint64_t frame = 0; frame < 5; ++frame) {
        if (frame == 3) detail::EngineAccess::tick_numbered(*world.agent(a), 3, 0ms);
        if (frame == 3) CHECK_THROWS_WITH_AS(world.step(50ms), "Agent::tick_numbered(): tick numbers must not go backwards", UsageError);
        else world.step(50ms);
    }
    recorder.stop();
    const std::vector<std::byte> bytes = read_bytes(file);
    std::filesystem::remove(file);
    debug::Replay replay(bytes, "rec");
    CHECK(replay.run());  // nothing diverged
    CHECK_FALSE(replay.finished());
    CHECK(replay.frames() == 3);
    CHECK(replay.summary() ==
          "identical for 3 frames; the recording's step of frame 3 threw 'Agent::tick_numbered(): tick numbers must not go "
          "backwards' as an agent's tick was refused (game code misused the agent): the replay stops there");
    CHECK(replay.world().frame() == 3);  // standing at the start of the frame that threw
}

// Which versions are read at all is tests/debug_replay_test.cpp's; here, what version 3's Threw records change.
TEST_CASE("replay throw: in a version 2 file, a frame without its end (its step threw) stops the replay there; in version 3 it is corrupt") {
    const auto file = temp_file("one.ebtrec");
    const std::vector<std::byte> good = record_one_action(file);
    std::filesystem::remove(file);
    REQUIRE(static_cast<int>(good[8]) == 3);
    // Frame 4's FrameEnd taken out (21 bytes: tag, state hash, one digest: count, handle, events,
    // hash), as a version 2 recorder left a frame whose step threw: frame 5's Step follows.
    std::size_t frame_end = 0;
    int seen = 0;
    for (std::size_t i = 0; i + 22 < good.size(); ++i) {
        if (good[i] != std::byte{15} || good[i + 9] != std::byte{1} || good[i + 10] != std::byte{0} || good[i + 11] != std::byte{1} ||
            good[i + 21] != std::byte{12})
            continue;
        if (seen++ == 4) {
            frame_end = i;
            break;
        }
    }
    REQUIRE(frame_end != 0);
    std::vector<std::byte> without_end = good;
    without_end.erase(without_end.begin() + static_cast<std::ptrdiff_t>(frame_end), without_end.begin() + static_cast<std::ptrdiff_t>(frame_end + 21));
    without_end[8] = std::byte{2};
    CHECK(replay_summary(without_end) ==
          "identical for 4 frames; the recording's step of frame 4 threw (a version 2 recording does not say where): the replay stops there");
    without_end[8] = std::byte{3};  // a version 3 recorder ends every frame: two steps in one frame are a corrupt file
    CHECK(replay_summary(without_end).find("corrupt: two Step records in frame 4") != std::string::npos);
}

TEST_CASE("replay throw: corrupting a Threw record replays, diverges, stops or is refused with FileFormatError") {
    // A cheap relative of fuzz/recording_fuzzer.cpp over the new record: every byte of each Threw
    // record of the depot recording and of the FrameEnd after it, flipped three ways.
    const DepotRun run = record_depot(1, Mode::Event);
    std::vector<std::size_t> threw_at;
    const std::string message = "crate copy refused";
    for (std::size_t i = 0; i + 3 + message.size() < run.bytes.size(); ++i)
        if (run.bytes[i] == std::byte{19} && run.bytes[i + 2] == static_cast<std::byte>(message.size()) &&
            std::memcmp(run.bytes.data() + i + 3, message.data(), message.size()) == 0)
            threw_at.push_back(i);
    REQUIRE(threw_at.size() == 2);
    int refused = 0, diverged = 0, other = 0;
    for (const std::size_t start : threw_at) {
        for (std::size_t i = start; i < std::min(run.bytes.size(), start + 60); ++i) {
            for (const unsigned flip : {0x01u, 0x80u, 0xFFu}) {
                std::vector<std::byte> bytes = run.bytes;
                bytes[i] ^= static_cast<std::byte>(flip);
                try {
                    debug::Replay replay(std::move(bytes), "rec");
                    if (replay.run()) ++other;  // identical, or stopped before a frame (cut, or a throw it cannot make)
                    else ++diverged;
                } catch (const debug::FileFormatError&) {
                    ++refused;
                }
            }
        }
    }
    CHECK(refused > 0);
    CHECK(diverged > 0);
    MESSAGE("Threw corruptions: ", refused, " refused, ", diverged, " diverged, ", other, " replayed or stopped");
}
