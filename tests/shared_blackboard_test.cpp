// Shared (squad / world) blackboards: double buffering, publishing, routing to exactly the agents
// whose live guards read a key, binding errors, and determinism in both modes.
#include "support/trace_recorder.hpp"

#include <ebt/signals.hpp>

using namespace ebt;
using namespace std::chrono_literals;

namespace {

/// A guard that engages when its squad's alarm is up, and otherwise idles in a suspended action
/// (so that an event-mode agent has no work until something wakes it). Engage raises the alarm for
/// the whole squad when the agent's own "spotted" key is set.
Tree squad_tree() {
    ActionSpec idle;
    idle.update = [](ActionContext& ctx) {
        ctx.suspend();
        return Status::Running;
    };
    ActionSpec engage = test::running_action();
    ActionSpec lookout;
    lookout.ports = {port<bool>("spotted"), port<bool>("squad.alarm")};
    lookout.update = [](ActionContext& ctx) {
        if (ctx.in<bool>(0)) ctx.out<bool>(1, true);  // raise the squad's alarm
        return Status::Running;
    };
    return TreeBuilder("squad-member")
        .key<bool>("spotted")
        .shared_key<bool>("squad", "alarm")
        .active_selector()                                               // 0
            .sequence().check("squad.alarm").action("Engage", engage).back()  // 1 2 3
            .sequence().check("spotted").action("Lookout", lookout).back()   // 4 5 6
            .action("Idle", idle)                                        // 7
        .back()
        .end();
}

}  // namespace

TEST_CASE("shared blackboard: writes are pending until publish; last write wins; one change per key") {
    SharedBlackboard squad("squad-1");
    squad.declare<bool>("alarm").declare<int>("targets", 0);
    std::vector<std::string> changes;
    squad.changes().connect([&](const SharedBlackboard& bb, KeyId k) { changes.push_back(bb.schema().info(k).name); });
    squad.set("alarm", true);
    squad.set("targets", 3);
    squad.set("targets", 2);  // last write wins
    CHECK_FALSE(squad.get<bool>("alarm"));
    CHECK(squad.pending<int>("targets") == 2);
    CHECK(squad.publish() == 2);
    CHECK(squad.get<bool>("alarm"));
    CHECK(squad.get<int>("targets") == 2);
    CHECK(changes == std::vector<std::string>{"alarm", "targets"});
    squad.set("targets", 2);  // equal to the published value: not a change
    CHECK(squad.publish() == 0);
    CHECK(changes.size() == 2);
    CHECK_THROWS_WITH_AS(squad.get<int>("alarm"), "blackboard key 'alarm' is declared as bool, not int", UsageError);
    CHECK_THROWS_AS(squad.declare<bool>("alarm"), BuildError);
}

TEST_CASE("shared blackboard: a published change wakes exactly the agents of that squad") {
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        World world;
        SharedBlackboard& alpha = world.create_shared("alpha");
        SharedBlackboard& bravo = world.create_shared("bravo");
        alpha.declare<bool>("alarm");
        bravo.declare<bool>("alarm");
        const Tree tree = squad_tree();
        std::vector<AgentHandle> a, b;
        for (int i = 0; i < 3; ++i) a.push_back(world.spawn(tree, {.mode = mode, .shared = {{"squad", &alpha}}}));
        for (int i = 0; i < 2; ++i) b.push_back(world.spawn(tree, {.mode = mode, .shared = {{"squad", &bravo}}}));
        world.step(50ms);
        world.step(50ms);
        if (mode == Mode::Event) CHECK(world.step(50ms).agents_stepped == 0);  // everyone idles
        alpha.set("alarm", true);  // game code raises alpha's alarm between frames
        const FrameMetrics m = world.step(50ms);
        if (mode == Mode::Event) CHECK(m.agents_stepped == 3);
        for (AgentHandle h : a) CHECK(world.at(h).status(3) == Status::Running);  // Engage
        for (AgentHandle h : b) CHECK(world.at(h).status(7) == Status::Running);  // still Idle
        CHECK(world.at(a[0]).blackboard().get<bool>("squad.alarm"));
        CHECK_FALSE(world.at(b[0]).blackboard().get<bool>("squad.alarm"));
    }
}

TEST_CASE("shared blackboard: an agent's write is seen by every squad member in the next frame, whatever the slot order") {
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        World world;
        SharedBlackboard& squad = world.create_shared("squad-1");
        squad.declare<bool>("alarm");
        const Tree tree = squad_tree();
        std::vector<test::TraceRecorder> recs(3);
        std::vector<AgentHandle> h;
        for (int i = 0; i < 3; ++i)
            h.push_back(world.spawn(tree, {.mode = mode, .listener = &recs[static_cast<std::size_t>(i)], .shared = {{"squad", &squad}}}));
        world.step(50ms);                                    // frame 0: all idle
        world.at(h[1]).blackboard().set("spotted", true);    // the middle agent spots an intruder
        world.step(50ms);                                    // frame 1: it starts Lookout, which writes squad.alarm
        CHECK(recs[1].tick(1) == "7:T(Aborted) 4:I 6:I 6:U");
        CHECK(squad.pending<bool>("alarm"));
        CHECK_FALSE(squad.get<bool>("alarm"));
        CHECK(recs[0].tick(1).empty());
        CHECK(recs[2].tick(1).empty());                      // a later slot does not see it this frame either
        world.step(50ms);                                    // frame 2: published; all three engage
        CHECK(recs[0].tick(2) == "7:T(Aborted) 1:I 3:I 3:U");
        CHECK(recs[1].tick(2) == "6:T(Aborted) 4:T(Aborted) 1:I 3:I 3:U");
        CHECK(recs[2].tick(2) == "7:T(Aborted) 1:I 3:I 3:U");
    }
}

TEST_CASE("shared blackboard: conflicting writes in one frame resolve to the last agent in slot order") {
    World world;
    SharedBlackboard& squad = world.create_shared("squad-1");
    squad.declare<int>("leader", -1);
    const Tree tree = [] {
        ActionSpec claim;
        claim.ports = {port<int>("id"), port<int>("squad.leader")};
        claim.update = [](ActionContext& ctx) {
            ctx.out<int>(1, ctx.in<int>(0));
            return Status::Running;
        };
        return TreeBuilder("claimer").key<int>("id").shared_key<int>("squad", "leader", -1).action("Claim", claim).end();
    }();
    for (int i = 0; i < 4; ++i) {
        const AgentHandle h = world.spawn(tree, {.shared = {{"squad", &squad}}});
        world.at(h).blackboard().set("id", 10 + i);
    }
    world.step(50ms);
    world.step(50ms);
    CHECK(squad.get<int>("leader") == 13);
}

TEST_CASE("shared blackboard: binding errors are reported at spawn") {
    World world;
    SharedBlackboard& squad = world.create_shared("squad-1");
    squad.declare<int>("alarm");  // the tree reads a bool
    SharedBlackboard foreign("elsewhere");
    foreign.declare<bool>("alarm");
    const Tree tree = squad_tree();
    CHECK_THROWS_WITH_AS(world.spawn(tree),
                         "World::spawn(): tree 'squad-member' reads shared scope 'squad', which SpawnOptions::shared does not bind",
                         UsageError);
    CHECK_THROWS_WITH_AS(world.spawn(tree, {.shared = {{"squad", &squad}}}),
                         "World::spawn(): shared blackboard 'squad-1': key 'alarm' is int, but tree 'squad-member' reads 'squad.alarm' as bool",
                         UsageError);
    CHECK_THROWS_WITH_AS(world.spawn(tree, {.shared = {{"squad", &foreign}}}),
                         "World::spawn(): scope 'squad' is bound to a shared blackboard this world does not own", UsageError);
    CHECK_THROWS_WITH_AS(world.spawn(tree, {.shared = {{"platoon", &squad}}}),
                         "World::spawn(): tree 'squad-member' has no shared scope 'platoon'", UsageError);
    CHECK_THROWS_AS(world.create_shared("squad-1"), UsageError);
    CHECK(world.size() == 0);
}

TEST_CASE("shared blackboard: a stand-alone agent binds a scope itself; unbound writes are errors") {
    const Tree tree = TreeBuilder("lone").shared_key<bool>("squad", "alarm").key<bool>("x").always_success().end();
    Agent agent(tree);
    CHECK_THROWS_WITH_AS(agent.blackboard().set("squad.alarm", true),
                         "key 'squad.alarm' belongs to shared scope 'squad', which is not bound (spawn with "
                         "SpawnOptions::shared or call Agent::bind)",
                         UsageError);
    SharedBlackboard squad("squad-1");
    squad.declare<bool>("alarm", false);  // as the tree declares it (docs/world.md: keys are declared once)
    squad.set("alarm", true);
    squad.publish();
    agent.bind("squad", squad);
    CHECK(agent.bound("squad") == &squad);
    CHECK(agent.blackboard().get<bool>("squad.alarm"));  // the published value, mirrored at bind
    CHECK_FALSE(agent.blackboard().set("squad.alarm", false));
    CHECK(squad.pending<bool>("alarm") == false);
    CHECK(squad.get<bool>("alarm"));
    CHECK_THROWS_WITH_AS(agent.bind("platoon", squad), "tree 'lone' has no shared scope 'platoon'", UsageError);
}

TEST_CASE("shared blackboard: a subtree's shared keys stay shared (not private to the use)") {
    const Tree inner = TreeBuilder("inner").shared_key<bool>("squad", "alarm").check("squad.alarm").end();
    const Tree outer = TreeBuilder("outer").sequence().subtree(inner).subtree(inner).back().end();
    CHECK(outer.schema().size() == 1);
    CHECK(outer.schema().info(0).name == "squad.alarm");
}

TEST_CASE("shared blackboard: same inputs give the same world state hash in both modes") {
    const auto run = [](Mode mode) {
        World world;
        SharedBlackboard& squad = world.create_shared("squad-1");
        squad.declare<bool>("alarm");
        const Tree tree = squad_tree();
        std::vector<AgentHandle> h;
        for (int i = 0; i < 20; ++i) h.push_back(world.spawn(tree, {.mode = mode, .shared = {{"squad", &squad}}}));
        for (int frame = 0; frame < 40; ++frame) {
            if (frame == 5) world.at(h[13]).blackboard().set("spotted", true);
            if (frame == 20) squad.set("alarm", false);
            if (frame == 21) world.at(h[13]).blackboard().set("spotted", false);
            if (frame == 30) squad.set("alarm", false);
            world.step(50ms);
        }
        return world.state_hash();
    };
    CHECK(run(Mode::Polling) == run(Mode::Event));
}

TEST_CASE("shared blackboard: a declare after a publish keeps the published and pending values") {
    World world;
    SharedBlackboard& squad = world.create_shared("squad-1");
    squad.declare<int>("count");
    const Tree tree = TreeBuilder("counter").shared_key<int>("squad", "count").action("Run", test::running_action()).end();
    const AgentHandle a = world.spawn(tree, {.shared = {{"squad", &squad}}});
    squad.set("count", 17);
    world.step(50ms);
    squad.set("count", 18);                   // pending
    squad.declare<bool>("alarm", true);       // a late key
    CHECK(squad.get<int>("count") == 17);
    CHECK(squad.pending<int>("count") == 18);
    CHECK(squad.get<bool>("alarm"));
    CHECK(squad.pending<bool>("alarm"));
    const AgentHandle b = world.spawn(tree, {.shared = {{"squad", &squad}}});
    CHECK(world.at(a).blackboard().get<int>("squad.count") == 17);
    CHECK(world.at(b).blackboard().get<int>("squad.count") == 17);  // both agents agree
    world.step(50ms);
    CHECK(squad.get<int>("count") == 18);
    CHECK(world.at(a).blackboard().get<int>("squad.count") == 18);
    CHECK(world.at(b).blackboard().get<int>("squad.count") == 18);
}

TEST_CASE("shared blackboard: a declare or a publish from inside its own publish is refused") {
    SharedBlackboard squad("squad-1");
    squad.declare<int>("count");
    std::vector<std::string> errors;
    squad.changes().connect([&](const SharedBlackboard& bb, KeyId) {
        try {
            squad.declare<int>("late");
        } catch (const UsageError& e) {
            errors.push_back(e.what());
        }
        try {
            squad.publish();
        } catch (const UsageError& e) {
            errors.push_back(e.what());
        }
        CHECK(bb.get<int>("count") == 5);
    });
    squad.set("count", 5);
    CHECK(squad.publish() == 1);
    CHECK(errors == std::vector<std::string>{
                        "shared blackboard 'squad-1': declare('late') from inside its publish (a change slot)",
                        "shared blackboard 'squad-1': publish() from inside its publish (a change slot)"});
    CHECK(squad.schema().find("late") == kNoKey);
    CHECK(squad.get<int>("count") == 5);
}

TEST_CASE("shared blackboard: change slots that throw while a step publishes are contained and counted; no write is lost") {
    World world;
    SharedBlackboard& squad = world.create_shared("squad-1");
    squad.declare<int>("a").declare<int>("b");
    const Tree tree = TreeBuilder("pair")
                          .shared_key<int>("squad", "a")
                          .shared_key<int>("squad", "b")
                          .action("Run", test::running_action())
                          .end();
    const AgentHandle h = world.spawn(tree, {.shared = {{"squad", &squad}}});
    std::vector<std::string> seen;
    boost::signals2::scoped_connection thrower = world.bus().subscribe([&](const BlackboardChange& ch) {
        if (ch.name == "squad.a") throw std::runtime_error("slot failed");
    });
    boost::signals2::scoped_connection observer =
        world.bus().subscribe([&](const BlackboardChange& ch) { seen.push_back(std::string(ch.name)); });
    boost::signals2::scoped_connection game = squad.changes().connect([&](const SharedBlackboard& bb, KeyId k) {
        if (bb.schema().info(k).name == "b") throw std::runtime_error("game slot failed");
    });
    world.step(50ms);
    squad.set("a", 1);
    squad.set("b", 2);
    FrameMetrics m;
    CHECK_NOTHROW(m = world.step(50ms));
    CHECK(squad.get<int>("a") == 1);
    CHECK(squad.get<int>("b") == 2);
    CHECK(world.at(h).blackboard().get<int>("squad.a") == 1);
    CHECK(world.at(h).blackboard().get<int>("squad.b") == 2);
    CHECK(seen == std::vector<std::string>{"squad.a", "squad.b"});  // the slot after the thrower still runs
    CHECK(m.slot_errors == 2);
    CHECK(world.slot_errors() == 2);
    CHECK(world.bus().slot_errors() == 1);
    CHECK(squad.slot_errors() == 1);
    CHECK(world.step(50ms).slot_errors == 0);
}

TEST_CASE("shared blackboard: a step publishes the written blackboards in creation order; a change slot's write to a later one is published in the same step, to an earlier one in the next") {
    // A World publishes only the blackboards written since they last published (a world with
    // thousands of squads reads none of them in a quiet frame), in the order of a pass over all of them.
    World world;
    SharedBlackboard& a = world.create_shared("a");
    SharedBlackboard& b = world.create_shared("b");
    SharedBlackboard& c = world.create_shared("c");
    for (SharedBlackboard* bb : {&a, &b, &c}) bb->declare<int>("v");
    std::vector<std::string> log;
    const auto logger = [&log](const SharedBlackboard& bb, KeyId k) {
        log.push_back(bb.name() + "=" + std::to_string(*static_cast<const int*>(bb.published(k))));
    };
    boost::signals2::scoped_connection log_a = a.changes().connect(logger);
    boost::signals2::scoped_connection log_b = b.changes().connect(logger);
    boost::signals2::scoped_connection log_c = c.changes().connect(logger);
    boost::signals2::scoped_connection a_to_c = a.changes().connect([&](const SharedBlackboard&, KeyId) { c.set("v", a.get<int>("v")); });
    boost::signals2::scoped_connection c_to_b = c.changes().connect([&](const SharedBlackboard&, KeyId) { b.set("v", c.get<int>("v")); });

    a.set("v", 1);
    world.step(50ms);
    CHECK(log == std::vector<std::string>{"a=1", "c=1"});  // c comes after a: the same step
    CHECK(b.get<int>("v") == 0);
    CHECK(b.pending<int>("v") == 1);
    log.clear();
    world.step(50ms);
    CHECK(log == std::vector<std::string>{"b=1"});  // b comes before c: the next step
    log.clear();
    world.step(50ms);
    CHECK(log.empty());

    c.set("v", 7);  // written first, published in creation order all the same
    a.set("v", 2);
    world.step(50ms);
    CHECK(log == std::vector<std::string>{"a=2", "c=2"});
    log.clear();
    world.step(50ms);
    CHECK(log == std::vector<std::string>{"b=2"});
    log.clear();

    // The game publishes a blackboard itself between its writes: the step publishes it once.
    a.set("v", 3);
    a.publish();
    a.set("v", 4);
    CHECK(log == std::vector<std::string>{"a=3"});
    world.step(50ms);
    CHECK(log == std::vector<std::string>{"a=3", "a=4", "c=4"});
    CHECK(c.get<int>("v") == 4);
}

TEST_CASE("shared blackboard: SpawnOptions::shared binding one scope twice is refused") {
    World world;
    SharedBlackboard& alpha = world.create_shared("alpha");
    SharedBlackboard& bravo = world.create_shared("bravo");
    alpha.declare<bool>("alarm");
    bravo.declare<bool>("alarm");
    CHECK_THROWS_WITH_AS(world.spawn(squad_tree(), {.shared = {{"squad", &alpha}, {"squad", &bravo}}}),
                         "World::spawn(): shared scope 'squad' is bound twice in SpawnOptions::shared", UsageError);
    CHECK_THROWS_WITH_AS(world.spawn(squad_tree(), {.shared = {{"squad", &alpha}, {"squad", &alpha}}}),
                         "World::spawn(): shared scope 'squad' is bound twice in SpawnOptions::shared", UsageError);
    CHECK(world.size() == 0);
}
