// Hot reload (World::reload; docs/hot_reload.md): replacing the tree definition of a running World's
// agents, from code and from XML. What the agents do at the reload (their runs end, leaves first,
// Aborted; the new tree starts on the next frame), what carries over (blackboard values by key name
// and type, shared bindings, handles), what a parameter-only change keeps (the run), when a reload
// asked for during a frame is applied (at its end), and that a bad new definition changes nothing.
#include "support/both_modes.hpp"
#include "support/trace_recorder.hpp"
#include "support/input_observer.hpp"

#include <ebt/ebt.hpp>
#include <ebt/snapshot.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

using namespace ebt;
using namespace std::chrono_literals;

namespace world_reload {

/// The actions the test trees use. Aim reads its `range` parameter on every update (into `ranges`);
/// Move is latent (its resume handles kept in `moves`).
struct Actions {
    Registry registry;
    std::vector<float> ranges;
    std::vector<ResumeHandle> moves;
    std::function<void()> on_attack;  // called from Attack's update when set (a reload or spawn mid-frame)

    Actions() {
        registry.add_action("Patrol", test::running_action());
        registry.add_action("Retreat", test::running_action());
        ActionSpec attack;
        attack.update = [this](ActionContext&) {
            if (on_attack) on_attack();
            return Status::Running;
        };
        registry.add_action("Attack", std::move(attack));
        ActionSpec aim;
        aim.ports.push_back(input_port<float>("range").default_value(10.f));
        aim.update = [this](ActionContext& ctx) {
            ranges.push_back(ctx.in<float>("range"));
            return Status::Running;
        };
        registry.add_action("Aim", std::move(aim));
        LatentActionSpec move;
        move.start = [this](ActionContext&, const ResumeHandle& h) { moves.push_back(h); };
        registry.add_latent_action("Move", std::move(move));
        ConditionSpec within;
        within.ports.push_back(input_port<float>("distance").default_key());
        within.ports.push_back(input_port<float>("max").default_value(5.f));
        within.evaluate = [](const ConditionContext& ctx) { return ctx.in<float>("distance") < ctx.in<float>("max"); };
        registry.add_condition("Within", std::move(within));
    }

    /// Version 1 of "guard": engage (Attack) while enemy_seen, else Patrol.
    ///   0 ActiveSelector / 1 Sequence "engage" [2 Condition enemy_seen, 3 Attack] / 4 Patrol
    Tree guard_v1() const {
        return TreeBuilder("guard", registry)
            .key<bool>("enemy_seen")
            .key<int>("hp", 100)
            .key<float>("mood", 0.5f)
            .key<std::string>("note", "calm")
            .active_selector()
                .sequence().label("engage").check("enemy_seen").action("Attack").back()
                .action("Patrol")
            .back()
            .end();
    }
    /// Version 2: hp is a float now (dropped), ammo is new; Retreat under a Sequence, then Patrol.
    ///   0 Sequence [1 Sequence "fall back" [2 Retreat], 3 Patrol]
    Tree guard_v2() const {
        return TreeBuilder("guard", registry)
            .key<float>("hp", 1.f)
            .key<std::string>("note", "fresh")
            .key<int>("ammo", 12)
            .key<bool>("enemy_seen")
            .key<float>("mood", 0.f)
            .sequence()
                .sequence().label("fall back").action("Retreat").back()
                .action("Patrol")
            .back()
            .end();
    }
    /// A tree of `name` with Aim's range given as a literal: versions differ only in that parameter.
    Tree aim(float range, const std::string& name = "aimer") const {
        return TreeBuilder(name, registry).sequence().action("Aim").port_value("range", range).back().end();
    }
};

/// Renders a world's trace events as "tick handle-index node:event" lines (lifecycle only).
struct WorldTrace : WorldListener {
    std::vector<std::string> lines;
    void on_event(AgentHandle handle, const Agent&, const TraceEvent& e) override {
        if (!e.is_lifecycle()) return;
        lines.push_back(std::to_string(e.tick) + " a" + std::to_string(handle.index) + " " + test::TraceRecorder::render(e));
    }
    /// The lines from `from` on, space separated.
    std::string since(std::size_t from) const {
        std::string out;
        for (std::size_t i = from; i < lines.size(); ++i) out += (out.empty() ? "" : " | ") + lines[i];
        return out;
    }
};

std::string names(const std::vector<std::string>& v) {
    std::string out;
    for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
    return out;
}
std::string dropped(const std::vector<DroppedKey>& v) {
    std::string out;
    for (const auto& d : v) out += (out.empty() ? "" : "; ") + d.name + ": " + d.reason;
    return out;
}

}  // namespace world_reload

using world_reload::Actions;
using world_reload::WorldTrace;

TEST_CASE("world reload: running nodes end Aborted leaves first, the new tree starts next frame, values carry over by name and type") {
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Actions acts;
        World world;
        WorldTrace trace;
        world.add_listener(&trace);
        const Tree v1 = acts.guard_v1();
        const AgentHandle g = world.spawn(v1, {.mode = mode, .seed = 7});
        world.step(50ms);
        world.at(g).blackboard().set("enemy_seen", true);
        world.at(g).blackboard().set("hp", 40);
        world.at(g).blackboard().set("mood", 0.25f);
        world.at(g).blackboard().set<std::string>("note", "angry");
        world.step(50ms);
        CHECK(trace.since(0) == "0 a0 0:I | 0 a0 4:I | 0 a0 4:U | 1 a0 4:T(Aborted) | 1 a0 1:I | 1 a0 3:I | 1 a0 3:U");
        const std::uint64_t serial = world.at(g).serial();
        const TimePoint clock = world.at(g).now();

        const std::size_t mark = trace.lines.size();
        const ReloadReport report = world.reload(acts.guard_v2());
        // Applied at once (between frames): the running nodes end now, leaves first.
        CHECK(trace.since(mark) == "2 a0 3:T(Aborted) | 2 a0 1:T(Aborted) | 2 a0 0:T(Aborted)");
        CHECK(report.applied);
        CHECK(report.tree == "guard");
        CHECK(report.frame == 2);
        CHECK(report.agents_restarted == 1);
        CHECK(report.agents_updated == 0);
        REQUIRE(report.changes.size() == 1);
        const ReloadChange& change = report.changes[0];
        CHECK(change.restarted);
        CHECK(change.old_tree == "guard");
        CHECK(change.agents == std::vector<AgentHandle>{g});
        CHECK(world_reload::names(change.kept) == "enemy_seen,mood,note");
        CHECK(world_reload::dropped(change.dropped) == "hp: type changed from int to float");
        CHECK(world_reload::names(change.added) == "ammo");

        // Same handle, a new run: a new serial, the clock goes on; values kept, dropped and new.
        Agent& a = world.at(g);
        CHECK(a.serial() != serial);
        CHECK(a.now() == clock);
        CHECK(a.seed() == 7);
        CHECK(a.mode() == mode);
        CHECK(a.blackboard().get<bool>("enemy_seen") == true);
        CHECK(a.blackboard().get<float>("mood") == 0.25f);
        CHECK(a.blackboard().get<std::string>("note") == "angry");
        CHECK(a.blackboard().get<float>("hp") == 1.f);
        CHECK(a.blackboard().get<int>("ammo") == 12);
        CHECK(a.status(0) == Status::Invalid);

        world.step(50ms);
        CHECK(trace.since(mark + 3) == "2 a0 0:I | 2 a0 1:I | 2 a0 2:I | 2 a0 2:U");
        CHECK(world.at(g).now() == clock + 50'000);
    }
}

TEST_CASE("world reload: the result is deterministic given the reload frame (twice, both modes, threads and LOD)") {
    struct Run {
        std::vector<std::string> lines;
        std::vector<std::uint64_t> hashes;
    };
    const auto run = [](Mode mode, std::uint32_t threads) {
        Actions acts;
        World world(WorldOptions{.threads = threads});
        WorldTrace trace;
        world.add_listener(&trace);
        SharedBlackboard& squad = world.create_shared("squad");
        const Tree v1 = TreeBuilder("guard", acts.registry)
                            .key<bool>("enemy_seen")
                            .key<float>("distance", 9.f)
                            .shared_key<bool>("squad", "alarm")
                            .active_selector()
                                .sequence().check("squad.alarm").action("Attack").back()
                                .sequence().check("enemy_seen").wait(150ms).action("Retreat").back()
                                .action("Patrol")
                            .back()
                            .end();
        const Tree v2 = TreeBuilder("guard", acts.registry)
                            .key<float>("distance", 0.f)
                            .shared_key<bool>("squad", "alarm")
                            .key<bool>("enemy_seen")
                            .active_selector()
                                .sequence().check("enemy_seen").action("Attack").back()
                                .sequence().condition("Within").action("Aim").back()
                                .sequence().check("squad.alarm").wait(100ms).action("Retreat").back()
                                .action("Patrol")
                            .back()
                            .end();
        std::vector<AgentHandle> guards;
        for (std::uint32_t i = 0; i < 12; ++i)
            guards.push_back(world.spawn(v1, {.mode = mode, .seed = i, .tick_interval = i % 3 == 0 ? 3u : 1u,
                                              .shared = {{"squad", &squad}}}));
        Run r;
        for (int frame = 0; frame < 30; ++frame) {
            if (frame == 4) squad.set("alarm", true);
            if (frame % 5 == 2) world.at(guards[static_cast<std::size_t>(frame) % guards.size()]).blackboard().set("enemy_seen", true);
            if (frame % 7 == 3) world.at(guards[static_cast<std::size_t>(frame * 5) % guards.size()]).blackboard().set("distance", 2.f);
            if (frame == 12) squad.set("alarm", false);
            if (frame == 10) {
                const ReloadReport report = world.reload(v2);
                CHECK(report.agents_restarted == 12);
            }
            if (frame == 20) squad.set("alarm", true);
            world.step(50ms);
            r.hashes.push_back(world.state_hash());
        }
        r.lines = trace.lines;
        return r;
    };
    const Run event = run(Mode::Event, 1);
    const Run again = run(Mode::Event, 1);
    const Run polling = run(Mode::Polling, 1);
    const Run threads = run(Mode::Event, 2);
    CHECK(event.lines == again.lines);
    CHECK(event.hashes == again.hashes);
    CHECK(event.lines == polling.lines);
    CHECK(event.hashes == polling.hashes);
    CHECK(event.lines == threads.lines);
    CHECK(event.hashes == threads.hashes);
    // The reload did something: Aborted events at the reload frame, and the new tree's Attack ran.
    const auto count = [&](const std::string& needle) {
        return std::count_if(event.lines.begin(), event.lines.end(), [&](const std::string& l) { return l.find(needle) != std::string::npos; });
    };
    CHECK(count("T(Aborted)") > 12);
    CHECK(count("10 a") > 0);
}

TEST_CASE("world reload: stepped on two threads (no listener, enough agents for the parallel phase), the same run as on one") {
    const auto run = [](std::uint32_t threads) {
        Actions acts;
        World world(WorldOptions{.threads = threads});
        SharedBlackboard& squad = world.create_shared("squad");
        const Tree v1 = TreeBuilder("guard", acts.registry)
                            .key<bool>("enemy_seen")
                            .shared_key<bool>("squad", "alarm")
                            .active_selector()
                                .sequence().check("squad.alarm").action("Attack").back()
                                .sequence().check("enemy_seen").wait(100ms).action("Retreat").back()
                                .action("Patrol")
                            .back()
                            .end();
        const Tree v2 = TreeBuilder("guard", acts.registry)
                            .key<float>("distance", 3.f)
                            .key<bool>("enemy_seen")
                            .shared_key<bool>("squad", "alarm")
                            .active_selector()
                                .sequence().check("enemy_seen").action("Attack").back()
                                .sequence().condition("Within").action("Retreat").back()  // (Aim records: one thread only)
                                .action("Patrol")
                            .back()
                            .end();
        std::vector<AgentHandle> guards;
        for (std::uint32_t i = 0; i < 700; ++i)
            guards.push_back(world.spawn(v1, {.seed = i, .tick_interval = i % 4 == 0 ? 2u : 1u, .shared = {{"squad", &squad}}}));
        std::vector<std::uint64_t> hashes;
        std::vector<std::uint32_t> stepped;
        for (int frame = 0; frame < 16; ++frame) {
            if (frame == 3) squad.set("alarm", true);
            if (frame % 3 == 1)
                for (std::size_t i = static_cast<std::size_t>(frame); i < guards.size(); i += 7)
                    world.at(guards[i]).blackboard().set("enemy_seen", frame % 2 == 1);
            if (frame == 8) CHECK(world.reload(v2).agents_restarted == 700);
            const FrameMetrics m = world.step(50ms);
            hashes.push_back(world.state_hash());
            stepped.push_back(m.agents_stepped);
        }
        return std::pair(hashes, stepped);
    };
    const auto one = run(1);
    const auto two = run(2);
    CHECK(one.first == two.first);
    CHECK(one.second == two.second);
    CHECK(one.second[8] >= 512);  // a frame after the reload big enough to be ticked in parallel
}

TEST_CASE("world reload: a bad new definition changes nothing and says why") {
    Actions acts;
    World world;
    WorldTrace trace;
    world.add_listener(&trace);
    SharedBlackboard& squad = world.create_shared("squad");
    squad.declare<bool>("alarm");
    const Tree v1 = acts.guard_v1();
    const AgentHandle g = world.spawn(v1);
    world.at(g).blackboard().set("enemy_seen", true);
    world.step(50ms);
    world.step(50ms);
    const std::uint64_t before = world.state_hash();
    const std::size_t events = trace.lines.size();
    const std::uint64_t serial = world.at(g).serial();

    SUBCASE("a file that does not load: the loader's error, with file:line:column") {
#if EBT_HAS_XML
        const std::string bad =
            "<root BTCPP_format=\"4\" main_tree_to_execute=\"guard\">\n"
            "  <BehaviorTree ID=\"guard\">\n"
            "    <Sequence>\n"
            "      <Fly/>\n"
            "    </Sequence>\n"
            "  </BehaviorTree>\n"
            "</root>\n";
        try {
            world.reload(xml::Loader(acts.registry).load_string(bad, "guard.xml"));
            FAIL("no LoadError");
        } catch (const xml::LoadError& e) {
            CHECK(e.file() == "guard.xml");
            CHECK(e.line() == 4);
            CHECK(e.column() == 7);
            CHECK(std::string(e.what()).rfind("guard.xml:4:7:", 0) == 0);
        }
#endif
    }
    SUBCASE("a shared scope the agents are not bound to") {
        const Tree v2 = TreeBuilder("guard", acts.registry).shared_key<bool>("squad", "alarm").action("Patrol").end();
        CHECK_THROWS_WITH_AS(world.reload(v2),
                             "World::reload(): tree 'guard' reads shared scope 'squad', which agent {0, generation 1} (tree 'guard') is not bound to",
                             UsageError);
    }
    SUBCASE("an empty tree") {
        CHECK_THROWS_WITH_AS(world.reload(Tree{}), "World::reload(): the tree is empty", UsageError);
        CHECK_THROWS_WITH_AS(world.reload("guard", Tree{}), "World::reload(): the tree is empty", UsageError);
    }
    CHECK(world.state_hash() == before);
    CHECK(trace.lines.size() == events);
    CHECK(world.at(g).serial() == serial);
    CHECK(&world.at(g).tree().schema() == &v1.schema());
    // The world goes on as if nothing was asked.
    world.step(50ms);
    CHECK(trace.lines.size() == events + 1);
    CHECK(trace.lines.back() == "2 a0 3:U");
}

#if EBT_HAS_XML
TEST_CASE("world reload: from XML, an attribute's new value keeps the run; a new shape restarts it") {
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Actions acts;
        const xml::Loader loader(acts.registry);
        const auto file = [](const std::string& body) {
            return "<root BTCPP_format=\"4\" main_tree_to_execute=\"aimer\">\n  <BehaviorTree ID=\"aimer\">\n    <Sequence>\n" + body +
                   "    </Sequence>\n  </BehaviorTree>\n</root>\n";
        };
        World world;
        WorldTrace trace;
        world.add_listener(&trace);
        world.spawn(loader.load_string(file("      <Aim range=\"5\"/>\n"), "aimer.xml"), {.mode = mode});
        world.step(50ms);
        const ReloadReport same_shape = world.reload(loader.load_string(file("      <Aim range=\"6.5\"/>\n"), "aimer.xml"));
        CHECK(same_shape.agents_updated == 1);
        world.step(50ms);
        const std::size_t mark = trace.lines.size();
        const ReloadReport new_shape =
            world.reload(loader.load_string(file("      <AlwaysSuccess/>\n      <Aim range=\"2\"/>\n"), "aimer.xml"));
        CHECK(new_shape.agents_restarted == 1);
        world.step(50ms);
        CHECK(acts.ranges == std::vector<float>{5.f, 6.5f, 2.f});
        CHECK(trace.since(0) == "0 a0 0:I | 0 a0 1:I | 0 a0 1:U | 1 a0 1:U | "
                                "2 a0 1:T(Aborted) | 2 a0 0:T(Aborted) | 2 a0 0:I | 2 a0 1:I | 2 a0 1:U | 2 a0 1:T(Success) | 2 a0 2:I | 2 a0 2:U");
        CHECK(mark == 4);
    }
}
#endif

TEST_CASE("world reload: a shared key whose type the new tree changes is refused, naming it") {
    Actions acts;
    World world;
    SharedBlackboard& squad = world.create_shared("squad");
    const Tree v1 = TreeBuilder("guard", acts.registry).shared_key<bool>("squad", "alarm").action("Patrol").end();
    world.spawn(v1, {.shared = {{"squad", &squad}}});
    world.step(50ms);
    const std::uint64_t before = world.state_hash();
    const Tree v2 = TreeBuilder("guard", acts.registry).shared_key<int>("squad", "alarm").action("Patrol").end();
    CHECK_THROWS_AS(world.reload(v2), UsageError);
    try {
        world.reload(v2);
    } catch (const UsageError& e) {
        const std::string what = e.what();
        CHECK(what.rfind("World::reload(): ", 0) == 0);
        CHECK(what.find("alarm") != std::string::npos);
    }
    CHECK(world.state_hash() == before);
}

TEST_CASE("world reload: a parameter-only change keeps the run and is used on the next tick") {
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Actions acts;
        World world;
        WorldTrace trace;
        world.add_listener(&trace);
        const Tree v1 = acts.aim(5.f);
        const AgentHandle a = world.spawn(v1, {.mode = mode});
        const AgentHandle b = world.spawn(v1, {.mode = mode, .tick_interval = 2});
        world.step(50ms);
        world.step(50ms);
        CHECK(acts.ranges == std::vector<float>{5.f, 5.f, 5.f});
        const std::uint64_t serial = world.at(a).serial();
        const std::size_t mark = trace.lines.size();
        const ReloadReport report = world.reload(acts.aim(7.5f));
        CHECK(trace.lines.size() == mark);  // no Aborted, nothing at all
        CHECK(report.agents_updated == 2);
        CHECK(report.agents_restarted == 0);
        REQUIRE(report.changes.size() == 1);
        CHECK_FALSE(report.changes[0].restarted);
        CHECK(report.changes[0].agents == std::vector<AgentHandle>{a, b});
        CHECK(world.at(a).serial() == serial);
        CHECK(world.at(a).status(1) == Status::Running);
        acts.ranges.clear();
        world.step(50ms);
        world.step(50ms);
        CHECK(acts.ranges == std::vector<float>{7.5f, 7.5f, 7.5f});  // and b in its LOD frame
        CHECK(trace.since(mark) == "2 a0 1:U | 3 a0 1:U | 3 a1 1:U");
        CHECK(structural_hash(world.at(a).tree()) == structural_hash(acts.aim(1.f)));
    }
}

TEST_CASE("world reload: a parameter-only change of a condition wakes the guards that read it, alike in both modes") {
    std::vector<std::string> traces[2];
    for (Mode mode : test::both_modes()) {
        Actions acts;
        World world;
        WorldTrace trace;
        world.add_listener(&trace);
        const auto tree = [&](float max) {
            return TreeBuilder("picky", acts.registry)
                .key<float>("distance", 6.f)
                .active_selector()
                    .sequence().condition("Within").port_value("max", max).action("Attack").back()
                    .action("Patrol")
                .back()
                .end();
        };
        world.spawn(tree(5.f), {.mode = mode});
        world.step(50ms);
        world.step(50ms);
        const ReloadReport report = world.reload(tree(8.f));
        CHECK(report.agents_updated == 1);
        world.step(50ms);
        CHECK(trace.since(0) == "0 a0 0:I | 0 a0 4:I | 0 a0 4:U | 1 a0 4:U | 2 a0 4:T(Aborted) | 2 a0 1:I | 2 a0 3:I | 2 a0 3:U");
        traces[mode == Mode::Event].swap(trace.lines);
    }
    CHECK(traces[0] == traces[1]);
}

TEST_CASE("world reload: suspended actions of a restarted agent end Aborted and their resume handles go stale") {
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Actions acts;
        World world;
        WorldTrace trace;
        world.add_listener(&trace);
        const Tree v1 = TreeBuilder("mover", acts.registry).sequence().action("Move").action("Patrol").back().end();
        const Tree v2 = TreeBuilder("mover", acts.registry).key<int>("legs", 2).sequence().action("Move").action("Retreat").back().end();
        const AgentHandle m = world.spawn(v1, {.mode = mode});
        world.step(50ms);
        REQUIRE(acts.moves.size() == 1);
        const ResumeHandle old_move = acts.moves[0];
        world.reload(v2);
        CHECK(trace.since(0) == "0 a0 0:I | 0 a0 1:I | 1 a0 1:T(Aborted) | 1 a0 0:T(Aborted)");
        CHECK_FALSE(world.resume(old_move, Status::Success));  // stale: refused, changes nothing
        world.step(50ms);
        REQUIRE(acts.moves.size() == 2);
        CHECK(acts.moves[1].agent == m);
        CHECK(world.resume(acts.moves[1], Status::Success));
        world.step(50ms);
        CHECK(trace.since(4) == "1 a0 0:I | 1 a0 1:I | 2 a0 1:T(Success) | 2 a0 2:I | 2 a0 2:U");
    }
}

TEST_CASE("world reload: a parameter-only change keeps suspended actions and their handles") {
    Actions acts;
    World world;
    const auto tree = [&](float range) {
        return TreeBuilder("mover", acts.registry).sequence().action("Move").action("Aim").port_value("range", range).back().end();
    };
    world.spawn(tree(1.f));
    world.step(50ms);
    REQUIRE(acts.moves.size() == 1);
    CHECK(world.reload(tree(2.f)).agents_updated == 1);
    CHECK(world.resume(acts.moves[0], Status::Success));
    world.step(50ms);
    CHECK(acts.ranges == std::vector<float>{2.f});
}

TEST_CASE("world reload: timers of the old run are dropped; the new run's wait on the world's clock") {
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Actions acts;
        World world;
        WorldTrace trace;
        world.add_listener(&trace);
        const Tree v1 = TreeBuilder("waiter", acts.registry).sequence().wait(200ms).action("Patrol").back().end();
        const Tree v2 = TreeBuilder("waiter", acts.registry).sequence().wait(100ms).action("Retreat").back().end();
        world.spawn(v1, {.mode = mode});
        world.step(50ms);  // frame 0: the 200 ms wait starts
        world.reload(v2);
        std::vector<std::uint32_t> stepped;
        for (int i = 0; i < 5; ++i) stepped.push_back(world.step(50ms).agents_stepped);
        // Frame 1 starts the 100 ms wait; it ends in frame 3; Retreat then runs every frame. The old
        // wait's deadline (frame 4) wakes nothing.
        CHECK(trace.since(0) == "0 a0 0:I | 0 a0 1:I | 1 a0 1:T(Aborted) | 1 a0 0:T(Aborted) | 1 a0 0:I | 1 a0 1:I | "
                                "3 a0 1:T(Success) | 3 a0 2:I | 3 a0 2:U | 4 a0 2:U | 5 a0 2:U");
        if (mode == Mode::Event) CHECK(stepped == std::vector<std::uint32_t>{1, 0, 1, 1, 1});
    }
}

TEST_CASE("world reload: asked for during a frame, it is applied at the frame's end, after that frame's spawns and despawns") {
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Actions acts;
        World world;
        WorldTrace trace;
        world.add_listener(&trace);
        const Tree v1 = acts.guard_v1();
        const Tree v2 = acts.guard_v2();
        const AgentHandle a = world.spawn(v1, {.mode = mode, .blackboard = {{"enemy_seen", true}}});
        const AgentHandle b = world.spawn(v1, {.mode = mode});
        AgentHandle c;
        ReloadReport asked;
        bool done = false;
        acts.on_attack = [&] {
            if (std::exchange(done, true)) return;
            c = world.spawn(v1, {.mode = mode, .blackboard = {{"hp", 3}}});  // joins at the frame's end
            world.despawn(b);
            asked = world.reload(v2);
        };
        world.step(50ms);  // frame 0: a's Attack asks
        CHECK_FALSE(asked.applied);
        CHECK(asked.frame == 1);
        CHECK(asked.changes.empty());
        CHECK(trace.since(0) == "0 a0 0:I | 0 a0 1:I | 0 a0 3:I | 0 a0 3:U | 1 a0 3:T(Aborted) | 1 a0 1:T(Aborted) | 1 a0 0:T(Aborted)");
        std::vector<ReloadReport> reports = world.take_reload_reports();
        REQUIRE(reports.size() == 1);
        CHECK(reports[0].applied);
        CHECK(reports[0].frame == 1);
        CHECK(reports[0].agents_restarted == 2);
        REQUIRE(reports[0].changes.size() == 1);
        CHECK(reports[0].changes[0].agents == std::vector<AgentHandle>{a, c});  // b left, c joined
        CHECK(world.take_reload_reports().empty());
        CHECK(world.at(c).blackboard().get<float>("hp") == 1.f);  // dropped: hp's type changed
        CHECK(&world.at(c).tree().schema() == &world.at(a).tree().schema());
        const std::size_t mark = trace.lines.size();
        world.step(50ms);
        CHECK(trace.since(mark) == "1 a0 0:I | 1 a0 1:I | 1 a0 2:I | 1 a0 2:U | 1 a2 0:I | 1 a2 1:I | 1 a2 2:I | 1 a2 2:U");
    }
}

TEST_CASE("world reload: asked for by a world listener during a frame, applied at its end") {
    Actions acts;
    World world;
    struct Reloader : WorldListener {
        World* world = nullptr;
        Tree next;
        std::vector<std::string> lines;
        ReloadReport asked;
        void on_event(AgentHandle handle, const Agent&, const TraceEvent& e) override {
            if (!e.is_lifecycle()) return;
            lines.push_back(std::to_string(e.tick) + " a" + std::to_string(handle.index) + " " + test::TraceRecorder::render(e));
            if (e.tick == 1 && e.kind == TraceKind::Update && next) asked = world->reload(std::exchange(next, Tree{}));
        }
    } reloader;
    reloader.world = &world;
    reloader.next = acts.guard_v2();
    world.add_listener(&reloader);
    world.spawn(acts.guard_v1());
    world.step(50ms);
    world.step(50ms);  // frame 1: Patrol's update asks
    CHECK_FALSE(reloader.asked.applied);
    CHECK(reloader.asked.frame == 2);
    REQUIRE(world.take_reload_reports().size() == 1);
    world.step(50ms);
    std::string all;
    for (const auto& line : reloader.lines) all += (all.empty() ? "" : " | ") + line;
    CHECK(all == "0 a0 0:I | 0 a0 4:I | 0 a0 4:U | 1 a0 4:U | 2 a0 4:T(Aborted) | 2 a0 0:T(Aborted) | "
                 "2 a0 0:I | 2 a0 1:I | 2 a0 2:I | 2 a0 2:U");
}

TEST_CASE("world reload: agents of other trees are untouched; reload(name, tree) may change the name") {
    Actions acts;
    World world;
    WorldTrace trace;
    world.add_listener(&trace);
    const AgentHandle g = world.spawn(acts.guard_v1());
    const AgentHandle other = world.spawn(acts.aim(3.f, "turret"));
    world.step(50ms);
    const Agent* turret = world.agent(other);
    const std::uint64_t serial = turret->serial();
    const std::size_t mark = trace.lines.size();
    const ReloadReport report = world.reload("guard", acts.aim(4.f, "guard-2"));
    CHECK(report.agents_restarted == 1);
    CHECK(trace.since(mark) == "1 a0 4:T(Aborted) | 1 a0 0:T(Aborted)");
    CHECK(world.agent(other) == turret);
    CHECK(turret->serial() == serial);
    CHECK(world.at(g).tree().name() == "guard-2");
    CHECK(world.reload(acts.guard_v1()).changes.empty());  // no agent is called "guard" any more
    acts.ranges.clear();
    world.step(50ms);
    CHECK(acts.ranges == std::vector<float>{4.f, 3.f});
}

TEST_CASE("world reload: shared bindings stay, routed to the new tree's keys") {
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Actions acts;
        World world;
        SharedBlackboard& squad = world.create_shared("squad");
        const Tree v1 = TreeBuilder("guard", acts.registry)
                            .shared_key<bool>("squad", "alarm")
                            .active_selector().sequence().check("squad.alarm").action("Attack").back().action("Patrol").back()
                            .end();
        // The alarm is the new tree's third key (the first in v1): a routing by the old key would miss it.
        const Tree v2 = TreeBuilder("guard", acts.registry)
                            .key<int>("a")
                            .key<int>("b")
                            .shared_key<bool>("squad", "alarm")
                            .active_selector().sequence().check("squad.alarm").action("Retreat").back().action("Patrol").back()
                            .end();
        const AgentHandle g = world.spawn(v1, {.mode = mode, .shared = {{"squad", &squad}}});
        squad.set("alarm", true);
        world.step(50ms);
        CHECK(world.at(g).status(3) == Status::Running);  // Attack
        world.reload(v2);
        CHECK(world.at(g).bound("squad") == &squad);
        CHECK(world.at(g).blackboard().get<bool>("squad.alarm") == true);  // the published value
        world.step(50ms);
        CHECK(world.at(g).status(v2.find("Retreat")) == Status::Running);
        // Published changes reach the new tree's key, not the slot the old tree's key had.
        squad.set("alarm", false);
        world.step(50ms);
        CHECK(world.at(g).blackboard().get<bool>("squad.alarm") == false);
        CHECK(world.at(g).blackboard().get<int>("a") == 0);
        squad.set("alarm", true);
        world.step(50ms);
        CHECK(world.at(g).blackboard().get<bool>("squad.alarm") == true);
        CHECK(world.at(g).blackboard().get<int>("a") == 0);
    }
}

TEST_CASE("world reload: a snapshot after a reload is of the new tree") {
    Actions acts;
    World world;
    const AgentHandle g = world.spawn(acts.guard_v1(), {.blackboard = {{"enemy_seen", true}}});
    world.step(50ms);
    const Tree v2 = acts.guard_v2();
    world.reload(v2);
    world.step(50ms);
    CHECK(structural_hash(world.at(g).tree()) == structural_hash(v2));
    const std::vector<std::byte> bytes = save_world(world);
    World restored;
    restore_world(restored, std::span(&v2, 1), bytes);
    CHECK(restored.state_hash() == world.state_hash());
    world.step(50ms);
    restored.step(50ms);
    CHECK(restored.state_hash() == world.state_hash());
    const Tree v1 = acts.guard_v1();
    World wrong;
    CHECK_THROWS_AS(restore_world(wrong, std::span(&v1, 1), bytes), SnapshotError);
}

TEST_CASE("world reload: refused during the parallel phase, and with an input observer") {
    Actions acts;
    World world(WorldOptions{.threads = 2});
    std::vector<AgentHandle> agents;
    for (int i = 0; i < 600; ++i) agents.push_back(world.spawn(acts.guard_v1(), {.blackboard = {{"enemy_seen", true}}}));
    const Tree v2 = acts.guard_v2();
    std::mutex mutex;  // Attack's update runs on two threads
    std::vector<std::string> errors;
    acts.on_attack = [&] {
        if (!world.in_parallel_phase()) return;
        try {
            world.reload(v2);
        } catch (const UsageError& e) {
            const std::lock_guard<std::mutex> lock(mutex);
            errors.emplace_back(e.what());
        }
    };
    world.step(50ms);
    acts.on_attack = nullptr;
    REQUIRE(errors.size() == 600);
    CHECK(errors[0].rfind("World::reload()", 0) == 0);
    CHECK(world.take_reload_reports().empty());
    CHECK(world.at(agents[0]).tree().schema().find("ammo") == kNoKey);

    test::SilentInputObserver observer;
    world.set_input_observer(&observer);
    CHECK_THROWS_WITH_AS(world.reload(v2),
                         "World::reload(): the world has an input observer (a recorder), and a recording cannot hold a reload",
                         UsageError);
    world.set_input_observer(nullptr);
    CHECK(world.reload(v2).agents_restarted == 600);
}

TEST_CASE("world reload: take_reload_reports keeps at most reload_report_limit() reports, dropping the oldest and counting them") {
    // A server that reloads from inside its frames and never takes the reports: each frame of this
    // world asks for one reload (applied at the frame's end, its report kept), and the list stays bounded.
    World world;
    Tree tree;
    ActionSpec spec = test::running_action();
    spec.update = [&](ActionContext&) {
        world.reload(tree);  // the same structure: the agent keeps running
        return Status::Running;
    };
    tree = TreeBuilder("reloader").action("R", spec).end();
    world.spawn(tree);
    CHECK(World::kDefaultReloadReportLimit == 16);
    CHECK(world.reload_report_limit() == 16);
    for (int f = 0; f < 20; ++f) world.step(10ms);  // frames 0-19: the reloads asked in frames 0-3 are dropped
    CHECK(world.dropped_reload_reports() == 4);
    std::vector<ReloadReport> reports = world.take_reload_reports();
    REQUIRE(reports.size() == 16);
    for (std::size_t i = 0; i < reports.size(); ++i) {
        CAPTURE(i);
        CHECK(reports[i].applied);
        CHECK(reports[i].frame == 5 + i);  // asked in frame 4 + i, applied at its end
        CHECK(reports[i].agents_updated == 1);
    }
    CHECK(world.dropped_reload_reports() == 4);  // take_reload_reports does not reset the count
    world.set_reload_report_limit(3);
    for (int f = 20; f < 25; ++f) world.step(10ms);
    CHECK(world.dropped_reload_reports() == 6);
    world.set_reload_report_limit(1);  // lowered below the list's length: the oldest go at once
    CHECK(world.dropped_reload_reports() == 8);
    reports = world.take_reload_reports();
    REQUIRE(reports.size() == 1);
    CHECK(reports[0].frame == 25);
    world.set_reload_report_limit(0);  // keeps none
    world.step(10ms);
    world.step(10ms);
    CHECK(world.dropped_reload_reports() == 10);
    CHECK(world.take_reload_reports().empty());
}
