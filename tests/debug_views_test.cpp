// Tree views (<ebt/debug/views.hpp>): the exact text of the definition and live views of the guard
// tree and of a tree with every node kind, the same live view in both modes, DOT escaping, and
// Graphviz accepting the DOT output when it is installed.
#include <ebt/debug/views.hpp>
#include <ebt/ebt.hpp>

#include "arena_scenario.hpp"
#include "guard_scenario.hpp"
#include "support/both_modes.hpp"
#include "support/guard_tree_text.hpp"

#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace std::chrono_literals;

namespace ebt {
namespace {

/// A registry for the every-kind tree: actions with ports, a latent action (its handle kept in
/// `*move`), a registered condition with a port.
Registry every_kind_registry(ResumeHandle* move) {
    Registry r;
    r.add_action("Shoot", [](ActionContext&) { return Status::Running; },
                 {port<float>("range"), port<int>("ammo")});
    r.add_action("Reload", [](ActionContext&) { return Status::Success; });
    r.add_action("Fail", [](ActionContext&) { return Status::Failure; });
    r.add_latent_action("MoveTo", [move](ActionContext&, const ResumeHandle& h) { *move = h; });
    r.add_condition("InRange", [](const ConditionContext& c) { return c.in<float>(0) < 5.0f; },
                    {port<float>("dist")});
    return r;
}

/// Every node kind once (conditions folded under an Inverter included), with parameters, guards
/// of every form, literal and key ports, a shared key, and a label DOT must escape.
Tree every_kind_tree(const Registry& r) {
    return TreeBuilder("every \"kind\"", r)
        .key<bool>("alarm")
        .key<float>("enemy_dist", 10.0f)
        .key<int>("clip", 6)
        .shared_key<bool>("squad", "retreat")
        .parallel(Policy::RequireAll, Policy::RequireOne)
            .active_selector({.label = "combat"})
                .sequence({.label = "engage"})
                    .condition(lt("enemy_dist", 5.0f) && !Predicate::is("alarm"))
                    .action("Shoot", {{"ammo", "clip"}}).port_value("range", 2.5f)
                .back()
                .priority_selector()
                    .sequence({.precondition = Predicate::condition("InRange", {{"dist", "enemy_dist"}})})
                        .action("Reload")
                    .back()
                    .always_failure()
                .back()
                .non_priority_selector()
                    .filter().check("squad.retreat").action("Reload").back()
                    .always_success()
                .back()
                .selector({.label = "pick <one> \\ \"any\""})
                    .random_selector().action("Fail").action("Reload").back()
                    .weighted_selector({1.0, 3.0}).action("Fail").action("Reload").back()
                .back()
            .back()
            .timeout(2s).wait(5s).back()
            .delay(500ms).action("MoveTo").back()
            .loop().cooldown(1s).action("Reload").back().back()
            .force_success().retry(3).action("Fail").back().back()
            .monitor(Policy::RequireAll, Policy::RequireOne)
                .inverter().check("alarm").back()
                .reactive_sequence()
                    .check("squad.retreat", false)
                    .repeat(2).inverter().action("Fail").back().back()
                .back()
            .back()
        .back()
        .end();
}

/// The every-kind tree's definition view.
const std::string kEveryKindDefinition =
    "tree 'every \"kind\"', 38 nodes\n"
    "blackboard:\n"
    "  alarm: bool = false\n"
    "  enemy_dist: float = 10\n"
    "  clip: int = 6\n"
    "  squad.retreat: bool = false (shared scope 'squad')\n"
    "nodes:\n"
    "  0 Parallel; success needs 6, failure needs 1\n"
    "    1 ActiveSelector combat [children abort LowerPriority]\n"
    "      2 Sequence engage [guard, abort LowerPriority]; guard enemy_dist < 5 && !alarm\n"
    "        3 Condition predicate; is enemy_dist < 5 && !alarm\n"
    "        4 Action Shoot; ports range=2.5, ammo={clip}\n"
    "      5 PrioritySelector [children abort Both]\n"
    "        6 Sequence [guard, abort Both]; guard InRange(dist={enemy_dist})\n"
    "          7 Action Reload\n"
    "        8 AlwaysFailure\n"
    "      9 NonPrioritySelector [children abort Self]\n"
    "        10 Filter [guard, abort Self]; guard squad.retreat\n"
    "          11 Condition squad.retreat\n"
    "          12 Action Reload\n"
    "        13 AlwaysSuccess\n"
    "      14 Selector pick <one> \\ \"any\"\n"
    "        15 RandomSelector\n"
    "          16 Action Fail\n"
    "          17 Action Reload\n"
    "        18 WeightedSelector; weights 1, 3\n"
    "          19 Action Fail\n"
    "          20 Action Reload\n"
    "    21 Timeout; 2 s\n"
    "      22 Wait; 5 s\n"
    "    23 Delay; 500 ms\n"
    "      24 Action MoveTo\n"
    "    25 Loop; forever\n"
    "      26 Cooldown [guard, abort None]; 1 s; guard !cooling\n"
    "        27 Action Reload\n"
    "    28 ForceSuccess\n"
    "      29 Retry; 3 attempts\n"
    "        30 Action Fail\n"
    "    31 Monitor [guard, abort Self]; success needs 1, failure needs 1; guard !alarm\n"
    "      32 Condition !alarm\n"
    "      33 ReactiveSequence [guard, abort Self]; guard !squad.retreat\n"
    "        34 Condition !squad.retreat\n"
    "        35 Repeat; 2 times\n"
    "          36 Inverter\n"
    "            37 Action Fail\n";

/// Whether Graphviz's `dot` can be run (the DOT checks are skipped, with a message, without it).
bool have_dot() { return std::system("dot -V > /dev/null 2>&1") == 0; }

/// Runs `dot -Tsvg` over `graph`; its exit status (0: Graphviz read and rendered it).
int render_svg(const std::string& graph, const std::string& name) {
    const std::filesystem::path dir = std::filesystem::temp_directory_path();
    const std::filesystem::path in = dir / ("ebt_views_" + name + ".dot"), out = dir / ("ebt_views_" + name + ".svg");
    std::ofstream(in) << graph;
    const int status = std::system(("dot -Tsvg '" + in.string() + "' -o '" + out.string() + "' 2> /dev/null").c_str());
    std::filesystem::remove(in);
    std::filesystem::remove(out);
    return status;
}

}  // namespace

TEST_CASE("debug views: the guard tree's definition: keys, guards as expressions, ports") {
    Registry registry;
    scenarios::register_guard_actions(registry);
    const Tree tree = scenarios::guard_tree(registry);
    CHECK(debug::definition_text(tree) ==
          "tree 'guard', 11 nodes\n"
          "blackboard:\n"
          "  enemy_seen: bool = false\n"
          "  health_low: bool = false\n"
          "  enemy_dead: bool = false\n"
          "nodes:\n"
          "  0 ActiveSelector [children abort LowerPriority]\n"
          "    1 Sequence [guard, abort LowerPriority]; guard enemy_seen\n"
          "      2 Condition enemy_seen\n"
          "      3 ActiveSelector [children abort LowerPriority]\n"
          "        4 Sequence [guard, abort LowerPriority]; guard health_low\n"
          "          5 Condition health_low\n"
          "          6 Action Runaway; ports health_low={health_low}\n"
          "        7 Monitor [guard, abort Both]; success needs 1, failure needs 1; guard !enemy_dead\n"
          "          8 Condition !enemy_dead\n"
          "          9 Action Attack\n"
          "    10 Action Patrol\n");
    // describe() is the short form: the same node headings, nothing else.
    CHECK(tree.describe() == test::kGuardTreeDescribed);
}

TEST_CASE("debug views: a guard's live state is the same text in both modes") {
    Registry registry;
    scenarios::register_guard_actions(registry);
    const Tree tree = scenarios::guard_tree(registry);
    test::in_both_modes([&](Mode mode) {
        Agent guard(tree, AgentOptions{.mode = mode});
        guard.tick(50ms);
        guard.blackboard().set("enemy_seen", true);  // the fight branch preempts Patrol
        guard.tick(50ms);
        CHECK(debug::agent_text(guard) ==
              "agent of tree 'guard', tick 2, clock 100 ms\n"
              "blackboard:\n"
              "  enemy_seen: bool = true\n"
              "  health_low: bool = false\n"
              "  enemy_dead: bool = false\n"
              "nodes:\n"
              "  Running 0 ActiveSelector [children abort LowerPriority]\n"
              "  Running   1 Sequence [guard, abort LowerPriority]; guard enemy_seen\n"
              "  idle        2 Condition enemy_seen\n"
              "  Running     3 ActiveSelector [children abort LowerPriority]\n"
              "  idle          4 Sequence [guard, abort LowerPriority]; guard health_low\n"
              "  idle            5 Condition health_low\n"
              "  idle            6 Action Runaway; ports health_low={health_low}\n"
              "  Running       7 Monitor [guard, abort Both]; success needs 1, failure needs 1; guard !enemy_dead\n"
              "  idle            8 Condition !enemy_dead\n"
              "  Running         9 Action Attack\n"
              "  Aborted   10 Action Patrol\n");
    });
}

TEST_CASE("debug views: a tree with every node kind: parameters, literal ports, shared keys") {
    ResumeHandle move;
    const Registry registry = every_kind_registry(&move);
    const Tree tree = every_kind_tree(registry);
    CHECK(debug::definition_text(tree) == kEveryKindDefinition);
}

TEST_CASE("debug views: every kind live: timers with the time left, a resumed action, loop runs, both modes") {
    ResumeHandle move;
    const Registry registry = every_kind_registry(&move);
    const Tree tree = every_kind_tree(registry);
    test::in_both_modes([&](Mode mode) {
        Agent agent(tree, AgentOptions{.mode = mode});
        for (int i = 0; i < 6; ++i) agent.tick(100ms);  // the Delay (500 ms) has just started MoveTo
        CHECK(debug::agent_text(agent).find("  Running     24 Action MoveTo -- suspended\n") != std::string::npos);
        agent.blackboard().set("enemy_dist", 3.5f);
        REQUIRE(agent.resume(move, Status::Success));
        CHECK(debug::agent_text(agent) ==
              "agent of tree 'every \"kind\"', tick 6, clock 600 ms\n"
              "blackboard:\n"
              "  alarm: bool = false\n"
              "  enemy_dist: float = 3.5\n"
              "  clip: int = 6\n"
              "  squad.retreat: bool = false (shared scope 'squad')\n"
              "nodes:\n"
              "  Running 0 Parallel; success needs 6, failure needs 1\n"
              "  Success   1 ActiveSelector combat [children abort LowerPriority]\n"
              "  idle        2 Sequence engage [guard, abort LowerPriority]; guard enemy_dist < 5 && !alarm\n"
              "  idle          3 Condition predicate; is enemy_dist < 5 && !alarm\n"
              "  idle          4 Action Shoot; ports range=2.5, ammo={clip}\n"
              "  Failure     5 PrioritySelector [children abort Both]\n"
              "  idle          6 Sequence [guard, abort Both]; guard InRange(dist={enemy_dist})\n"
              "  idle            7 Action Reload\n"
              "  Failure       8 AlwaysFailure\n"
              "  Success     9 NonPrioritySelector [children abort Self]\n"
              "  idle          10 Filter [guard, abort Self]; guard squad.retreat\n"
              "  idle            11 Condition squad.retreat\n"
              "  idle            12 Action Reload\n"
              "  Success       13 AlwaysSuccess\n"
              "  idle        14 Selector pick <one> \\ \"any\"\n"
              "  idle          15 RandomSelector\n"
              "  idle            16 Action Fail\n"
              "  idle            17 Action Reload\n"
              "  idle          18 WeightedSelector; weights 1, 3\n"
              "  idle            19 Action Fail\n"
              "  idle            20 Action Reload\n"
              "  Running   21 Timeout; 2 s -- 1500 ms left\n"
              "  Running     22 Wait; 5 s -- 4500 ms left\n"
              "  Running   23 Delay; 500 ms\n"
              "  Running     24 Action MoveTo -- resumed with Success, ends when the walk reaches it\n"
              "  Running   25 Loop; forever -- runs done 6\n"
              "  Success     26 Cooldown [guard, abort None]; 1 s; guard !cooling -- starts when the walk reaches it, "
              "cooling, 500 ms left\n"
              "  Success       27 Action Reload\n"
              "  Success   28 ForceSuccess\n"
              "  Failure     29 Retry; 3 attempts\n"
              "  Failure       30 Action Fail\n"
              "  Success   31 Monitor [guard, abort Self]; success needs 1, failure needs 1; guard !alarm\n"
              "  idle        32 Condition !alarm\n"
              "  Success     33 ReactiveSequence [guard, abort Self]; guard !squad.retreat\n"
              "  idle          34 Condition !squad.retreat\n"
              "  Success       35 Repeat; 2 times\n"
              "  Success         36 Inverter\n"
              "  Failure           37 Action Fail\n");
        // The next tick ends MoveTo (resumed) and the view says so.
        agent.tick(100ms);
        const std::string after = debug::agent_text(agent);
        CHECK(after.find("  Success     24 Action MoveTo\n") != std::string::npos);
        CHECK(after.find("  Running     22 Wait; 5 s -- 4400 ms left\n") != std::string::npos);
    });
}

TEST_CASE("debug views: a running Repeat and Retry show their runs; a Wait ends its timer") {
    Registry registry;
    registry.add_action("Fail", [](ActionContext&) { return Status::Failure; });
    registry.add_action("Walk", [](ActionContext&) { return Status::Running; });
    const Tree tree = TreeBuilder("runs", registry)
                          .parallel(Policy::RequireAll, Policy::RequireAll)
                              .retry(3).action("Fail").back()
                              .repeat(4).wait(150ms).back()
                              .action("Walk")
                          .back()
                          .end();
    test::in_both_modes([&](Mode mode) {
        Agent agent(tree, AgentOptions{.mode = mode});
        agent.tick(100ms);
        agent.tick(100ms);
        CHECK(debug::agent_text(agent) ==
              "agent of tree 'runs', tick 2, clock 200 ms\n"
              "blackboard:\n"
              "  (no keys)\n"
              "nodes:\n"
              "  Running 0 Parallel; success needs 3, failure needs 3\n"
              "  Running   1 Retry; 3 attempts -- failed attempts 2 of 3\n"
              "  Failure     2 Action Fail -- starts when the walk reaches it\n"
              "  Running   3 Repeat; 4 times -- runs done 0 of 4\n"
              "  Running     4 Wait; 150 ms -- 50 ms left\n"
              "  Running   5 Action Walk\n");
    });
}

/// Takes the agent's text view when Attack is initialized, inside the agent's tick.
struct ViewInsideTick : TraceListener {
    const Agent* agent = nullptr;
    std::string seen;
    void on_event(const TraceEvent& e) override {
        if (e.kind == TraceKind::Initialize && e.node == 9) seen = debug::agent_text(*agent);
    }
};

TEST_CASE("debug views: taken from a listener inside a tick, the view shows the state reached so far") {
    Registry registry;
    scenarios::register_guard_actions(registry);
    const Tree tree = scenarios::guard_tree(registry);
    test::in_both_modes([&](Mode mode) {
        ViewInsideTick listener;
        Agent guard(tree, AgentOptions{.mode = mode, .listener = &listener});
        listener.agent = &guard;
        guard.tick(50ms);
        guard.blackboard().set("enemy_seen", true);
        guard.tick(50ms);
        // Patrol was aborted before the fight branch started; Attack has just been entered.
        CHECK(listener.seen.find("  Running         9 Action Attack\n  Aborted   10 Action Patrol\n") != std::string::npos);
        CHECK(listener.seen.rfind("agent of tree 'guard', tick 1, clock 100 ms\n", 0) == 0);
    });
}

struct ViewsOpaque {  // a blackboard type the value formatter does not know
    int a = 1;
    int b = 2;
};

TEST_CASE("debug views: a value the formatter cannot write is shown as its type name") {
    const Tree tree = TreeBuilder("opaque").key<ViewsOpaque>("pos").key<double>("speed", 0.25).always_success().end();
    CHECK(debug::definition_text(tree) ==
          "tree 'opaque', 1 node\n"
          "blackboard:\n"
          "  pos: ebt::ViewsOpaque = <ebt::ViewsOpaque>\n"
          "  speed: double = 0.25\n"
          "nodes:\n"
          "  0 AlwaysSuccess\n");
}

TEST_CASE("debug views: an empty Tree is refused with UsageError") {
    const Tree empty;
    CHECK_THROWS_WITH_AS(debug::definition_text(empty), "definition_text(): the tree is empty (a default-constructed Tree)",
                         UsageError);
    CHECK_THROWS_WITH_AS(debug::definition_dot(empty), "definition_dot(): the tree is empty (a default-constructed Tree)",
                         UsageError);
}

TEST_CASE("debug views: DOT: shapes by kind, guards on edges, statuses as fill colours") {
    Registry registry;
    scenarios::register_guard_actions(registry);
    const Tree tree = scenarios::guard_tree(registry);
    Agent guard(tree);
    guard.blackboard().set("enemy_seen", true);
    guard.tick(50ms);
    const std::string dot = debug::agent_dot(guard);
    CHECK(dot.rfind("digraph \"guard\" {\n  graph [label=\"tree 'guard', tick 1, clock 50 ms\"", 0) == 0);
    CHECK(dot.find("  n0 [label=\"0 ActiveSelector\\nchildren abort LowerPriority\\nRunning\", shape=box, "
                   "style=\"rounded,filled\", fillcolor=\"#ffd966\"];\n") != std::string::npos);
    CHECK(dot.find("  n8 [label=\"8 Condition\\n!enemy_dead\\nidle\", shape=ellipse, style=filled, fillcolor=\"white\"];\n") !=
          std::string::npos);
    CHECK(dot.find("  n10 [label=\"10 Action\\nPatrol\\nidle\", shape=box, style=filled, fillcolor=\"white\"];\n") !=
          std::string::npos);
    CHECK(dot.find("  n3 -> n7 [label=\"guard !enemy_dead\\nabort Both\"];\n") != std::string::npos);
    CHECK(dot.find("  n1 -> n2;\n") != std::string::npos);
    CHECK(dot.find("  blackboard [label=\"blackboard\\lenemy_seen: bool = true\\lhealth_low: bool = false\\l"
                   "enemy_dead: bool = false\\l\", shape=note];\n") != std::string::npos);
    CHECK(dot.find("    legend_Aborted [label=\"Aborted\", shape=box, style=filled, fillcolor=\"#cccccc\"];\n") !=
          std::string::npos);
    // A definition has no statuses and no legend.
    const std::string definition = debug::definition_dot(tree);
    CHECK(definition.find("fillcolor=\"#") == std::string::npos);
    CHECK(definition.find("legend") == std::string::npos);
    CHECK(definition.find("  n7 [label=\"7 Monitor\\nsuccess needs 1, failure needs 1\", shape=box, "
                          "style=\"rounded,filled\"];\n") != std::string::npos);
}

TEST_CASE("debug views: DOT escapes quotes, backslashes and line breaks in names and labels") {
    const Tree tree = TreeBuilder("say \"hi\"")
                          .key<bool>("a\\Nb")
                          .sequence({.label = "two\nlines <b>\\l"})
                              .check("a\\Nb")
                              .always_success()
                          .back()
                          .end();
    const std::string dot = debug::definition_dot(tree);
    CHECK(dot.rfind("digraph \"say \\\"hi\\\"\" {\n", 0) == 0);
    // The label's line break is DOT's "\n"; its backslashes are doubled, so "\l" and "\N" stay text.
    // (The root's guard has no edge to sit on: it is in the root's box.)
    CHECK(dot.find("  n0 [label=\"0 Sequence\\ntwo\\nlines <b>\\\\l\\nguard a\\\\Nb, abort None\", shape=box, "
                   "style=\"rounded,filled\"];\n") !=
          std::string::npos);
    CHECK(dot.find("  n1 [label=\"1 Condition\\na\\\\Nb\", shape=ellipse, style=filled];\n") != std::string::npos);
    CHECK(dot.find("  blackboard [label=\"blackboard\\la\\\\Nb: bool = false\\l\", shape=note];\n") != std::string::npos);
    if (!have_dot()) {
        MESSAGE("Graphviz's dot is not installed: not rendering (Debian package graphviz)");
        return;
    }
    CHECK(render_svg(dot, "escaping") == 0);
}

TEST_CASE("debug views: Graphviz renders every DOT view") {
    if (!have_dot()) {
        MESSAGE("Graphviz's dot is not installed: skipped (Debian package graphviz)");
        return;
    }
    ResumeHandle move;
    const Registry registry = every_kind_registry(&move);
    const Tree tree = every_kind_tree(registry);
    Agent agent(tree);
    for (int i = 0; i < 6; ++i) agent.tick(100ms);
    CHECK(render_svg(debug::definition_dot(tree), "definition") == 0);
    CHECK(render_svg(debug::agent_dot(agent), "agent") == 0);
    // The check itself fails on a broken graph.
    CHECK(render_svg("digraph \"broken {\n", "broken") != 0);
}

TEST_CASE("debug views: the README picture's DOT is what the arena's guard 256 shows after 20 s, in both modes") {
    // scripts/views.sh: ebt_arena --agents 300 --seconds 20 --view 256 --dot docs/pictures/guard_live.dot
    std::ifstream file(std::string(EBT_SOURCE_DIR) + "/docs/pictures/guard_live.dot");
    REQUIRE(file);
    std::stringstream committed;
    committed << file.rdbuf();
    test::in_both_modes([&](Mode mode) {
        scenarios::ArenaConfig config;
        config.agents = 300;
        config.mode = mode;
        scenarios::Arena arena(config);
        for (int frame = 0; frame < 400; ++frame) arena.step();
        CHECK(debug::agent_dot(arena.world().at(arena.handle(256))) == committed.str());
    });
}

}  // namespace ebt
