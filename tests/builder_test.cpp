// The fluent TreeBuilder: structure, Tree accessors, default abort modes, condition folding, the
// BehaviorTree.CPP aliases, subtrees with key remapping, and every build error with its exact message.
#include "guard_scenario.hpp"
#include "support/guard_tree_text.hpp"
#include "support/trace_recorder.hpp"

#include "support/tree_data.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <set>

using namespace ebt;
using namespace std::chrono_literals;
using test::TraceRecorder;
using test::data_of;

namespace {

Registry make_registry() {
    Registry reg;
    reg.add_action("Patrol", test::running_action());
    reg.add_action("Runaway", test::running_action());
    ActionSpec attack = test::running_action();
    attack.ports = {port<int>("target")};
    reg.add_action("Attack", attack);
    reg.add_condition("CanSee", [](const ConditionContext&) { return true; });
    reg.add_condition(
        "InRange", [](const ConditionContext& ctx) { return ctx.in<float>(0) < 5.0f; }, {port<float>("distance")});
    return reg;
}

// The seeds' guard tree:
//   0 ActiveSelector
//   1   Sequence                 [enemy_seen]
//   2     Condition enemy_seen
//   3     ActiveSelector
//   4       Sequence             [health_low]
//   5         Condition health_low
//   6         Action Runaway
//   7       Monitor(RequireAll, RequireOne)
//   8         Condition !enemy_dead
//   9         Action Attack
//  10   Action Patrol
Tree guard_tree(const Registry& reg) {
    TreeBuilder b("guard", reg);
    b.key<bool>("enemy_seen").key<bool>("health_low").key<bool>("enemy_dead").key<int>("target").active_selector();
    return scenarios::add_fight_branch(b).action("Patrol").back().end();
}

}  // namespace

// ---- structure and accessors --------------------------------------------------------------------------

TEST_CASE("builder: nodes are numbered in pre-order; parent/child/kind/label/path") {
    const Registry reg = make_registry();
    const Tree tree = guard_tree(reg);
    REQUIRE(tree.size() == 11);
    CHECK(tree.name() == "guard");

    const NodeKind kinds[] = {NodeKind::ActiveSelector, NodeKind::Sequence, NodeKind::Condition, NodeKind::ActiveSelector,
                              NodeKind::Sequence,       NodeKind::Condition, NodeKind::Action,    NodeKind::Monitor,
                              NodeKind::Condition,      NodeKind::Action,    NodeKind::Action};
    for (NodeIndex i = 0; i < 11; ++i) {
        CAPTURE(i);
        CHECK(tree.kind(i) == kinds[i]);
    }

    CHECK(tree.parent(0) == kNoNode);
    CHECK(tree.parent(1) == 0);
    CHECK(tree.parent(2) == 1);
    CHECK(tree.parent(3) == 1);
    CHECK(tree.parent(6) == 4);
    CHECK(tree.parent(7) == 3);
    CHECK(tree.parent(9) == 7);
    CHECK(tree.parent(10) == 0);

    CHECK(tree.child_count(0) == 2);
    CHECK(tree.child_count(1) == 2);
    CHECK(tree.child_count(3) == 2);
    CHECK(tree.child_count(7) == 2);
    CHECK(tree.child_count(10) == 0);
    CHECK(tree.child(0, 0) == 1);
    CHECK(tree.child(0, 1) == 10);
    CHECK(tree.child(3, 0) == 4);
    CHECK(tree.child(3, 1) == 7);
    CHECK(tree.child(7, 1) == 9);
    CHECK_THROWS_WITH_AS(tree.child(10, 0), "node 10 has no child 0", UsageError);
    CHECK_THROWS_WITH_AS(tree.child(0, 2), "node 0 has no child 2", UsageError);

    CHECK(tree.label(0) == "ActiveSelector");
    CHECK(tree.label(1) == "Sequence");
    CHECK(tree.label(2) == "enemy_seen");
    CHECK(tree.label(6) == "Runaway");
    CHECK(tree.label(7) == "Monitor");
    CHECK(tree.label(8) == "!enemy_dead");
    CHECK(tree.label(9) == "Attack");
    CHECK(tree.label(10) == "Patrol");

    CHECK(tree.path(0) == "/ActiveSelector");
    CHECK(tree.path(10) == "/ActiveSelector/Action 'Patrol'[1]");
    CHECK(tree.path(9) == "/ActiveSelector/Sequence[0]/ActiveSelector[1]/Monitor[1]/Action 'Attack'[1]");
    CHECK(tree.path(5) == "/ActiveSelector/Sequence[0]/ActiveSelector[1]/Sequence[0]/Condition 'health_low'[0]");

    CHECK_FALSE(tree.has_guard(0));
    CHECK(tree.has_guard(1));   // leading condition enemy_seen
    CHECK_FALSE(tree.has_guard(3));
    CHECK(tree.has_guard(4));   // leading condition health_low
    CHECK(tree.has_guard(7));   // monitor condition
    CHECK_FALSE(tree.has_guard(10));

    CHECK(tree.schema().size() == 4);
    CHECK(tree.key<bool>("enemy_seen").id == 0);
    CHECK(tree.key<int>("target").id == 3);
}

TEST_CASE("builder: describe() lists the pre-order indices, labels and guards") {
    const Registry reg = make_registry();
    const Tree tree = guard_tree(reg);
    CHECK(tree.describe() == test::kGuardTreeDescribed);
}

TEST_CASE("builder: a user label replaces the kind in label() and path()") {
    const Tree tree = TreeBuilder("labels")
                          .selector()
                              .sequence().label("eat")
                                  .always_success()
                              .back()
                              .action("Work", test::running_action()).label("work hard")
                          .back()
                          .end();
    CHECK(tree.label(1) == "eat");
    CHECK(tree.path(1) == "/Selector/Sequence 'eat'[0]");
    CHECK(tree.path(2) == "/Selector/Sequence 'eat'[0]/AlwaysSuccess[0]");
    CHECK(tree.label(3) == "work hard");
    CHECK(tree.path(3) == "/Selector/Action 'work hard'[1]");
}

TEST_CASE("builder: a Tree copy shares the definition; a default Tree is empty") {
    const Tree empty;
    CHECK_FALSE(static_cast<bool>(empty));
    auto make_agent = [&] { Agent agent(empty); };
    CHECK_THROWS_WITH_AS(make_agent(), "Agent: the tree is empty (build it with TreeBuilder::end())", UsageError);
    const Tree tree = TreeBuilder("one").always_success().end();
    const Tree copy = tree;  // NOLINT(performance-unnecessary-copy-initialization)
    CHECK(static_cast<bool>(copy));
    CHECK(&data_of(copy) == &data_of(tree));
    CHECK(copy.size() == 1);
    CHECK(copy.kind(0) == NodeKind::AlwaysSuccess);
}

// ---- abort modes ---------------------------------------------------------------------------------------

TEST_CASE("builder: default abort modes") {
    auto under = [](auto open_parent) {
        TreeBuilder b("modes");
        b.key<bool>("a");
        open_parent(b);
        b.sequence().check("a").action("A", test::running_action()).back();
        b.action("B", test::running_action());
        return b.back().end();
    };
    // 0 parent, 1 Sequence [a], 2 Condition a, 3 A, 4 B
    CHECK(under([](TreeBuilder& b) { b.active_selector(); }).abort_mode(1) == AbortMode::LowerPriority);
    CHECK(under([](TreeBuilder& b) { b.reactive_fallback(); }).abort_mode(1) == AbortMode::LowerPriority);
    CHECK(under([](TreeBuilder& b) { b.priority_selector(); }).abort_mode(1) == AbortMode::Both);
    CHECK(under([](TreeBuilder& b) { b.non_priority_selector(); }).abort_mode(1) == AbortMode::Self);
    CHECK(under([](TreeBuilder& b) { b.selector(); }).abort_mode(1) == AbortMode::None);
    CHECK(under([](TreeBuilder& b) { b.sequence(); }).abort_mode(1) == AbortMode::None);
    CHECK(under([](TreeBuilder& b) { b.parallel(Policy::RequireAll, Policy::RequireOne); }).abort_mode(1) == AbortMode::None);
    CHECK(under([](TreeBuilder& b) { b.random_selector(); }).abort_mode(1) == AbortMode::None);
    // A node without a guard reports None whatever its parent.
    CHECK(under([](TreeBuilder& b) { b.active_selector(); }).abort_mode(4) == AbortMode::None);

    // A Monitor's and a ReactiveSequence's own guard add Self.
    const Tree monitor = TreeBuilder("monitor")
                             .key<bool>("a")
                             .sequence()
                                 .monitor(Policy::RequireAll, Policy::RequireOne)
                                     .check("a")
                                     .action("A", test::running_action())
                                 .back()
                                 .reactive_sequence()
                                     .check("a")
                                     .action("B", test::running_action())
                                 .back()
                             .back()
                             .end();
    CHECK(monitor.kind(1) == NodeKind::Monitor);
    CHECK(monitor.abort_mode(1) == AbortMode::Self);
    CHECK(monitor.kind(4) == NodeKind::ReactiveSequence);
    CHECK(monitor.abort_mode(4) == AbortMode::Self);

    // A Monitor under an ActiveSelector: LowerPriority (its parent) + Self (its own) = Both.
    const Registry reg = make_registry();
    CHECK(guard_tree(reg).abort_mode(7) == AbortMode::Both);
}

TEST_CASE("builder: an explicit abort mode overrides the default") {
    auto with = [](AbortMode mode) {
        return TreeBuilder("explicit")
            .key<bool>("a")
            .active_selector()
                .sequence().check("a").action("A", test::running_action()).back().abort(mode)
                .action("B", test::running_action())
            .back()
            .end();
    };
    CHECK(with(AbortMode::None).abort_mode(1) == AbortMode::None);
    CHECK(with(AbortMode::Self).abort_mode(1) == AbortMode::Self);
    CHECK(with(AbortMode::LowerPriority).abort_mode(1) == AbortMode::LowerPriority);
    CHECK(with(AbortMode::Both).abort_mode(1) == AbortMode::Both);

    // A precondition is a guard too, and Self is allowed under any parent.
    const Tree pre = TreeBuilder("pre")
                         .key<bool>("a")
                         .sequence()
                             .action("A", test::running_action()).precondition(Predicate::is("a")).abort(AbortMode::Self)
                         .back()
                         .end();
    CHECK(pre.has_guard(1));
    CHECK(pre.abort_mode(1) == AbortMode::Self);
}

// ---- folding ---------------------------------------------------------------------------------------------

TEST_CASE("builder: Inverter / ForceSuccess / ForceFailure over a condition fold into one condition node") {
    const Tree tree = TreeBuilder("fold")
                          .key<bool>("a")
                          .sequence()
                              .always_success()
                              .inverter().check("a").back()
                              .force_success().check("a").back()
                              .force_failure().check("a").back()
                          .back()
                          .end();
    REQUIRE(tree.size() == 5);
    CHECK(tree.kind(2) == NodeKind::Condition);
    CHECK(tree.kind(3) == NodeKind::Condition);
    CHECK(tree.kind(4) == NodeKind::Condition);
    CHECK(tree.label(2) == "!a");
    CHECK(tree.label(3) == "ForceSuccess(a)");
    CHECK(tree.label(4) == "ForceFailure(a)");
    CHECK(tree.child_count(2) == 0);
    CHECK(tree.parent(4) == 0);

    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        TraceRecorder rec;
        Agent agent(tree, {.mode = mode, .listener = &rec});
        agent.tick(10ms);  // a == false: !a true, ForceSuccess(a) true, ForceFailure(a) false
        CHECK(rec.all(0) == "0:I 1:I 1:U 1:T(Success) 2:C(true) 3:C(true) 4:C(false) 0:T(Failure)");
        agent.blackboard().set("a", true);
        agent.tick(10ms);  // !a false
        CHECK(rec.all(1) == "0:I 1:I 1:U 1:T(Success) 2:C(false) 0:T(Failure)");
    }

    // Nested decorators fold too; a folded leading condition guards its sequence.
    const Tree nested = TreeBuilder("nested")
                            .key<bool>("a")
                            .active_selector()
                                .sequence()
                                    .inverter().inverter().check("a").back().back()
                                    .action("A", test::running_action())
                                .back()
                                .action("B", test::running_action())
                            .back()
                            .end();
    REQUIRE(nested.size() == 5);
    CHECK(nested.kind(2) == NodeKind::Condition);
    CHECK(nested.label(2) == "!!a");
    CHECK(nested.has_guard(1));

    // A decorator over anything else stays a decorator.
    const Tree plain = TreeBuilder("plain").inverter().always_success().back().end();
    REQUIRE(plain.size() == 2);
    CHECK(plain.kind(0) == NodeKind::Inverter);
    CHECK(plain.kind(1) == NodeKind::AlwaysSuccess);
}

// ---- BehaviorTree.CPP aliases -----------------------------------------------------------------------------

TEST_CASE("builder: BehaviorTree.CPP aliases build the same node kinds") {
    const Tree tree = TreeBuilder("aliases")
                          .reactive_fallback()                 // 0
                              .fallback()                      // 1
                                  .retry_until_successful(3)   // 2
                                      .always_failure()        // 3
                                  .back()
                                  .sleep(25ms)                 // 4
                              .back()
                          .back()
                          .end();
    REQUIRE(tree.size() == 5);
    CHECK(tree.kind(0) == NodeKind::ActiveSelector);
    CHECK(tree.kind(1) == NodeKind::Selector);
    CHECK(tree.kind(2) == NodeKind::Retry);
    CHECK(tree.kind(3) == NodeKind::AlwaysFailure);
    CHECK(tree.kind(4) == NodeKind::Wait);

    // Retry(3) gives up after three failures (restarts begin on the next tick); Sleep(25ms) then waits.
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        TraceRecorder rec;
        Agent agent(tree, {.mode = mode, .listener = &rec});
        for (int i = 0; i < 6; ++i) agent.tick(10ms);
        CHECK(rec.tick(0) == "0:I 1:I 2:I 3:I 3:U 3:T(Failure)");
        CHECK(rec.tick(1) == "3:I 3:U 3:T(Failure)");
        CHECK(rec.tick(2) == "3:I 3:U 3:T(Failure) 2:T(Failure) 4:I");  // clock 30ms: due at 55ms
        CHECK(rec.tick(3) == "");
        CHECK(rec.tick(4) == "");
        CHECK(rec.tick(5) == "4:T(Success) 1:T(Success) 0:T(Success)");  // clock 60ms
    }
}

// ---- subtrees -------------------------------------------------------------------------------------------------

namespace {

struct CountLog {
    std::map<NodeIndex, int> private_count;  // last value each Count node saw in its private key
};

// inner: Sequence[check go, Count]; Count increments the private "count" and the shared "total".
Tree inner_tree(const std::shared_ptr<CountLog>& log) {
    ActionSpec count;
    count.ports = {port<int>("count"), port<int>("total")};
    count.update = [log](ActionContext& ctx) {
        ctx.out<int>(0, ctx.in<int>(0) + 1);
        ctx.out<int>(1, ctx.in<int>(1) + 1);
        log->private_count[ctx.node()] = ctx.in<int>(0);
        return Status::Running;
    };
    return TreeBuilder("inner")
        .key<bool>("go")
        .key<int>("count", 0)
        .key<int>("total", 0)
        .sequence()
            .check("go")
            .action("Count", count)
        .back()
        .end();
}

}  // namespace

TEST_CASE("builder: subtree remaps keys to the outer tree; unmapped keys are private to each use") {
    auto log = std::make_shared<CountLog>();
    const Tree inner = inner_tree(log);
    const Tree outer = TreeBuilder("outer")
                           .key<bool>("alert", false)
                           .key<int>("total", 0)
                           .key<int>("count", 100)  // same name as the inner private key: unrelated
                           .parallel(Policy::RequireAll, Policy::RequireAll)
                               .subtree(inner, {{"go", "alert"}, {"total", "total"}})
                               .subtree(inner, {{"go", "alert"}, {"total", "total"}})
                           .back()
                           .end();
    // 0 Parallel, 1 Sequence 'inner', 2 Condition, 3 Count, 4 Sequence 'inner', 5 Condition, 6 Count
    REQUIRE(outer.size() == 7);
    CHECK(outer.kind(1) == NodeKind::Sequence);
    CHECK(outer.label(1) == "inner");
    CHECK(outer.path(3) == "/Parallel/Sequence 'inner'[0]/Action 'Count'[1]");
    CHECK(outer.path(6) == "/Parallel/Sequence 'inner'[1]/Action 'Count'[1]");
    CHECK(outer.has_guard(1));
    CHECK(outer.has_guard(4));
    // alert, total, count + one private "count" per use; the private names are distinct.
    REQUIRE(outer.schema().size() == 5);
    std::set<std::string> names;
    for (const auto& k : outer.schema().keys()) names.insert(k.name);
    CHECK(names.size() == 5);
    CHECK(outer.schema().find("go") == kNoKey);

    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        log->private_count.clear();
        TraceRecorder rec;
        Agent agent(outer, {.mode = mode, .listener = &rec});
        // The remapped guard reads the outer key: alert false skips both subtrees.
        agent.tick(10ms);
        CHECK(rec.tick(0) == "0:I 0:T(Failure)");
        CHECK(agent.blackboard().get<int>("total") == 0);

        agent.blackboard().set("alert", true);
        agent.tick(10ms);
        CAPTURE(rec.tick(0));
    CHECK(rec.tick(1) == "0:I 1:I 3:I 3:U 4:I 6:I 6:U");
        agent.tick(10ms);
        agent.tick(10ms);
        // Both uses wrote the shared key...
        CHECK(agent.blackboard().get<int>("total") == 6);
        // ...but each counted in its own private key.
        CHECK(log->private_count[3] == 3);
        CHECK(log->private_count[6] == 3);
        // The outer tree's own "count" is untouched.
        CHECK(agent.blackboard().get<int>("count") == 100);
    }
}

TEST_CASE("builder: a subtree whose keys are all private runs with the subtree's initial values") {
    const Tree inner = TreeBuilder("inner2")
                           .key<bool>("go", true)
                           .sequence().check("go").action("A", test::running_action()).back()
                           .end();
    const Tree outer = TreeBuilder("outer2").selector().subtree(inner).back().end();
    REQUIRE(outer.size() == 4);
    REQUIRE(outer.schema().size() == 1);
    CHECK(outer.schema().keys()[0].name != "go");
    TraceRecorder rec;
    Agent agent(outer, {.listener = &rec});
    agent.tick(10ms);
    CHECK(rec.tick(0) == "0:I 1:I 3:I 3:U");  // the private "go" starts true
}

TEST_CASE("builder: subtree remap errors") {
    auto log = std::make_shared<CountLog>();
    const Tree inner = inner_tree(log);
    auto outer = [] {
        TreeBuilder b("outer");
        b.key<bool>("alert").key<int>("total").parallel(Policy::RequireAll, Policy::RequireAll);
        return b;
    };
    CHECK_THROWS_WITH_AS(outer().subtree(inner, {{"nope", "alert"}}),
                         "tree 'outer', at /Parallel: subtree 'inner' has no key 'nope' to remap", BuildError);
    CHECK_THROWS_WITH_AS(outer().subtree(inner, {{"go", "missing"}}),
                         "tree 'outer', at /Parallel: subtree 'inner': key 'go' is remapped to undeclared key 'missing'",
                         BuildError);
    CHECK_THROWS_WITH_AS(outer().subtree(inner, {{"go", "total"}}),
                         "tree 'outer', at /Parallel: subtree 'inner': key 'go' (bool) is remapped to 'total' of type int",
                         BuildError);
    CHECK_THROWS_WITH_AS(outer().subtree(Tree{}), "tree 'outer', at /Parallel: subtree() with an empty Tree", BuildError);
}

// ---- structural errors -----------------------------------------------------------------------------------------

TEST_CASE("builder errors: decorator children") {
    CHECK_THROWS_WITH_AS(TreeBuilder("t").sequence().inverter().always_success().always_failure(),
                         "tree 't', node /Sequence/Inverter[0]: Inverter takes exactly one child; a second one "
                         "(AlwaysFailure) was added (missing back()?)",
                         BuildError);
    CHECK_THROWS_WITH_AS(TreeBuilder("t").repeat(2).always_success().action("Extra", test::running_action()),
                         "tree 't', node /Repeat: Repeat takes exactly one child; a second one (Action 'Extra') was "
                         "added (missing back()?)",
                         BuildError);
    CHECK_THROWS_WITH_AS(TreeBuilder("t").sequence().inverter().back(),
                         "tree 't', node /Sequence/Inverter[0]: Inverter takes exactly one child, got 0", BuildError);
    CHECK_THROWS_WITH_AS(TreeBuilder("t").sequence().selector().back(),
                         "tree 't', node /Sequence/Selector[0]: Selector has no children", BuildError);
}

TEST_CASE("builder errors: end() and back() misuse, empty tree") {
    CHECK_THROWS_WITH_AS(TreeBuilder("t").sequence().selector().always_success().end(),
                         "tree 't': end() with 2 open node(s): /Sequence, /Sequence/Selector[0] (close each with back())",
                         BuildError);
    CHECK_THROWS_WITH_AS(TreeBuilder("t").sequence().always_success().end(),
                         "tree 't': end() with 1 open node(s): /Sequence (close each with back())", BuildError);
    CHECK_THROWS_WITH_AS(TreeBuilder("t").always_success().back(),
                         "tree 't', at /: back() with no open composite or decorator", BuildError);
    CHECK_THROWS_WITH_AS(TreeBuilder("t").sequence().always_success().back().back(),
                         "tree 't', at /: back() with no open composite or decorator", BuildError);
    CHECK_THROWS_WITH_AS(TreeBuilder("t").back(), "tree 't', at /: back() with no open composite or decorator",
                         BuildError);
    CHECK_THROWS_WITH_AS(TreeBuilder("t").end(), "tree 't', at /: end() on an empty tree", BuildError);
    CHECK_THROWS_WITH_AS(TreeBuilder("t").key<int>("hp").end(), "tree 't', at /: end() on an empty tree", BuildError);
    CHECK_THROWS_WITH_AS(TreeBuilder("t").sequence().always_success().back().always_failure(),
                         "tree 't', at /: the tree already has a root; AlwaysFailure has no parent (too many back() calls?)",
                         BuildError);
    CHECK_THROWS_WITH_AS(TreeBuilder("t").abort(AbortMode::Self),
                         "tree 't', at /: abort() needs a node to apply to; add one first", BuildError);
    {
        TreeBuilder b("t");
        b.always_success();
        (void)b.end();
        CHECK_THROWS_WITH_AS(b.end(), "tree 't', at /: end() called twice", BuildError);
    }
}

// ---- registry lookups ---------------------------------------------------------------------------------------------

TEST_CASE("builder errors: unknown action or condition lists the registered names") {
    const Registry reg = make_registry();
    CHECK_THROWS_WITH_AS(TreeBuilder("t", reg).sequence().action("Jump"),
                         "tree 't', at /Sequence: unknown action 'Jump' (registered: Attack Patrol Runaway)", BuildError);
    CHECK_THROWS_WITH_AS(TreeBuilder("t", reg).sequence().condition("IsHungry"),
                         "tree 't', at /Sequence: unknown condition 'IsHungry' (registered: CanSee InRange)", BuildError);
    CHECK_THROWS_WITH_AS(TreeBuilder("t", reg).sequence().always_success().back().precondition(Predicate::condition("Nope")),
                         "tree 't', at /: unknown condition 'Nope' (registered: CanSee InRange)", BuildError);
    CHECK_THROWS_WITH_AS(TreeBuilder("t").action("Jump"),
                         "tree 't', at /: unknown action 'Jump' (no registry was given to the builder)", BuildError);
    CHECK_THROWS_WITH_AS(TreeBuilder("t").condition("CanSee"),
                         "tree 't', at /: unknown condition 'CanSee' (no registry was given to the builder)", BuildError);
    const Registry empty;
    CHECK_THROWS_WITH_AS(TreeBuilder("t", empty).action("Jump"),
                         "tree 't', at /: unknown action 'Jump' (the registry has no actions)", BuildError);
    CHECK_THROWS_WITH_AS(TreeBuilder("t", empty).condition("CanSee"),
                         "tree 't', at /: unknown condition 'CanSee' (the registry has no conditions)", BuildError);
    // In-place action specs are checked too.
    CHECK_THROWS_WITH_AS(TreeBuilder("t").action("NoUpdate", ActionSpec{}),
                         "tree 't', at /: action 'NoUpdate' has no update function", BuildError);
}

TEST_CASE("builder: specs written with designated initializers name only what they use") {
    // Each spec's optional members have default member initializers, so that a spec naming only its
    // required function compiles without -Wmissing-field-initializers under -Wextra (CI builds the
    // tests with -Werror) and leaves the rest empty.
    const ActionSpec action{.update = [](ActionContext&) { return Status::Success; }};
    const ConditionSpec condition{.evaluate = [](const ConditionContext&) { return true; }};
    const LatentActionSpec latent{.start = [](ActionContext&, const ResumeHandle&) {}};
    CHECK(!action.on_initialize);
    CHECK(!action.on_terminate);
    CHECK(action.ports.empty());
    CHECK(action.memory_bytes == 0);
    CHECK(condition.ports.empty());
    CHECK(!condition.recheck_interval.has_value());
    CHECK(!latent.on_terminate);
    CHECK(latent.ports.empty());
    CHECK(latent.memory_bytes == 0);
    Registry registry;
    registry.add_action("Act", action).add_condition("Ok", condition).add_latent_action("Wait", latent);
    const Tree tree = TreeBuilder("t", registry).sequence().condition("Ok").action("Act").action("Wait").back().end();
    Agent agent(tree);
    agent.tick(0ms);
    CHECK(agent.status(3) == Status::Running);  // Wait suspended after Ok and Act succeeded
}

// ---- keys and ports ---------------------------------------------------------------------------------------------------

TEST_CASE("builder errors: undeclared keys in check(), condition ports and action ports") {
    const Registry reg = make_registry();
    CHECK_THROWS_WITH_AS(TreeBuilder("t").sequence().check("enemy").always_success().back().end(),
                         "tree 't', node /Sequence/Condition 'enemy'[0]: check uses undeclared blackboard key 'enemy' "
                         "(declare it with key<T>(\"enemy\"))",
                         BuildError);
    CHECK_THROWS_WITH_AS(TreeBuilder("t", reg).sequence().condition("InRange").always_success().back().end(),
                         "tree 't', node /Sequence/Condition 'InRange'[0]: condition 'InRange' port 'distance' uses "
                         "undeclared blackboard key 'distance' (declare it with key<T>(\"distance\"))",
                         BuildError);
    CHECK_THROWS_WITH_AS(TreeBuilder("t", reg).sequence().action("Attack").back().end(),
                         "tree 't', node /Sequence/Action 'Attack'[0]: action 'Attack' port 'target' uses undeclared "
                         "blackboard key 'target' (declare it with key<T>(\"target\"))",
                         BuildError);
    CHECK_THROWS_WITH_AS(TreeBuilder("t")
                             .sequence()
                                 .action("A", test::running_action()).precondition(Predicate::is("ready"))
                             .back()
                             .end(),
                         "tree 't', node /Sequence/Action 'A'[0]: check uses undeclared blackboard key 'ready' "
                         "(declare it with key<T>(\"ready\"))",
                         BuildError);
}

TEST_CASE("builder errors: a port bound to a key of the wrong type") {
    const Registry reg = make_registry();
    CHECK_THROWS_WITH_AS(TreeBuilder("t", reg).key<float>("target").sequence().action("Attack").back().end(),
                         "tree 't', node /Sequence/Action 'Attack'[0]: action 'Attack' port 'target' expects key "
                         "'target' of type int, but it is declared as float",
                         BuildError);
    CHECK_THROWS_WITH_AS(TreeBuilder("t", reg).key<int>("distance").sequence().condition("InRange").always_success().back().end(),
                         "tree 't', node /Sequence/Condition 'InRange'[0]: condition 'InRange' port 'distance' expects "
                         "key 'distance' of type float, but it is declared as int",
                         BuildError);
    CHECK_THROWS_WITH_AS(TreeBuilder("t").key<int>("hp").sequence().check("hp").always_success().back().end(),
                         "tree 't', node /Sequence/Condition 'hp'[0]: check expects key 'hp' of type bool, but it is "
                         "declared as int",
                         BuildError);
    // Bound explicitly to another key of the wrong type.
    CHECK_THROWS_WITH_AS(TreeBuilder("t", reg)
                             .key<int>("target").key<double>("other")
                             .sequence().action("Attack", Bindings{{"target", "other"}}).back()
                             .end(),
                         "tree 't', node /Sequence/Action 'Attack'[0]: action 'Attack' port 'target' expects key "
                         "'other' of type int, but it is declared as double",
                         BuildError);
}

TEST_CASE("builder: port bindings; an unknown port name is an error") {
    const Registry reg = make_registry();
    // Bound explicitly: works.
    const Tree ok = TreeBuilder("t", reg)
                        .key<int>("enemy_id")
                        .sequence().action("Attack", Bindings{{"target", "enemy_id"}}).back()
                        .end();
    CHECK(ok.size() == 2);
    CHECK_THROWS_WITH_AS(TreeBuilder("t", reg).key<int>("target").sequence().action("Attack", Bindings{{"tgt", "target"}}),
                         "tree 't', at /Sequence: action 'Attack' has no port 'tgt' (ports: target)", BuildError);
    CHECK_THROWS_WITH_AS(TreeBuilder("t", reg).key<float>("d").sequence().condition("InRange", Bindings{{"dist", "d"}}),
                         "tree 't', at /Sequence: condition 'InRange' has no port 'dist' (ports: distance)", BuildError);
    CHECK_THROWS_WITH_AS(TreeBuilder("t", reg).sequence().condition("CanSee", Bindings{{"x", "y"}}),
                         "tree 't', at /Sequence: condition 'CanSee' has no port 'x' (it has no ports)", BuildError);
}

TEST_CASE("builder errors: a key declared twice") {
    CHECK_THROWS_WITH_AS(TreeBuilder("t").key<int>("a").key<bool>("a"), "tree 't', at /: blackboard key 'a' is declared twice",
                         BuildError);
    CHECK_THROWS_WITH_AS(TreeBuilder("t").key<int>("a").key<int>("a", 3), "tree 't', at /: blackboard key 'a' is declared twice",
                         BuildError);
}

// ---- abort mode placement ---------------------------------------------------------------------------------------------

TEST_CASE("builder errors: LowerPriority/Both where no lower-priority sibling can exist") {
    CHECK_THROWS_WITH_AS(TreeBuilder("t")
                             .key<bool>("a")
                             .sequence()
                                 .sequence().check("a").always_success().back().abort(AbortMode::LowerPriority)
                                 .always_success()
                             .back()
                             .end(),
                         "tree 't', node /Sequence/Sequence[0]: abort mode LowerPriority needs lower-priority siblings, "
                         "but the parent is Sequence",
                         BuildError);
    CHECK_THROWS_WITH_AS(TreeBuilder("t")
                             .key<bool>("a")
                             .parallel(Policy::RequireAll, Policy::RequireOne)
                                 .always_success()
                                 .sequence().check("a").always_success().back().abort(AbortMode::Both)
                             .back()
                             .end(),
                         "tree 't', node /Parallel/Sequence[1]: abort mode Both needs lower-priority siblings, but the "
                         "parent is Parallel",
                         BuildError);
    CHECK_THROWS_WITH_AS(TreeBuilder("t")
                             .key<bool>("a")
                             .sequence().check("a").always_success().back().abort(AbortMode::LowerPriority)
                             .end(),
                         "tree 't', node /Sequence: abort mode LowerPriority needs lower-priority siblings, but the parent "
                         "is none (this is the root)",
                         BuildError);
    CHECK_THROWS_WITH_AS(TreeBuilder("t")
                             .key<bool>("a")
                             .inverter()
                                 .sequence().check("a").always_success().back().abort(AbortMode::LowerPriority)
                             .back()
                             .end(),
                         "tree 't', node /Inverter/Sequence[0]: abort mode LowerPriority needs lower-priority siblings, "
                         "but the parent is Inverter",
                         BuildError);
    CHECK_THROWS_WITH_AS(TreeBuilder("t")
                             .key<bool>("a")
                             .random_selector()
                                 .sequence().check("a").always_success().back().abort(AbortMode::LowerPriority)
                                 .always_success()
                             .back()
                             .end(),
                         "tree 't', node /RandomSelector/Sequence[0]: abort mode LowerPriority needs lower-priority "
                         "siblings, but the parent is RandomSelector",
                         BuildError);
}

TEST_CASE("builder errors: an abort mode on an unguarded node or on a condition") {
    CHECK_THROWS_WITH_AS(TreeBuilder("t")
                             .active_selector()
                                 .action("A", test::running_action()).abort(AbortMode::Self)
                                 .always_success()
                             .back()
                             .end(),
                         "tree 't', node /ActiveSelector/Action 'A'[0]: abort mode Self on a node without a guard (give "
                         "it a precondition or leading conditions)",
                         BuildError);
    CHECK_THROWS_WITH_AS(TreeBuilder("t")
                             .active_selector()
                                 .sequence().always_success().back().abort(AbortMode::LowerPriority)
                                 .always_success()
                             .back()
                             .end(),
                         "tree 't', node /ActiveSelector/Sequence[0]: abort mode LowerPriority on a node without a guard "
                         "(give it a precondition or leading conditions)",
                         BuildError);
    CHECK_THROWS_WITH_AS(TreeBuilder("t")
                             .key<bool>("a")
                             .sequence().always_success().check("a").abort(AbortMode::Self).back()
                             .end(),
                         "tree 't', node /Sequence/Condition 'a'[1]: an abort mode on a condition node has no effect; set "
                         "it on the node the condition guards",
                         BuildError);
    // None is accepted anywhere.
    const Tree ok = TreeBuilder("t").sequence().always_success().abort(AbortMode::None).back().end();
    CHECK(ok.abort_mode(1) == AbortMode::None);
}

// ---- composite parameters ---------------------------------------------------------------------------------------------

TEST_CASE("builder errors: Monitor with only conditions") {
    CHECK_THROWS_WITH_AS(TreeBuilder("t")
                             .key<bool>("a").key<bool>("b")
                             .sequence()
                                 .monitor(Policy::RequireAll, Policy::RequireOne).check("a").check("b").back()
                             .back()
                             .end(),
                         "tree 't', node /Sequence/Monitor[0]: Monitor needs at least one child that is not a condition",
                         BuildError);
}

TEST_CASE("builder errors: WeightedSelector weights") {
    CHECK_THROWS_WITH_AS(TreeBuilder("t").weighted_selector({1.0, 2.0}).always_success().back(),
                         "tree 't', node /WeightedSelector: WeightedSelector has 2 weight(s) for 1 children", BuildError);
    CHECK_THROWS_WITH_AS(TreeBuilder("t").sequence().weighted_selector({1.0}).always_success().always_failure().back(),
                         "tree 't', node /Sequence/WeightedSelector[0]: WeightedSelector has 1 weight(s) for 2 children",
                         BuildError);
    CHECK_THROWS_WITH_AS(TreeBuilder("t").weighted_selector({1.0, 0.0}),
                         "tree 't', at /: WeightedSelector weights must be > 0", BuildError);
    CHECK_THROWS_WITH_AS(TreeBuilder("t").weighted_selector({-1.0}), "tree 't', at /: WeightedSelector weights must be > 0",
                         BuildError);
    const Tree ok = TreeBuilder("t").weighted_selector({1.0, 3.0}).always_success().always_failure().back().end();
    CHECK(ok.kind(0) == NodeKind::WeightedSelector);
}

TEST_CASE("builder errors: Repeat / Loop / Retry counts") {
    CHECK_THROWS_WITH_AS(TreeBuilder("t").repeat(0).always_success().back().end(),
                         "tree 't', node /Repeat: Repeat count must be >= 1 or kForever, got 0", BuildError);
    CHECK_THROWS_WITH_AS(TreeBuilder("t").sequence().loop(-5).always_success().back().back().end(),
                         "tree 't', node /Sequence/Loop[0]: Loop count must be >= 1 or kForever, got -5", BuildError);
    CHECK_THROWS_WITH_AS(TreeBuilder("t").retry(0).always_success().back().end(),
                         "tree 't', node /Retry: Retry attempts must be >= 1, got 0", BuildError);
    CHECK_THROWS_WITH_AS(TreeBuilder("t").retry_until_successful(kForever).always_success().back().end(),
                         "tree 't', node /Retry: Retry attempts must be >= 1, got -1", BuildError);
    // kForever is fine for Repeat and Loop.
    CHECK(TreeBuilder("t").repeat(kForever).always_success().back().end().kind(0) == NodeKind::Repeat);
    CHECK(TreeBuilder("t").loop().always_success().back().end().kind(0) == NodeKind::Loop);
}

TEST_CASE("builder errors: negative durations") {
    CHECK_THROWS_WITH_AS(TreeBuilder("t").sequence().wait(-1ms).back().end(),
                         "tree 't', node /Sequence/Wait[0]: Wait duration must not be negative", BuildError);
    CHECK_THROWS_WITH_AS(TreeBuilder("t").cooldown(-1s).always_success().back().end(),
                         "tree 't', node /Cooldown: Cooldown duration must not be negative", BuildError);
    CHECK_THROWS_WITH_AS(TreeBuilder("t").timeout(Duration(-1)).always_success().back().end(),
                         "tree 't', node /Timeout: Timeout duration must not be negative", BuildError);
    CHECK_THROWS_WITH_AS(TreeBuilder("t").delay(-5ms).always_success().back().end(),
                         "tree 't', node /Delay: Delay duration must not be negative", BuildError);
    CHECK_THROWS_WITH_AS(TreeBuilder("t").sleep(-1ms).end(), "tree 't', node /Wait: Wait duration must not be negative",
                         BuildError);
    // Zero is allowed.
    CHECK(TreeBuilder("t").wait(0ms).end().kind(0) == NodeKind::Wait);
}

TEST_CASE("builder errors: Parallel thresholds") {
    CHECK_THROWS_WITH_AS(TreeBuilder("t").parallel(3, 1).always_success().always_success().back().end(),
                         "tree 't', node /Parallel: Parallel success threshold 3 is outside 1..2 (its number of children)",
                         BuildError);
    CHECK_THROWS_WITH_AS(TreeBuilder("t").parallel(1, 4).always_success().always_success().back().end(),
                         "tree 't', node /Parallel: Parallel failure threshold 4 is outside 1..2 (its number of children)",
                         BuildError);
    CHECK_THROWS_WITH_AS(TreeBuilder("t").parallel(0, 1), "tree 't', at /: Parallel thresholds must be >= 1", BuildError);
    CHECK_THROWS_WITH_AS(TreeBuilder("t").parallel(1, -1), "tree 't', at /: Parallel thresholds must be >= 1", BuildError);
    // In range: fine.
    CHECK(TreeBuilder("t").parallel(2, 1).always_success().always_success().back().end().kind(0) == NodeKind::Parallel);
}

TEST_CASE("builder: the registry may die before its trees") {
    Tree tree;
    {
        Registry reg;
        reg.add_action("Once", test::finishing_action(1, Status::Success));
        tree = TreeBuilder("t", reg).sequence().action("Once").back().end();
    }
    TraceRecorder rec;
    Agent agent(tree, {.listener = &rec});
    agent.tick(10ms);
    CHECK(rec.tick(0) == "0:I 1:I 1:U 1:T(Success) 0:T(Success)");
}

// ---- size limits (include/ebt/limits.hpp) ---------------------------------------------------------------------

namespace {

// Opens nodes of one kind, each inside the last, until the builder refuses or `levels` are open; then
// closes the chain over a leaf and ends the tree. Returns how many were opened and the error, if any.
struct ChainResult {
    int opened = 0;
    std::string error;
};
template <class Open> ChainResult deep_chain(Open open, int levels) {
    const Registry reg = make_registry();
    TreeBuilder b("deep", reg);
    ChainResult r;
    try {
        for (; r.opened < levels; ++r.opened) open(b);
        b.action("Patrol");
        for (int i = 0; i < levels; ++i) b.back();
        (void)b.end();
    } catch (const BuildError& e) {
        r.error = e.what();
    }
    return r;
}

// The path of the open node at depth 200 of a chain of `kind`, as a depth error shortens it.
std::string shortened_chain_path(const std::string& kind) {
    const std::string child = "/" + kind + "[0]";
    return "/" + kind + child + child + "/... 193 levels ..." + child + child + child + child;
}

}  // namespace

TEST_CASE("builder errors: a tree deeper than limits::kMaxDepth is refused as its nodes are added") {
    REQUIRE(limits::kMaxDepth == 200);
    // Chains of 10,000 to 28,000 levels (fewer nodes than limits::kMaxNodes) used to overflow the
    // compiler's stack; now the node at depth 201 is refused, naming the path of its parent.
    const ChainResult seq = deep_chain([](TreeBuilder& b) { b.sequence(); }, 28000);
    CHECK(seq.opened == 200);
    CHECK(seq.error == "tree 'deep', at " + shortened_chain_path("Sequence") +
                           ": nodes nested too deeply: Sequence would be at depth 201 (at most 200 levels)");
    const ChainResult inv = deep_chain([](TreeBuilder& b) { b.inverter(); }, 20000);
    CHECK(inv.opened == 200);
    CHECK(inv.error == "tree 'deep', at " + shortened_chain_path("Inverter") +
                           ": nodes nested too deeply: Inverter would be at depth 201 (at most 200 levels)");
    const ChainResult rep = deep_chain([](TreeBuilder& b) { b.repeat(2); }, 10000);
    CHECK(rep.opened == 200);
    CHECK(rep.error == "tree 'deep', at " + shortened_chain_path("Repeat") +
                           ": nodes nested too deeply: Repeat would be at depth 201 (at most 200 levels)");
    const ChainResult par = deep_chain([](TreeBuilder& b) { b.parallel(Policy::RequireAll, Policy::RequireOne); }, 15000);
    CHECK(par.opened == 200);
    CHECK(par.error == "tree 'deep', at " + shortened_chain_path("Parallel") +
                           ": nodes nested too deeply: Parallel would be at depth 201 (at most 200 levels)");
    // A leaf at depth 201 too.
    const ChainResult leafy = deep_chain([](TreeBuilder& b) { b.sequence(); }, 200);
    CHECK(leafy.opened == 200);
    CHECK(leafy.error == "tree 'deep', at " + shortened_chain_path("Sequence") +
                             ": nodes nested too deeply: Action 'Patrol' would be at depth 201 (at most 200 levels)");
    // end() with many open nodes names the innermost one.
    TreeBuilder unclosed("deep");
    for (int i = 0; i < 199; ++i) unclosed.sequence();
    CHECK_THROWS_WITH_AS(unclosed.always_success().end(),
                         "tree 'deep': end() with 199 open node(s): the innermost at /Sequence/Sequence[0]/Sequence[0]/... 192 "
                         "levels .../Sequence[0]/Sequence[0]/Sequence[0]/Sequence[0] (close each with back())",
                         BuildError);
}

TEST_CASE("builder: a tree exactly limits::kMaxDepth deep builds, and runs the same in both modes") {
    const Registry reg = make_registry();
    // 199 nested Sequence / Inverter / Repeat / Parallel, the Sequence at depth 149 guarded by "go",
    // over the running action Patrol at depth 200.
    auto build = [&] {
        TreeBuilder b("deep", reg);
        b.key<bool>("go", true);
        for (int depth = 1; depth < 200; ++depth) {
            switch (depth % 4) {
            case 1: b.sequence(); break;
            case 2: b.inverter(); break;
            case 3: b.repeat(kForever); break;
            default: b.parallel(Policy::RequireAll, Policy::RequireOne); break;
            }
            if (depth == 149) b.precondition(Predicate::is("go")).abort(AbortMode::Self);
        }
        b.action("Patrol");
        for (int depth = 1; depth < 200; ++depth) b.back();
        return b.end();
    };
    const Tree tree = build();
    REQUIRE(tree.size() == 200);
    CHECK(tree.kind(148) == NodeKind::Sequence);
    CHECK(tree.has_guard(148));
    std::string first_tick;
    for (NodeIndex i = 0; i < 200; ++i) first_tick += std::to_string(i) + ":I ";
    first_tick += "199:U";
    std::vector<std::string> traces;
    for (Mode mode : test::both_modes()) {
        CAPTURE(to_string(mode));
        TraceRecorder rec;
        Agent agent(tree, {.mode = mode, .listener = &rec});
        CHECK(agent.tick(10ms) == Status::Running);
        CHECK(rec.tick(0) == first_tick);
        agent.blackboard().set("go", false);  // the guard at depth 149 aborts everything below it
        agent.tick(10ms);
        CHECK(agent.status(199) != Status::Running);
        agent.blackboard().set("go", true);
        agent.tick(10ms);
        agent.tick(10ms);
        std::string all;
        for (const auto& line : rec.lifecycle()) all += line + "\n";
        traces.push_back(all);
    }
    CHECK(traces[0] == traces[1]);
    // The describe() listing and every node's path work at that depth.
    CHECK(tree.path(199).size() > 200 * 8);
    CHECK(tree.describe().find(std::string(2 * 199, ' ') + "199 Action Patrol") != std::string::npos);
}

TEST_CASE("builder errors: a subtree that would reach past limits::kMaxDepth") {
    const Registry reg = make_registry();
    TreeBuilder inner_builder("inner", reg);
    for (int i = 0; i < 149; ++i) inner_builder.sequence();
    inner_builder.action("Patrol");
    for (int i = 0; i < 149; ++i) inner_builder.back();
    const Tree inner = inner_builder.end();  // 150 levels
    TreeBuilder outer("outer", reg);
    for (int i = 0; i < 50; ++i) outer.sequence();
    outer.subtree(inner);  // depths 51..200: fine
    CHECK_THROWS_WITH_AS(outer.sequence().subtree(inner),
                         "tree 'outer', at /Sequence/Sequence[0]/Sequence[0]/... 44 levels .../Sequence[0]/Sequence[0]/"
                         "Sequence[0]/Sequence[1]: nodes nested too deeply: subtree 'inner' (150 levels) would reach depth "
                         "201 (at most 200 levels)",
                         BuildError);
}

TEST_CASE("builder errors: predicates nested deeper than limits::kMaxPredicateDepth are refused as they are composed") {
    REQUIRE(limits::kMaxPredicateDepth == 32);
    // 100,000 '!' used to overflow the stack (compiling, copying and destroying the predicate).
    Predicate p = Predicate::is("a");
    int nots = 0;
    std::string error;
    try {
        for (; nots < 100000; ++nots) p = !p;
        TreeBuilder("t").key<bool>("a").condition(p);
    } catch (const BuildError& e) {
        error = e.what();
    }
    CHECK(nots == 32);
    CHECK(error == "predicate nested too deeply: '!' would nest it 33 levels deep (at most 32)");
    // The predicate made so far is whole and usable.
    const Tree ok = TreeBuilder("t").key<bool>("a", true).sequence().condition(p).always_success().back().end();
    CHECK(ok.size() == 3);
    Agent agent(ok, {.restart_on_end = false});
    CHECK(agent.tick(10ms) == Status::Success);  // an even number of '!' over a = true

    // The depth is the nesting of '!' and of the parentheses that writing the predicate as an
    // expression needs (what a file's expression may have): operators bind || < && < ^ < ! and are
    // left-associative, so a && b && c and a || b && c need none, (a || b) && c and a && (b && c) one.
    Predicate chain = Predicate::is("a");
    for (int i = 0; i < 200; ++i) chain = chain && Predicate::is("b");
    CHECK_NOTHROW((void)(chain || (Predicate::is("c") && (Predicate::is("d") ^ Predicate::is("e")))));  // no parentheses needed
    Predicate mixed = Predicate::is("a");  // ((a || b) && c || b) && c ...
    int levels = 0;
    error.clear();
    try {
        for (; levels < 100; ++levels) mixed = (mixed || Predicate::is("b")) && Predicate::is("c");
    } catch (const BuildError& e) {
        error = e.what();
    }
    CHECK(levels == 32);
    CHECK(error == "predicate nested too deeply: '&&' would nest it 33 levels deep (at most 32)");
    CHECK_THROWS_WITH_AS(Predicate::is("x") ^ mixed, "predicate nested too deeply: '^' would nest it 33 levels deep (at most 32)",
                         BuildError);
    CHECK_THROWS_WITH_AS(Predicate::is("x") && mixed, "predicate nested too deeply: '&&' would nest it 33 levels deep (at most 32)",
                         BuildError);
    CHECK_THROWS_WITH_AS(!mixed, "predicate nested too deeply: '!' would nest it 34 levels deep (at most 32)", BuildError);
    CHECK_NOTHROW((void)(mixed || Predicate::is("x")));  // mixed && ... || x: no parentheses needed
    CHECK_NOTHROW((void)(mixed && Predicate::is("x")));
}

TEST_CASE("builder errors: predicates with more than limits::kMaxPredicateOperands operands are refused as they are composed") {
    REQUIRE(limits::kMaxPredicateOperands == 256);
    Predicate p = Predicate::is("a");
    int ands = 0;
    std::string error;
    try {
        for (; ands < 1000; ++ands) p = p && Predicate::is("b");
    } catch (const BuildError& e) {
        error = e.what();
    }
    CHECK(ands == 255);
    CHECK(error == "predicate has too many operands: '&&' would give it 257 (at most 256)");
    // 256 operands build and evaluate.
    const Tree tree =
        TreeBuilder("t").key<bool>("a", true).key<bool>("b", true).sequence().condition(p).always_success().back().end();
    Agent agent(tree, {.restart_on_end = false});
    CHECK(agent.tick(10ms) == Status::Success);

    // A run of one operator is compiled left to right however it is nested: 16 levels of
    // a || b && c ^ (c ^ (...)) used to need 65 stack values in the evaluator (it has 64) and be refused.
    Predicate nested = Predicate::is("a");
    for (int i = 0; i < 16; ++i)
        nested = Predicate::is("a") || (Predicate::is("b") && (Predicate::is("c") ^ (Predicate::is("c") ^ nested)));
    const Tree nested_tree =
        TreeBuilder("t").key<bool>("a").key<bool>("b").key<bool>("c").sequence().condition(nested).always_success().back().end();
    for (Mode mode : test::both_modes()) {
        Agent false_agent(nested_tree, {.mode = mode, .restart_on_end = false});
        CHECK(false_agent.tick(10ms) == Status::Invalid);  // the sequence's leading condition is false: not entered
        Agent true_agent(nested_tree, {.mode = mode, .restart_on_end = false});
        true_agent.blackboard().set("a", true);
        CHECK(true_agent.tick(10ms) == Status::Success);
    }

    // Reusing a predicate counts its operands each time (a shared half used to double the compiled
    // program at every step).
    Predicate twice = Predicate::is("a");
    int doublings = 0;
    try {
        for (; doublings < 40; ++doublings) twice = twice ^ twice;
    } catch (const BuildError& e) {
        error = e.what();
    }
    CHECK(doublings == 8);
    CHECK(error == "predicate has too many operands: '^' would give it 512 (at most 256)");

    // Preconditions added one after the other are one predicate: the same limits, naming the node.
    TreeBuilder b("t");
    b.key<bool>("a").sequence().always_success();
    int added = 0;
    error.clear();
    try {
        for (; added < 100000; ++added) b.precondition(Predicate::is("a"));
    } catch (const BuildError& e) {
        error = e.what();
    }
    CHECK(added == 256);
    CHECK(error == "tree 't', node /Sequence/AlwaysSuccess[0]: predicate has too many operands: its preconditions would "
                   "give it 257 (at most 256)");
}

TEST_CASE("builder errors: an action or condition with more than limits::kMaxPorts ports") {
    REQUIRE(limits::kMaxPorts == 255);
    // 70,000 ports used to be silently cut to 70,000 mod 65,536 = 4,464.
    std::vector<PortSpec> many;
    for (int i = 0; i < 70000; ++i) many.push_back(port<int>("p" + std::to_string(i)));
    const std::vector<PortSpec> most(many.begin(), many.begin() + 255);
    const std::vector<PortSpec> too_many(many.begin(), many.begin() + 256);
    auto update = [](ActionContext&) { return Status::Success; };
    auto evaluate = [](const ConditionContext&) { return true; };
    Registry reg;
    CHECK_THROWS_WITH_AS(reg.add_action("Big", update, many), "action 'Big' has 70000 ports (at most 255)", BuildError);
    CHECK_THROWS_WITH_AS(reg.add_action("Big", update, too_many), "action 'Big' has 256 ports (at most 255)", BuildError);
    CHECK_THROWS_WITH_AS(reg.add_condition("Big", evaluate, many), "condition 'Big' has 70000 ports (at most 255)",
                         BuildError);
    CHECK(reg.find_action("Big") == nullptr);
    CHECK(reg.find_condition("Big") == nullptr);
    reg.add_action("Most", update, most);
    reg.add_condition("Most", evaluate, most);

    ActionSpec spec;
    spec.update = update;
    spec.ports = many;
    CHECK_THROWS_WITH_AS(TreeBuilder("t").sequence().action("Big", spec),
                         "tree 't', at /Sequence: action 'Big' has 70000 ports (at most 255)", BuildError);

    // 255 ports bind and run.
    TreeBuilder b("t", reg);
    for (const auto& p : most) b.key<int>(p.name, 1);
    const Tree tree = b.sequence().condition("Most").action("Most").back().end();
    Agent agent(tree, {.restart_on_end = false});
    CHECK(agent.tick(10ms) == Status::Success);
}

// ---- port defaults (BehaviorTree.CPP v4's InputPort default) --------------------------------------------

TEST_CASE("registry: a port default is checked against the port's type and direction when registered") {
    Registry reg;
    auto action_with = [](PortSpec p) {
        ActionSpec s = test::running_action();
        s.ports = {std::move(p)};
        return s;
    };
    // Good defaults register; default_key() is the key named like the port.
    reg.add_action("Aim", action_with(input_port<int>("power").default_value(7)));
    reg.add_action("Track", action_with(output_port<int>("target").default_key("enemy")));
    reg.add_condition(
        "IsSeeEnemy", [](const ConditionContext& c) { return c.in<bool>(0); }, {input_port<bool>("enemy_seen").default_key()});
    CHECK(reg.find_condition("IsSeeEnemy")->ports[0].fallback.kind == PortDefault::Kind::Key);
    CHECK(reg.find_condition("IsSeeEnemy")->ports[0].fallback.key == "enemy_seen");
    CHECK(reg.find_action("Track")->ports[0].fallback.key == "enemy");
    CHECK(reg.find_action("Aim")->ports[0].fallback.text == "7");  // filled at registration
    CHECK(input_port<double>("x").default_value(2.5).fallback.type == type_of<double>());
    CHECK(input_port<int>("x").fallback.kind == PortDefault::Kind::None);

    CHECK_THROWS_WITH_AS(reg.add_action("A1", action_with(input_port<float>("range").default_value(3))),
                         "action 'A1' port 'range' (float) has a default value of type int", BuildError);
    CHECK_THROWS_WITH_AS(reg.add_action("A2", action_with(output_port<int>("shots").default_value(0))),
                         "action 'A2' port 'shots' is an output: its default must be a key (default_key), not a value",
                         BuildError);
    CHECK_THROWS_WITH_AS(reg.add_action("A3", action_with(input_port<char>("c").default_value('x'))),
                         "action 'A3' port 'c' (char) has a default value of a type without a literal form (bool, int, "
                         "unsigned, long, long long, float, double, std::string, an enum added with add_enum, a user type "
                         "with format/parse): give it a default key instead",
                         BuildError);
    CHECK_THROWS_WITH_AS(reg.add_action("A4", action_with(input_port<double>("d").default_value(std::nan("")))),
                         "action 'A4' port 'd' has a default value with no literal form (nan)", BuildError);
    CHECK_THROWS_WITH_AS(reg.add_action("A5", action_with(input_port<int>("k").default_key("{bad key}"))),
                         "action 'A5' port 'k' has the default key '{bad key}', which is not a valid key name", BuildError);
    CHECK_THROWS_WITH_AS(reg.add_condition(
                             "C1", [](const ConditionContext&) { return true; }, {input_port<bool>("b").default_value(1)}),
                         "condition 'C1' port 'b' (bool) has a default value of type int", BuildError);
    // A condition's ports are read, whatever their declared direction: a value default is fine.
    reg.add_condition("C2", [](const ConditionContext& c) { return c.in<bool>(0); }, {output_port<bool>("b").default_value(true)});
    // Nothing was registered by the failed calls.
    CHECK(reg.action_names() == std::vector<std::string>{"Aim", "Track"});
    // In-place action specs are checked by the builder.
    CHECK_THROWS_WITH_AS(TreeBuilder("t").action("A6", action_with(input_port<float>("range").default_value(3))),
                         "tree 't', at /: action 'A6' port 'range' (float) has a default value of type int", BuildError);
}

TEST_CASE("builder: a port the node does not bind gets its default (a key, or a private constant)") {
    Registry reg;
    ActionSpec aim;
    aim.update = [](ActionContext& ctx) { return ctx.in<int>(0) == 7 ? Status::Success : Status::Failure; };
    aim.ports = {input_port<int>("power").default_value(7)};
    reg.add_action("Aim", aim);
    reg.add_condition(
        "IsSeeEnemy", [](const ConditionContext& c) { return c.in<bool>(0); }, {input_port<bool>("enemy_seen").default_key()});
    reg.add_condition(
        "Near", [](const ConditionContext& c) { return c.in<float>(0) < 5.0f; }, {input_port<float>("distance").default_key("dist")});
    const Tree t = TreeBuilder("t", reg)
                       .key<bool>("enemy_seen").key<float>("dist")
                       .sequence()
                           .condition("IsSeeEnemy")
                           .condition("Near")
                           .action("Aim")
                           .action("Aim", Bindings{{"power", "power"}})
                       .back()
                       .key<int>("power", 3)
                       .end();
    const auto& src = data_of(t).source;
    CHECK(src[1].predicate->bindings == Bindings{{"enemy_seen", "enemy_seen"}});
    CHECK(src[2].predicate->bindings == Bindings{{"distance", "dist"}});
    CHECK(src[3].bindings == Bindings{{"power", "=power#0"}});
    CHECK(src[3].literals == std::vector<std::pair<std::string, std::string>>{{"power", "7"}});
    CHECK(src[4].bindings == Bindings{{"power", "power"}});
    CHECK(src[4].literals.empty());
    const KeyId constant = t.schema().find("=power#0");
    REQUIRE(constant != kNoKey);
    CHECK(t.schema().info(constant).type == type_of<int>());
    int seven = 0;
    std::memcpy(&seven, t.schema().defaults() + t.schema().info(constant).offset, sizeof seven);
    CHECK(seven == 7);
    // The default key must exist, as any bound key.
    CHECK_THROWS_WITH_AS(TreeBuilder("t", reg).key<bool>("enemy_seen").sequence().condition("Near").always_success().back().end(),
                         "tree 't', node /Sequence/Condition 'Near'[0]: condition 'Near' port 'distance' uses undeclared "
                         "blackboard key 'dist' (declare it with key<T>(\"dist\"))",
                         BuildError);
    // Run: enemy seen, near (dist 0), Aim reads 7 from its constant; the second Aim reads 'power' (3) and fails.
    TraceRecorder rec;
    Agent agent(t, {.listener = &rec});
    agent.blackboard().set(agent.blackboard().key<bool>("enemy_seen"), true);
    CHECK(agent.tick(10ms) == Status::Failure);
    CHECK(rec.tick(0) == "0:I 3:I 3:U 3:T(Success) 4:I 4:U 4:T(Failure) 0:T(Failure)");
}
