// A completed latent move and the restart after it (docs/semantics.md, "A completed move"): the event
// scheduler ends a resumed action with its ancestors, and restarts a root whose guarded first
// children stay false, on short paths decided when the tree is compiled, for agents without a trace
// listener. These tests hold both paths to the general one: an agent with a listener (which always
// takes the general path) gives the exact lifecycle trace, and an agent without one, driven the same
// way, must have exactly the same state after every tick (the snapshot bytes of its whole engine
// state: statuses, flags, queue ring, run ids, counters, clock), in trees where the paths apply and
// in trees where they must not.
#include "support/both_modes.hpp"

#include <ebt/ebt.hpp>
#include <ebt/snapshot.hpp>

#include <doctest/doctest.h>

#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

using namespace ebt;
using namespace std::chrono_literals;

namespace {

constexpr Status kS = Status::Success;
constexpr Status kF = Status::Failure;

/// The actions of these trees: Walk, a latent move whose handle is kept per agent (by serial); Fight,
/// running until aborted; Ends, a latent move with an onTerminate (which the short path does not take).
struct Moves {
    Registry registry;
    std::map<std::uint64_t, ResumeHandle> walks;
    int ends_terminated = 0;

    bool spot = false;  // Spotter's start writes enemy = true

    Moves() {
        registry.add_latent_action("Walk", [this](ActionContext& ctx, const ResumeHandle& h) { walks[ctx.agent().serial()] = h; });
        registry.add_latent_action("Spotter", [this](ActionContext& ctx, const ResumeHandle& h) {
            walks[ctx.agent().serial()] = h;
            if (spot) ctx.blackboard().set("enemy", true);
        });
        registry.add_action("Fight", [](ActionContext&) { return Status::Running; });
        LatentActionSpec ends;
        ends.start = [this](ActionContext& ctx, const ResumeHandle& h) { walks[ctx.agent().serial()] = h; };
        ends.on_terminate = [this](ActionContext&, Status) { ++ends_terminated; };
        registry.add_latent_action("Ends", std::move(ends));
    }
    bool resume(Agent& agent, Status s) { return agent.resume(walks.at(agent.serial()), s); }
};

/// The move tree of the sweep's guard_b world: 0 ActiveSelector, 1 Sequence (guarded by its leading
/// condition 2, check(enemy)), 3 Fight, 4 Walk.
Tree guard_b_like(const Registry& registry, const char* walk = "Walk") {
    return TreeBuilder("moves", registry)
        .key<bool>("enemy")
        .active_selector()
            .sequence().check("enemy").action("Fight").back()
            .action(walk)
        .back()
        .end();
}

/// Two agents of one tree driven alike: `traced` with a trace recorder (always the general path),
/// `plain` without (the short paths where they apply).
struct Pair {
    test::TraceRecorder rec;
    Agent traced;
    Agent plain;
    Pair(const Tree& tree, Mode mode, bool restart_on_end = true)
        : traced(tree, AgentOptions{.mode = mode, .restart_on_end = restart_on_end, .listener = &rec}),
          plain(tree, AgentOptions{.mode = mode, .restart_on_end = restart_on_end}) {}

    /// Ticks both and checks that they agree in every byte of their state; returns the traced
    /// agent's lifecycle trace of that tick.
    std::string tick() {
        const std::uint64_t tick = traced.ticks();
        const Status a = traced.tick(100ms);
        const Status b = plain.tick(100ms);
        CHECK(a == b);
        check_same();
        return rec.tick(tick);
    }
    void check_same() {
        CHECK(save_agent(traced) == save_agent(plain));
        CHECK(traced.stats().guards_evaluated == plain.stats().guards_evaluated);
        CHECK(traced.stats().nodes_visited == plain.stats().nodes_visited);
        CHECK(traced.stats().updates == plain.stats().updates);
        for (NodeIndex n = 0; n < traced.tree().size(); ++n) CHECK(traced.status(n) == plain.status(n));
    }
    void set(const char* key, bool v) {
        traced.blackboard().set(key, v);
        plain.blackboard().set(key, v);
    }
};

}  // namespace

TEST_CASE("Move paths: a completed move and the restart after it, exact trace; the same state without a listener") {
    test::in_both_modes([&](Mode mode) {
        Moves m;
        const Tree tree = guard_b_like(m.registry);
        Pair p(tree, mode);
        CHECK(p.tick() == "0:I 4:I");
        CHECK(p.rec.all(0) == "0:I 1:G(false) 4:I");
        for (int move = 0; move < 3; ++move) {
            CAPTURE(move);
            CHECK(p.tick() == "");  // suspended: nothing to do
            REQUIRE(m.resume(p.traced, kS));
            REQUIRE(m.resume(p.plain, kS));
            p.check_same();
            CHECK(p.tick() == "4:T(Success) 0:T(Success)");
            CHECK(p.plain.status(0) == kS);
            const std::uint64_t restart = p.traced.ticks();
            CHECK(p.tick() == "0:I 4:I");  // the root restarts, its guard is false, the next move starts
            CHECK(p.rec.all(restart) == "0:I 1:G(false) 4:I");
            CHECK(p.plain.status(4) == Status::Running);
        }
        CHECK(p.plain.stats().guards_evaluated == (mode == Mode::Event ? 4u : 10u));  // polling: every tick
        CHECK(p.plain.stats().updates == 0);
    });
}

TEST_CASE("Move paths: where they must not apply, the general path gives the same state") {
    test::in_both_modes([&](Mode mode) {
        Moves m;
        SUBCASE("the guard holds at the restart: the fight branch starts") {
            Pair p(guard_b_like(m.registry), mode);
            CHECK(p.tick() == "0:I 4:I");
            REQUIRE(m.resume(p.traced, kS));
            REQUIRE(m.resume(p.plain, kS));
            CHECK(p.tick() == "4:T(Success) 0:T(Success)");
            p.set("enemy", true);
            p.check_same();
            CHECK(p.tick() == "0:I 1:I 3:I 3:U");
            CHECK(p.tick() == "3:U");
        }
        SUBCASE("the next move's start writes the skipped guard's key: the guard fires on the next tick") {
            // restart_root_plainly leaves out selector_advance's mark_lower_guards_live: the write
            // during the start schedules the root's check itself (the skipped guard is live).
            Pair p(guard_b_like(m.registry, "Spotter"), mode);
            CHECK(p.tick() == "0:I 4:I");
            REQUIRE(m.resume(p.traced, kS));
            REQUIRE(m.resume(p.plain, kS));
            CHECK(p.tick() == "4:T(Success) 0:T(Success)");
            m.spot = true;
            CHECK(p.tick() == "0:I 4:I");
            CHECK(p.tick() == "4:T(Aborted) 1:I 3:I 3:U");
            CHECK(p.tick() == "3:U");
        }
        SUBCASE("a move that fails: the selector has no next child, the root fails") {
            Pair p(guard_b_like(m.registry), mode);
            CHECK(p.tick() == "0:I 4:I");
            REQUIRE(m.resume(p.traced, kF));
            REQUIRE(m.resume(p.plain, kF));
            CHECK(p.tick() == "4:T(Failure) 0:T(Failure)");
            CHECK(p.tick() == "0:I 4:I");
        }
        SUBCASE("a move with an onTerminate") {
            Pair p(guard_b_like(m.registry, "Ends"), mode);
            CHECK(p.tick() == "0:I 4:I");
            REQUIRE(m.resume(p.traced, kS));
            REQUIRE(m.resume(p.plain, kS));
            CHECK(p.tick() == "4:T(Success) 0:T(Success)");
            CHECK(m.ends_terminated == 2);
            CHECK(p.tick() == "0:I 4:I");
        }
        SUBCASE("a move that is not its sequence's last child: the sequence moves on") {
            // 0 Sequence, 1 Walk, 2 AlwaysSuccess
            Pair p(TreeBuilder("walk-then", m.registry).sequence().action("Walk").always_success().back().end(), mode);
            CHECK(p.tick() == "0:I 1:I");
            REQUIRE(m.resume(p.traced, kS));
            REQUIRE(m.resume(p.plain, kS));
            CHECK(p.tick() == "1:T(Success) 2:I 2:U 2:T(Success) 0:T(Success)");
            CHECK(p.tick() == "0:I 1:I");
        }
        SUBCASE("a move under an Inverter: the root fails") {
            // 0 Inverter, 1 Walk
            Pair p(TreeBuilder("inverted", m.registry).inverter().action("Walk").back().end(), mode);
            CHECK(p.tick() == "0:I 1:I");
            REQUIRE(m.resume(p.traced, kS));
            REQUIRE(m.resume(p.plain, kS));
            CHECK(p.tick() == "1:T(Success) 0:T(Failure)");
            CHECK(p.tick() == "0:I 1:I");
        }
        SUBCASE("a root Sequence restarts through the general path; a move as the last child ends it") {
            // 0 Sequence, 1 AlwaysSuccess, 2 Walk
            Pair p(TreeBuilder("then-walk", m.registry).sequence().always_success().action("Walk").back().end(), mode);
            CHECK(p.tick() == "0:I 1:I 1:U 1:T(Success) 2:I");
            REQUIRE(m.resume(p.traced, kS));
            REQUIRE(m.resume(p.plain, kS));
            CHECK(p.tick() == "2:T(Success) 0:T(Success)");
            CHECK(p.tick() == "0:I 1:I 1:U 1:T(Success) 2:I");
        }
        SUBCASE("a root that does not restart: the agent stops") {
            Pair p(guard_b_like(m.registry), mode, /*restart_on_end=*/false);
            CHECK(p.tick() == "0:I 4:I");
            REQUIRE(m.resume(p.traced, kS));
            REQUIRE(m.resume(p.plain, kS));
            CHECK(p.tick() == "4:T(Success) 0:T(Success)");
            CHECK(p.tick() == "");
            CHECK(p.plain.status(0) == kS);
            CHECK_FALSE(p.plain.has_pending_work());
        }
        SUBCASE("an abort between the move's two ticks") {
            Pair p(guard_b_like(m.registry), mode);
            CHECK(p.tick() == "0:I 4:I");
            REQUIRE(m.resume(p.traced, kS));
            REQUIRE(m.resume(p.plain, kS));
            CHECK(p.tick() == "4:T(Success) 0:T(Success)");
            p.traced.abort();
            p.plain.abort();
            p.check_same();
            CHECK(p.tick() == "0:I 4:I");
        }
    });
}

TEST_CASE("Move paths: a snapshot in the middle of a move restores and runs on the same") {
    Moves m;
    const Tree tree = guard_b_like(m.registry);
    Agent agent(tree, {.mode = Mode::Event});
    agent.tick(100ms);
    REQUIRE(m.resume(agent, kS));
    const std::vector<std::byte> resumed = save_agent(agent);  // resumed, not yet ended
    agent.tick(100ms);
    const std::vector<std::byte> ended = save_agent(agent);    // ended, the restart pending
    agent.tick(100ms);
    const std::vector<std::byte> restarted = save_agent(agent);

    Agent from_resumed = restore_agent(tree, resumed);
    from_resumed.tick(100ms);
    CHECK(save_agent(from_resumed) == ended);
    from_resumed.tick(100ms);
    CHECK(save_agent(from_resumed) == restarted);
    CHECK(from_resumed.status(4) == Status::Running);

    Agent from_ended = restore_agent(tree, ended);
    from_ended.tick(100ms);
    CHECK(save_agent(from_ended) == restarted);
}

TEST_CASE("Move paths: through a World, the frame metrics are those of the general path") {
    Moves m;
    const Tree tree = guard_b_like(m.registry);
    test::TraceRecorder rec;
    World traced, plain;
    std::vector<AgentHandle> t_agents, p_agents;
    for (std::uint64_t i = 0; i < 8; ++i) {
        t_agents.push_back(traced.spawn(tree, {.mode = Mode::Event, .seed = i, .listener = &rec}));
        p_agents.push_back(plain.spawn(tree, {.mode = Mode::Event, .seed = i}));
    }
    for (int frame = 0; frame < 12; ++frame) {
        CAPTURE(frame);
        if (frame % 3 == 1) {
            std::vector<ResumeHandle> t_moves, p_moves;
            for (std::size_t i = 0; i < t_agents.size(); i += 1 + static_cast<std::size_t>(frame % 2)) {
                t_moves.push_back(m.walks.at(traced.at(t_agents[i]).serial()));
                p_moves.push_back(m.walks.at(plain.at(p_agents[i]).serial()));
            }
            CHECK(traced.resume_all(t_moves, kS) == t_moves.size());
            CHECK(plain.resume_all(p_moves, kS) == p_moves.size());
        }
        const FrameMetrics a = traced.step(50ms);
        const FrameMetrics b = plain.step(50ms);
        CHECK(a.agents_stepped == b.agents_stepped);
        CHECK(a.events_handled == b.events_handled);
        CHECK(a.guards_evaluated == b.guards_evaluated);
        CHECK(a.behaviors_updated == b.behaviors_updated);
        CHECK(a.timers_fired == b.timers_fired);
        for (std::size_t i = 0; i < t_agents.size(); ++i) CHECK(save_agent(traced.at(t_agents[i])) == save_agent(plain.at(p_agents[i])));
    }
}

TEST_CASE("Move paths: through a World, an agent goes to sleep after its tick with and without a deadline") {
    // World::step_slot puts an agent to sleep after its tick by clearing its awake bit alone when it
    // has no deadline and no slot has a timer (a move's restart tick: its new move suspends); else
    // through fall_asleep, which arms the slot's timer for the deadline or disarms its stale one.
    // Three agents, and every frame's count of stepped agents checked (50 ms frames): `timed` (slot 0)
    // goes to sleep with a deadline while no slot has a timer yet, and must wake for it at 1 s (its
    // root fails then and it stops); `two_moves` ends its first move early, so its Timeout's deadline
    // (kept until it falls due) wakes it once at 1 s, after which it sleeps with none; `mover`
    // completes a move (its end tick, then its restart tick and sleep) while timers are armed and
    // another once none is.
    Moves m;
    const Tree timed_tree = TreeBuilder("timed", m.registry).timeout(1000ms).action("Walk").back().end();
    const Tree two_moves_tree = TreeBuilder("two", m.registry)
                                    .sequence()
                                        .timeout(1000ms).action("Walk").back()
                                        .action("Walk")
                                    .back()
                                    .end();
    World world;
    world.spawn(timed_tree, {.mode = Mode::Event, .restart_on_end = false});
    const AgentHandle two_moves = world.spawn(two_moves_tree, {.mode = Mode::Event});
    const AgentHandle mover = world.spawn(guard_b_like(m.registry), {.mode = Mode::Event});
    const auto resume = [&](AgentHandle h) {
        CHECK(world.resume_all(std::vector{m.walks.at(world.at(h).serial())}, kS) == 1);
    };
    // The agents each frame must step; every other frame none.
    const std::map<int, std::uint32_t> stepped = {
        {0, 3},             // the first ticks: every agent starts
        {2, 1},             // two_moves (resumed): its first move ends, its second starts
        {4, 1}, {30, 1},    // mover (resumed): a move's end tick, after which it stays awake...
        {5, 1}, {31, 1},    // ...and its restart tick, after which it sleeps
        {20, 2},            // timed's timeout (1 s: it stops) and two_moves' deadline of its ended Timeout
    };
    for (int frame = 0; frame < 44; ++frame) {
        CAPTURE(frame);
        if (frame == 2) resume(two_moves);
        if (frame == 4 || frame == 30) resume(mover);
        const auto it = stepped.find(frame);
        CHECK(world.step(50ms).agents_stepped == (it == stepped.end() ? 0u : it->second));
    }
}

// ---- a latent action's start, called directly (Runtime::enter, ActionCall::latent) --------------------

namespace {

/// Latent actions whose starts do what game code may do there: keep the handle (Walk), throw (Throws),
/// ask for an abort (Aborts), resume at once (Resumes). Registered twice: as add_latent_action makes
/// them (`direct`: the engine recognises the start and calls it itself) and as copies whose
/// onInitialize is wrapped, as a recorder wraps it (`wrapped`: the general path, the onInitialize
/// std::function that suspends and calls start). Same names, so the trees are the same definition.
struct LatentStarts {
    Registry direct, wrapped;
    std::map<std::uint64_t, ResumeHandle> handles;  // by agent serial, the last run's
    int starts = 0;

    LatentStarts() {
        const auto keep = [this](ActionContext& ctx, const ResumeHandle& h) {
            ++starts;
            handles[ctx.agent().serial()] = h;
        };
        direct.add_latent_action("Walk", keep);
        direct.add_latent_action("Throws", [keep](ActionContext& ctx, const ResumeHandle& h) {
            keep(ctx, h);
            throw std::runtime_error("no path");
        });
        direct.add_latent_action("Aborts", [keep](ActionContext& ctx, const ResumeHandle& h) {
            keep(ctx, h);
            ctx.agent().abort();
        });
        direct.add_latent_action("Resumes", [keep](ActionContext& ctx, const ResumeHandle& h) {
            keep(ctx, h);
            CHECK(ctx.agent().resume(h, Status::Success));
        });
        for (const std::string& name : direct.action_names()) {
            ActionSpec spec = *direct.find_action(name);
            spec.on_initialize = [f = spec.on_initialize](ActionContext& ctx) { f(ctx); };
            wrapped.add_action(name, std::move(spec));
        }
    }
};

/// 0 ActiveSelector, 1 Sequence (its leading condition 2, check(enemy)), 3 `fight`, 4 `move`: the
/// guard_b tree with the actions named.
Tree move_tree(const Registry& registry, const char* fight, const char* move) {
    return TreeBuilder("moves", registry)
        .key<bool>("enemy")
        .active_selector()
            .sequence().check("enemy").action(fight).back()
            .action(move)
        .back()
        .end();
}

}  // namespace

TEST_CASE("Move paths: a latent action's start called directly gives the trace and state of its onInitialize") {
    for (const char* move : {"Walk", "Throws", "Aborts", "Resumes"}) {
        CAPTURE(move);
        test::in_both_modes([&](Mode mode) {
            for (const bool listened : {true, false}) {  // (without a listener, event mode takes the short paths)
                CAPTURE(listened);
                LatentStarts s;
                test::TraceRecorder direct_rec, wrapped_rec;
                Agent direct(move_tree(s.direct, "Walk", move), {.mode = mode, .listener = listened ? &direct_rec : nullptr});
                Agent wrapped(move_tree(s.wrapped, "Walk", move), {.mode = mode, .listener = listened ? &wrapped_rec : nullptr});
                for (int tick = 0; tick < 12; ++tick) {
                    CAPTURE(tick);
                    if (tick % 4 == 2) {  // a move ends (Failure every other time); a stale handle is refused alike
                        const Status ends = tick % 8 == 2 ? Status::Success : Status::Failure;
                        CHECK(direct.resume(s.handles.at(direct.serial()), ends) ==
                              wrapped.resume(s.handles.at(wrapped.serial()), ends));
                    }
                    if (tick == 9) {  // the fight branch, then back
                        direct.blackboard().set("enemy", true);
                        wrapped.blackboard().set("enemy", true);
                    }
                    if (tick == 10) {
                        direct.blackboard().set("enemy", false);
                        wrapped.blackboard().set("enemy", false);
                    }
                    CHECK(direct.tick(100ms) == wrapped.tick(100ms));
                    CHECK(save_agent(direct) == save_agent(wrapped));
                    CHECK(direct.stats().updates == wrapped.stats().updates);
                    CHECK(direct.stats().guards_evaluated == wrapped.stats().guards_evaluated);
                    CHECK(direct.stats().nodes_visited == wrapped.stats().nodes_visited);
                    const ResumeHandle& d = s.handles.at(direct.serial());
                    const ResumeHandle& w = s.handles.at(wrapped.serial());
                    CHECK(d.node == w.node);
                    CHECK(d.run == w.run);
                    CHECK(d.agent_serial == direct.serial());
                    CHECK(d.agent == AgentHandle{});  // (not in a World)
                }
                if (listened) {
                    REQUIRE(direct_rec.entries.size() == wrapped_rec.entries.size());
                    for (std::size_t i = 0; i < direct_rec.entries.size(); ++i) {
                        CAPTURE(i);
                        CHECK(test::TraceRecorder::render(direct_rec.entries[i].event) ==
                              test::TraceRecorder::render(wrapped_rec.entries[i].event));
                        CHECK(direct_rec.entries[i].event.tick == wrapped_rec.entries[i].event.tick);
                        CHECK(direct_rec.entries[i].message == wrapped_rec.entries[i].message);
                    }
                }
                CHECK(s.starts >= 4);
            }
        });
    }
}

TEST_CASE("Move paths: through a World, a latent start called directly gets the agent's handle in the World") {
    LatentStarts s;
    const Tree tree = move_tree(s.direct, "Walk", "Walk");
    const Tree wrapped_tree = move_tree(s.wrapped, "Walk", "Walk");
    World world;
    std::vector<AgentHandle> agents;
    for (std::uint64_t i = 0; i < 6; ++i) agents.push_back(world.spawn(i % 2 == 0 ? tree : wrapped_tree, {.mode = Mode::Event, .seed = i}));
    world.despawn(agents[2]);  // a later spawn reuses the slot with the next generation
    world.step(50ms);
    agents[2] = world.spawn(tree, {.mode = Mode::Event, .seed = 2});
    for (int frame = 0; frame < 9; ++frame) {
        CAPTURE(frame);
        world.step(50ms);
        for (const AgentHandle h : agents) {
            const ResumeHandle& run = s.handles.at(world.at(h).serial());
            CHECK(run.agent == h);
            CHECK(run.node == 4);
        }
        std::vector<ResumeHandle> moves;
        for (const AgentHandle h : agents) moves.push_back(s.handles.at(world.at(h).serial()));
        if (frame % 3 == 0) CHECK(world.resume_all(moves, Status::Success) == moves.size());
    }
    for (const std::size_t i : {0u, 4u}) {  // direct (even) and wrapped (odd) agents of the same age ran alike
        const Agent& direct = world.at(agents[i]);
        const Agent& wrapped = world.at(agents[i + 1]);
        for (NodeIndex n = 0; n < direct.tree().size(); ++n) CHECK(direct.status(n) == wrapped.status(n));
        CHECK(direct.stats().guards_evaluated == wrapped.stats().guards_evaluated);
        CHECK(direct.stats().nodes_visited == wrapped.stats().nodes_visited);
        CHECK(s.handles.at(direct.serial()).run == s.handles.at(wrapped.serial()).run);
    }
}

// ---- the restart's latent leaf, entered on the plan (Runtime::restart_on_plan) -----------------------

namespace {

/// What the next move's start does once it has kept its handle (RestartMoves::then).
enum class Then { Keep, Throw, ResumeSuccess, ResumeFailure, Abort, WriteEnemy };

/// The actions of the restart's trees: Move, a latent move whose start does what `then` says; Fight,
/// running until aborted; Remembers, a latent move with user memory (the plan leaves it to enter,
/// which zeroes the memory), whose start records what it finds there and writes it; Suspends, an
/// action that suspends itself in an onInitialize of its own (not a latent start: enter's path).
struct RestartMoves {
    Registry registry;
    std::map<std::uint64_t, ResumeHandle> handles;  // by agent serial, the last run's
    Then then = Then::Keep;
    std::vector<std::uint64_t> memory_found;  // what each start of Remembers found in its memory
    int starts = 0;

    RestartMoves() {
        registry.add_action("Fight", [](ActionContext&) { return Status::Running; });
        registry.add_latent_action("Move", [this](ActionContext& ctx, const ResumeHandle& h) {
            ++starts;
            handles[ctx.agent().serial()] = h;
            switch (then) {
            case Then::Keep: break;
            case Then::Throw: throw std::runtime_error("no path");
            case Then::ResumeSuccess: CHECK(ctx.agent().resume(h, kS)); break;
            case Then::ResumeFailure: CHECK(ctx.agent().resume(h, kF)); break;
            case Then::Abort: ctx.agent().abort(); break;
            case Then::WriteEnemy: ctx.blackboard().set("enemy", true); break;
            }
        });
        LatentActionSpec remembers;
        remembers.memory_bytes = sizeof(std::uint64_t);
        remembers.start = [this](ActionContext& ctx, const ResumeHandle& h) {
            ++starts;
            handles[ctx.agent().serial()] = h;
            memory_found.push_back(ctx.memory<std::uint64_t>());
            ctx.memory<std::uint64_t>() = 42;
        };
        registry.add_latent_action("Remembers", std::move(remembers));
        ActionSpec suspends;
        suspends.on_initialize = [this](ActionContext& ctx) {
            ++starts;
            handles[ctx.agent().serial()] = ctx.suspend();
        };
        suspends.update = [](ActionContext&) { return Status::Running; };
        registry.add_action("Suspends", std::move(suspends));
    }
    bool resume(Agent& agent, Status s) { return agent.resume(handles.at(agent.serial()), s); }
};

/// A root restart that passes over three guards of both kinds the plan reads (a leading condition,
/// a precondition is(key), a condition that holds on false) to its leaf `move`, with a next child for
/// the leaf's Failure: 0 ActiveSelector, 1 Sequence (leading condition 2, check(enemy)), 3 Fight,
/// 4 Sequence (precondition is(alarm)), 5 Fight, 6 Sequence (leading condition 7, check(calm, false)),
/// 8 Fight, 9 `move`, 10 AlwaysSuccess.
Tree three_guards(const Registry& registry, const char* move) {
    return TreeBuilder("three_guards", registry)
        .key<bool>("enemy")
        .key<bool>("alarm")
        .key<bool>("calm", true)
        .active_selector()
            .sequence().check("enemy").action("Fight").back()
            .sequence().precondition(Predicate::is("alarm")).action("Fight").back()
            .sequence().check("calm", false).action("Fight").back()
            .action(move)
            .always_success()
        .back()
        .end();
}

}  // namespace

TEST_CASE("Move paths: the restart's latent leaf on the plan, whatever its start does, gives the general path's state") {
    // The traced agent of each Pair takes the general path (its listener); the plain one, in event
    // mode, restart_on_plan: at its first tick and at each restart after a completed move.
    const std::vector<std::pair<Then, std::vector<std::string>>> cases = {
        // what the start does at the restart, and the traces of the restart tick and the next
        {Then::Keep, {"0:I 9:I", ""}},
        {Then::Throw, {"0:I 9:I 9:T(Failure) 10:I 10:U 10:T(Success) 0:T(Success)", "0:I 9:I"}},
        {Then::ResumeSuccess, {"0:I 9:I", "9:T(Success) 0:T(Success)"}},
        {Then::ResumeFailure, {"0:I 9:I", "9:T(Failure) 10:I 10:U 10:T(Success) 0:T(Success)"}},
        {Then::Abort, {"0:I 9:I 9:T(Aborted) 0:T(Aborted)", "0:I 9:I"}},
        {Then::WriteEnemy, {"0:I 9:I", "9:T(Aborted) 1:I 3:I 3:U"}},
    };
    for (const auto& one_case : cases) {
        const Then then = one_case.first;  // (not structured bindings: the lambdas below take them, which Clang 14 refuses)
        const std::vector<std::string>& traces = one_case.second;
        CAPTURE(static_cast<int>(then));
        test::in_both_modes([&](Mode mode) {
            RestartMoves m;
            Pair p(three_guards(m.registry, "Move"), mode);
            CHECK(p.tick() == "0:I 9:I");
            CHECK(p.rec.all(0) == "0:I 1:G(false) 4:G(false) 6:G(false) 9:I");
            for (int move = 0; move < 2; ++move) {  // a restart of each kind after a plain one
                CAPTURE(move);
                REQUIRE(m.resume(p.traced, kS));
                REQUIRE(m.resume(p.plain, kS));
                CHECK(p.tick() == "9:T(Success) 0:T(Success)");
                m.then = move == 1 ? then : Then::Keep;
                const std::uint64_t restart = p.traced.ticks();
                CHECK(p.tick() == (move == 1 ? traces[0] : "0:I 9:I"));
                CHECK(p.rec.all(restart).rfind("0:I 1:G(false) 4:G(false) 6:G(false) 9:I", 0) == 0);
                m.then = Then::Keep;
                CHECK(p.tick() == (move == 1 ? traces[1] : ""));
            }
            for (int tick = 0; tick < 3; ++tick) p.tick();  // and on, alike
            CHECK(m.handles.at(p.traced.serial()).run == m.handles.at(p.plain.serial()).run);
            CHECK(m.handles.at(p.plain.serial()).node == 9);
            CHECK(m.handles.at(p.plain.serial()).agent_serial == p.plain.serial());
            CHECK(p.plain.stats().listener_errors == 0);
        });
    }
}

TEST_CASE("Move paths: the restart's skipped guards written while a move ran, then false again") {
    test::in_both_modes([&](Mode mode) {
        RestartMoves m;
        Pair p(three_guards(m.registry, "Move"), mode);
        CHECK(p.tick() == "0:I 9:I");
        // During the move: the guards are live (the root runs its lower child Move), so each write
        // schedules the root's checks; back to false before the tick, the check finds no edge.
        p.set("enemy", true);
        p.set("enemy", false);
        p.set("calm", false);
        p.set("calm", true);
        CHECK(p.tick() == "");
        REQUIRE(m.resume(p.traced, kS));
        REQUIRE(m.resume(p.plain, kS));
        CHECK(p.tick() == "9:T(Success) 0:T(Success)");
        // Between the move's end and the restart: the guards are not live (the root's run ended),
        // so a write only marks them dirty; the restart evaluates them afresh, false, and clears that.
        p.set("alarm", true);
        p.set("alarm", false);
        p.set("enemy", true);
        p.set("enemy", false);
        p.check_same();
        const std::uint64_t restart = p.traced.ticks();
        CHECK(p.tick() == "0:I 9:I");
        CHECK(p.rec.all(restart) == "0:I 1:G(false) 4:G(false) 6:G(false) 9:I");
        // And one that holds at the restart (alarm): the general path, the second fight branch.
        REQUIRE(m.resume(p.traced, kS));
        REQUIRE(m.resume(p.plain, kS));
        CHECK(p.tick() == "9:T(Success) 0:T(Success)");
        p.set("alarm", true);
        CHECK(p.tick() == "0:I 4:I 5:I 5:U");
        p.set("alarm", false);  // (LowerPriority only: the branch goes on)
        CHECK(p.tick() == "5:U");
    });
}

TEST_CASE("Move paths: a restart leaf the plan does not enter itself goes through enter, with the same state") {
    for (const char* leaf : {"Remembers", "Suspends"}) {
        CAPTURE(leaf);
        test::in_both_modes([&](Mode mode) {
            RestartMoves m;
            Pair p(three_guards(m.registry, leaf), mode);
            CHECK(p.tick() == "0:I 9:I");
            for (int move = 0; move < 3; ++move) {
                CAPTURE(move);
                REQUIRE(m.resume(p.traced, move == 1 ? kF : kS));
                REQUIRE(m.resume(p.plain, move == 1 ? kF : kS));
                CHECK(p.tick() == (move == 1 ? "9:T(Failure) 10:I 10:U 10:T(Success) 0:T(Success)" : "9:T(Success) 0:T(Success)"));
                CHECK(p.tick() == "0:I 9:I");
                CHECK(m.handles.at(p.plain.serial()).run == static_cast<std::uint64_t>(move + 2));
            }
            // Remembers' memory is zeroed at each of its 4 starts in each agent (enter's memset).
            CHECK(m.memory_found == std::vector<std::uint64_t>(std::string(leaf) == "Remembers" ? 8 : 0, 0));
            CHECK(m.starts == 8);
        });
    }
}
