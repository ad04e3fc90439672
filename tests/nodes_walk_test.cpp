// Node contract tests (docs/semantics.md): the walk: ordering within a tick. Each case runs in both modes
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

TEST_CASE("Walk: a blackboard write in a tick, before the walk reaches the guard's position, acts this tick") {
    // 0 Parallel, 1 Writer (writes k in tick 1), 2 ActiveSelector, 3 Sequence, 4 k?, 5 A, 6 B
    const Tree tree = TreeBuilder("before").key<bool>("k")
                          .parallel(Policy::RequireAll, Policy::RequireAll)
                              .action("Writer", test::writer_at_tick(1))
                              .active_selector()
                                  .sequence().check("k").action("A", test::running_action()).back()
                                  .action("B", test::running_action())
                              .back()
                          .back()
                          .end();
    test::expect_ticks_in_both_modes(tree, {"0:I 1:I 1:U 2:I 6:I 6:U", "1:U 6:T(Aborted) 3:I 5:I 5:U"});
}

TEST_CASE("Walk: a blackboard write in a tick, after the walk passed the guard's position, acts next tick") {
    // 0 Parallel, 1 ActiveSelector, 2 Sequence, 3 k?, 4 A, 5 B, 6 Writer (writes k in tick 1)
    const Tree tree = TreeBuilder("after").key<bool>("k")
                          .parallel(Policy::RequireAll, Policy::RequireAll)
                              .active_selector()
                                  .sequence().check("k").action("A", test::running_action()).back()
                                  .action("B", test::running_action())
                              .back()
                              .action("Writer", test::writer_at_tick(1))
                          .back()
                          .end();
    test::expect_ticks_in_both_modes(tree, {"0:I 1:I 5:I 5:U 6:I 6:U", "5:U 6:U", "5:T(Aborted) 2:I 4:I 4:U 6:U"});
}

TEST_CASE("Walk: a write in onTerminate during a tick is seen by a later guard position in the same tick") {
    // 0 Parallel, 1 Sequence, 2 S (writes k=true in onTerminate), 3 B (running), 4 ActiveSelector,
    // 5 Sequence, 6 k?, 7 A, 8 C
    ActionSpec s = test::finishing_action(2, kS);
    s.ports = {port<bool>("k")};
    s.on_terminate = [](ActionContext& ctx, Status) { ctx.out<bool>(0, true); };
    const Tree tree = TreeBuilder("terminate").key<bool>("k")
                          .parallel(Policy::RequireAll, Policy::RequireAll)
                              .sequence().action("S", s).action("B", test::running_action()).back()
                              .active_selector()
                                  .sequence().check("k").action("A", test::running_action()).back()
                                  .action("C", test::running_action())
                              .back()
                          .back()
                          .end();
    test::expect_ticks_in_both_modes(tree, {
        "0:I 1:I 2:I 2:U 4:I 8:I 8:U",
        "2:U 2:T(Success) 3:I 3:U 8:T(Aborted) 5:I 7:I 7:U"
    });
}

TEST_CASE("Walk: a guard change and a due Wait in the same tick: the guard's position comes first") {
    // 0 ActiveSelector, 1 Sequence, 2 k?, 3 A (running), 4 Wait(200ms)
    const Tree tree = TreeBuilder("guard-first").key<bool>("k")
                          .active_selector()
                              .sequence().check("k").action("A", test::running_action()).back()
                              .wait(200ms)
                          .back()
                          .end();
    test::in_both_modes(tree, [&](Run& r) {
        r.tick();  // clock 100: Wait due at 300
        r.tick();  // clock 200
        r.agent.blackboard().set("k", true);
        r.tick();  // clock 300: due, and the guard turned true
        CHECK(r.rec.tick(0) == "0:I 4:I");
        CHECK(r.rec.tick(1) == "");
        CHECK(r.rec.tick(2) == "4:T(Aborted) 1:I 3:I 3:U");
        CHECK(r.status(4) == Status::Aborted);
    });
}

TEST_CASE("Walk: a due Wait before a guard's position fires first in the same tick") {
    // 0 Parallel(RequireAll, RequireOne), 1 Wait(200ms), 2 ActiveSelector, 3 Sequence, 4 k?, 5 A, 6 B
    const Tree tree = TreeBuilder("timer-first").key<bool>("k")
                          .parallel(Policy::RequireAll, Policy::RequireOne)
                              .wait(200ms)
                              .active_selector()
                                  .sequence().check("k").action("A", test::running_action()).back()
                                  .action("B", test::running_action())
                              .back()
                          .back()
                          .end();
    test::in_both_modes(tree, [&](Run& r) {
        r.tick();
        r.tick();
        r.agent.blackboard().set("k", true);
        r.tick();  // clock 300
        CHECK(r.rec.tick(0) == "0:I 1:I 2:I 6:I 6:U");
        CHECK(r.rec.tick(1) == "6:U");
        CHECK(r.rec.tick(2) == "1:T(Success) 6:T(Aborted) 3:I 5:I 5:U");
    });
}

TEST_CASE("Walk: a node's Self guard (at its own position) is checked before its own due Timeout") {
    // 0 PrioritySelector, 1 Timeout(200ms) guarded by k (Both), 2 A (running), 3 B (running)
    auto build = [] {
        return TreeBuilder("guard-vs-timeout").key<bool>("k", true)
            .priority_selector()
                .timeout(200ms).action("A", test::running_action()).back().precondition(Predicate::is("k"))
                .action("B", test::running_action())
            .back()
            .end();
    };
    const Tree tree = build();
    test::in_both_modes([&](Mode mode) {
        {
            Run r(tree, mode);
            r.tick();  // clock 100: due at 300
            r.tick();
            r.agent.blackboard().set("k", false);
            r.tick();  // clock 300: the guard cut wins; the selector re-selects in the same tick
            CHECK(r.rec.tick(0) == "0:I 1:I 2:I 2:U");
            CHECK(r.rec.tick(1) == "2:U");
            CHECK(r.rec.tick(2) == "2:T(Aborted) 1:T(Failure) 3:I 3:U");
            CHECK(r.agent.status() == Status::Running);
        }
        {
            Run r(tree, mode);  // control: only the timer
            r.tick();
            r.tick();
            CHECK(r.tick() == kF);
            CHECK(r.rec.tick(2) == "2:T(Aborted) 1:T(Failure) 0:T(Failure)");
        }
    });
}

TEST_CASE("Walk: a restart by Repeat begins next tick, at the child's position in the walk") {
    // 0 Parallel, 1 Repeat(forever), 2 AlwaysSuccess, 3 A (running)
    const Tree first = TreeBuilder("restart")
                           .parallel(Policy::RequireAll, Policy::RequireAll)
                               .repeat().always_success().back()
                               .action("A", test::running_action())
                           .back()
                           .end();
    // 0 Parallel, 1 A (running), 2 Repeat(forever), 3 AlwaysSuccess
    const Tree second = TreeBuilder("restart")
                            .parallel(Policy::RequireAll, Policy::RequireAll)
                                .action("A", test::running_action())
                                .repeat().always_success().back()
                            .back()
                            .end();
    test::in_both_modes([&](Mode mode) {
        Run f(first, mode), s(second, mode);
        for (int i = 0; i < 3; ++i) {
            f.tick();
            s.tick();
        }
        CHECK(f.rec.tick(0) == "0:I 1:I 2:I 2:U 2:T(Success) 3:I 3:U");
        CHECK(f.rec.tick(1) == "2:I 2:U 2:T(Success) 3:U");
        CHECK(f.rec.tick(2) == "2:I 2:U 2:T(Success) 3:U");
        CHECK(s.rec.tick(0) == "0:I 1:I 1:U 2:I 3:I 3:U 3:T(Success)");
        CHECK(s.rec.tick(1) == "1:U 3:I 3:U 3:T(Success)");
    });
}

TEST_CASE("Walk: a restarted Sequence under Repeat starts over from its first child next tick") {
    // 0 Repeat(2), 1 Sequence, 2 AlwaysSuccess, 3 S (1 update)
    const Tree tree = TreeBuilder("restart")
                          .repeat(2).sequence().always_success().action("S", test::finishing_action(1, kS)).back().back()
                          .end();
    test::expect_ticks_in_both_modes(tree, {
        "0:I 1:I 2:I 2:U 2:T(Success) 3:I 3:U 3:T(Success) 1:T(Success)",
        {"1:I 2:I 2:U 2:T(Success) 3:I 3:U 3:T(Success) 1:T(Success) 0:T(Success)", kS}
    });
}

TEST_CASE("Walk: with restart_on_end false the agent stops after the root ends until restart()") {
    const Tree tree = TreeBuilder("once").always_success().end();
    test::in_both_modes([&](Mode mode) {
        Run r(tree, mode, 0, /*restart_on_end=*/false);
        CHECK(r.tick() == kS);
        CHECK(r.tick() == kS);
        CHECK(r.rec.tick(0) == "0:I 0:U 0:T(Success)");
        CHECK(r.rec.tick(1) == "");
        r.agent.restart();
        r.tick();
        CHECK(r.rec.tick(2) == "0:I 0:U 0:T(Success)");
    });
}
