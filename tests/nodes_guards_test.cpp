// Node contract tests (docs/semantics.md): preconditions and abort modes. Each case runs in both modes
// (support/both_modes.hpp) and asserts exact per-tick lifecycle traces and statuses. Node indices in
// the comments are pre-order (root = 0). Every agent ticks by 100 ms unless a test says otherwise;
// the first tick brings the clock to 100 ms.
#include "support/both_modes.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <vector>

using namespace ebt;
using namespace std::chrono_literals;
using test::Run;

constexpr Status kS = Status::Success;
constexpr Status kF = Status::Failure;

TEST_CASE("Preconditions: True/False/Not/And/Or/Xor decide entry; a false one skips with no events") {
    struct Case {
        const char* name;
        Predicate p;
        bool a, b, enters;
    };
    const Predicate a = Predicate::is("a"), b = Predicate::is("b");
    const std::vector<Case> cases{
        {"True", True(), false, false, true},
        {"False", False(), true, true, false},
        {"Not a (a=false)", Not(a), false, false, true},
        {"Not a (a=true)", Not(a), true, false, false},
        {"is(a, false)", Predicate::is("a", false), false, false, true},
        {"And (t,t)", And(a, b), true, true, true},
        {"And (t,f)", And(a, b), true, false, false},
        {"And (f,t)", a && b, false, true, false},
        {"Or (f,f)", Or(a, b), false, false, false},
        {"Or (f,t)", Or(a, b), false, true, true},
        {"Or (t,f)", a || b, true, false, true},
        {"Xor (t,t)", Xor(a, b), true, true, false},
        {"Xor (t,f)", Xor(a, b), true, false, true},
        {"Xor (f,t)", a ^ b, false, true, true},
        {"Xor (f,f)", a ^ b, false, false, false},
        {"And(Or, Not Xor) (t,t)", And(Or(a, b), Not(Xor(a, b))), true, true, true},
        {"And(Or, Not Xor) (t,f)", And(Or(a, b), Not(Xor(a, b))), true, false, false},
    };
    for (const Case& c : cases) {
        CAPTURE(std::string(c.name));
        // 0 Selector, 1 A (guarded by the precondition), 2 AlwaysFailure
        const Tree tree = TreeBuilder("pre").key<bool>("a", c.a).key<bool>("b", c.b)
                              .selector()
                                  .action("A", test::finishing_action(1, kS)).precondition(c.p)
                                  .always_failure()
                              .back()
                              .end();
        test::in_both_modes(tree, [&](Run& r) {
            r.tick();
            if (c.enters) {
                CHECK(r.rec.all(0) == "0:I 1:G(true) 1:I 1:U 1:T(Success) 0:T(Success)");
            } else {
                CHECK(r.rec.all(0) == "0:I 1:G(false) 2:I 2:U 2:T(Failure) 0:T(Failure)");
                CHECK(r.status(1) == Status::Invalid);
            }
        });
    }
}

TEST_CASE("Preconditions: attach to any node kind; several preconditions are and-ed") {
    using Open = std::function<void(TreeBuilder&)>;
    const std::vector<std::pair<std::string, Open>> kinds{
        {"Action", [](TreeBuilder& b) { b.action("A", test::running_action()); }},
        {"Wait", [](TreeBuilder& b) { b.wait(1s); }},
        {"AlwaysSuccess", [](TreeBuilder& b) { b.always_success(); }},
        {"Sequence", [](TreeBuilder& b) { b.sequence().action("A", test::running_action()).back(); }},
        {"Inverter", [](TreeBuilder& b) { b.inverter().action("A", test::running_action()).back(); }},
        {"Repeat", [](TreeBuilder& b) { b.repeat(2).action("A", test::running_action()).back(); }},
        {"Parallel", [](TreeBuilder& b) { b.parallel(Policy::RequireAll, Policy::RequireAll).action("A", test::running_action()).back(); }},
        {"Timeout", [](TreeBuilder& b) { b.timeout(1s).action("A", test::running_action()).back(); }},
        {"Selector", [](TreeBuilder& b) { b.selector().action("A", test::running_action()).back(); }},
    };
    for (const auto& kind : kinds) {
        const auto& name = kind.first;  // (not structured bindings: CAPTURE's lambda takes the name, which Clang 14 refuses)
        const auto& open = kind.second;
        CAPTURE(name);
        // 0 Selector, 1 <node> (guarded by a && b), ..., last: AlwaysFailure
        TreeBuilder b("any");
        b.key<bool>("a").key<bool>("b").selector();
        open(b);
        b.precondition(Predicate::is("a")).precondition(Predicate::is("b"));
        b.always_failure().back();
        const Tree tree = b.end();
        const auto fallback = static_cast<NodeIndex>(tree.size() - 1);
        const std::string skipped = "0:I 1:G(false) " + std::to_string(fallback) + ":I " + std::to_string(fallback) +
                                    ":U " + std::to_string(fallback) + ":T(Failure) 0:T(Failure)";
        test::for_each_ab_setting(tree, [&](int bits, Run& r) {
            if (bits == 3) CHECK(r.rec.all(0).rfind("0:I 1:G(true) 1:I", 0) == 0);
            else CHECK(r.rec.all(0) == skipped);
        });
    }
}

TEST_CASE("Preconditions: a registered condition over a port wakes the guard when its key changes") {
    Registry registry;
    registry.add_condition("low", [](const ConditionContext& c) { return c.in<int>(0) < 30; }, {port<int>("hp")});
    // 0 ActiveSelector, 1 Flee (guarded by low(hp)), 2 Fight
    const Tree tree = TreeBuilder("hp", registry).key<int>("hp", 100)
                          .active_selector()
                              .action("Flee", test::running_action()).precondition(Predicate::condition("low"))
                              .action("Fight", test::running_action())
                          .back()
                          .end();
    test::in_both_modes(tree, [&](Run& r) {
        r.expect_ticks({"0:I 2:I 2:U"});
        r.agent.blackboard().set("hp", 50);
        r.expect_ticks({"2:U"});
        r.agent.blackboard().set("hp", 20);
        r.expect_ticks({"2:T(Aborted) 1:I 1:U"});
    });
}

TEST_CASE("A skipped node counts as a failure for its parent: sequence, selector, parallel, decorator") {
    test::in_both_modes([&](Mode mode) {
        {   // 0 Sequence, 1 AlwaysSuccess, 2 A (skipped), 3 B
            Run r(TreeBuilder("seq").sequence().always_success()
                      .action("A", test::running_action()).precondition(False())
                      .action("B", test::running_action()).back().end(), mode);
            CHECK(r.tick() == kF);
            CHECK(r.rec.tick(0) == "0:I 1:I 1:U 1:T(Success) 0:T(Failure)");
        }
        {   // 0 Parallel(RequireAll, RequireOne), 1 A (skipped), 2 B
            Run r(TreeBuilder("par").parallel(Policy::RequireAll, Policy::RequireOne)
                      .action("A", test::running_action()).precondition(False())
                      .action("B", test::running_action()).back().end(), mode);
            CHECK(r.tick() == kF);
            CHECK(r.rec.tick(0) == "0:I 0:T(Failure)");
        }
        {   // 0 Parallel(RequireOne, RequireAll), 1 A (skipped), 2 AlwaysSuccess
            Run r(TreeBuilder("par").parallel(Policy::RequireOne, Policy::RequireAll)
                      .action("A", test::running_action()).precondition(False())
                      .always_success().back().end(), mode);
            CHECK(r.tick() == kS);
            CHECK(r.rec.tick(0) == "0:I 2:I 2:U 2:T(Success) 0:T(Success)");
        }
        {   // 0 Inverter, 1 A (skipped)
            Run r(TreeBuilder("inv").inverter().action("A", test::running_action()).precondition(False()).back().end(), mode);
            CHECK(r.tick() == kS);
            CHECK(r.rec.tick(0) == "0:I 0:T(Success)");
            CHECK(r.rec.all(0) == "0:I 1:G(false) 0:T(Success)");
        }
    });
}

namespace {
// 0 Selector, 1 Sequence (abort `mode`), 2 a?, 3 A (running), 4 B (running)
Tree abort_mode_tree(std::optional<AbortMode> mode, bool a_initially) {
    TreeBuilder b("abort");
    b.key<bool>("a", a_initially).selector().sequence().check("a").action("A", test::running_action()).back();
    if (mode) b.abort(*mode);
    b.action("B", test::running_action()).back();
    return b.end();
}
}  // namespace

TEST_CASE("Abort modes: None (a plain Selector's default) only decides entry") {
    const Tree tree = abort_mode_tree(std::nullopt, true);
    CHECK(tree.abort_mode(1) == AbortMode::None);
    const Tree lower = abort_mode_tree(std::nullopt, false);
    test::in_both_modes([&](Mode mode) {
        Run r(tree, mode);
        r.tick();
        r.agent.blackboard().set("a", false);
        r.tick();
        CHECK(r.rec.tick(0) == "0:I 1:I 3:I 3:U");
        CHECK(r.rec.tick(1) == "3:U");

        Run l(lower, mode);
        l.tick();
        l.agent.blackboard().set("a", true);
        l.tick();
        CHECK(l.rec.tick(0) == "0:I 4:I 4:U");
        CHECK(l.rec.tick(1) == "4:U");
    });
}

TEST_CASE("Abort modes: Self cuts the running node when its guard turns false") {
    const Tree tree = abort_mode_tree(AbortMode::Self, true);
    test::in_both_modes(tree, [&](Run& r) {
        r.tick();
        r.agent.blackboard().set("a", false);
        r.tick();
        CHECK(r.rec.tick(0) == "0:I 1:I 3:I 3:U");
        CHECK(r.rec.tick(1) == "3:T(Aborted) 1:T(Failure) 4:I 4:U");
        // Self only: turning true again does not preempt B
        r.agent.blackboard().set("a", true);
        r.tick();
        CHECK(r.rec.tick(2) == "4:U");
    });
}

TEST_CASE("Abort modes: LowerPriority on a plain Selector's child preempts a lower sibling") {
    const Tree tree = abort_mode_tree(AbortMode::LowerPriority, false);
    test::in_both_modes(tree, [&](Run& r) {
        r.tick();
        r.agent.blackboard().set("a", true);
        r.tick();
        CHECK(r.rec.tick(0) == "0:I 4:I 4:U");
        CHECK(r.rec.tick(1) == "4:T(Aborted) 1:I 3:I 3:U");
        r.agent.blackboard().set("a", false);  // LowerPriority only: no Self cut
        r.tick();
        CHECK(r.rec.tick(2) == "3:U");
    });
}

TEST_CASE("Abort modes: Both preempts lower siblings and cuts itself") {
    const Tree tree = abort_mode_tree(AbortMode::Both, false);
    test::in_both_modes(tree, [&](Run& r) {
        r.tick();
        r.agent.blackboard().set("a", true);
        r.tick();
        r.agent.blackboard().set("a", false);
        r.tick();
        CHECK(r.rec.tick(0) == "0:I 4:I 4:U");
        CHECK(r.rec.tick(1) == "4:T(Aborted) 1:I 3:I 3:U");
        CHECK(r.rec.tick(2) == "3:T(Aborted) 1:T(Failure) 4:I 4:U");
    });
}

TEST_CASE("Abort modes: an explicit None on an ActiveSelector child disables preemption") {
    const Tree tree = TreeBuilder("none").key<bool>("a")
                          .active_selector()
                              .sequence().check("a").action("A", test::running_action()).back().abort(AbortMode::None)
                              .action("B", test::running_action())
                          .back()
                          .end();
    test::in_both_modes(tree, [&](Run& r) {
        r.tick();
        r.agent.blackboard().set("a", true);
        r.tick();
        CHECK(r.rec.tick(1) == "4:U");
    });
}

TEST_CASE("Abort modes: Self on a leaf under a Parallel: the leaf ends Failure (no update) and counts as one") {
    // 0 Parallel(RequireAll, RequireOne), 1 A (guarded by k, Self), 2 B (running)
    const Tree tree = TreeBuilder("self-leaf").key<bool>("k", true)
                          .parallel(Policy::RequireAll, Policy::RequireOne)
                              .action("A", test::running_action()).precondition(Predicate::is("k")).abort(AbortMode::Self)
                              .action("B", test::running_action())
                          .back()
                          .end();
    test::in_both_modes(tree, [&](Run& r) {
        r.expect_ticks({"0:I 1:I 1:U 2:I 2:U"});
        r.agent.blackboard().set("k", false);
        r.expect_ticks({{"1:T(Failure) 2:T(Aborted) 0:T(Failure)", kF}});
    });
}

TEST_CASE("Abort modes: LowerPriority or Both where no priority order exists is a build error") {
    auto under = [](auto open_parent, AbortMode mode) {
        TreeBuilder b("bad");
        b.key<bool>("a");
        open_parent(b);
        b.action("A", test::running_action()).precondition(Predicate::is("a")).abort(mode);
        b.action("B", test::running_action()).back();
        return b.end();
    };
    auto seq = [](TreeBuilder& b) { b.sequence(); };
    auto par = [](TreeBuilder& b) { b.parallel(Policy::RequireAll, Policy::RequireAll); };
    auto rnd = [](TreeBuilder& b) { b.random_selector(); };
    CHECK_THROWS_AS(under(seq, AbortMode::LowerPriority), BuildError);
    CHECK_THROWS_AS(under(par, AbortMode::Both), BuildError);
    CHECK_THROWS_AS(under(rnd, AbortMode::LowerPriority), BuildError);
    CHECK_NOTHROW(under(seq, AbortMode::Self));
    CHECK_THROWS_AS(TreeBuilder("root").key<bool>("a").action("A", test::running_action())
                        .precondition(Predicate::is("a")).abort(AbortMode::Both).end(),
                    BuildError);
}
