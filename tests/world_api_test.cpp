// The World API a game programmer reaches for (issue 10): latent actions resumed through the World by
// one handle, the agent's handle, user pointer and dt in the action context, initial blackboard values
// at spawn, one listener for the whole world, and shared keys declared once.
#include "support/trace_recorder.hpp"

#include <ebt/ebt.hpp>
#include <ebt/signals.hpp>

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace ebt;
using namespace std::chrono_literals;

namespace world_api {

struct Npc {
    std::string name;
    int steps = 0;
};
struct Crate {
    int weight = 0;
};

/// A latent move: its start keeps the handle, as a movement system would; Hold runs forever.
struct Mover {
    Registry registry;
    std::vector<ResumeHandle> moves;
    std::vector<AgentHandle> starters;   // ctx.agent_handle() at each start
    std::vector<std::string> terminated;  // "Aborted", "Success", ...
    Tree tree;

    Mover() {
        LatentActionSpec move;
        move.start = [this](ActionContext& ctx, const ResumeHandle& h) {
            moves.push_back(h);
            starters.push_back(ctx.agent_handle());
        };
        move.on_terminate = [this](ActionContext&, Status s) { terminated.emplace_back(to_string(s)); };
        registry.add_latent_action("Move", std::move(move));
        registry.add_action("Hold", test::running_action());
        tree = TreeBuilder("mover", registry).sequence().action("Move").action("Hold").back().end();
    }
};

}  // namespace world_api

using world_api::Crate;
using world_api::Mover;
using world_api::Npc;

// ---- 1. latent actions through the World -------------------------------------------------------------

TEST_CASE("world api: a latent action is resumed through the World by the one handle it was given") {
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Mover m;
        World world;
        test::TraceRecorder rec;
        const AgentHandle h = world.spawn(m.tree, {.mode = mode, .listener = &rec});
        world.step(50ms);
        CHECK(rec.tick(0) == "0:I 1:I");  // Move suspends in its start: no update, ever
        REQUIRE(m.moves.size() == 1);
        CHECK(m.moves[0].agent == h);      // the handle names the agent ...
        CHECK(m.starters[0] == h);         // ... as ctx.agent_handle() does
        CHECK(world.at(h).stats().updates == 0);

        world.step(50ms);
        CHECK(rec.tick(1) == "");
        CHECK(world.resume(m.moves[0], Status::Success));
        CHECK_FALSE(world.resume(m.moves[0], Status::Success));  // already resumed
        world.step(50ms);
        CHECK(rec.tick(2) == "1:T(Success) 2:I 2:U");
        CHECK(m.terminated == std::vector<std::string>{"Success"});
        CHECK_FALSE(world.resume(m.moves[0], Status::Failure));  // the run has ended
        CHECK_THROWS_WITH_AS(world.resume(m.moves[0], Status::Running), "World::resume() needs Success or Failure, got Running",
                             UsageError);
    }
}

TEST_CASE("world api: a stale resume handle never reaches another agent") {
    Mover m;
    World world;
    test::TraceRecorder first_rec, second_rec;
    const AgentHandle first = world.spawn(m.tree, {.listener = &first_rec});
    world.step(50ms);
    REQUIRE(m.moves.size() == 1);
    const ResumeHandle old_move = m.moves[0];

    SUBCASE("the agent was despawned: its move is stale, also for the next agent in its slot") {
        CHECK(world.despawn(first));
        CHECK(m.terminated == std::vector<std::string>{"Aborted"});  // tell the mover to stop
        CHECK_FALSE(world.resume(old_move, Status::Success));
        test::TraceRecorder rec;
        const AgentHandle second = world.spawn(m.tree, {.listener = &rec});
        REQUIRE(second.index == first.index);  // the slot is reused, with a new generation
        world.step(50ms);
        REQUIRE(m.moves.size() == 2);
        CHECK_FALSE(world.resume(old_move, Status::Success));
        world.step(50ms);
        CHECK(rec.tick(2) == "");  // untouched: its own Move is still suspended
        CHECK(world.at(second).status(1) == Status::Running);
        CHECK(world.resume(m.moves[1], Status::Failure));
        world.step(50ms);
        CHECK(rec.tick(3) == "1:T(Failure) 0:T(Failure)");
    }
    SUBCASE("the run was aborted: the move of the old run is stale, the new run's is not") {
        world.at(first).abort();
        CHECK(m.terminated == std::vector<std::string>{"Aborted"});
        CHECK_FALSE(world.resume(old_move, Status::Success));
        world.step(50ms);  // starts afresh: a new run of Move, a new handle
        REQUIRE(m.moves.size() == 2);
        CHECK(m.moves[1].agent == first);
        CHECK_FALSE(world.resume(old_move, Status::Success));
        CHECK(world.resume(m.moves[1], Status::Success));
    }
    SUBCASE("a handle of another world's agent in the same slot") {
        Mover other_mover;
        World other;
        const AgentHandle twin = other.spawn(other_mover.tree);
        other.step(50ms);
        REQUIRE(twin == first);  // same index and generation: only the agent's serial tells them apart
        REQUIRE(other_mover.moves.size() == 1);
        CHECK_FALSE(world.resume(other_mover.moves[0], Status::Success));
        CHECK_FALSE(other.resume(old_move, Status::Success));
        CHECK(world.at(first).status(1) == Status::Running);
        CHECK(other.at(twin).status(1) == Status::Running);
        CHECK(world.resume(old_move, Status::Success));
    }
}

TEST_CASE("world api: the agent's handle in the context; agents outside a World") {
    SUBCASE("an agent that despawns itself holds a handle that stays stale") {
        Registry r;
        World world;
        AgentHandle seen_before, seen_after;
        r.add_action("Leave", [&](ActionContext& ctx) {
            seen_before = ctx.agent_handle();
            world.despawn(ctx.agent_handle());
            seen_after = ctx.agent_handle();
            return Status::Running;
        });
        const Tree tree = TreeBuilder("leaver", r).action("Leave").end();
        const AgentHandle h = world.spawn(tree);
        world.step(50ms);
        CHECK(seen_before == h);
        CHECK(seen_after == h);  // its own handle, stale now: never the slot's next agent's
        CHECK_FALSE(world.alive(seen_after));
        const AgentHandle next = world.spawn(tree);
        CHECK(next.index == h.index);
        CHECK(next.generation != h.generation);
    }
    SUBCASE("an agent of no World: agent_handle() is an error; suspend() still works with Agent::resume") {
        Registry r;
        ResumeHandle move;
        r.add_latent_action("Move", [&](ActionContext&, const ResumeHandle& h) { move = h; });
        r.add_action("Where", [](ActionContext& ctx) {
            static_cast<void>(ctx.agent_handle());
            return Status::Success;
        });
        test::TraceRecorder rec;
        Agent where(TreeBuilder("where", r).action("Where").end(), {.listener = &rec});
        where.tick(50ms);
        CHECK(rec.errors() == std::vector<std::string>{
                                  "0: ActionContext::agent_handle(): the agent does not belong to a World (it was not spawned by one)"});
        CHECK(rec.tick(0) == "0:I 0:U 0:T(Failure)");
        Agent agent(TreeBuilder("alone", r).action("Move").end());
        agent.tick(50ms);
        REQUIRE(move.valid());
        CHECK(move.agent == AgentHandle{});
        World world;
        CHECK_FALSE(world.resume(move, Status::Success));
        CHECK(agent.resume(move, Status::Success));
    }
}

TEST_CASE("world api: a latent action's start may resume at once; it must have a start") {
    Registry r;
    r.add_latent_action("Instant", [](ActionContext& ctx, const ResumeHandle& h) { ctx.agent().resume(h, Status::Success); });
    test::TraceRecorder rec;
    Agent agent(TreeBuilder("t", r).action("Instant").end(), {.listener = &rec});
    agent.tick(50ms);
    agent.tick(50ms);
    // Resumed while being entered: the walk has passed it, so it ends on the next tick.
    CHECK(rec.tick(0) == "0:I");
    CHECK(rec.tick(1) == "0:T(Success)");
    CHECK(agent.stats().updates == 0);
    CHECK_THROWS_WITH_AS(r.add_latent_action("Empty", LatentActionSpec{}), "latent action 'Empty' has no start function", BuildError);
}

// ---- 2. the agent's NPC and the frame's dt in the context ------------------------------------------------

TEST_CASE("world api: the user pointer given at spawn reaches the actions, typed") {
    Registry r;
    r.add_action("Step", [](ActionContext& ctx) {
        ++ctx.user<Npc>().steps;
        return Status::Running;
    });
    r.add_action("Lift", [](ActionContext& ctx) { return ctx.user<Crate>().weight > 0 ? Status::Success : Status::Failure; });
    r.add_condition("Named", [](const ConditionContext& ctx) { return !ctx.user<Npc>().name.empty(); });
    const Tree stepper = TreeBuilder("stepper", r).sequence().condition("Named").action("Step").back().end();
    const Tree lifter = TreeBuilder("lifter", r).action("Lift").end();

    std::vector<Npc> npcs{{"anna", 0}, {"bert", 0}};
    World world;
    const AgentHandle a = world.spawn(stepper, {.user = &npcs[0]});
    const AgentHandle b = world.spawn(stepper, {.user = &npcs[1]});
    world.step(50ms);
    world.step(50ms);
    CHECK(npcs[0].steps == 2);
    CHECK(npcs[1].steps == 2);
    CHECK(&world.at(a).user<Npc>() == &npcs[0]);
    CHECK(&world.at(b).user<Npc>() == &npcs[1]);
    CHECK(world.at(a).user_pointer() == &npcs[0]);

    SUBCASE("read as another type: the node fails with an error naming both types") {
        test::TraceRecorder rec;
        world.spawn(lifter, {.listener = &rec, .user = &npcs[0]});
        world.step(50ms);
        CHECK(rec.errors() == std::vector<std::string>{
                                  "0: ActionContext::user<world_api::Crate>(): the agent's user pointer is a world_api::Npc*, not a "
                                  "world_api::Crate*"});
        CHECK(rec.tick(2) == "0:I 0:U 0:T(Failure)");
        CHECK_THROWS_WITH_AS(world.at(a).user<Crate>(),
                             "Agent::user<world_api::Crate>(): the agent's user pointer is a world_api::Npc*, not a world_api::Crate*",
                             UsageError);
    }
    SUBCASE("none given: the error says where to give one") {
        test::TraceRecorder rec;
        world.spawn(stepper, {.listener = &rec});
        world.step(50ms);
        // The leading condition is the root's guard: it counts as false, the error is reported there.
        CHECK(rec.errors() == std::vector<std::string>{
                                  "0: ConditionContext::user<world_api::Npc>(): the agent has no user pointer (give one with "
                                  "SpawnOptions::user or AgentOptions::user)"});
        CHECK(rec.all(2) == "0:E 0:G(false)");
    }
    SUBCASE("standalone agents take it in AgentOptions") {
        Crate crate{3};
        Agent agent(lifter, {.user = &crate});
        CHECK(agent.tick(50ms) == Status::Success);
        CHECK(agent.user<Crate>().weight == 3);
        Agent none(lifter);
        CHECK(none.user_pointer() == nullptr);
    }
}

TEST_CASE("world api: ctx.dt() is the time the tick advanced the agent's clock by") {
    std::vector<std::string> seen;
    Registry r;
    ActionSpec rec_dt;
    const auto note = [&seen](const char* what, const ActionContext& ctx) {
        seen.push_back(std::string(what) + " " + std::to_string(ctx.dt().count()));
    };
    rec_dt.on_initialize = [note](ActionContext& ctx) { note("init", ctx); };
    rec_dt.update = [note](ActionContext& ctx) {
        note("update", ctx);
        return Status::Running;
    };
    rec_dt.on_terminate = [note](ActionContext& ctx, Status) { note("terminate", ctx); };
    r.add_action("Rec", rec_dt);
    const Tree tree = TreeBuilder("dt", r).sequence().wait(250ms).action("Rec").back().end();

    SUBCASE("a standalone agent: each tick's dt; 0 when aborted between ticks") {
        Agent agent(tree);
        agent.tick(100ms);  // the Wait starts (due at 350 ms)
        agent.tick(250ms);  // it ends: Rec starts
        agent.tick(20ms);
        agent.abort();
        CHECK(seen == std::vector<std::string>{"init 250000", "update 250000", "update 20000", "terminate 0"});
    }
    SUBCASE("in a World: an event agent that slept catches up in one tick, polling ticked every frame") {
        for (Mode mode : test::both_modes()) {
            CAPTURE(std::string(to_string(mode)));
            seen.clear();
            World world;
            world.spawn(tree, {.mode = mode});
            for (int f = 0; f < 5; ++f) world.step(100ms);  // the Wait (from 100 ms) ends at 350 ms: frame 3
            if (mode == Mode::Event)
                CHECK(seen == std::vector<std::string>{"init 300000", "update 300000", "update 100000"});
            else
                CHECK(seen == std::vector<std::string>{"init 100000", "update 100000", "update 100000"});
        }
    }
}

// ---- 3. initial blackboard values at spawn --------------------------------------------------------------

namespace world_api {
/// Alert (when `alert`) or Idle; keys alert (bool), hp (int), and a shared squad.alarm.
struct Sentry {
    Registry registry;
    Tree tree;
    Sentry() {
        registry.add_action("Alert", test::running_action());
        registry.add_action("Idle", test::running_action());
        tree = TreeBuilder("sentry", registry)
                   .key<bool>("alert")
                   .key<int>("hp", 100)
                   .shared_key<bool>("squad", "alarm")
                   .active_selector()
                       .sequence().check("alert").action("Alert").back()  // 1, 2, 3
                       .action("Idle")                                   // 4
                   .back()
                   .end();
    }
};
}  // namespace world_api

TEST_CASE("world api: initial blackboard values at spawn, between frames and during a frame") {
    world_api::Sentry s;
    World world;
    SharedBlackboard& squad = world.create_shared("squad");
    squad.declare<bool>("alarm", false);
    std::vector<std::string> changes;
    world.bus().subscribe([&](const BlackboardChange& c) { changes.emplace_back(c.name); });

    test::TraceRecorder rec;
    const AgentHandle a = world.spawn(s.tree, {.listener = &rec, .shared = {{"squad", &squad}},
                                               .blackboard = {{"alert", true}, {"hp", 40}}});
    CHECK(world.at(a).blackboard().get<bool>("alert"));
    CHECK(world.at(a).blackboard().get<int>("hp") == 40);
    CHECK(changes.empty());  // initial values are not changes
    world.step(50ms);
    CHECK(rec.tick(0) == "0:I 1:I 3:I 3:U");  // the guarded branch from the first tick

    // An agent spawned during a frame gets its values when it joins, before its first tick.
    Registry r2;
    test::TraceRecorder late_rec;
    AgentHandle late;
    r2.add_action("Spawner", [&](ActionContext&) {
        if (late == AgentHandle{})
            late = world.spawn(s.tree, {.listener = &late_rec, .shared = {{"squad", &squad}},
                                        .blackboard = {{"hp", 7}, {"alert", true}}});
        return Status::Running;
    });
    world.spawn(TreeBuilder("spawner", r2).action("Spawner").end());
    world.step(50ms);
    REQUIRE(world.alive(late));
    CHECK(world.at(late).blackboard().get<int>("hp") == 7);
    CHECK(changes.empty());
    world.step(50ms);
    CHECK(late_rec.tick(2) == "0:I 1:I 3:I 3:U");
}

TEST_CASE("world api: bad initial values are refused at spawn, nothing spawned") {
    world_api::Sentry s;
    World world;
    SharedBlackboard& squad = world.create_shared("squad");
    squad.declare<bool>("alarm", false);
    const auto spawn_with = [&](std::vector<InitialValue> values) {
        return world.spawn(s.tree, {.shared = {{"squad", &squad}}, .blackboard = std::move(values)});
    };
    CHECK_THROWS_WITH_AS(spawn_with({{"hp", 5}, {"mana", 3}}),
                         "World::spawn(): tree 'sentry' has no blackboard key 'mana' (initial values)", UsageError);
    CHECK_THROWS_WITH_AS(spawn_with({{"hp", 5.0f}}), "World::spawn(): key 'hp' of tree 'sentry' is int, but its initial value is float",
                         UsageError);
    CHECK_THROWS_WITH_AS(spawn_with({{"squad.alarm", true}}),
                         "World::spawn(): key 'squad.alarm' of tree 'sentry' is a key of the shared scope 'squad': give its value to "
                         "the shared blackboard, not to the agent",
                         UsageError);
    CHECK_THROWS_WITH_AS(spawn_with({{"hp", 5}, {"hp", 6}}), "World::spawn(): key 'hp' is given two initial values", UsageError);
    CHECK(world.size() == 0);
    const AgentHandle h = spawn_with({{"hp", 5}});
    CHECK(h.index == 0);  // no slot was used by the refused spawns
    CHECK(h.generation == 1);

    SUBCASE("during a frame: the spawning action fails with the error") {
        Registry r;
        r.add_action("BadSpawner", [&](ActionContext&) {
            spawn_with({{"hp", true}});
            return Status::Running;
        });
        test::TraceRecorder rec;
        world.spawn(TreeBuilder("bad", r).action("BadSpawner").end(), {.listener = &rec});
        world.step(50ms);
        CHECK(rec.errors() == std::vector<std::string>{"0: World::spawn(): key 'hp' of tree 'sentry' is int, but its initial value is bool"});
        CHECK(world.size() == 2);
    }
    SUBCASE("a standalone agent") {
        CHECK_THROWS_WITH_AS(Agent(s.tree, {.blackboard = {{"alert", 1}}}), "Agent: key 'alert' of tree 'sentry' is bool, but its initial value is int",
                             UsageError);
        Agent agent(s.tree, {.blackboard = {{"hp", 1}}});
        CHECK(agent.blackboard().get<int>("hp") == 1);
    }
}

// ---- 4. one listener for the whole world -------------------------------------------------------------------

namespace world_api {
struct WorldRecorder : WorldListener {
    std::vector<std::string> lines;
    void on_event(AgentHandle h, const Agent& agent, const TraceEvent& e) override {
        if (!e.is_lifecycle()) return;
        lines.push_back(std::to_string(h.index) + "/" + std::to_string(h.generation) + " " + test::TraceRecorder::render(e) + " " +
                        agent.tree().path(e.node));
    }
};
struct Thrower : TraceListener {
    int calls = 0;
    void on_event(const TraceEvent&) override {
        ++calls;
        throw std::runtime_error("listener failed");
    }
};
}  // namespace world_api

TEST_CASE("world api: a world listener hears every agent, with its handle and the node's path") {
    world_api::Sentry s;
    World world;
    SharedBlackboard& squad = world.create_shared("squad");
    squad.declare<bool>("alarm", false);
    world_api::WorldRecorder all;
    test::TraceRecorder own;
    const AgentHandle a = world.spawn(s.tree, {.listener = &own, .shared = {{"squad", &squad}}});
    world.set_listener(&all);  // also for the agents already there
    const AgentHandle b = world.spawn(s.tree, {.shared = {{"squad", &squad}}, .blackboard = {{"alert", true}}});
    CHECK(world.listener() == &all);
    world.step(50ms);
    CHECK(all.lines == std::vector<std::string>{
                           "0/1 0:I /ActiveSelector", "0/1 4:I /ActiveSelector/Action 'Idle'[1]",
                           "0/1 4:U /ActiveSelector/Action 'Idle'[1]", "1/1 0:I /ActiveSelector",
                           "1/1 1:I /ActiveSelector/Sequence[0]", "1/1 3:I /ActiveSelector/Sequence[0]/Action 'Alert'[1]",
                           "1/1 3:U /ActiveSelector/Sequence[0]/Action 'Alert'[1]"});
    CHECK(own.tick(0) == "0:I 4:I 4:U");  // the agent's own listener still hears its events

    SUBCASE("an agent's own listener can be changed through the world; a throwing one does not starve the world's") {
        world_api::Thrower thrower;
        CHECK(world.set_listener(a, &thrower));
        all.lines.clear();
        world.at(a).blackboard().set("alert", true);
        world.step(50ms);
        CHECK(thrower.calls == 5);  // the guard's evaluation, then 4:T(Aborted) 1:I 3:I 3:U
        CHECK(all.lines == std::vector<std::string>{"0/1 4:T(Aborted) /ActiveSelector/Action 'Idle'[1]", "0/1 1:I /ActiveSelector/Sequence[0]",
                                                    "0/1 3:I /ActiveSelector/Sequence[0]/Action 'Alert'[1]",
                                                    "0/1 3:U /ActiveSelector/Sequence[0]/Action 'Alert'[1]",
                                                    "1/1 3:U /ActiveSelector/Sequence[0]/Action 'Alert'[1]"});
        CHECK(world.at(a).stats().listener_errors == static_cast<std::uint32_t>(thrower.calls));
    }
    SUBCASE("reset: the agents keep only their own listeners") {
        world.set_listener(nullptr);
        all.lines.clear();
        own.clear();
        world.despawn(b);
        world.at(a).blackboard().set("alert", true);
        world.step(50ms);
        CHECK(all.lines.empty());
        CHECK(own.tick(1) == "4:T(Aborted) 1:I 3:I 3:U");
        CHECK_FALSE(world.set_listener(b, &own));  // stale
    }
}

TEST_CASE("world api: several world listeners hear every event in the order they were added, even past a throwing one") {
    world_api::Sentry s;
    World world;
    SharedBlackboard& squad = world.create_shared("squad");
    squad.declare<bool>("alarm", false);
    const AgentHandle a = world.spawn(s.tree, {.shared = {{"squad", &squad}}});
    struct Throwing : WorldListener {
        std::vector<std::string>* order = nullptr;
        void on_event(AgentHandle, const Agent&, const TraceEvent& e) override {
            if (e.is_lifecycle()) order->push_back("throwing " + test::TraceRecorder::render(e));
            throw std::runtime_error("listener failed");
        }
    };
    struct Named : WorldListener {
        std::vector<std::string>* order = nullptr;
        std::string name;
        void on_event(AgentHandle, const Agent&, const TraceEvent& e) override {
            if (e.is_lifecycle()) order->push_back(name + " " + test::TraceRecorder::render(e));
        }
    };
    std::vector<std::string> order;
    Throwing first;
    first.order = &order;
    Named second;
    second.order = &order;
    second.name = "second";
    world.add_listener(&first);
    world.add_listener(&second);
    CHECK(world.listeners() == std::vector<WorldListener*>{&first, &second});
    CHECK(world.listener() == &first);
    world.step(50ms);
    CHECK(order == std::vector<std::string>{"throwing 0:I", "second 0:I", "throwing 4:I", "second 4:I", "throwing 4:U", "second 4:U"});
    CHECK(world.at(a).stats().listener_errors == 4);  // the three above and the guard's evaluation

    CHECK_THROWS_WITH_AS(world.add_listener(&second), "World::add_listener: this listener was already added", UsageError);
    CHECK_THROWS_WITH_AS(world.add_listener(nullptr), "World::add_listener(nullptr)", UsageError);
    CHECK(world.remove_listener(&first));
    CHECK_FALSE(world.remove_listener(&first));
    order.clear();
    world.step(50ms);
    CHECK(order == std::vector<std::string>{"second 4:U"});

    SUBCASE("listeners cannot be added or removed from inside a frame") {
        Registry r;
        std::string refused;
        r.add_action("Meddle", [&](ActionContext&) {
            try {
                world.remove_listener(&second);
            } catch (const UsageError& e) {
                refused = e.what();
            }
            return Status::Success;
        });
        world.spawn(TreeBuilder("meddler", r).action("Meddle").end());
        world.step(50ms);
        CHECK(refused == "World::remove_listener during a frame: remove listeners between frames");
        CHECK(world.listeners() == std::vector<WorldListener*>{&second});
    }
    SUBCASE("set_listener replaces them all") {
        world.add_listener(&first);
        world.set_listener(nullptr);
        CHECK(world.listeners().empty());
        order.clear();
        world.step(50ms);
        CHECK(order.empty());
    }
}

// ---- 6. shared keys declared once ----------------------------------------------------------------------------

TEST_CASE("world api: binding a scope declares the tree's shared keys the shared blackboard lacks") {
    Registry r;
    r.add_action("Idle", test::running_action());
    const Tree tree = TreeBuilder("member", r).shared_key<int>("squad", "leader", -1).shared_key<bool>("squad", "alarm").action("Idle").end();
    World world;
    SharedBlackboard& squad = world.create_shared("squad-1");
    squad.declare<bool>("alarm", false);  // declared on both sides with the same value: fine
    const AgentHandle h = world.spawn(tree, {.shared = {{"squad", &squad}}});
    CHECK(squad.get<int>("leader") == -1);  // declared by the binding, with the tree's initial value
    CHECK(squad.pending<int>("leader") == -1);
    CHECK(world.at(h).blackboard().get<int>("squad.leader") == -1);
    squad.set("leader", 4);
    world.step(50ms);
    CHECK(world.at(h).blackboard().get<int>("squad.leader") == 4);
    world.spawn(tree, {.shared = {{"squad", &squad}}});  // the key is there now, with the same initial value
    CHECK(squad.schema().size() == 2);

    SUBCASE("a standalone agent's bind declares them too") {
        SharedBlackboard own("own");
        Agent agent(tree);
        agent.bind("squad", own);
        CHECK(own.get<int>("leader") == -1);
        CHECK_FALSE(own.get<bool>("alarm"));
    }
}

TEST_CASE("world api: a shared key declared with two initial values is refused, naming the key, the tree and both values") {
    Registry r;
    r.add_action("Idle", test::running_action());
    const Tree tree = TreeBuilder("member", r).shared_key<int>("squad", "leader", -1).shared_key<float>("squad", "morale", 0.5f).action("Idle").end();
    World world;
    SharedBlackboard& squad = world.create_shared("squad-1");
    squad.declare<float>("morale", 0.75f);
    CHECK_THROWS_WITH_AS(world.spawn(tree, {.shared = {{"squad", &squad}}}),
                         "World::spawn(): shared blackboard 'squad-1': key 'morale' was declared with the initial value 0.75, but tree "
                         "'member' declares 'squad.morale' with 0.5 (declare it once: in the tree, or on the shared blackboard with the "
                         "same value)",
                         UsageError);
    CHECK(world.size() == 0);
    CHECK(squad.schema().find("leader") == kNoKey);  // a refused spawn declares nothing

    Agent agent(tree);
    CHECK_THROWS_WITH_AS(agent.bind("squad", squad),
                         "shared blackboard 'squad-1': key 'morale' was declared with the initial value 0.75, but tree 'member' "
                         "declares 'squad.morale' with 0.5 (declare it once: in the tree, or on the shared blackboard with the same value)",
                         UsageError);
    CHECK(agent.bound("squad") == nullptr);
    CHECK(squad.schema().find("leader") == kNoKey);
}
