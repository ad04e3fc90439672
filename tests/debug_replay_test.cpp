// Record and replay (docs/debugging.md, "Record and replay"): a World recorded with debug::Recorder is
// replayed by debug::Replay from the file alone, identically in both modes; a modified recording is
// reported at its first divergence; bad files are refused with FileFormatError.
#include "debug/binary_io.hpp"

#include "support/one_action_recording.hpp"
#include "support/temp_files.hpp"

#include <ebt/debug/file_error.hpp>
#include <ebt/debug/record.hpp>
#include <ebt/debug/replay.hpp>
#include <ebt/ebt.hpp>
#include <ebt/signals.hpp>

#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <cstring>
#include <string>
#include <vector>

using namespace ebt;
using namespace std::chrono_literals;

namespace {

std::filesystem::path temp_file(const std::string& name) { return test::temp_file("ebt_replay_test", name); }
using test::read_bytes;

/// The game of the main test: soldiers that patrol, attack while they see an enemy and have ammo
/// (shouting to their squad when they run out), and move (a latent action the game finishes three
/// frames later through World::resume) when their squad's alarm is up.
struct Game {
    struct Move {
        ResumeHandle handle;
        std::uint64_t due;
    };
    std::vector<Move> moves;
    std::uint64_t frame = 0;
    int resumes_accepted = 0;
    int attacks = 0;
    Registry registry;

    Game() {
        registry.add_action("Patrol", [](ActionContext&) { return Status::Running; });
        ActionSpec attack;
        attack.ports = {port<int>("ammo")};
        attack.on_initialize = [this](ActionContext&) { ++attacks; };
        attack.update = [](ActionContext& ctx) {
            const int ammo = ctx.in<int>("ammo") - 1;
            ctx.out("ammo", ammo);
            return ammo > 0 ? Status::Running : Status::Success;
        };
        registry.add_action("Attack", attack);
        ActionSpec shout;
        shout.ports = {port<bool>("squad.alarm")};
        shout.update = [](ActionContext& ctx) {
            ctx.out("squad.alarm", true);
            return Status::Success;
        };
        registry.add_action("Shout", shout);
        registry.add_latent_action("MoveTo", [this](ActionContext&, const ResumeHandle& h) { moves.push_back(Move{h, frame + 3}); });
        registry.add_condition("HasAmmo", [](const ConditionContext& ctx) { return ctx.in<int>("ammo") > 0; },
                               {input_port<int>("ammo")});
    }

    static Tree tree(const Registry& r) {
        return TreeBuilder("soldier", r)
            .key<bool>("enemy_seen")
            .key<int>("ammo", 2)
            .shared_key<bool>("squad", "alarm")
            .active_selector()
                .sequence().label("engage").check("enemy_seen").condition("HasAmmo").action("Attack").action("Shout").back()
                .sequence().label("respond").check("squad.alarm").action("MoveTo").back()
                .action("Patrol")
            .back()
            .end();
    }

    /// 60 frames of a world: spawns at the start and mid-run, game writes, resumes, a despawn, an
    /// abort, a tick interval, a shared write by game code. Returns the final state hash.
    std::uint64_t run(World& world, const Tree& tree, Mode mode) {
        SharedBlackboard& squad = world.create_shared("squad-0");
        squad.declare<bool>("alarm", false);
        std::vector<AgentHandle> soldiers;
        const auto spawn = [&](std::uint64_t seed, int ammo) {
            SpawnOptions o;
            o.mode = mode;
            o.seed = seed;
            o.shared = {{"squad", &squad}};
            o.blackboard = {{"ammo", ammo}};
            soldiers.push_back(world.spawn(tree, std::move(o)));
        };
        spawn(1, 2);
        spawn(2, 3);
        spawn(3, 1);
        for (frame = 0; frame < 60; ++frame) {
            if (frame == 5) world.at(soldiers[0]).blackboard().set("enemy_seen", true);  // attacks, shouts
            if (frame == 10) spawn(4, 2);
            if (frame == 12) world.at(soldiers[3]).blackboard().set("enemy_seen", true);
            if (frame == 20) world.despawn(soldiers[1]);  // moving: its MoveTo ends Aborted
            if (frame == 25) world.abort(soldiers[2]);
            if (frame == 30) squad.set("alarm", false);
            if (frame == 35) world.set_tick_interval(soldiers[0], 2);
            if (frame == 40) spawn(5, 1);  // takes the despawned soldier's slot
            for (std::size_t i = 0; i < moves.size();) {
                if (moves[i].due <= frame) {
                    if (world.resume(moves[i].handle, Status::Success)) ++resumes_accepted;
                    moves.erase(moves.begin() + static_cast<std::ptrdiff_t>(i));
                } else {
                    ++i;
                }
            }
            world.step(50ms);
        }
        return world.state_hash();
    }
};

/// Records one run of the game into `file`; returns the final state hash.
std::uint64_t record_game(const std::filesystem::path& file, Mode mode, Game& game) {
    debug::Recorder recorder(game.registry);
    const Tree tree = Game::tree(recorder.registry());
    World world;
    recorder.start(world, file);
    const std::uint64_t hash = game.run(world, tree, mode);
    recorder.stop();
    CHECK(recorder.frames() == 60);
    return hash;
}

}  // namespace

TEST_CASE("replay: a recorded world replays identically in both modes, from the file alone") {
    const auto file = temp_file("game.ebtrec");
    Game game;
    const std::uint64_t hash = record_game(file, Mode::Event, game);
    // The run did what it is meant to test: attacks, resumes accepted, the alarm shouted.
    CHECK(game.attacks >= 2);
    CHECK(game.resumes_accepted >= 2);

    for (const Mode mode : {Mode::Event, Mode::Polling}) {
        CAPTURE(static_cast<int>(mode));
        debug::ReplayOptions options;
        options.mode = mode;
        debug::Replay replay(file, options);
        CHECK(replay.run());
        CHECK(replay.summary() == "identical after 60 frames");
        CHECK(replay.finished());
        CHECK(replay.world().state_hash() == hash);
        CHECK(replay.world().size() == 4);
        CHECK_FALSE(replay.step());
    }
    // As recorded (no mode given), one frame at a time.
    debug::Replay replay(file);
    int steps = 0;
    while (replay.step()) ++steps;
    CHECK(steps == 60);
    CHECK(replay.summary() == "identical after 60 frames");
    std::filesystem::remove(file);
}

TEST_CASE("replay: a recording made in polling mode replays in event mode") {
    const auto file = temp_file("poll.ebtrec");
    Game game;
    const std::uint64_t hash = record_game(file, Mode::Polling, game);
    debug::ReplayOptions options;
    options.mode = Mode::Event;
    debug::Replay replay(file, options);
    CHECK(replay.run());
    CHECK(replay.summary() == "identical after 60 frames");
    CHECK(replay.world().state_hash() == hash);
    std::filesystem::remove(file);
}

namespace {

using test::record_one_action;  // (support/one_action_recording.hpp)

/// Offsets of the status byte of each recorded "Update -> Running" call of agent {0, 1}, node 1
/// (tag, index, generation, node, kind, status, flags, effect count).
std::vector<std::size_t> running_updates(const std::vector<std::byte>& bytes) {
    const std::uint8_t pattern[] = {13, 0, 1, 1, 1, 1, 0, 0};
    std::vector<std::size_t> at;
    for (std::size_t i = 0; i + sizeof pattern <= bytes.size(); ++i) {
        bool same = true;
        for (std::size_t k = 0; k < sizeof pattern && same; ++k) same = bytes[i + k] == static_cast<std::byte>(pattern[k]);
        if (same) at.push_back(i + 5);
    }
    return at;
}

std::string replay_error(std::vector<std::byte> bytes) {
    try {
        debug::Replay replay(std::move(bytes), "rec");
        replay.run();
        return "no error: " + replay.summary();
    } catch (const debug::FileFormatError& e) {
        return e.what();
    }
}

}  // namespace

TEST_CASE("replay: a modified answer is reported at the first divergence, with frame, agent, node, expected and actual") {
    const auto file = temp_file("one.ebtrec");
    std::vector<std::byte> bytes = record_one_action(file);
    std::filesystem::remove(file);
    {
        debug::Replay replay(bytes, "rec");
        CHECK(replay.run());
        CHECK(replay.summary() == "identical after 10 frames");
    }
    const std::vector<std::size_t> updates = running_updates(bytes);
    REQUIRE(updates.size() == 10);  // one per frame
    bytes[updates[3]] = static_cast<std::byte>(Status::Success);  // frame 3's update now answers Success

    debug::Replay replay(bytes, "rec");
    CHECK(replay.step());
    CHECK(replay.step());
    CHECK(replay.step());
    CHECK_FALSE(replay.step());
    REQUIRE(replay.divergence());
    const debug::Divergence& d = *replay.divergence();
    CHECK(d.frame == 3);
    CHECK(d.agent == AgentHandle{0, 1});
    CHECK(d.node == "/Sequence/Action 'Act'[0]");
    CHECK(d.expected == "the end of the frame");
    CHECK(d.actual == "Terminate(Success)");
    CHECK(replay.summary() == "frame 3, agent {0, 1}, node /Sequence/Action 'Act'[0]: expected the end of the frame, got Terminate(Success)");
    CHECK(replay.frames() == 3);
    CHECK_FALSE(replay.step());  // stays stopped
}

TEST_CASE("replay: files that are not recordings, of another version, or cut in the header are refused with FileFormatError; a recording cut later replays up to the cut") {
    const auto file = temp_file("bad.ebtrec");
    const std::vector<std::byte> good = record_one_action(file);
    std::filesystem::remove(file);

    std::vector<std::byte> other_version = good;
    other_version[8] = std::byte{4};
    CHECK(replay_error(other_version) == "rec: byte 12: ebt recording format version 4; this build of ebt reads versions 1 to 3");
    // The same records: a version 1 file (no Loose or Restart) and a version 2 file (no Threw) read as they are.
    for (const int version : {1, 2}) {
        std::vector<std::byte> old = good;
        old[8] = static_cast<std::byte>(version);
        CHECK(replay_error(old) == "no error: identical after 10 frames");
    }

    std::vector<std::byte> not_a_recording = good;
    not_a_recording[0] = std::byte{'X'};
    CHECK(replay_error(not_a_recording) == "rec: byte 0: not ebt recording (its first bytes are not the ebt recording magic)");

    CHECK(replay_error(std::vector<std::byte>(good.begin(), good.begin() + 10)) ==
          "rec: byte 8: truncated: the file ends inside a 32-bit integer");
    // Cut inside the first frame's tree record: its XML text starts at byte 19 (header 12, tag, "one", length).
    CHECK(replay_error(std::vector<std::byte>(good.begin(), good.begin() + 20)) ==
          "no error: identical for 0 frames; the recording ends inside frame 0 (cut short: the game stopped while it was written)");
    // Cut inside the last frame: the frames before it replay, then the replay says where it was cut.
    const std::vector<std::size_t> updates = running_updates(good);
    for (const std::size_t cut : {updates[9], updates[9] + 1, updates[9] + 3}) {
        CAPTURE(cut);
        CHECK(replay_error(std::vector<std::byte>(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(cut))) ==
              "no error: identical for 9 frames; the recording ends inside frame 9 (cut short: the game stopped while it was written)");
    }
    // Without its end record (a game that stopped without Recorder::stop()): every whole frame replays.
    CHECK(replay_error(std::vector<std::byte>(good.begin(), good.end() - 2)) ==
          "no error: identical for 10 frames; the recording ends there without its end record (the game stopped in frame 10, "
          "before Recorder::stop())");

    CHECK_THROWS_WITH_AS(debug::Replay(temp_file("missing.ebtrec")), doctest::Contains("byte 0: cannot open the file"),
                         debug::FileFormatError);
}

TEST_CASE("World input observer: hears each input in order; World::abort; refused from inside a frame") {
    struct Log final : WorldInputObserver {
        std::vector<std::string> lines;
        static std::string h(AgentHandle a) { return "{" + std::to_string(a.index) + "," + std::to_string(a.generation) + "}"; }
        void on_step(Duration dt) override { lines.push_back("step " + std::to_string(dt.count())); }
        void on_publish() override { lines.push_back("publish"); }
        void on_step_end(const FrameMetrics& m) override { lines.push_back("end " + std::to_string(m.frame)); }
        void on_spawn(AgentHandle a, const Tree& t, const SpawnOptions& o) override {
            lines.push_back("spawn " + h(a) + " " + t.name() + " seed " + std::to_string(o.seed));
        }
        void on_despawn(AgentHandle a) override { lines.push_back("despawn " + h(a)); }
        void on_resume(const ResumeHandle& r, Status s, bool ok) override {
            lines.push_back("resume " + h(r.agent) + " " + to_string(s) + (ok ? " accepted" : " refused"));
        }
        void on_abort(AgentHandle a) override { lines.push_back("abort " + h(a)); }
        void on_tick_interval(AgentHandle a, std::uint32_t n) override { lines.push_back("interval " + h(a) + " " + std::to_string(n)); }
        void on_agent_budget(std::uint32_t n) override { lines.push_back("budget " + std::to_string(n)); }
        void on_create_shared(SharedBlackboard& b) override { lines.push_back("shared " + b.name()); }
    } log;
    Registry r;
    ResumeHandle pending;
    World world;
    r.add_latent_action("Wait", [&](ActionContext&, const ResumeHandle& h) { pending = h; });
    r.add_action("Spawner", [&](ActionContext&) {
        CHECK_THROWS_WITH_AS(world.set_input_observer(nullptr), "World::set_input_observer during a frame: change it between frames",
                             UsageError);
        return Status::Running;
    });
    const Tree waiter = TreeBuilder("waiter", r).action("Wait").end();
    const Tree spawner = TreeBuilder("spawner", r).action("Spawner").end();
    world.set_input_observer(&log);
    CHECK(world.input_observer() == &log);
    world.create_shared("squad");
    SpawnOptions o;
    o.seed = 7;
    const AgentHandle a = world.spawn(waiter, o);
    const AgentHandle b = world.spawn(spawner);
    world.step(10ms);
    CHECK(world.resume(pending, Status::Success));
    CHECK_FALSE(world.resume(pending, Status::Success));
    world.set_tick_interval(a, 3);
    world.set_agent_budget(5);
    CHECK(world.abort(a));
    CHECK(world.despawn(b));
    CHECK_FALSE(world.abort(b));  // stale: not heard
    world.set_input_observer(nullptr);
    world.step(10ms);  // not heard
    CHECK(log.lines == std::vector<std::string>{"shared squad", "spawn {0,1} waiter seed 7", "spawn {1,1} spawner seed 0",
                                                "step 10000", "publish", "end 0", "resume {0,1} Success accepted",
                                                "resume {0,1} Success refused", "interval {0,1} 3", "budget 5", "abort {0,1}",
                                                "despawn {1,1}"});
}

TEST_CASE("replay: every one-byte corruption of a recording replays, diverges or is refused with FileFormatError") {
    // A cheap relative of fuzz/recording_fuzzer.cpp that runs in every build (and under the sanitizers).
    const auto file = temp_file("corrupt.ebtrec");
    const std::vector<std::byte> good = record_one_action(file);
    std::filesystem::remove(file);
    int refused = 0, diverged = 0, identical = 0;
    for (std::size_t i = 0; i < good.size(); ++i) {
        for (const unsigned flip : {0x01u, 0x80u, 0xFFu}) {
            std::vector<std::byte> bytes = good;
            bytes[i] ^= static_cast<std::byte>(flip);
            try {
                debug::Replay replay(std::move(bytes), "rec");
                if (replay.run()) ++identical;
                else ++diverged;
            } catch (const debug::FileFormatError&) {
                ++refused;
            }
        }
    }
    CHECK(refused > 0);
    CHECK(diverged > 0);
    MESSAGE("of ", 3 * good.size(), " corruptions: ", refused, " refused, ", diverged, " diverged, ", identical, " identical");
}

TEST_CASE("replay: a value that is not one of its type (a bool byte of 32) is refused, not stored") {
    // Found by fuzz/recording_fuzzer.cpp: raw bytes went into a shared blackboard's bool.
    debug::io::ByteWriter w;
    w.header(std::string_view("EBTREC\0\0", 8), 1);
    w.u8(2);  // Shared "squad"
    w.string("squad");
    w.u8(3);  // Declare: shared 0, key "alarm", bool, published 32, pending 0
    w.varint(0);
    w.string("alarm");
    w.string("bool");
    w.string(std::string_view("\x20", 1));
    w.string(std::string_view("\0", 1));
    w.u8(12);  // Step 50 ms
    w.varint(50000);
    w.u8(15);  // FrameEnd: hash, no agents
    w.u64(0);
    w.varint(0);
    debug::Replay replay(w.bytes(), "rec");
    // A record is applied after its whole frame was read: the offset is the end of that frame.
    CHECK_THROWS_WITH_AS(replay.step(), "rec: byte 50: corrupt: key 'alarm' of type 'bool'", debug::FileFormatError);
}

namespace replay_test {
/// A game's own enum: its values exist only in the game's program, so a replay cannot read them back.
enum class Mood : std::uint8_t { Calm, Angry };
/// A game enum named for XML (Registry::add_enum): recorded by its value, replayed by a program that
/// names it too.
enum class Stance : std::uint8_t { Calm, Alert, Combat };
/// A game type named for XML (Registry::add_type) with a binary form (save/load).
struct Waypoint {
    int x = 0;
    int y = 0;
    bool operator==(const Waypoint&) const = default;
};
}  // namespace replay_test
using replay_test::Mood;
using replay_test::Stance;
using replay_test::Waypoint;

template <> struct ebt::BlackboardValue<Waypoint> {
    static std::uint64_t hash(const Waypoint& w) { return static_cast<std::uint64_t>(w.x) * 1000003u + static_cast<std::uint64_t>(w.y); }
    static std::string format(const Waypoint& w) { return std::to_string(w.x) + ";" + std::to_string(w.y); }
    static bool parse(std::string_view text, Waypoint& out) {
        const auto semicolon = text.find(';');
        if (semicolon == std::string_view::npos) return false;
        out = Waypoint{std::stoi(std::string(text.substr(0, semicolon))), std::stoi(std::string(text.substr(semicolon + 1)))};
        return true;
    }
    static void save(const Waypoint& w, ValueWriter& out) {
        out.i64(w.x);
        out.i64(w.y);
    }
    static void load(ValueReader& in, Waypoint& out) {
        out.x = static_cast<int>(in.i64());
        out.y = static_cast<int>(in.i64());
    }
};

TEST_CASE("replay: a tree with a key a recording cannot hold (an enum of the game) is refused at its first spawn") {
    Registry game;
    game.add_action("Act", [](ActionContext&) { return Status::Running; });
    debug::Recorder recorder(game);
    const Tree tree = TreeBuilder("barker", recorder.registry()).key<Mood>("mood", Mood::Calm).action("Act").end();
    const auto file = temp_file("barker.ebtrec");
    World world;
    recorder.start(world, file);
    CHECK_THROWS_WITH_AS(world.spawn(tree),
                         "Recorder: tree 'barker' cannot be recorded: its key 'mood' has the type 'replay_test::Mood', which a "
                         "recording cannot hold (bool, integers, float, double, std::string, and enums and user types named with "
                         "Registry::add_enum or Registry::add_type that have a binary form)",
                         UsageError);
    recorder.stop();
    std::filesystem::remove(file);
}

// ---- inputs that bypass the World's own functions ---------------------------------------------------------

namespace {

/// The ways game code reaches agents of a recorded World other than through World's functions.
enum class Bypass {
    AgentAbort,          // world.agent(h)->abort() between frames
    AgentResume,         // world.agent(h)->resume(handle, status) between frames
    AgentRestart,        // world.agent(h)->restart() between frames
    ListenerWrite,       // a WorldListener writes another agent's blackboard during a frame
    ListenerWriteBack,   // ... the blackboard of an agent that stepped before, in the same frame
    OwnListenerWrite,    // an agent's own TraceListener (SpawnOptions::listener) does, during a frame
    SlotWrite,           // a ChangeBus slot, hearing a shared key's publish reach an agent, writes a key
    ListenerAbort,       // a WorldListener calls Agent::abort() on another agent during a frame
    ListenerSpawn,       // a WorldListener spawns an agent during a frame
    GameWriteAndResume,  // the reference: world.at(h).blackboard().set and World::resume between frames
};

/// Game code of the bypass scenarios: on soldier 0's first lifecycle event in frame `at` or later
/// (the same event in both modes), does its thing once.
struct BypassHooks final : WorldListener, TraceListener {
    World* world = nullptr;
    const Tree* tree = nullptr;
    Bypass kind = Bypass::ListenerWrite;
    std::uint64_t at = 6;
    std::vector<AgentHandle> soldiers;
    bool done = false;
    void act() {
        const bool from_listener = kind == Bypass::ListenerWrite || kind == Bypass::ListenerWriteBack ||
                                   kind == Bypass::OwnListenerWrite || kind == Bypass::ListenerAbort ||
                                   kind == Bypass::ListenerSpawn;
        if (!from_listener || done || world->frame() < at) return;
        done = true;
        if (kind == Bypass::ListenerWrite || kind == Bypass::OwnListenerWrite) {
            world->at(soldiers[1]).blackboard().set("enemy_seen", true);  // steps later in this frame
        } else if (kind == Bypass::ListenerWriteBack) {
            world->at(soldiers[0]).blackboard().set("enemy_seen", true);  // stepped already: next frame
        } else if (kind == Bypass::ListenerAbort) {
            world->agent(soldiers[2])->abort();
        } else if (kind == Bypass::ListenerSpawn) {
            SpawnOptions o;
            o.seed = 9;
            soldiers.push_back(world->spawn(*tree, std::move(o)));
        }
    }
    void on_event(AgentHandle handle, const Agent&, const TraceEvent& e) override {
        const AgentHandle source = kind == Bypass::ListenerWriteBack ? soldiers[1] : soldiers[0];
        if (kind != Bypass::OwnListenerWrite && handle == source && e.is_lifecycle()) act();
    }
    void on_event(const TraceEvent& e) override {  // soldier 0's own listener
        if (kind == Bypass::OwnListenerWrite && e.is_lifecycle()) act();
    }
};

/// Hears every lifecycle event and notes each one at which soldier `watched`'s enemy_seen differs
/// from what it was at the event before: where, among a frame's events, a write landed.
struct Witness final : WorldListener {
    World* world = nullptr;
    AgentHandle watched;
    bool last = false;
    std::uint64_t frame = 0;
    int index = 0;
    std::vector<std::string> changes;
    void on_event(AgentHandle, const Agent&, const TraceEvent& e) override {
        if (!e.is_lifecycle()) return;
        if (world->frame() != frame) {
            frame = world->frame();
            index = 0;
        }
        ++index;
        const Agent* a = world->agent(watched);
        const bool now = a && a->blackboard().get<bool>("enemy_seen");
        if (now != last) changes.push_back("frame " + std::to_string(frame) + " event " + std::to_string(index) + (now ? ": true" : ": false"));
        last = now;
    }
};

/// Records 20 frames of three soldiers in which game code uses `kind`; returns the recording. With
/// `witness`, notes where soldier `witness->watched.index`'s enemy_seen changed (see Witness).
std::vector<std::byte> record_bypass(Bypass kind, Mode mode, Witness* witness = nullptr) {
    Game game;
    debug::Recorder recorder(game.registry);
    const Tree tree = Game::tree(recorder.registry());
    const auto file = temp_file("bypass.ebtrec");
    World world;
    recorder.start(world, file);
    BypassHooks hooks;
    hooks.world = &world;
    hooks.tree = &tree;
    hooks.kind = kind;
    world.add_listener(&hooks);
    if (witness) {
        witness->world = &world;
        world.add_listener(witness);
    }
    SharedBlackboard& squad = world.create_shared("squad-0");
    for (std::uint64_t seed = 1; seed <= 3; ++seed) {
        SpawnOptions o;
        o.mode = mode;
        o.seed = seed;
        o.shared = {{"squad", &squad}};
        o.restart_on_end = !(kind == Bypass::AgentRestart && seed == 3);
        if (seed == 1) o.listener = &hooks;
        hooks.soldiers.push_back(world.spawn(tree, std::move(o)));
    }
    // The slot hears squad.alarm's publish reach each soldier and gives that soldier more ammo.
    boost::signals2::scoped_connection slot = world.bus().subscribe([&](const BlackboardChange& c) {
        if (kind == Bypass::SlotWrite && c.name == "squad.alarm" && c.agent) c.agent->blackboard().set("ammo", 7);
    });
    for (game.frame = 0; game.frame < 20; ++game.frame) {
        const std::uint64_t f = game.frame;
        if (f == 2) world.at(hooks.soldiers[2]).blackboard().set("enemy_seen", true);  // attacks, shouts: alarm
        if (kind == Bypass::AgentAbort && f == 10) world.agent(hooks.soldiers[0])->abort();
        // Lifecycle events between frames (an abort's) must not shift where the frame's loose inputs go.
        if (f == 7 && kind != Bypass::AgentRestart) world.abort(hooks.soldiers[2]);  // the frame the listeners act in
        if (kind == Bypass::AgentRestart && f == 9) world.abort(hooks.soldiers[2]);
        if (kind == Bypass::AgentRestart && f == 12) world.agent(hooks.soldiers[2])->restart();
        if (kind == Bypass::GameWriteAndResume && f == 8) world.at(hooks.soldiers[1]).blackboard().set("ammo", 0);
        for (std::size_t i = 0; i < game.moves.size();) {
            if (game.moves[i].due <= f) {
                const ResumeHandle h = game.moves[i].handle;
                if (kind == Bypass::AgentResume) world.agent(h.agent)->resume(h, Status::Success);
                else world.resume(h, Status::Success);
                game.moves.erase(game.moves.begin() + static_cast<std::ptrdiff_t>(i));
            } else {
                ++i;
            }
        }
        world.step(50ms);
    }
    CHECK(hooks.done == (kind == Bypass::ListenerWrite || kind == Bypass::ListenerWriteBack || kind == Bypass::OwnListenerWrite ||
                         kind == Bypass::ListenerAbort || kind == Bypass::ListenerSpawn));
    recorder.stop();
    if (witness) world.remove_listener(witness);
    std::vector<std::byte> bytes = read_bytes(file);
    std::filesystem::remove(file);
    return bytes;
}

/// How the replay of `bytes` in `mode` ends.
std::string replay_summary(const std::vector<std::byte>& bytes, Mode mode) {
    debug::ReplayOptions options;
    options.mode = mode;
    debug::Replay replay(bytes, "rec", options);
    replay.run();
    return replay.summary();
}

}  // namespace

TEST_CASE("replay: inputs that bypass the World's functions are recorded and replay identically in both modes") {
    const std::pair<Bypass, const char*> kinds[] = {
        {Bypass::AgentAbort, "Agent::abort between frames"},
        {Bypass::AgentResume, "Agent::resume between frames"},
        {Bypass::AgentRestart, "Agent::restart between frames"},
        {Bypass::ListenerWrite, "a write from a WorldListener during a frame"},
        {Bypass::ListenerWriteBack, "a write from a WorldListener to an agent that stepped earlier in the frame"},
        {Bypass::OwnListenerWrite, "a write from an agent's own TraceListener during a frame"},
        {Bypass::SlotWrite, "a write from a ChangeBus slot during a frame's publish"},
        {Bypass::ListenerAbort, "Agent::abort from a WorldListener during a frame"},
        {Bypass::ListenerSpawn, "World::spawn from a WorldListener during a frame"},
        {Bypass::GameWriteAndResume, "game code's write and World::resume between frames"},
    };
    for (const auto& [kind, what] : kinds) {
        for (const Mode recorded : {Mode::Event, Mode::Polling}) {
            const std::string described = what;
            CAPTURE(described);
            CAPTURE(recorded);
            const std::vector<std::byte> bytes = record_bypass(kind, recorded);
            CHECK(replay_summary(bytes, Mode::Event) == "identical after 20 frames");
            CHECK(replay_summary(bytes, Mode::Polling) == "identical after 20 frames");
        }
    }
}

TEST_CASE("replay: a game that crashes while recording leaves a recording that replays up to the crash and says so") {
    // The file as a crash leaves it: every finished frame is flushed, the frame being run is not.
    Registry game;
    game.add_action("Act", [](ActionContext&) { return Status::Running; });
    debug::Recorder recorder(game);
    const Tree tree = TreeBuilder("one", recorder.registry()).sequence().action("Act").back().end();
    const auto file = temp_file("crash.ebtrec");
    World world;
    recorder.start(world, file);
    world.spawn(tree);
    for (int f = 0; f < 7; ++f) world.step(50ms);
    // ... the game dies in frame 7, before Recorder::stop(): the file holds what it held at that moment.
    const std::vector<std::byte> left = read_bytes(file);
    recorder.stop();
    std::filesystem::remove(file);

    debug::Replay replay(left, "crash.ebtrec");
    CHECK(replay.run());  // no divergence
    CHECK_FALSE(replay.finished());
    CHECK(replay.cut());
    CHECK(replay.frames() == 7);
    CHECK(replay.summary() ==
          "identical for 7 frames; the recording ends there without its end record (the game stopped in frame 7, before "
          "Recorder::stop())");
    CHECK_FALSE(replay.step());
    CHECK(replay.world().frame() == 7);  // the replayed world stands where the game crashed, to be looked at
}

TEST_CASE("replay: a spawn the recorder refuses changes nothing: the world's size, handles, state hash and the recording") {
    Registry game;
    game.add_action("Act", [](ActionContext&) { return Status::Running; });
    debug::Recorder recorder(game);
    const Tree soldier = TreeBuilder("soldier", recorder.registry()).key<int>("ammo", 2).action("Act").end();
    const Tree barker = TreeBuilder("barker", recorder.registry()).key<Mood>("mood", Mood::Calm).action("Act").end();
    const auto file = temp_file("refused.ebtrec");
    World world;
    recorder.start(world, file);
    const AgentHandle first = world.spawn(soldier);
    world.step(50ms);
    const std::uint64_t hash = world.state_hash();
    for (int attempt = 0; attempt < 2; ++attempt) {  // refused every time, not only at the first spawn
        CHECK_THROWS_WITH_AS(world.spawn(barker),
                             "Recorder: tree 'barker' cannot be recorded: its key 'mood' has the type 'replay_test::Mood', which a "
                             "recording cannot hold (bool, integers, float, double, std::string, and enums and user types named with "
                         "Registry::add_enum or Registry::add_type that have a binary form)",
                             UsageError);
        CHECK(world.size() == 1);
        CHECK(world.handles() == std::vector<AgentHandle>{first});
        CHECK(world.state_hash() == hash);
    }
    const AgentHandle second = world.spawn(soldier);
    CHECK(second == AgentHandle{1, 1});  // the refused spawns took no slot and no generation
    world.step(50ms);
    recorder.stop();
    const std::vector<std::byte> bytes = read_bytes(file);
    std::filesystem::remove(file);
    const std::string text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    CHECK(text.find("barker") == std::string::npos);  // nothing of the refused tree was recorded
    CHECK(replay_summary(bytes, Mode::Event) == "identical after 2 frames");
    CHECK(replay_summary(bytes, Mode::Polling) == "identical after 2 frames");
}

namespace {

/// One agent: a condition "Ready" on port n (key n = 1) guarding an action; game code writes n = 5
/// between frames 2 and 3. Records 5 frames and returns the file's bytes.
std::vector<std::byte> record_ready(const std::filesystem::path& file) {
    Registry game;
    game.add_action("Act", [](ActionContext&) { return Status::Running; });
    game.add_condition("Ready", [](const ConditionContext& ctx) { return ctx.in<int>("n") > 0; }, {input_port<int>("n")});
    debug::Recorder recorder(game);
    const Tree tree = TreeBuilder("ready", recorder.registry()).key<int>("n", 1).sequence().condition("Ready").action("Act").back().end();
    World world;
    recorder.start(world, file);
    const AgentHandle a = world.spawn(tree);
    for (int f = 0; f < 5; ++f) {
        if (f == 3) world.at(a).blackboard().set("n", 5);
        world.step(50ms);
    }
    recorder.stop();
    std::vector<std::byte> bytes = read_bytes(file);
    std::filesystem::remove(file);
    return bytes;
}

/// The offset of the first occurrence of `pattern` in `bytes` (REQUIREd to be there).
std::size_t find_bytes(const std::vector<std::byte>& bytes, const std::vector<std::uint8_t>& pattern) {
    for (std::size_t i = 0; i + pattern.size() <= bytes.size(); ++i) {
        bool same = true;
        for (std::size_t k = 0; k < pattern.size() && same; ++k) same = bytes[i + k] == static_cast<std::byte>(pattern[k]);
        if (same) return i;
    }
    FAIL("pattern not in the recording");
    return 0;
}

}  // namespace

TEST_CASE("replay: each kind of divergence names its frame, agent, node, what was expected and what happened") {
    const auto file = temp_file("ready.ebtrec");
    const std::vector<std::byte> good = record_ready(file);
    CHECK(replay_summary(good, Mode::Event) == "identical after 5 frames");
    CHECK(replay_summary(good, Mode::Polling) == "identical after 5 frames");
    // (An action's status: see "a modified answer is reported at the first divergence".)

    SUBCASE("a condition evaluated on values it never answered for") {
        // Condition record: tag 14, agent {0, 1}, "Ready", values (4 bytes: n = 1), flags.
        std::vector<std::byte> bytes = good;
        bytes[find_bytes(bytes, {14, 0, 1, 5, 'R', 'e', 'a', 'd', 'y', 4, 1, 0, 0, 0}) + 10] = std::byte{2};  // n = 2
        for (const Mode mode : {Mode::Event, Mode::Polling})
            CHECK(replay_summary(bytes, mode) ==
                  "frame 0, agent {0, 1}, node /Sequence: expected an answer of condition 'Ready' recorded for n = 1, got no "
                  "answer recorded for these values");
    }
    SUBCASE("a blackboard write to an agent the replay does not have") {
        // Write record: tag 10, agent {0, 1}, key 0, value (4 bytes: 5).
        std::vector<std::byte> bytes = good;
        bytes[find_bytes(bytes, {10, 0, 1, 0, 4, 5, 0, 0, 0}) + 1] = std::byte{7};  // agent {7, 1}
        CHECK(replay_summary(bytes, Mode::Event) ==
              "frame 3, agent {7, 1}: expected a blackboard write to a live agent, got no such agent");
    }
    SUBCASE("a state that differs at the end of a frame") {
        std::vector<std::byte> bytes = good;
        bytes[find_bytes(bytes, {10, 0, 1, 0, 4, 5, 0, 0, 0}) + 5] = std::byte{6};  // n = 6: same answers, another state
        const std::string summary = replay_summary(bytes, Mode::Event);
        CHECK(summary.starts_with("frame 3: expected state hash "));
        CHECK(summary.find(", got state hash ") != std::string::npos);
    }
}

TEST_CASE("replay: corrupting a Loose or Restart record replays, diverges or is refused with FileFormatError") {
    for (const Bypass kind : {Bypass::ListenerSpawn, Bypass::ListenerWrite, Bypass::AgentRestart}) {
        const std::vector<std::byte> good = record_bypass(kind, Mode::Event);
        const auto tag = static_cast<std::byte>(kind == Bypass::AgentRestart ? 18 : 17);
        int corrupted = 0, refused = 0;
        for (std::size_t at = 12; at < good.size(); ++at) {
            if (good[at] != tag) continue;  // (also bytes that only look like the tag: corrupted as well)
            for (std::size_t i = at; i < std::min(good.size(), at + 12); ++i) {
                for (const unsigned flip : {0x01u, 0xFFu}) {
                    std::vector<std::byte> bytes = good;
                    bytes[i] ^= static_cast<std::byte>(flip);
                    ++corrupted;
                    try {
                        debug::Replay replay(std::move(bytes), "rec");
                        replay.run();
                    } catch (const debug::FileFormatError&) {
                        ++refused;
                    }
                }
            }
        }
        CHECK(corrupted > 0);
        MESSAGE(corrupted, " corruptions, ", refused, " refused");
    }
}

TEST_CASE("replay: a listener's write during a frame lands at the same lifecycle event in the replay as in the game") {
    // Soldier 0's enemy_seen written by a listener hearing soldier 1's first event of frame 7 (after
    // two lifecycle events between frames: an abort's), and soldier 1's by one hearing soldier 0's.
    for (const auto& [kind, watched] : {std::pair{Bypass::ListenerWriteBack, 0u}, std::pair{Bypass::ListenerWrite, 1u}}) {
        for (const Mode recorded : {Mode::Event, Mode::Polling}) {
            Witness in_game;
            in_game.watched = AgentHandle{watched, 1};
            const std::vector<std::byte> bytes = record_bypass(kind, recorded, &in_game);
            REQUIRE_FALSE(in_game.changes.empty());
            for (const Mode mode : {Mode::Event, Mode::Polling}) {
                debug::ReplayOptions options;
                options.mode = mode;
                debug::Replay replay(bytes, "rec", options);
                Witness in_replay;
                in_replay.watched = in_game.watched;
                in_replay.world = &replay.world();
                replay.world().add_listener(&in_replay);
                CHECK(replay.run());
                CHECK(replay.summary() == "identical after 20 frames");
                CHECK(in_replay.changes == in_game.changes);
                replay.world().remove_listener(&in_replay);
            }
        }
    }
}

TEST_CASE("replay: a recording cut at any byte after its header replays up to the cut and says so") {
    const auto file = temp_file("cut.ebtrec");
    const std::vector<std::byte> good = record_one_action(file);
    std::filesystem::remove(file);
    std::size_t inside = 0, between = 0;
    for (std::size_t size = 12; size < good.size(); ++size) {
        CAPTURE(size);
        debug::Replay replay(std::vector<std::byte>(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(size)), "rec");
        CHECK(replay.run());
        CHECK(replay.cut());
        const std::string n = std::to_string(replay.frames());
        const std::string summary = replay.summary();
        if (summary == "identical for " + n + " frames; the recording ends inside frame " + n +
                           " (cut short: the game stopped while it was written)")
            ++inside;
        else if (summary == "identical for " + n + " frames; the recording ends there without its end record (the game "
                                                   "stopped in frame " + n + ", before Recorder::stop())")
            ++between;
        else
            FAIL(summary);
    }
    CHECK(between == 11);  // right after the header, and after each of the 10 frames
    CHECK(inside == good.size() - 12 - between);
}

// ---- value types beyond the builtin ones ----------------------------------------------------------------

namespace {

/// Replays `bytes` in each mode: it must end with `summary` and the game's final state hash; then
/// `check` looks at the replayed world.
template <class Check>
void check_replays_in_both_modes(const std::vector<std::byte>& bytes, const std::string& summary, std::uint64_t hash, Check&& check) {
    for (const Mode mode : {Mode::Event, Mode::Polling}) {
        CAPTURE(to_string(mode));
        debug::ReplayOptions options;
        options.mode = mode;
        debug::Replay replay(bytes, "rec", options);
        CHECK(replay.run());
        CHECK(replay.summary() == summary);
        CHECK(replay.world().state_hash() == hash);
        check(replay.world());
    }
}

}  // namespace

TEST_CASE("replay: std::string keys, ports, initial values and shared keys are recorded and replay identically in both modes") {
    // A herald reads the squad's order (a shared string), repeats it into its own key (an action's write)
    // and shouts while the order is "charge" (a condition with a string input port). Game code writes
    // strings between frames and as spawn initial values; the shared order changes mid-run.
    Registry game;
    ActionSpec repeat;
    repeat.ports = {input_port<std::string>("squad.order"), output_port<std::string>("said")};
    repeat.update = [](ActionContext& ctx) {
        ctx.out("said", "heard: " + ctx.in<std::string>("squad.order"));
        return Status::Success;
    };
    game.add_action("Repeat", repeat);
    game.add_action("Shout", [](ActionContext&) { return Status::Running; });
    game.add_condition("OrderIs", [](const ConditionContext& ctx) { return ctx.in<std::string>(0) == ctx.in<std::string>(1); },
                       {input_port<std::string>("order"), input_port<std::string>("wanted")});
    for (const Mode recorded : {Mode::Event, Mode::Polling}) {
        CAPTURE(to_string(recorded));
        debug::Recorder recorder(game);
        const Tree tree = TreeBuilder("herald", recorder.registry())
                              .key<std::string>("said", "")
                              .key<std::string>("name", "nobody")
                              .key<std::string>("wanted", "charge")
                              .shared_key<std::string>("squad", "order", "hold the line, whatever comes")
                              .sequence()
                                  .action("Repeat")
                                  .selector()
                                      .sequence().condition("OrderIs", {{"order", "squad.order"}, {"wanted", "wanted"}}).action("Shout").back()
                                      .action("Shout").back()
                              .back()
                              .end();
        const auto file = temp_file("strings.ebtrec");
        World world;
        recorder.start(world, file);
        SharedBlackboard& squad = world.create_shared("squad-0");
        squad.declare<std::string>("order", std::string("hold the line, whatever comes"));
        SpawnOptions o;
        o.mode = recorded;
        o.shared = {{"squad", &squad}};
        o.blackboard = {{"name", std::string("Ser Aldric of the long name that needs the heap")}};
        const AgentHandle a = world.spawn(tree, o);
        o.blackboard = {{"name", "Bo"}};
        const AgentHandle b = world.spawn(tree, o);
        for (int frame = 0; frame < 12; ++frame) {
            if (frame == 3) squad.set("order", "charge");
            if (frame == 5) world.at(b).blackboard().set("wanted", "retreat");
            if (frame == 8) squad.set("order", "retreat");
            if (frame == 9) world.abort(a);
            world.step(50ms);
        }
        const std::string said_a = world.at(a).blackboard().get<std::string>("said");
        CHECK(said_a == "heard: retreat");
        recorder.stop();
        const std::vector<std::byte> bytes = read_bytes(file);
        std::filesystem::remove(file);
        check_replays_in_both_modes(bytes, "identical after 12 frames", world.state_hash(), [&](World& replayed) {
            CHECK(replayed.at(a).blackboard().get<std::string>("said") == "heard: retreat");
            CHECK(replayed.at(a).blackboard().get<std::string>("name") == "Ser Aldric of the long name that needs the heap");
            CHECK(replayed.at(b).blackboard().get<std::string>("wanted") == "retreat");
        });
    }
}

TEST_CASE("replay: keys and ports of a named enum and of a named user type with a binary form are recorded and replay identically") {
    // A lookout turns Alert when its condition sees an intruder stance, and walks its waypoint on.
    // The replaying program names the same types (here: the same test program), as a game's own
    // replay tool would by linking its type registrations.
    Registry game;
    game.add_enum<Stance>("ReplayStance", {{"Calm", Stance::Calm}, {"Alert", Stance::Alert}, {"Combat", Stance::Combat}});
    game.add_type<Waypoint>("ReplayWaypoint");
    ActionSpec walk;
    walk.ports = {port<Waypoint>("goal"), output_port<Stance>("stance")};
    walk.update = [](ActionContext& ctx) {
        const Waypoint w = ctx.in<Waypoint>("goal");
        ctx.out("goal", Waypoint{w.x + 1, w.y - 1});
        ctx.out("stance", Stance::Alert);
        return Status::Running;
    };
    game.add_action("Walk", walk);
    game.add_action("Idle", [](ActionContext&) { return Status::Running; });
    game.add_condition("StanceIs", [](const ConditionContext& ctx) { return ctx.in<Stance>(0) == ctx.in<Stance>(1); },
                       {input_port<Stance>("seen"), input_port<Stance>("want")});
    for (const Mode recorded : {Mode::Event, Mode::Polling}) {
        CAPTURE(to_string(recorded));
        debug::Recorder recorder(game);
        const Tree tree = TreeBuilder("lookout", recorder.registry())
                              .key<Stance>("seen", Stance::Calm)
                              .key<Stance>("want", Stance::Combat)
                              .key<Stance>("stance", Stance::Calm)
                              .key<Waypoint>("goal", Waypoint{0, 0})
                              .active_selector()
                                  .sequence().condition("StanceIs").action("Walk").back()
                                  .action("Idle")
                              .back()
                              .end();
        const auto file = temp_file("named_types.ebtrec");
        World world;
        recorder.start(world, file);
        SpawnOptions o;
        o.mode = recorded;
        o.blackboard = {{"goal", Waypoint{10, 20}}};
        const AgentHandle a = world.spawn(tree, o);
        for (int frame = 0; frame < 10; ++frame) {
            if (frame == 2) world.at(a).blackboard().set("seen", Stance::Combat);
            if (frame == 7) world.at(a).blackboard().set("seen", Stance::Alert);
            world.step(50ms);
        }
        CHECK(world.at(a).blackboard().get<Stance>("stance") == Stance::Alert);
        const Waypoint walked = world.at(a).blackboard().get<Waypoint>("goal");
        CHECK(walked == Waypoint{18, 12});  // frames 2 to 9: once passed, the condition is not asked again
        recorder.stop();
        const std::vector<std::byte> bytes = read_bytes(file);
        std::filesystem::remove(file);
        check_replays_in_both_modes(bytes, "identical after 10 frames", world.state_hash(), [&](World& replayed) {
            CHECK(replayed.at(a).blackboard().get<Waypoint>("goal") == walked);
            CHECK(replayed.at(a).blackboard().get<Stance>("seen") == Stance::Alert);
        });
        // A program that has not named a type the recording uses is told so, naming the type.
        std::vector<std::byte> renamed = bytes;
        const std::string from = "ReplayStance", to = "ReplayStancX";
        for (std::size_t i = 0; i + from.size() <= renamed.size(); ++i)
            if (std::memcmp(renamed.data() + i, from.data(), from.size()) == 0) std::memcpy(renamed.data() + i, to.data(), to.size());
        debug::Replay unknown(renamed, "rec", {});
        CHECK_THROWS_WITH_AS(unknown.run(),
                             doctest::Contains("has the type 'ReplayStancX', which this program has not named: a replay of a "
                                               "game's enums and user types must name them as the game did (Registry::add_enum, "
                                               "Registry::add_type) before it reads the recording"),
                             debug::FileFormatError);
    }
}
