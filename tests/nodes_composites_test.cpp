// Node contract tests (docs/semantics.md): the composites (sequences, selectors, random and weighted selectors, Parallel, Monitor). Each case runs in both modes
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
using test::TraceRecorder;

constexpr Status kS = Status::Success;
constexpr Status kF = Status::Failure;

TEST_CASE("Sequence: children in order; Failure at the first failing child, Success after the last") {
    // 0 Sequence, 1 S (1 update), 2 S (2 updates), 3 F, 4 never reached
    const Tree failing = TreeBuilder("seq")
                             .sequence()
                                 .action("S1", test::finishing_action(1, kS))
                                 .action("S2", test::finishing_action(2, kS))
                                 .action("F", test::finishing_action(1, kF))
                                 .action("X", test::running_action())
                             .back()
                             .end();
    const Tree passing = TreeBuilder("seq").sequence().always_success().action("S", test::finishing_action(1, kS)).back().end();
    test::in_both_modes([&](Mode mode) {
        Run r(failing, mode);
        r.expect_ticks({
            {"0:I 1:I 1:U 1:T(Success) 2:I 2:U", Status::Running},
            {"2:U 2:T(Success) 3:I 3:U 3:T(Failure) 0:T(Failure)", kF}
        });
        CHECK(r.status(3) == kF);
        CHECK(r.status(4) == Status::Invalid);

        Run p(passing, mode);
        CHECK(p.tick() == kS);
        CHECK(p.rec.tick(0) == "0:I 1:I 1:U 1:T(Success) 2:I 2:U 2:T(Success) 0:T(Success)");
    });
}

TEST_CASE("Sequence and Filter: leading conditions are a guard; false skips the node with no events") {
    // 0 Selector, 1 Sequence/Filter, 2 k?, 3 A (running), 4 B (running)
    auto build = [](bool filter) {
        TreeBuilder b(filter ? "filter" : "sequence");
        b.key<bool>("k").selector();
        if (filter) b.filter();
        else b.sequence();
        b.check("k").action("A", test::running_action()).back().action("B", test::running_action()).back();
        return b.end();
    };
    for (bool filter : {false, true}) {
        CAPTURE(filter);
        const Tree tree = build(filter);
        CHECK(tree.has_guard(1));
        test::in_both_modes([&](Mode mode) {
            Run off(tree, mode);
            off.expect_ticks({"0:I 4:I 4:U"});
            CHECK(off.rec.all(0) == "0:I 1:G(false) 4:I 4:U");
            CHECK(off.status(1) == Status::Invalid);

            Run on(tree, mode);
            on.agent.blackboard().set("k", true);
            on.tick();
            CHECK(on.rec.tick(0) == "0:I 1:I 3:I 3:U");
            // the guard stands for the branch: condition 2 is not evaluated again on entry
            CHECK(on.rec.all(0) == "0:I 1:G(true) 1:I 3:I 3:U");
        });
    }
}

TEST_CASE("Filter: several leading conditions form one conjunctive guard") {
    // 0 Selector, 1 Filter, 2 a?, 3 b?, 4 A, 5 B
    const Tree tree = TreeBuilder("filter").key<bool>("a").key<bool>("b")
                          .selector()
                              .filter().check("a").check("b").action("A", test::finishing_action(1, kS)).back()
                              .action("B", test::finishing_action(1, kF))
                          .back()
                          .end();
    test::for_each_ab_setting(tree, [](int bits, Run& r) {
        if (bits == 3) CHECK(r.rec.all(0) == "0:I 1:G(true) 1:I 4:I 4:U 4:T(Success) 1:T(Success) 0:T(Success)");
        else CHECK(r.rec.all(0) == "0:I 1:G(false) 5:I 5:U 5:T(Failure) 0:T(Failure)");
    });
}

TEST_CASE("ReactiveSequence: a passed condition turning false aborts the running child; the node fails") {
    // 0 ReactiveSequence, 1 S, 2 k? (passed condition), 3 A (running)
    const Tree tree = TreeBuilder("reactive").key<bool>("k", true)
                          .reactive_sequence()
                              .action("S", test::finishing_action(1, kS))
                              .check("k")
                              .action("A", test::running_action())
                          .back()
                          .end();
    test::in_both_modes(tree, [&](Run& r) {
        r.expect_ticks({"0:I 1:I 1:U 1:T(Success) 3:I 3:U"});
        CHECK(r.rec.all(0) == "0:I 1:I 1:U 1:T(Success) 2:C(true) 3:I 3:U");
        r.tick();
        CHECK(r.rec.tick(1) == "3:U");  // still true: no abort
        r.agent.blackboard().set("k", false);
        CHECK(r.tick() == kF);
        CHECK(r.rec.tick(2) == "3:T(Aborted) 0:T(Failure)");
        CHECK(r.rec.all(2) == "2:G(false) 3:T(Aborted) 0:T(Failure)");
        CHECK(r.status(3) == Status::Aborted);
        r.tick();
        CHECK(r.rec.tick(3) == "0:I 1:I 1:U 1:T(Success) 0:T(Failure)");
    });
}

TEST_CASE("ReactiveSequence: its leading conditions are a Self guard checked at its own position") {
    // 0 Selector, 1 ReactiveSequence, 2 k?, 3 A (running), 4 B (running)
    const Tree tree = TreeBuilder("reactive").key<bool>("k", true)
                          .selector()
                              .reactive_sequence().check("k").action("A", test::running_action()).back()
                              .action("B", test::running_action())
                          .back()
                          .end();
    CHECK(tree.abort_mode(1) == AbortMode::Self);
    test::in_both_modes(tree, [&](Run& r) {
        r.expect_ticks({"0:I 1:I 3:I 3:U"});
        r.agent.blackboard().set("k", false);
        r.expect_ticks({"3:T(Aborted) 1:T(Failure) 4:I 4:U"});
        CHECK(r.status(1) == kF);
    });
}

TEST_CASE("Selector: children in order; Success at the first success, Failure after the last") {
    // 0 Selector, 1 F, 2 S (2 updates), 3 never reached
    const Tree tree = TreeBuilder("sel")
                          .selector()
                              .action("F", test::finishing_action(1, kF))
                              .action("S", test::finishing_action(2, kS))
                              .action("X", test::running_action())
                          .back()
                          .end();
    const Tree all_fail = TreeBuilder("sel").fallback().always_failure().action("F", test::finishing_action(1, kF)).back().end();
    test::in_both_modes([&](Mode mode) {
        Run r(tree, mode);
        r.expect_ticks({
            {"0:I 1:I 1:U 1:T(Failure) 2:I 2:U", Status::Running},
            {"2:U 2:T(Success) 0:T(Success)", kS}
        });
        CHECK(r.status(3) == Status::Invalid);

        Run f(all_fail, mode);
        CHECK(f.tick() == kF);
        CHECK(f.rec.tick(0) == "0:I 1:I 1:U 1:T(Failure) 2:I 2:U 2:T(Failure) 0:T(Failure)");
    });
}

TEST_CASE("ActiveSelector: a higher guard turning true aborts the lower branch, then enters, same tick") {
    // 0 ActiveSelector, 1 Sequence, 2 k?, 3 A (running), 4 B (running)
    const Tree tree = TreeBuilder("active").key<bool>("k")
                          .reactive_fallback()
                              .sequence().check("k").action("A", test::running_action()).back()
                              .action("B", test::running_action())
                          .back()
                          .end();
    CHECK(tree.abort_mode(1) == AbortMode::LowerPriority);
    test::in_both_modes(tree, [&](Run& r) {
        r.expect_ticks({"0:I 4:I 4:U"});
        r.agent.blackboard().set("k", true);
        r.expect_ticks({"4:T(Aborted) 1:I 3:I 3:U"});
        // one evaluation, at the parent's position, before the lower branch's update; it stands on entry
        CHECK(r.rec.all(1) == "1:G(true) 4:T(Aborted) 1:I 3:I 3:U");
        CHECK(r.status(4) == Status::Aborted);
        // LowerPriority only: the guard turning false again does not cut the running branch
        r.agent.blackboard().set("k", false);
        r.expect_ticks({"3:U"});
    });
}

TEST_CASE("ActiveSelector: a branch whose guard stays true after its body failed is not retried") {
    // 0 ActiveSelector, 1 Sequence, 2 k?, 3 F (fails on its 2nd update), 4 B (running)
    const Tree tree = TreeBuilder("active").key<bool>("k", true)
                          .active_selector()
                              .sequence().check("k").action("F", test::finishing_action(2, kF)).back()
                              .action("B", test::running_action())
                          .back()
                          .end();
    test::in_both_modes(tree, [&](Run& r) {
        r.expect_ticks({"0:I 1:I 3:I 3:U", "3:U 3:T(Failure) 1:T(Failure) 4:I 4:U", "4:U", "4:U"});
        r.agent.blackboard().set("k", false);
        r.expect_ticks({"4:U"});
        r.agent.blackboard().set("k", true);  // a new false -> true edge
        r.expect_ticks({"4:T(Aborted) 1:I 3:I 3:U"});
    });
}

TEST_CASE("PrioritySelector: runs the first child whose guard holds and ends with that child's status") {
    // 0 PrioritySelector, 1 Sequence, 2 k?, 3 F, 4 AlwaysSuccess
    const Tree tree = TreeBuilder("priority").key<bool>("k")
                          .priority_selector()
                              .sequence().check("k").action("F", test::finishing_action(1, kF)).back()
                              .always_success()
                          .back()
                          .end();
    const Tree none = TreeBuilder("priority").priority_selector().always_success().precondition(False()).back().end();
    CHECK(tree.abort_mode(1) == AbortMode::Both);
    test::in_both_modes([&](Mode mode) {
        Run on(tree, mode);
        on.agent.blackboard().set("k", true);
        CHECK(on.tick() == kF);  // unlike a Selector, it does not try child 4
        CHECK(on.rec.tick(0) == "0:I 1:I 3:I 3:U 3:T(Failure) 1:T(Failure) 0:T(Failure)");
        CHECK(on.status(4) == Status::Invalid);

        Run off(tree, mode);
        CHECK(off.tick() == kS);
        CHECK(off.rec.tick(0) == "0:I 4:I 4:U 4:T(Success) 0:T(Success)");

        Run n(none, mode);
        CHECK(n.tick() == kF);
        CHECK(n.rec.tick(0) == "0:I 0:T(Failure)");
    });
}

TEST_CASE("PrioritySelector: a LowerPriority edge switches; a Self cut re-selects from the top in the same tick") {
    // 0 PrioritySelector, 1 Sequence, 2 a?, 3 A (running), 4 B (running)   (children default to Both)
    const Tree tree = TreeBuilder("priority").key<bool>("a")
                          .priority_selector()
                              .sequence().check("a").action("A", test::running_action()).back()
                              .action("B", test::running_action())
                          .back()
                          .end();
    test::in_both_modes(tree, [&](Run& r) {
        r.expect_ticks({"0:I 4:I 4:U"});
        r.agent.blackboard().set("a", true);
        r.expect_ticks({"4:T(Aborted) 1:I 3:I 3:U"});
        r.agent.blackboard().set("a", false);
        r.expect_ticks({"3:T(Aborted) 1:T(Failure) 4:I 4:U"});
        CHECK(r.agent.status() == Status::Running);
    });
}

TEST_CASE("PrioritySelector: a Self cut re-selects from the top, picking a higher child whose guard became true") {
    // 0 PrioritySelector, 1 Sequence (abort Self only), 2 a?, 3 A, 4 Sequence, 5 b?, 6 B, 7 C
    const Tree tree = TreeBuilder("priority").key<bool>("a").key<bool>("b", true)
                          .priority_selector()
                              .sequence().check("a").action("A", test::running_action()).back().abort(AbortMode::Self)
                              .sequence().check("b").action("B", test::running_action()).back()
                              .action("C", test::running_action())
                          .back()
                          .end();
    test::in_both_modes(tree, [&](Run& r) {
        r.expect_ticks({"0:I 4:I 6:I 6:U"});
        r.agent.blackboard().set("a", true);  // Self only: no preemption
        r.expect_ticks({"6:U"});
        r.agent.blackboard().set("b", false);
        r.expect_ticks({"6:T(Aborted) 4:T(Failure) 1:I 3:I 3:U"});
    });
}

TEST_CASE("NonPrioritySelector: keeps its child while the guard holds; no preemption; ends with the child's status") {
    // 0 NonPrioritySelector, 1 Sequence, 2 a?, 3 A (fails on its 2nd update), 4 Sequence, 5 b?, 6 B, 7 C
    const Tree tree = TreeBuilder("nonpriority").key<bool>("a").key<bool>("b", true)
                          .non_priority_selector()
                              .sequence().check("a").action("A", test::finishing_action(2, kF)).back()
                              .sequence().check("b").action("B", test::running_action()).back()
                              .action("C", test::running_action())
                          .back()
                          .end();
    CHECK(tree.abort_mode(1) == AbortMode::Self);
    test::in_both_modes(tree, [&](Run& r) {
        r.expect_ticks({"0:I 4:I 6:I 6:U"});
        r.agent.blackboard().set("a", true);  // a higher child's guard turns true: no preemption
        r.expect_ticks({"6:U"});
        r.agent.blackboard().set("b", false);  // Self cut: re-select from the top
        r.expect_ticks({"6:T(Aborted) 4:T(Failure) 1:I 3:I 3:U", {"3:U 3:T(Failure) 1:T(Failure) 0:T(Failure)", kF}});
    });
}

namespace {
// 0 Random/WeightedSelector over four AlwaysFailure children 1..4: every run tries all four, revealing
// the drawn order.
Tree four_failures(bool weighted, std::vector<double> weights = {}) {
    TreeBuilder b(weighted ? "weighted" : "random");
    if (weighted) b.weighted_selector(std::move(weights));
    else b.random_selector();
    for (int i = 0; i < 4; ++i) b.always_failure();
    b.back();
    return b.end();
}
std::string failing_trace(const std::vector<int>& order) {
    std::string s = "0:I";
    for (int c : order) s += " " + std::to_string(c) + ":I " + std::to_string(c) + ":U " + std::to_string(c) + ":T(Failure)";
    return s + " 0:T(Failure)";
}
bool is_permutation_of_children(std::vector<int> order) {
    std::sort(order.begin(), order.end());
    return order == std::vector<int>{1, 2, 3, 4};
}
/// For each completed run of the root, the children initialized during it, in order (across ticks).
std::vector<std::vector<int>> root_runs(const TraceRecorder& rec) {
    std::vector<std::vector<int>> runs;
    std::vector<int> current;
    for (const auto& en : rec.entries) {
        const TraceEvent& e = en.event;
        if (e.kind == TraceKind::Initialize && e.node != 0) current.push_back(e.node);
        if (e.kind == TraceKind::Terminate && e.node == 0) {
            runs.push_back(current);
            current.clear();
        }
    }
    return runs;
}
/// The order the selector drew on its first entry (ticks until the first run of the root ended).
std::vector<int> first_order(Run& r) {
    for (int i = 0; i < 8 && root_runs(r.rec).empty(); ++i) r.tick();
    const auto runs = root_runs(r.rec);
    return runs.empty() ? std::vector<int>{} : runs.front();
}
}  // namespace

TEST_CASE("RandomSelector: a seeded order, the same in both modes; different seeds give different orders") {
    const Tree tree = four_failures(false);
    std::set<std::vector<int>> orders;
    for (std::uint64_t seed = 0; seed < 24; ++seed) {
        CAPTURE(seed);
        Run p(tree, Mode::Polling, seed), e(tree, Mode::Event, seed);
        const std::vector<int> order = first_order(p);
        CHECK(is_permutation_of_children(order));
        CHECK(first_order(e) == order);
        CHECK(p.agent.status() == kF);
        CHECK(e.agent.status() == kF);
        orders.insert(order);
    }
    CHECK(orders.size() > 1);
}

TEST_CASE("RandomSelector: the order is drawn afresh on each entry, identically in both modes") {
    const Tree tree = four_failures(false);
    Run p(tree, Mode::Polling, 7), e(tree, Mode::Event, 7);
    for (int t = 0; t < 40; ++t) {
        p.tick();
        e.tick();
    }
    const auto runs = root_runs(p.rec);
    CHECK(runs.size() >= 10);
    CHECK(root_runs(e.rec) == runs);
    CHECK(p.rec.lifecycle() == e.rec.lifecycle());
    std::set<std::vector<int>> orders;
    for (const auto& order : runs) {
        CHECK(is_permutation_of_children(order));
        orders.insert(order);
    }
    CHECK(orders.size() > 1);
}

TEST_CASE("RandomSelector: Success at the first child that succeeds, like a Selector") {
    // 0 RandomSelector, 1 AlwaysFailure, 2 AlwaysSuccess: either 2 alone, or 1 then 2.
    const Tree tree = TreeBuilder("random").random_selector().always_failure().always_success().back().end();
    std::set<std::string> traces;
    for (std::uint64_t seed = 0; seed < 16; ++seed) {
        for (Mode mode : test::both_modes()) {
            Run r(tree, mode, seed);
            CHECK(r.tick() == kS);
            traces.insert(r.rec.tick(0));
        }
    }
    CHECK(traces == std::set<std::string>{"0:I 2:I 2:U 2:T(Success) 0:T(Success)",
                                          "0:I 1:I 1:U 1:T(Failure) 2:I 2:U 2:T(Success) 0:T(Success)"});
}

// Regression: options drawn in an order that goes back in pre-order (seed 0: 2, 4, 3, 1) used to be
// deferred to later ticks as if the walk had passed them.
TEST_CASE("RandomSelector and WeightedSelector: every option is tried in the same tick, like a Selector") {
    const Tree random = four_failures(false);
    const Tree weighted = four_failures(true, {1, 2, 3, 4});
    for (const Tree* tree : {&random, &weighted}) {
        CAPTURE(tree->name());
        for (std::uint64_t seed = 0; seed < 8; ++seed) {
            CAPTURE(seed);
            test::in_both_modes([&](Mode mode) {
                Run r(*tree, mode, seed);
                CHECK(r.tick() == kF);
                const std::vector<int> order = r.started(0);
                CHECK(is_permutation_of_children(order));
                CHECK(r.rec.tick(0) == failing_trace(order));
            });
        }
    }
}

TEST_CASE("WeightedSelector: same order in both modes; a weight-heavy child comes first most of the time") {
    const Tree tree = four_failures(true, {1, 1, 1, 17});  // child 4 first with probability 0.85
    int heavy_first = 0;
    const int seeds = 200;
    std::set<std::vector<int>> orders;
    for (std::uint64_t seed = 0; seed < seeds; ++seed) {
        CAPTURE(seed);
        Run p(tree, Mode::Polling, seed), e(tree, Mode::Event, seed);
        const std::vector<int> order = first_order(p);
        CHECK(is_permutation_of_children(order));
        CHECK(first_order(e) == order);
        CHECK(e.rec.lifecycle() == p.rec.lifecycle());
        if (!order.empty() && order.front() == 4) ++heavy_first;
        orders.insert(order);
    }
    CHECK(heavy_first > seeds * 7 / 10);
    CHECK(heavy_first < seeds);  // the light ones are drawn first sometimes
    CHECK(orders.size() > 1);
}

TEST_CASE("Parallel(RequireOne, RequireAll): the first success ends it; running children aborted in reverse pre-order") {
    // 0 Parallel, 1 Sequence, 2 B (running), 3 C (running), 4 A (succeeds on its 2nd update)
    const Tree tree = TreeBuilder("parallel")
                          .parallel(Policy::RequireOne, Policy::RequireAll)
                              .sequence().action("B", test::running_action()).back()
                              .action("C", test::running_action())
                              .action("A", test::finishing_action(2, kS))
                          .back()
                          .end();
    test::expect_ticks_in_both_modes(tree, {
        {"0:I 1:I 2:I 2:U 3:I 3:U 4:I 4:U", Status::Running},
        {"2:U 3:U 4:U 4:T(Success) 3:T(Aborted) 2:T(Aborted) 1:T(Aborted) 0:T(Success)", kS}
    });
}

TEST_CASE("Parallel(RequireOne, ...): finishing during entry aborts started children; later ones never start") {
    // 0 Parallel, 1 A (running), 2 AlwaysSuccess, 3 C (running)
    const Tree tree = TreeBuilder("parallel")
                          .parallel(Policy::RequireOne, Policy::RequireAll)
                              .action("A", test::running_action())
                              .always_success()
                              .action("C", test::running_action())
                          .back()
                          .end();
    test::in_both_modes(tree, [&](Run& r) {
        r.expect_ticks({{"0:I 1:I 1:U 2:I 2:U 2:T(Success) 1:T(Aborted) 0:T(Success)", kS}});
        CHECK(r.status(3) == Status::Invalid);
    });
}

TEST_CASE("Parallel(RequireAll, RequireOne): the first failure ends it; Success needs every child") {
    // 0 Parallel, 1 A (fails on its 2nd update), 2 B (running)
    const Tree failing = TreeBuilder("parallel")
                             .parallel(Policy::RequireAll, Policy::RequireOne)
                                 .action("A", test::finishing_action(2, kF))
                                 .action("B", test::running_action())
                             .back()
                             .end();
    // 0 Parallel, 1 S (1 update), 2 S (2 updates)
    const Tree passing = TreeBuilder("parallel")
                             .parallel(Policy::RequireAll, Policy::RequireOne)
                                 .action("S1", test::finishing_action(1, kS))
                                 .action("S2", test::finishing_action(2, kS))
                             .back()
                             .end();
    test::in_both_modes([&](Mode mode) {
        Run f(failing, mode);
        f.expect_ticks({"0:I 1:I 1:U 2:I 2:U", {"1:U 1:T(Failure) 2:T(Aborted) 0:T(Failure)", kF}});

        Run p(passing, mode);
        CHECK(p.tick() == Status::Running);
        CHECK(p.tick() == kS);
        CHECK(p.rec.tick(0) == "0:I 1:I 1:U 1:T(Success) 2:I 2:U");
        CHECK(p.rec.tick(1) == "2:U 2:T(Success) 0:T(Success)");
    });
}

TEST_CASE("Parallel(RequireOne, RequireAll): failures below the threshold keep it running") {
    // 0 Parallel, 1 AlwaysFailure, 2 F (fails on its 2nd update), 3 B (running)
    const Tree tree = TreeBuilder("parallel")
                          .parallel(Policy::RequireOne, Policy::RequireAll)
                              .always_failure()
                              .action("F", test::finishing_action(2, kF))
                              .action("B", test::running_action())
                          .back()
                          .end();
    test::expect_ticks_in_both_modes(tree, {
        "0:I 1:I 1:U 1:T(Failure) 2:I 2:U 3:I 3:U",
        {"2:U 2:T(Failure) 3:U", Status::Running},
        "3:U"
    });
}

TEST_CASE("Parallel(2, 2): numeric thresholds") {
    // 0 Parallel, 1 AlwaysSuccess, 2 AlwaysFailure, 3 S (2 updates), 4 B (running)
    const Tree tree = TreeBuilder("parallel")
                          .parallel(2, 2)
                              .always_success()
                              .always_failure()
                              .action("S", test::finishing_action(2, kS))
                              .action("B", test::running_action())
                          .back()
                          .end();
    test::expect_ticks_in_both_modes(tree, {
        {"0:I 1:I 1:U 1:T(Success) 2:I 2:U 2:T(Failure) 3:I 3:U 4:I 4:U", Status::Running},
        {"3:U 3:T(Success) 4:T(Aborted) 0:T(Success)", kS}
    });
}

TEST_CASE("Parallel: Failure when every child ended without meeting either threshold") {
    // 0 Parallel(3, 3), 1 AlwaysSuccess, 2 AlwaysFailure, 3 S (2 updates)
    const Tree tree = TreeBuilder("parallel")
                          .parallel(3, 3)
                              .always_success()
                              .always_failure()
                              .action("S", test::finishing_action(2, kS))
                          .back()
                          .end();
    test::expect_ticks_in_both_modes(tree, {
        {"0:I 1:I 1:U 1:T(Success) 2:I 2:U 2:T(Failure) 3:I 3:U", Status::Running},
        {"3:U 3:T(Success) 0:T(Failure)", kF}
    });
}

TEST_CASE("Monitor: its conditions guard it and do not count toward its policies") {
    // 0 Selector, 1 Monitor(RequireAll, RequireOne), 2 k?, 3 A (2 updates), 4 S (1 update), 5 C (running)
    const Tree tree = TreeBuilder("monitor").key<bool>("k", true)
                          .selector()
                              .monitor(Policy::RequireAll, Policy::RequireOne)
                                  .check("k")
                                  .action("A", test::finishing_action(2, kS))
                                  .action("S", test::finishing_action(1, kS))
                              .back()
                              .action("C", test::running_action())
                          .back()
                          .end();
    CHECK(tree.abort_mode(1) == AbortMode::Self);
    test::in_both_modes([&](Mode mode) {
        Run r(tree, mode);
        r.expect_ticks({"0:I 1:I 3:I 3:U 4:I 4:U 4:T(Success)"});
        CHECK(r.rec.all(0) == "0:I 1:G(true) 1:I 3:I 3:U 4:I 4:U 4:T(Success)");  // no 2:C: a guard, not a step
        CHECK(r.tick() == kS);  // RequireAll = the two actions
        CHECK(r.rec.tick(1) == "3:U 3:T(Success) 1:T(Success) 0:T(Success)");

        Run off(tree, mode);
        off.agent.blackboard().set("k", false);
        off.tick();
        CHECK(off.rec.tick(0) == "0:I 5:I 5:U");
        CHECK(off.status(1) == Status::Invalid);
    });
}

TEST_CASE("Monitor: a condition turning false aborts its actions (reverse pre-order) and the Monitor fails") {
    // 0 Selector, 1 Monitor(RequireAll, RequireAll), 2 k?, 3 A (running), 4 B (running), 5 C (running)
    const Tree tree = TreeBuilder("monitor").key<bool>("k", true)
                          .selector()
                              .monitor(Policy::RequireAll, Policy::RequireAll)
                                  .check("k")
                                  .action("A", test::running_action())
                                  .action("B", test::running_action())
                              .back()
                              .action("C", test::running_action())
                          .back()
                          .end();
    test::in_both_modes(tree, [&](Run& r) {
        r.expect_ticks({"0:I 1:I 3:I 3:U 4:I 4:U"});
        r.agent.blackboard().set("k", false);
        r.expect_ticks({"4:T(Aborted) 3:T(Aborted) 1:T(Failure) 5:I 5:U"});
        CHECK(r.status(1) == kF);
    });
}

TEST_CASE("Monitor as the root: its guard is checked at node 0; while false the root is skipped each tick") {
    // 0 Monitor(RequireAll, RequireOne), 1 k?, 2 A (running)
    const Tree tree = TreeBuilder("monitor-root").key<bool>("k", true)
                          .monitor(Policy::RequireAll, Policy::RequireOne).check("k").action("A", test::running_action()).back()
                          .end();
    test::in_both_modes(tree, [&](Run& r) {
        r.expect_ticks({"0:I 2:I 2:U"});
        r.agent.blackboard().set("k", false);
        r.expect_ticks({{"2:T(Aborted) 0:T(Failure)", kF}});
        CHECK(r.rec.all(1) == "0:G(false) 2:T(Aborted) 0:T(Failure)");
        r.tick();
        CHECK(r.rec.tick(2) == "");  // restarted, but skipped: no events
        CHECK(r.rec.all(2) == "0:G(false)");
        r.agent.blackboard().set("k", true);
        r.tick();
        CHECK(r.rec.tick(3) == "0:I 2:I 2:U");
    });
}
