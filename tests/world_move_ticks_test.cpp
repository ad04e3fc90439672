// A World's two move ticks chosen early (World::SlotSchedule::move_hint, runtime/move_ticks.hpp; docs/benchmarks.md,
// "A move through a World, sixth pass"): the World guesses, per slot, whether the agent's next tick
// ends a resumed move or restarts the root, and enters that tick's lean entry first. These tests hold
// the hinted World to the general path: a second World whose agents all have a trace listener (which
// keeps every tick on the general path: the entries decline for an agent with a listener) is driven
// the same way, and after every frame both must agree in the frame metrics and in every byte of every
// agent's state. The drive makes the hints wrong or stale on purpose: resumes with Failure, aborts
// between a resume and the tick, guard writes that turn the restart away, a despawn and a new agent
// in the reused slot, a listener set on one agent in the middle of its move, agents that do not
// restart, deadlines, a World restored from a snapshot in the middle of the moves, and four threads.
#include "snapshot/snapshot_access.hpp"  // a Move's run id, set near its 32-bit wrap
#include "support/both_modes.hpp"
#include "tree/tree_data.hpp"  // where the restart's plan keeps it (RootRestart::leaf_run_id_offset)

#include <ebt/ebt.hpp>
#include <ebt/snapshot.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

using namespace ebt;
using namespace std::chrono_literals;

namespace {

/// The registry of these worlds: Walk, a latent move that only suspends (the drive resumes it through
/// suspended_actions); WalkNoted, the same with an onTerminate that counts its ends in the key `ends`
/// (its end is not the lean end entry's: NodeDef::success_ends_run_plainly is false); Fight, running
/// until aborted.
Registry move_registry() {
    Registry registry;
    registry.add_latent_action("Walk", [](ActionContext&, const ResumeHandle&) {});
    registry.add_latent_action(
        "WalkNoted", LatentActionSpec{.start = [](ActionContext&, const ResumeHandle&) {},
                                      .on_terminate = [](ActionContext& ctx, Status) {  // (counted: in the state bytes)
                                          ctx.blackboard().set("ends", ctx.blackboard().get<int>("ends") + 1);
                                      }});
    registry.add_action("Fight", [](ActionContext&) { return Status::Running; });
    return registry;
}

/// The sweep's guard_b tree (0 ActiveSelector, 1 Sequence guarded by check(enemy), 3 Fight, 4 Walk)
/// and a move under a Timeout (a deadline while it sleeps: its hinted end tick may be a timer's); for
/// the drive's more_trees, the guard_b tree with WalkNoted, and the guard_b tree with a blackboard
/// large enough that its World prefetches blocks ahead (World::prefetch_blocks_: the loops'
/// kPrefetchBlocks variant), and a move two levels below the root (ActiveSelector(Sequence(check(enemy),
/// Fight), Sequence(Walk))): its end walks a chain of three nodes, not the end entry's common case of
/// a child of the root (Runtime::end_run_of_root_child).
std::vector<Tree> move_trees(const Registry& registry) {
    const auto guard_b = [&](const char* name, const char* walk, int padding_keys) {
        TreeBuilder b(name, registry);
        b.key<bool>("enemy").key<int>("ends");
        for (int k = 0; k < padding_keys; ++k) b.key<std::int64_t>("pad" + std::to_string(k));
        return b.active_selector()
                   .sequence().check("enemy").action("Fight").back()
                   .action(walk)
               .back()
               .end();
    };
    return {guard_b("moves", "Walk", 0),
            TreeBuilder("timed", registry).key<bool>("enemy").timeout(700ms).action("Walk").back().end(),
            guard_b("noted", "WalkNoted", 0), guard_b("wide", "Walk", 40),
            TreeBuilder("nested", registry)
                .key<bool>("enemy").key<int>("ends")
                .active_selector()
                    .sequence().check("enemy").action("Fight").back()
                    .sequence().action("Walk").back()
                .back()
                .end()};
}

/// What run_against_general varies besides the mode: how many agents and frames, the hinted World's
/// threads, the frame before which a third World is restored from the hinted one (-1: none), and
/// what both Worlds have alike: the two more trees, an agent budget, LOD intervals.
struct DriveOptions {
    std::size_t count = 40;
    int frames = 60;
    std::uint32_t threads = 1;
    int restore_at = -1;
    bool more_trees = false;   // every fifth agent's tree is noted, every fifth wide (with the padding keys), every fifth nested
    std::uint32_t budget = 0;  // World::set_agent_budget
    bool lod = false;          // every sixth agent ticks every second frame, every eleventh every third
};

/// The drive's tree for agent i.
std::size_t tree_of(std::size_t i, bool more_trees) {
    if (i % 5 == 4) return 1;
    if (more_trees && i % 5 == 1) return 2;
    if (more_trees && i % 5 == 2) return 3;
    if (more_trees && i % 5 == 3) return 4;
    return 0;
}

/// A small deterministic generator: the same numbers for every World the drive runs.
std::uint32_t mix(std::uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return static_cast<std::uint32_t>(x);
}

/// One World and the agents the drive keeps in it (by the drive's own numbering, the same in every
/// World). `listener`: every agent spawned with it (the general path).
struct Driven {
    std::unique_ptr<World> world = std::make_unique<World>();
    std::vector<AgentHandle> agents;
    TraceListener* listener = nullptr;
    /// Agent 2's listener: in the general World its own from the start (every agent has one there),
    /// in the hinted World set for frames 20 to 23 only, right after a resume of its move.
    test::TraceRecorder agent_2;
};

SpawnOptions options_for(std::size_t i, Mode mode, TraceListener* listener) {
    return SpawnOptions{.mode = mode, .seed = i, .restart_on_end = i % 7 != 3, .listener = listener};
}

void spawn_all(Driven& d, const std::vector<Tree>& trees, const DriveOptions& o, Mode mode) {
    for (std::size_t i = 0; i < o.count; ++i) {
        TraceListener* listener = d.listener && i == 2 ? &d.agent_2 : d.listener;
        d.agents.push_back(d.world->spawn(trees[tree_of(i, o.more_trees)], options_for(i, mode, listener)));
        if (o.lod && i % 6 == 5) d.world->set_tick_interval(d.agents.back(), 2);
        if (o.lod && i % 11 == 10) d.world->set_tick_interval(d.agents.back(), 3);
    }
    d.world->set_agent_budget(o.budget);
}

/// What game code does before frame `frame` (the same in every World): resumes (most with Success,
/// some with Failure, some of them aborted before the tick), guard writes, a despawn with a new agent
/// in the freed slot, and (`hinted`) a listener set on agent 3 for a few frames of its move.
void drive(Driven& d, const std::vector<Tree>& trees, int frame, Mode mode, bool hinted) {
    World& w = *d.world;
    std::vector<ResumeHandle> successes;
    std::vector<AgentHandle> to_abort;
    for (std::size_t i = 0; i < d.agents.size(); ++i) {
        const std::uint32_t r = mix(static_cast<std::uint64_t>(frame) * 100'003 + i);
        Agent* a = w.agent(d.agents[i]);
        if (!a) continue;
        if (r % 19 == 0) a->blackboard().set("enemy", true);
        else if (r % 5 == 0 && a->blackboard().get<bool>("enemy")) a->blackboard().set("enemy", false);
        for (const SuspendedAction& s : suspended_actions(*a)) {
            if (r % 3 == 0 || (frame == 20 && i == 2)) successes.push_back(s.handle);
            else if (r % 29 == 1) w.resume(s.handle, Status::Failure);
            if (r % 3 == 0 && r % 31 == 0) to_abort.push_back(d.agents[i]);
        }
    }
    w.resume_all(successes, Status::Success);
    for (const AgentHandle h : to_abort) w.abort(h);  // between the resume and the tick
    if (frame == 15) {
        for (std::size_t i = 1; i < d.agents.size(); i += 9) {
            w.despawn(d.agents[i]);
            d.agents[i] = w.spawn(trees[0], options_for(i, mode, d.listener));  // (in the next frames: the slot is reused)
        }
    }
    if (frame == 27) {
        // A new agent of the other mode in a freed slot whose hint is its last agent's (a sleeping
        // mover's: the end of a move): the end entry must decline for it.
        for (std::size_t i = 5; i < d.agents.size(); i += 13) {
            w.despawn(d.agents[i]);
            const Mode other = mode == Mode::Event ? Mode::Polling : Mode::Event;
            d.agents[i] = w.spawn(trees[0], options_for(i, other, d.listener));
        }
    }
    if (hinted && d.agents.size() > 2) {
        if (frame == 20) w.set_listener(d.agents[2], &d.agent_2);  // after its resume, before the tick
        if (frame == 24) w.set_listener(d.agents[2], nullptr);
    }
}

/// Both Worlds agree: the frame's metrics, and every agent's state and counts.
void check_same(const FrameMetrics& general_frame, const FrameMetrics& hinted_frame, Driven& general, Driven& hinted) {
    CHECK(general_frame.agents_stepped == hinted_frame.agents_stepped);
    CHECK(general_frame.events_handled == hinted_frame.events_handled);
    CHECK(general_frame.guards_evaluated == hinted_frame.guards_evaluated);
    CHECK(general_frame.behaviors_updated == hinted_frame.behaviors_updated);
    CHECK(general_frame.timers_fired == hinted_frame.timers_fired);
    REQUIRE(general.agents.size() == hinted.agents.size());
    for (std::size_t i = 0; i < general.agents.size(); ++i) {
        CAPTURE(i);
        const Agent& g = general.world->at(general.agents[i]);
        const Agent& h = hinted.world->at(hinted.agents[i]);
        CHECK(save_agent(g) == save_agent(h));
        CHECK(g.stats().nodes_visited == h.stats().nodes_visited);
        CHECK(g.stats().guards_evaluated == h.stats().guards_evaluated);
        CHECK(g.stats().updates == h.stats().updates);
        CHECK(g.ticks() == h.ticks());
    }
}

/// Runs the drive's frames on a general World and a hinted one (with the drive's threads), and, when
/// its restore_at >= 0, a third World restored from the hinted one's snapshot before that frame.
void run_against_general(Mode mode, const DriveOptions& o) {
    const Registry registry = move_registry();
    const std::vector<Tree> trees = move_trees(registry);
    test::TraceRecorder rec;
    Driven general, hinted, restored;
    general.listener = &rec;
    hinted.world->set_threads(o.threads);
    spawn_all(general, trees, o, mode);
    spawn_all(hinted, trees, o, mode);
    const std::size_t count = o.count;
    bool have_restored = false;
    for (int frame = 0; frame < o.frames; ++frame) {
        CAPTURE(frame);
        if (frame == o.restore_at) {
            const std::vector<std::byte> bytes = save_world(*hinted.world);
            restore_world(*restored.world, trees, bytes);
            restored.agents = hinted.agents;  // (the same handles)
            have_restored = true;
        }
        drive(general, trees, frame, mode, false);
        drive(hinted, trees, frame, mode, true);
        if (have_restored) drive(restored, trees, frame, mode, false);
        const FrameMetrics g = general.world->step(50ms);
        const FrameMetrics h = hinted.world->step(50ms);
        check_same(g, h, general, hinted);
        // Agent 2's trace while it has a listener in the hinted World: every event the general path
        // reports (the hinted entries decline for an agent with a listener).
        // (With a budget or LOD intervals agent 2 may not be stepped in frame 20.)
        if (frame == 20 && count > 2 && o.budget == 0 && !o.lod) CHECK(!general.agent_2.all(20).empty());
        if (frame >= 20 && frame < 24 && count > 2)
            CHECK(hinted.agent_2.all(static_cast<std::uint64_t>(frame)) == general.agent_2.all(static_cast<std::uint64_t>(frame)));
        if (have_restored) check_same(g, restored.world->step(50ms), general, restored);
    }
}

}  // namespace

TEST_CASE("World move ticks: the hinted entries give the general path's state and counts, with stale hints") {
    test::in_both_modes([&](Mode mode) { run_against_general(mode, {.count = 40, .frames = 60}); });
}

TEST_CASE("World move ticks: a World restored in the middle of its moves steps as the general path") {
    test::in_both_modes([&](Mode mode) { run_against_general(mode, {.count = 40, .frames = 40, .restore_at = 13}); });
}

TEST_CASE("World move ticks: four threads take the same entries and give the same state and counts") {
    // Enough agents that a frame's awake ones (about a third resumed each frame, and their restarts)
    // reach the 512 from which a World ticks on its threads.
    test::in_both_modes([&](Mode mode) { run_against_general(mode, {.count = 3000, .frames = 16, .threads = 4}); });
}

TEST_CASE("World move ticks: the loop's variants (blocks prefetched, a budget, LOD) and a move with onTerminate") {
    // The serial loop is chosen per frame (World::step_serial: hinted or not, blocks prefetched or
    // not); the budget and the LOD intervals are tested in it per agent. A move whose action has an
    // onTerminate is never the lean end's (the entry declines). Each against the general path.
    test::in_both_modes([&](Mode mode) {
        run_against_general(mode, {.more_trees = true});
        run_against_general(mode, {.count = 60, .more_trees = true, .budget = 17});
        run_against_general(mode, {.count = 60, .more_trees = true, .lod = true});
        run_against_general(mode, {.count = 60, .frames = 40, .restore_at = 21, .more_trees = true, .budget = 23, .lod = true});
    });
}

TEST_CASE("World move ticks: a move's two ticks, one agent, frame by frame") {
    // The hinted World's frames of one agent's moves, counted: the restart tick (after which it
    // sleeps) and the end tick (after which it stays awake for the restart), so that an entry that
    // left the awake bit wrong, or counted wrong, fails here whatever the general path does.
    const Registry registry = move_registry();
    const std::vector<Tree> trees = move_trees(registry);
    World world;
    const AgentHandle h = world.spawn(trees[0], {.mode = Mode::Event});
    CHECK(world.step(50ms).agents_stepped == 1);  // the first start: the move suspends, the agent sleeps
    CHECK(world.step(50ms).agents_stepped == 0);
    for (int move = 0; move < 4; ++move) {
        CAPTURE(move);
        const std::vector<SuspendedAction> s = suspended_actions(world.at(h));
        REQUIRE(s.size() == 1);
        REQUIRE(world.resume(s[0].handle, Status::Success));
        const FrameMetrics end = world.step(50ms);  // the end of the move (the hinted end entry from move 0)
        CHECK(end.agents_stepped == 1);
        CHECK(end.events_handled == 1);
        CHECK(world.at(h).status(0) == Status::Success);
        const FrameMetrics restart = world.step(50ms);  // the root's restart (the hinted restart entry)
        CHECK(restart.agents_stepped == 1);
        CHECK(restart.events_handled == 1);
        CHECK(restart.guards_evaluated == 1);
        CHECK(world.at(h).status(4) == Status::Running);
        CHECK(world.step(50ms).agents_stepped == 0);  // asleep until the next resume
    }
    CHECK(world.at(h).stats().nodes_visited == 1 + 4 * 2);
    // A listener set between the resume and the end tick (the slot's hint names the end entry): the
    // entries decline, and the general path reports every event of both ticks.
    test::TraceRecorder rec;
    REQUIRE(world.resume(suspended_actions(world.at(h)).at(0).handle, Status::Success));
    world.set_listener(h, &rec);
    const std::uint64_t end_tick = world.frame();
    CHECK(world.step(50ms).agents_stepped == 1);
    CHECK(rec.all(end_tick) == "4:T(Success) 0:T(Success)");
    CHECK(world.step(50ms).agents_stepped == 1);
    CHECK(rec.all(end_tick + 1) == "0:I 1:G(false) 4:I");
}

// ---- the restart entry's exits (Runtime::restart_tick_checked) -------------------------------------------

namespace {

/// What the next start of an agent's move does once it has kept its handle (StartScript::then).
enum class Start { Keep, Throw, ResumeSuccess, ResumeFailure, Abort, Despawn, WriteEnemy };

/// One World's script for its agents' starts (every agent's user object), by slot index: the same
/// slots and the same script in the general World and the hinted one. With threads, the starts of a
/// frame run on several threads, each slot's on one: so one element per slot, and atomic counts.
struct StartScript {
    World* world = nullptr;
    std::vector<Start> then;            // what the slot's next start does (then Keep)
    std::vector<ResumeHandle> handles;  // the slot's last start's handle (run 0: none yet)
    std::atomic<int> starts{0};
    std::atomic<int> refused_resumes{0};  // resumes of its own handle that a start saw refused (none expected)
    explicit StartScript(std::size_t slots) : then(slots, Start::Keep), handles(slots) {}
};

/// Move: a latent move whose start does what its agent's script says (once: the slot's entry goes
/// back to Keep); Fight, running until aborted.
Registry scripted_registry() {
    Registry registry;
    registry.add_latent_action("Move", [](ActionContext& ctx, const ResumeHandle& h) {
        StartScript& script = ctx.user<StartScript>();
        ++script.starts;
        script.handles.at(h.agent.index) = h;
        const Start then = std::exchange(script.then.at(h.agent.index), Start::Keep);
        switch (then) {
        case Start::Keep: break;
        case Start::Throw: throw std::runtime_error("no path");
        case Start::ResumeSuccess:
            if (!ctx.agent().resume(h, Status::Success)) ++script.refused_resumes;
            break;
        case Start::ResumeFailure:
            if (!ctx.agent().resume(h, Status::Failure)) ++script.refused_resumes;
            break;
        case Start::Abort: ctx.agent().abort(); break;
        case Start::Despawn: script.world->despawn(h.agent); break;
        case Start::WriteEnemy: ctx.blackboard().set("enemy", true); break;
        }
    });
    registry.add_action("Fight", [](ActionContext&) { return Status::Running; });
    return registry;
}

/// The restart's plan over two skipped guards of both kinds it reads, to the latent Move, with a next
/// child for Move's Failure: 0 ActiveSelector, 1 Sequence (leading condition 2, check(enemy)), 3 Fight,
/// 4 Sequence (precondition is(alarm)), 5 Fight, 6 Move, 7 AlwaysSuccess.
Tree scripted_tree(const Registry& registry) {
    return TreeBuilder("scripted", registry)
        .key<bool>("enemy")
        .key<bool>("alarm")
        .active_selector()
            .sequence().check("enemy").action("Fight").back()
            .sequence().precondition(Predicate::is("alarm")).action("Fight").back()
            .action("Move")
            .always_success()
        .back()
        .end();
}

/// A World of scripted agents (`listener` on every one of them: the general path) and its script.
struct Scripted {
    std::unique_ptr<World> world = std::make_unique<World>();
    StartScript script;
    std::vector<AgentHandle> agents;
    TraceListener* listener = nullptr;
    explicit Scripted(std::size_t slots) : script(slots) { script.world = world.get(); }
    AgentHandle spawn(const Tree& tree, std::size_t i, Mode mode) {
        return world->spawn(tree, SpawnOptions{.mode = mode, .seed = i, .listener = listener, .user = &script});
    }
};

/// Sets the low 32 bits of the run id of the plan's leaf (Move) of agent `a` (between ticks).
void set_move_run_low(Agent& a, std::uint32_t low) {
    const detail::TreeData& t = detail::EngineAccess::tree_data(a.tree());
    REQUIRE(t.root_restart.leaf_latent != nullptr);
    std::memcpy(detail::SnapshotAccess::block(a) + t.root_restart.leaf_run_id_offset, &low, sizeof low);
}

/// Before frame `frame` (the same in both Worlds): a new agent in the slot of each despawned one,
/// resumes (with Success, some with Failure), what the next starts do, guard writes (some of which
/// hold at a restart), and, before frame 6, every Move's run id two runs short of its 32-bit wrap.
void drive_starts(Scripted& d, const Tree& tree, int frame, Mode mode, bool threaded) {
    World& w = *d.world;
    for (std::size_t i = 0; i < d.agents.size(); ++i) {
        if (!w.agent(d.agents[i])) d.agents[i] = d.spawn(tree, i, mode);  // (its slot: the same in both)
        Agent& a = w.at(d.agents[i]);
        const std::uint32_t r = mix(static_cast<std::uint64_t>(frame) * 100'019 + i);
        if (frame == 6) set_move_run_low(a, 0xFFFF'FFFEu);
        // Every kind of start in turn, one agent in three at a time (the others keep their handle).
        static constexpr Start kinds[] = {Start::Throw, Start::ResumeSuccess, Start::ResumeFailure, Start::Abort,
                                          Start::Despawn, Start::WriteEnemy};
        if (r % 3 == 0) {
            const Start then = kinds[(r / 3 + static_cast<std::uint32_t>(frame)) % 6];
            if (!threaded || then != Start::Despawn) d.script.then.at(d.agents[i].index) = then;
        }
        if (r % 11 == 0) a.blackboard().set("enemy", true);
        else if (r % 13 == 0) a.blackboard().set("alarm", true);
        else if (r % 2 == 0) {
            a.blackboard().set("enemy", false);
            a.blackboard().set("alarm", false);
        }
        for (const SuspendedAction& s : suspended_actions(a))
            if (r % 7 != 6) w.resume(s.handle, r % 17 == 5 ? Status::Failure : Status::Success);
    }
}

/// The general World (a listener on every agent) and the hinted one (`threads` threads) driven alike
/// for `frames` frames: after each, the same frame metrics, live agents, state bytes and counts, and
/// the same handles given to the starts.
void run_starts_against_general(Mode mode, std::size_t count, int frames, std::uint32_t threads) {
    const Registry registry = scripted_registry();
    const Tree tree = scripted_tree(registry);
    test::TraceRecorder rec;
    Scripted general(count), hinted(count);  // (a despawned agent's slot is the next spawn's: count slots)
    general.listener = &rec;
    hinted.world->set_threads(threads);
    for (std::size_t i = 0; i < count; ++i) {
        general.agents.push_back(general.spawn(tree, i, mode));
        hinted.agents.push_back(hinted.spawn(tree, i, mode));
    }
    bool wrapped = false;
    for (int frame = 0; frame < frames; ++frame) {
        CAPTURE(frame);
        drive_starts(general, tree, frame, mode, threads > 1);
        drive_starts(hinted, tree, frame, mode, threads > 1);
        const FrameMetrics g = general.world->step(50ms);
        const FrameMetrics h = hinted.world->step(50ms);
        CHECK(g.agents_stepped == h.agents_stepped);
        CHECK(g.events_handled == h.events_handled);
        CHECK(g.guards_evaluated == h.guards_evaluated);
        CHECK(g.behaviors_updated == h.behaviors_updated);
        for (std::size_t i = 0; i < count; ++i) {
            CAPTURE(i);
            const Agent* ga = general.world->agent(general.agents[i]);
            const Agent* ha = hinted.world->agent(hinted.agents[i]);
            REQUIRE((ga == nullptr) == (ha == nullptr));
            REQUIRE(general.agents[i] == hinted.agents[i]);
            if (!ga) continue;
            CHECK(save_agent(*ga) == save_agent(*ha));
            CHECK(ga->stats().nodes_visited == ha->stats().nodes_visited);
            CHECK(ga->stats().guards_evaluated == ha->stats().guards_evaluated);
            CHECK(ga->stats().updates == ha->stats().updates);
            CHECK(ga->ticks() == ha->ticks());
        }
        CHECK(general.script.starts == hinted.script.starts);
        CHECK(general.script.refused_resumes == 0);
        CHECK(hinted.script.refused_resumes == 0);
        for (std::uint32_t slot = 0; slot < count; ++slot) {
            CAPTURE(slot);
            const ResumeHandle& handle = general.script.handles[slot];
            const ResumeHandle& other = hinted.script.handles[slot];
            CHECK(handle.agent == other.agent);
            CHECK(handle.node == other.node);
            CHECK(handle.run == other.run);
            if (handle.run != 0) CHECK(handle.agent.index == slot);
            if (other.run > 0xFFFF'FFFFu) wrapped = true;
        }
    }
    CHECK(wrapped);  // (some restart's run id went past 2^32 - 1)
}

}  // namespace

TEST_CASE("World move ticks: the restart entry's every exit gives the general path's state and handles") {
    // Starts that throw, call abort(), resume their own handle (with Success or Failure), despawn
    // their agent or write a skipped guard's key; skipped guards that hold at the restart; run ids
    // that wrap past 32 bits: against a World whose agents all take the general path.
    test::in_both_modes([&](Mode mode) { run_starts_against_general(mode, 48, 40, 1); });
}

TEST_CASE("World move ticks: the restart entry's exits on four threads") {
    // (Enough agents that the frames tick on the threads; no despawn, which the parallel phase refuses.)
    test::in_both_modes([&](Mode mode) { run_starts_against_general(mode, 3000, 14, 4); });
}
