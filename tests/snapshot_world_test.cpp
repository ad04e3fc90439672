// World snapshots (<ebt/snapshot.hpp>: save_world, restore_world; docs/snapshots.md): a random world
// saved between frames and restored into a new World carries on exactly as the uninterrupted one
// (state hash after every later frame, every agent's whole trace, the changes on the bus in their
// order, the handles of later spawns), in
// both modes and restored at 1 and 2 threads; bad bytes are refused and leave the world empty.
#include "support/random_world.hpp"
#include "support/trace_recorder.hpp"

#include <ebt/debug/file_error.hpp>
#include <ebt/detail/engine_access.hpp>
#include <ebt/detail/hash.hpp>
#include <ebt/signals.hpp>
#include <ebt/snapshot.hpp>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

using namespace ebt;
using namespace std::chrono_literals;

namespace {

using test::mix;
using Npc = test::RandomNpc;

/// The random trees of this file: other draws, waits and timeouts than the parallel tests', no inverters.
Tree random_tree(std::uint64_t seed) {
    return test::random_world_tree(seed, {.name = "world-", .salt = 23, .wait_ms = 40, .wait_steps = 5, .timeout_ms = 120, .timeout_steps = 4, .inverters = false});
}

/// Everything of one trace, guard and condition evaluations included, each event with its frame.
std::string whole(const test::TraceRecorder& recorder) {
    std::string out;
    for (const auto& entry : recorder.entries) out += std::to_string(entry.event.tick) + ":" + test::TraceRecorder::render(entry.event) + " ";
    return out;
}

/// A game around a random world: 3 trees, 2 teams, LOD intervals, sometimes an agent budget; between
/// frames it writes keys and a team's shared key, resumes suspended runs, despawns and respawns
/// NPCs, all from the seed and the frame number.
struct Game {
    std::uint64_t seed;
    Mode mode;
    std::vector<Tree> trees;
    std::unique_ptr<World> world;
    std::vector<std::unique_ptr<Npc>> npcs;
    std::vector<AgentHandle> handles;
    std::vector<std::string> finished;  // the traces of despawned NPCs, and the handles respawns got
    std::vector<std::string> changes;   // every change on the world's bus, in order, with its frame and agent
    boost::signals2::scoped_connection listening;

    void listen() {
        listening = world->bus().subscribe([this](const BlackboardChange& c) {
            const AgentHandle h = c.agent ? detail::EngineAccess::handle(*c.agent) : AgentHandle{};
            changes.push_back(std::to_string(world->frame()) + ":" + std::to_string(h.index) + ":" + std::string(c.name));
        });
    }

    Game(std::uint64_t seed_, Mode mode_, int agents) : seed(seed_), mode(mode_) {
        for (std::uint64_t t = 0; t < 3; ++t) trees.push_back(random_tree(seed * 3 + t));
        world = std::make_unique<World>();
        world->create_shared("red");
        world->create_shared("blue");
        if (seed % 3 == 0) world->set_agent_budget(5);
        listen();
        npcs.resize(static_cast<std::size_t>(agents));
        handles.resize(npcs.size());
        for (std::size_t i = 0; i < npcs.size(); ++i) spawn(i);
    }

    void spawn(std::size_t i) {
        npcs[i] = std::make_unique<Npc>();
        npcs[i]->seed = mix(seed, i, 99);
        handles[i] = world->spawn(trees[i % 3], {.mode = mode,
                                                 .seed = npcs[i]->seed,
                                                 .listener = &npcs[i]->trace,
                                                 .user = npcs[i].get(),
                                                 .tick_interval = static_cast<std::uint32_t>(1 + i % 3),
                                                 .shared = {{"team", world->shared(i % 2 ? "blue" : "red")}}});
    }

    /// The game's inputs before frame `f`.
    void inputs(int f) {
        for (std::size_t i = 0; i < npcs.size(); ++i) {
            const std::uint64_t x = mix(seed, static_cast<std::uint64_t>(f), i);
            test::poke_random_npc(*world, handles[i], *npcs[i], x);
            if ((x >> 20) % 41 == 0) {
                CHECK(world->despawn(handles[i]));
                finished.push_back(std::to_string(i) + ": " + whole(npcs[i]->trace));
                spawn(i);
                finished.push_back("respawned " + std::to_string(i) + " as {" + std::to_string(handles[i].index) + ", " +
                                   std::to_string(handles[i].generation) + "}");
            }
        }
        if (f % 3 == 0) world->shared(f % 2 ? "blue" : "red")->set("count", f);
        if (f % 4 == 0) world->shared("red")->set("flag", f % 8 == 0);
    }

    std::vector<std::string> traces() const {
        std::vector<std::string> out = finished;
        for (std::size_t i = 0; i < npcs.size(); ++i) out.push_back(std::to_string(i) + ": " + whole(npcs[i]->trace));
        return out;
    }

    /// Saves the world and moves the game onto a new World restored from the bytes, at `threads`
    /// threads. The NPCs stay the game's; their resume handles are re-bound by (node, run).
    void save_and_restore(std::uint32_t threads) {
        const std::vector<std::byte> bytes = save_world(*world);
        auto again = std::make_unique<World>(WorldOptions{.threads = threads});
        restore_world(*again, trees, bytes, {.agent = [this](AgentHandle h) {
                          const auto it = std::find(handles.begin(), handles.end(), h);
                          REQUIRE(it != handles.end());
                          Npc& npc = *npcs[static_cast<std::size_t>(it - handles.begin())];
                          return WorldAgentOptions{.user = &npc, .listener = &npc.trace};
                      }});
        // The old world goes; its agents' running actions are aborted then, which the NPCs must not hear.
        for (const AgentHandle h : handles) world->set_listener(h, nullptr);
        world = std::move(again);
        listen();
        for (std::size_t i = 0; i < npcs.size(); ++i) {
            const std::vector<SuspendedAction> now = suspended_actions(world->at(handles[i]));
            for (ResumeHandle& h : npcs[i]->suspended) {
                const auto it = std::find_if(now.begin(), now.end(), [&](const SuspendedAction& s) { return s.node == h.node && s.handle.run == h.run; });
                h = it != now.end() ? it->handle : ResumeHandle{};  // a run that ended stays unresumable
            }
        }
    }
};

struct Run {
    std::vector<std::uint64_t> hashes;
    std::vector<std::string> traces;
    std::vector<std::string> changes;
    std::uint64_t timers = 0;
};

/// `frames` frames of a random world; with `save_before` >= 0 the world is saved before that frame
/// (after the game's inputs) and the run goes on in a restored world at `threads` threads.
Run run(std::uint64_t seed, Mode mode, int frames, int save_before, std::uint32_t threads) {
    Game game(seed, mode, 24);
    Run out;
    for (int f = 0; f < frames; ++f) {
        game.inputs(f);
        if (f == save_before) game.save_and_restore(threads);
        const FrameMetrics m = game.world->step(40ms);
        out.timers += m.timers_fired;
        out.hashes.push_back(game.world->state_hash());
    }
    out.traces = game.traces();
    out.changes = game.changes;
    return out;
}

}  // namespace

TEST_CASE("world snapshot: a restored random world goes on as the uninterrupted one, in both modes, at 1 and 2 threads") {
    std::uint64_t timers = 0, respawns = 0, changes = 0;
    for (std::uint64_t seed = 1; seed <= 6; ++seed) {
        for (const Mode mode : {Mode::Event, Mode::Polling}) {
            const Run straight = run(seed, mode, 40, -1, 1);
            timers += straight.timers;
            changes += straight.changes.size();
            for (const std::string& t : straight.traces) respawns += t.starts_with("respawned") ? 1 : 0;
            for (const int save_before : {1, 17}) {
                for (const std::uint32_t threads : {1u, 2u}) {
                    CAPTURE(seed);
                    CAPTURE(mode);
                    CAPTURE(save_before);
                    CAPTURE(threads);
                    const Run restored = run(seed, mode, 40, save_before, threads);
                    CHECK(restored.hashes == straight.hashes);
                    CHECK(restored.traces == straight.traces);
                    CHECK(restored.changes == straight.changes);
                }
            }
        }
    }
    // The worlds did what the test is about: timers fired, agents were despawned and respawned.
    CHECK(timers > 0);
    CHECK(respawns > 0);
    CHECK(changes > 0);
}

namespace {

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const debug::FileFormatError& e) {
        return std::string("FileFormatError: ") + e.what();
    } catch (const SnapshotError& e) {
        return std::string("SnapshotError: ") + e.what();
    } catch (const UsageError& e) {
        return std::string("UsageError: ") + e.what();
    }
    return "no error";
}

/// A small world eight frames in (event mode), with a despawned slot and pending shared writes.
std::vector<std::byte> small_world_bytes(Game& game) {
    for (int f = 0; f < 8; ++f) {
        game.inputs(f);
        game.world->step(40ms);
    }
    return save_world(*game.world);
}

bool empty(World& world) { return world.size() == 0 && world.handles().empty() && !world.shared("red") && world.frame() == 0 && world.now() == 0; }

void recompute_checksum(std::vector<std::byte>& bytes) {
    detail::Fnv1a h;
    h.bytes(bytes.data() + 12, bytes.size() - 12 - 8);
    std::uint64_t sum = h.value();
    for (std::size_t i = 0; i < 8; ++i, sum >>= 8) bytes[bytes.size() - 8 + i] = static_cast<std::byte>(sum & 0xFF);
}

}  // namespace

TEST_CASE("world snapshot: handles stay the same, a despawned agent's handle stays stale, the next spawn gets the same handle") {
    Game game(5, Mode::Event, 6);
    const AgentHandle gone = game.handles[2];
    game.world->set_listener(gone, nullptr);
    REQUIRE(game.world->despawn(gone));
    game.world->step(40ms);
    const std::vector<AgentHandle> before = game.world->handles();
    const std::uint64_t hash = game.world->state_hash();
    const std::vector<std::byte> bytes = save_world(*game.world);
    const AgentHandle next = game.world->spawn(game.trees[0], {.shared = {{"team", game.world->shared("red")}}});

    World again;
    restore_world(again, game.trees, bytes);
    CHECK(again.handles() == before);
    CHECK(again.state_hash() == hash);
    CHECK(again.frame() == 1);
    CHECK(again.now() == 40'000);
    CHECK_FALSE(again.alive(gone));
    CHECK(again.spawn(game.trees[0], {.shared = {{"team", again.shared("red")}}}) == next);
    CHECK(next == AgentHandle{2, gone.generation + 1});
}

TEST_CASE("world snapshot: saving inside a frame and restoring into a world that is not new are refused") {
    Game game(2, Mode::Event, 3);
    const std::vector<std::byte> bytes = save_world(*game.world);
    World used;
    used.create_shared("other");
    CHECK(error_of([&] { restore_world(used, game.trees, bytes); }) ==
          "UsageError: restore_world(): the world is not new (it has had agents or shared blackboards): restore into a new World");
    CHECK(used.size() == 0);

    World world;
    std::string inside;
    ActionSpec saver;
    saver.update = [&](ActionContext&) {
        inside = error_of([&] { static_cast<void>(save_world(world)); });
        return Status::Success;
    };
    Registry registry;
    registry.add_action("Save", saver);
    TreeBuilder b("saver", registry);
    b.action("Save");
    world.spawn(b.end());
    world.step(10ms);
    CHECK(inside == "UsageError: save_world() inside a frame or a callback of the world: save it between frames");

    World again;
    CHECK(error_of([&] { restore_world(again, {}, bytes); }).starts_with(
        "SnapshotError: restore_world(): the snapshot holds agents of tree 'world-6'"));
    CHECK(empty(again));
}

TEST_CASE("world snapshot: every cut and every changed byte is refused with FileFormatError, and the world stays empty") {
    Game game(4, Mode::Event, 6);
    const std::vector<std::byte> bytes = small_world_bytes(game);
    for (std::size_t n = 0; n < bytes.size(); ++n) {
        World world;
        const std::string error = error_of([&] { restore_world(world, game.trees, std::span(bytes.data(), n), {.source = "cut.ebtsnap"}); });
        CAPTURE(n);
        CHECK(error.starts_with("FileFormatError: cut.ebtsnap"));
        CHECK(empty(world));
    }
    for (std::size_t i = 0; i < bytes.size(); ++i) {
        std::vector<std::byte> changed = bytes;
        changed[i] ^= std::byte{0x21};
        World world;
        CAPTURE(i);
        CHECK(error_of([&] { restore_world(world, game.trees, changed); }).starts_with("FileFormatError: snapshot"));
        CHECK(empty(world));
    }
    // A world snapshot is not an agent snapshot, and the other way round.
    World world;
    CHECK(error_of([&] { restore_agent(game.trees[0], bytes); }) ==
          "FileFormatError: snapshot: byte 12: a snapshot of kind 3, not 1 (one agent)");
    const std::vector<std::byte> one = save_agent(game.world->at(game.handles[0]));
    CHECK(error_of([&] { restore_world(world, game.trees, one); }) == "FileFormatError: snapshot: byte 12: a snapshot of kind 1, not 3 (a world)");
    CHECK(empty(world));
}

TEST_CASE("world snapshot: bytes changed under a valid checksum restore or are refused, never half-restored") {
    Game game(4, Mode::Polling, 6);
    const std::vector<std::byte> bytes = small_world_bytes(game);
    int refused = 0, restored = 0;
    for (std::size_t i = 13; i + 8 < bytes.size(); ++i) {
        for (const std::uint8_t flip : {0x01, 0x80}) {
            std::vector<std::byte> changed = bytes;
            changed[i] ^= std::byte{flip};
            recompute_checksum(changed);
            World world;
            try {
                restore_world(world, game.trees, changed);
                ++restored;
                // Whatever it restored saves again to bytes that restore to the same bytes.
                World again;
                restore_world(again, game.trees, save_world(world));
                CHECK(save_world(again) == save_world(world));
            } catch (const debug::FileFormatError&) {
                ++refused;
                CHECK(empty(world));
            } catch (const SnapshotError&) {
                ++refused;
                CHECK(empty(world));
            }
        }
    }
    CHECK(refused > 0);
    CHECK(restored > 0);
}

namespace {

/// The bytes of `bytes` with the string `name` (its length byte and text) at its first place replaced by
/// an empty string, and the checksum made valid again.
std::vector<std::byte> with_empty_string(std::vector<std::byte> bytes, const std::string& name) {
    std::vector<std::byte> pattern = {static_cast<std::byte>(name.size())};
    for (const char c : name) pattern.push_back(static_cast<std::byte>(c));
    const auto at = std::search(bytes.begin(), bytes.end(), pattern.begin(), pattern.end());
    REQUIRE(at != bytes.end());
    *at = std::byte{0};
    bytes.erase(at + 1, at + 1 + static_cast<std::ptrdiff_t>(name.size()));
    recompute_checksum(bytes);
    return bytes;
}

}  // namespace

// Found by the snapshot fuzzer: an empty name reached SharedBlackboard's constructor, whose UsageError
// (not a FileFormatError) ended the program.
TEST_CASE("world snapshot: a shared blackboard or shared key with an empty name is refused as corrupt") {
    Game game(4, Mode::Event, 6);
    const std::vector<std::byte> bytes = small_world_bytes(game);
    const std::string key = game.world->shared("red")->schema().info(0).name;
    for (const std::string& name : {std::string("red"), key}) {
        CAPTURE(name);
        World world;
        const std::string error = error_of([&] { restore_world(world, game.trees, with_empty_string(bytes, name)); });
        CHECK(error.starts_with("FileFormatError: snapshot: byte "));
        CHECK(error.ends_with(name == "red" ? "corrupt: a shared blackboard with an empty name"
                                            : "corrupt: shared blackboard 'red' has a key with an empty name"));
        CHECK(empty(world));
    }
}

namespace {

/// Two worlds stepped in lockstep: A holds a squad (bound to its own shared blackboard "squad") and
/// other NPCs (bound to "others"); B holds NPCs of its own ("locals"). With `move_before` >= 0 the squad
/// moves from A to B before that frame (after the game's inputs): saved from A, despawned there,
/// restored into B, which gets the squad's blackboard with it.
struct TwoWorlds {
    static constexpr std::size_t kSquad = 4, kOthers = 5, kLocals = 3;
    std::uint64_t seed;
    std::vector<Tree> trees;
    World a, b;
    struct Member {
        std::unique_ptr<Npc> npc;
        World* world = nullptr;
        AgentHandle handle;
    };
    std::vector<Member> members;  // the squad, then the others, then B's locals

    TwoWorlds(std::uint64_t seed_, Mode mode) : seed(seed_) {
        for (std::uint64_t t = 0; t < 3; ++t) trees.push_back(random_tree(seed * 3 + t));
        a.create_shared("squad");
        a.create_shared("others");
        b.create_shared("locals");
        for (std::size_t i = 0; i < kSquad + kOthers + kLocals; ++i) {
            Member m;
            m.npc = std::make_unique<Npc>();
            m.npc->seed = mix(seed, i, 7);
            m.world = i < kSquad + kOthers ? &a : &b;
            const char* team = i < kSquad ? "squad" : i < kSquad + kOthers ? "others" : "locals";
            m.handle = m.world->spawn(trees[i % 3], {.mode = mode,
                                                     .seed = m.npc->seed,
                                                     .listener = &m.npc->trace,
                                                     .user = m.npc.get(),
                                                     .shared = {{"team", m.world->shared(team)}}});
            members.push_back(std::move(m));
        }
    }

    void inputs(int f) {
        for (std::size_t i = 0; i < members.size(); ++i)
            test::poke_random_npc(*members[i].world, members[i].handle, *members[i].npc, mix(seed, static_cast<std::uint64_t>(f), i + 1000));
        World& squad_world = *members[0].world;
        if (f % 3 == 0) squad_world.shared("squad")->set("count", f);
        if (f % 4 == 0) squad_world.shared("squad")->set("flag", f % 8 == 0);
        if (f % 5 == 0) a.shared("others")->set("flag", f % 10 == 0);
    }

    void move_squad() {
        std::vector<AgentHandle> squad;
        for (std::size_t i = 0; i < kSquad; ++i) squad.push_back(members[i].handle);
        const std::vector<std::byte> bytes = save_agents(a, squad);
        for (const AgentHandle h : squad) {
            a.set_listener(h, nullptr);  // the copies left behind are aborted: not the squad's trace
            REQUIRE(a.despawn(h));
        }
        const std::vector<AgentHandle> moved = restore_agents(b, trees, bytes, {.agent = [&](AgentHandle saved) {
                                                                  const auto it = std::find(squad.begin(), squad.end(), saved);
                                                                  REQUIRE(it != squad.end());
                                                                  Npc& npc = *members[static_cast<std::size_t>(it - squad.begin())].npc;
                                                                  return WorldAgentOptions{.user = &npc, .listener = &npc.trace};
                                                              }});
        REQUIRE(moved.size() == kSquad);
        for (std::size_t i = 0; i < kSquad; ++i) {
            Member& m = members[i];
            m.world = &b;
            m.handle = moved[i];
            const std::vector<SuspendedAction> now = suspended_actions(b.at(m.handle));
            for (ResumeHandle& h : m.npc->suspended) {
                const auto it = std::find_if(now.begin(), now.end(), [&](const SuspendedAction& s) { return s.node == h.node && s.handle.run == h.run; });
                h = it != now.end() ? it->handle : ResumeHandle{};
            }
        }
    }

    std::vector<std::string> run(int frames, int move_before) {
        for (int f = 0; f < frames; ++f) {
            inputs(f);
            if (f == move_before) move_squad();
            a.step(40ms);
            b.step(40ms);
        }
        std::vector<std::string> out;
        for (std::size_t i = 0; i < members.size(); ++i) out.push_back(std::to_string(i) + ": " + whole(members[i].npc->trace));
        return out;
    }
};

}  // namespace

TEST_CASE("squad migration: a squad moved from World A to World B mid-run has the traces it would have had in A, both modes") {
    int moved_with_work = 0;
    for (std::uint64_t seed = 1; seed <= 6; ++seed) {
        for (const Mode mode : {Mode::Event, Mode::Polling}) {
            for (const int move_before : {3, 14}) {
                CAPTURE(seed);
                CAPTURE(mode);
                CAPTURE(move_before);
                TwoWorlds stayed(seed, mode);
                const std::vector<std::string> expected = stayed.run(30, -1);
                TwoWorlds moving(seed, mode);
                const std::vector<std::string> got = moving.run(30, move_before);
                CHECK(got == expected);  // the squad's, the others' left in A, and B's own NPCs'
                CHECK(moving.a.size() == TwoWorlds::kOthers);
                CHECK(moving.b.size() == TwoWorlds::kLocals + TwoWorlds::kSquad);
                CHECK(moving.b.shared("squad") != nullptr);
                if (moving.b.at(moving.members[0].handle).ticks() > static_cast<std::uint64_t>(move_before)) ++moved_with_work;
            }
        }
    }
    CHECK(moved_with_work > 0);  // moved agents ticked in B
}

TEST_CASE("squad migration: refusals leave the target world unchanged") {
    TwoWorlds worlds(3, Mode::Event);
    worlds.run(5, -1);
    const std::vector<AgentHandle> squad = {worlds.members[0].handle};
    const std::vector<std::byte> bytes = save_agents(worlds.a, squad);
    World behind;  // at frame 0: the agent ticked in frame 4
    CHECK(error_of([&] { restore_agents(behind, worlds.trees, bytes); }) ==
          "SnapshotError: restore_agents(world): the agent saved as slot 0 last ticked in frame 4; this world is at frame 0 "
          "(tick numbers must not go backwards: step it to that frame first)");
    CHECK(behind.size() == 0);
    CHECK(behind.shared("squad") == nullptr);
    CHECK(error_of([&] { static_cast<void>(save_agents(worlds.a, std::vector<AgentHandle>{AgentHandle{0, 7}})); }) ==
          "UsageError: save_agents(world): agent handle {0, generation 7} is stale or joins at the end of a frame");
    std::vector<std::byte> cut(bytes.begin(), bytes.end() - 1);
    const std::size_t before = worlds.b.size();
    CHECK(error_of([&] { restore_agents(worlds.b, worlds.trees, cut); }).starts_with("FileFormatError: snapshot"));
    CHECK(worlds.b.size() == before);
}
