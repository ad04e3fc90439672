// Node contract tests (docs/semantics.md): the decorators (Inverter, ForceSuccess/ForceFailure, Repeat, Retry, Loop, Cooldown, Timeout, Delay). Each case runs in both modes
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

TEST_CASE("Inverter: swaps Success and Failure, stays Running while the child runs") {
    test::in_both_modes([&](Mode mode) {
        {
            Run r(TreeBuilder("inv").inverter().action("A", test::finishing_action(1, kS)).back().end(), mode);
            CHECK(r.tick() == kF);
            CHECK(r.rec.tick(0) == "0:I 1:I 1:U 1:T(Success) 0:T(Failure)");
        }
        {
            Run r(TreeBuilder("inv").inverter().action("A", test::finishing_action(1, kF)).back().end(), mode);
            CHECK(r.tick() == kS);
            CHECK(r.rec.tick(0) == "0:I 1:I 1:U 1:T(Failure) 0:T(Success)");
        }
        {
            Run r(TreeBuilder("inv").inverter().action("A", test::finishing_action(2, kF)).back().end(), mode);
            CHECK(r.tick() == Status::Running);
            CHECK(r.rec.tick(0) == "0:I 1:I 1:U");
            CHECK(r.tick() == kS);
            CHECK(r.rec.tick(1) == "1:U 1:T(Failure) 0:T(Success)");
        }
    });
}

TEST_CASE("ForceSuccess and ForceFailure over actions: fixed status when the child ends") {
    test::in_both_modes([&](Mode mode) {
        for (Status child : {kS, kF}) {
            CAPTURE(std::string(to_string(child)));
            Run fs(TreeBuilder("fs").force_success().action("A", test::finishing_action(2, child)).back().end(), mode);
            CHECK(fs.tick() == Status::Running);
            CHECK(fs.tick() == kS);
            CHECK(fs.rec.tick(1) == std::string("1:U 1:T(") + to_string(child) + ") 0:T(Success)");
            Run ff(TreeBuilder("ff").force_failure().action("A", test::finishing_action(2, child)).back().end(), mode);
            CHECK(ff.tick() == Status::Running);
            CHECK(ff.tick() == kF);
            CHECK(ff.rec.tick(1) == std::string("1:U 1:T(") + to_string(child) + ") 0:T(Failure)");
        }
    });
}

TEST_CASE("Inverter/ForceSuccess/ForceFailure over a condition fold into one condition node") {
    const Tree tree = TreeBuilder("folded").key<bool>("k")
                          .selector()
                              .inverter().check("k").back()
                              .force_success().check("k").back()
                              .force_failure().check("k").back()
                              .action("A", test::running_action())
                          .back()
                          .end();
    REQUIRE(tree.size() == 5);  // 0 Selector, 1 !k, 2 ForceSuccess(k), 3 ForceFailure(k), 4 A
    CHECK(tree.kind(1) == NodeKind::Condition);
    CHECK(tree.kind(2) == NodeKind::Condition);
    CHECK(tree.kind(3) == NodeKind::Condition);
    CHECK(tree.kind(4) == NodeKind::Action);
    CHECK(tree.label(1) == "!k");
    CHECK(tree.label(2) == "ForceSuccess(k)");
    CHECK(tree.label(3) == "ForceFailure(k)");

    // Their values, one at a time: 0 Selector, 1 folded condition, 2 A.
    auto one = [](auto decorate) {
        TreeBuilder b("one");
        b.key<bool>("k").selector();
        decorate(b);
        b.check("k").back().action("A", test::running_action()).back();
        return b.end();
    };
    const Tree inv = one([](TreeBuilder& b) { b.inverter(); });
    const Tree fs = one([](TreeBuilder& b) { b.force_success(); });
    const Tree ff = one([](TreeBuilder& b) { b.force_failure(); });
    for (const Tree* t : {&inv, &fs, &ff}) {
        CHECK(t->size() == 3);
        CHECK(t->kind(1) == NodeKind::Condition);
    }
    // A folded condition leading a Sequence is part of the Sequence's guard.
    // 0 Selector, 1 Sequence, 2 !k, 3 A, 4 B
    const Tree leading = TreeBuilder("leading").key<bool>("k")
                             .selector()
                                 .sequence().inverter().check("k").back().action("A", test::running_action()).back()
                                 .action("B", test::running_action())
                             .back()
                             .end();
    CHECK(leading.size() == 5);
    CHECK(leading.has_guard(1));
    test::in_both_modes([&](Mode mode) {
        Run off(leading, mode);
        off.tick();
        CHECK(off.rec.all(0) == "0:I 1:G(true) 1:I 3:I 3:U");
        Run on(leading, mode);
        on.agent.blackboard().set("k", true);
        on.tick();
        CHECK(on.rec.all(0) == "0:I 1:G(false) 4:I 4:U");
    });
    test::in_both_modes([&](Mode mode) {
        for (bool k : {false, true}) {
            CAPTURE(k);
            Run ri(inv, mode), rs(fs, mode), rf(ff, mode);
            for (Run* r : {&ri, &rs, &rf}) {
                r->agent.blackboard().set("k", k);
                r->tick();
            }
            CHECK(ri.rec.all(0) == (k ? "0:I 1:C(false) 2:I 2:U" : "0:I 1:C(true) 0:T(Success)"));
            CHECK(rs.rec.all(0) == "0:I 1:C(true) 0:T(Success)");
            CHECK(rf.rec.all(0) == "0:I 1:C(false) 2:I 2:U");
        }
    });
}

TEST_CASE("Repeat(n): re-runs a succeeding child, one restart per tick, Success after n successes") {
    const Tree tree = TreeBuilder("repeat").repeat(3).action("A", test::finishing_action(1, kS)).back().end();
    test::in_both_modes(tree, [&](Run& r) {
        CHECK(r.tick() == Status::Running);
        CHECK(r.tick() == Status::Running);
        CHECK(r.tick() == kS);
        for (int i = 0; i < 3; ++i) r.tick();
        CHECK(r.rec.tick(0) == "0:I 1:I 1:U 1:T(Success)");
        CHECK(r.rec.tick(1) == "1:I 1:U 1:T(Success)");
        CHECK(r.rec.tick(2) == "1:I 1:U 1:T(Success) 0:T(Success)");
        // the next run of the Repeat starts with its counter reset
        CHECK(r.rec.tick(3) == "0:I 1:I 1:U 1:T(Success)");
        CHECK(r.rec.tick(4) == "1:I 1:U 1:T(Success)");
        CHECK(r.rec.tick(5) == "1:I 1:U 1:T(Success) 0:T(Success)");
    });
}

TEST_CASE("Repeat(n): a multi-tick child restarts fresh on the tick after it ended") {
    const Tree tree = TreeBuilder("repeat").repeat(2).action("A", test::finishing_action(2, kS)).back().end();
    test::in_both_modes(tree, [&](Run& r) {
        r.expect_ticks({"0:I 1:I 1:U", "1:U 1:T(Success)", "1:I 1:U", "1:U 1:T(Success) 0:T(Success)"});
        CHECK(r.agent.status() == kS);
    });
}

TEST_CASE("Repeat(n): Failure at the child's first failure") {
    test::in_both_modes([&](Mode mode) {
        int runs = 0;
        const Tree tree = TreeBuilder("repeat").repeat(5).action("A", test::scripted_runs({kS, kF}, runs)).back().end();
        Run r(tree, mode);
        r.expect_ticks({"0:I 1:I 1:U 1:T(Success)", {"1:I 1:U 1:T(Failure) 0:T(Failure)", kF}});
    });
}

TEST_CASE("Repeat(kForever, AlwaysSuccess): one run per tick, never ends, cannot hang a tick") {
    const Tree tree = TreeBuilder("forever").repeat(kForever).always_success().back().end();
    test::in_both_modes(tree, [&](Run& r) {
        for (int i = 0; i < 5; ++i) CHECK(r.tick() == Status::Running);
        CHECK(r.rec.tick(0) == "0:I 1:I 1:U 1:T(Success)");
        for (std::uint64_t t = 1; t < 5; ++t) CHECK(r.rec.tick(t) == "1:I 1:U 1:T(Success)");
    });
}

TEST_CASE("Retry(n): re-runs a failing child on the next tick, Failure after n failures") {
    const Tree tree = TreeBuilder("retry").retry(3).action("A", test::finishing_action(1, kF)).back().end();
    test::expect_ticks_in_both_modes(tree, {
        "0:I 1:I 1:U 1:T(Failure)",
        "1:I 1:U 1:T(Failure)",
        {"1:I 1:U 1:T(Failure) 0:T(Failure)", kF}
    });
}

TEST_CASE("Retry(n): Success at the child's first success") {
    test::in_both_modes([&](Mode mode) {
        int runs = 0;
        const Tree tree = TreeBuilder("retry").retry_until_successful(3).action("A", test::scripted_runs({kF, kS}, runs)).back().end();
        Run r(tree, mode);
        r.expect_ticks({{"0:I 1:I 1:U 1:T(Failure)", Status::Running}, {"1:I 1:U 1:T(Success) 0:T(Success)", kS}});
    });
}

TEST_CASE("Loop(n): re-runs the child n times whatever it returns, ends with the last run's status") {
    test::in_both_modes([&](Mode mode) {
        {
            int runs = 0;
            Run r(TreeBuilder("loop").loop(3).action("A", test::scripted_runs({kF, kS, kF}, runs)).back().end(), mode);
            r.tick();
            r.tick();
            CHECK(r.tick() == kF);
            CHECK(r.rec.tick(0) == "0:I 1:I 1:U 1:T(Failure)");
            CHECK(r.rec.tick(1) == "1:I 1:U 1:T(Success)");
            CHECK(r.rec.tick(2) == "1:I 1:U 1:T(Failure) 0:T(Failure)");
        }
        {
            int runs = 0;
            Run r(TreeBuilder("loop").loop(2).action("A", test::scripted_runs({kF, kS}, runs)).back().end(), mode);
            r.tick();
            CHECK(r.tick() == kS);
            CHECK(r.rec.tick(1) == "1:I 1:U 1:T(Success) 0:T(Success)");
        }
        {
            Run r(TreeBuilder("loop").loop(kForever).always_failure().back().end(), mode);
            for (int i = 0; i < 3; ++i) CHECK(r.tick() == Status::Running);
            CHECK(r.rec.tick(0) == "0:I 1:I 1:U 1:T(Failure)");
            CHECK(r.rec.tick(2) == "1:I 1:U 1:T(Failure)");
        }
    });
}

TEST_CASE("Cooldown: skipped with no events while cooling; the cooldown survives root restarts") {
    // 0 Selector, 1 Cooldown(250ms), 2 AlwaysSuccess, 3 AlwaysFailure
    const Tree tree = TreeBuilder("cooldown").selector().cooldown(250ms).always_success().back().always_failure().back().end();
    test::in_both_modes(tree, [&](Run& r) {
        for (int i = 0; i < 4; ++i) r.tick();  // clock 100 (cooling until 350), 200, 300, 400
        CHECK(r.rec.tick(0) == "0:I 1:I 2:I 2:U 2:T(Success) 1:T(Success) 0:T(Success)");
        CHECK(r.rec.tick(1) == "0:I 3:I 3:U 3:T(Failure) 0:T(Failure)");
        CHECK(r.rec.all(1) == "0:I 1:G(false) 3:I 3:U 3:T(Failure) 0:T(Failure)");
        CHECK(r.rec.tick(2) == "0:I 3:I 3:U 3:T(Failure) 0:T(Failure)");
        CHECK(r.rec.tick(3) == "0:I 1:I 2:I 2:U 2:T(Success) 1:T(Success) 0:T(Success)");
    });
}

TEST_CASE("Cooldown: an aborted run starts the cooldown too") {
    // 0 Selector, 1 Cooldown(250ms), 2 A (running), 3 B (running)
    const Tree tree = TreeBuilder("cooldown")
                          .selector()
                              .cooldown(250ms).action("A", test::running_action()).back()
                              .action("B", test::running_action())
                          .back()
                          .end();
    test::in_both_modes(tree, [&](Run& r) {
        r.tick();  // clock 100
        CHECK(r.rec.tick(0) == "0:I 1:I 2:I 2:U");
        std::size_t m = r.mark();
        r.agent.abort();  // at clock 100: cooling until 350
        CHECK(r.since(m) == "2:T(Aborted) 1:T(Aborted) 0:T(Aborted)");
        CHECK(r.status(1) == Status::Aborted);
        m = r.mark();
        r.tick();  // clock 200
        CHECK(r.since(m) == "0:I 3:I 3:U");
        r.agent.abort();
        m = r.mark();
        r.tick();  // clock 300: still cooling
        CHECK(r.since(m) == "0:I 3:I 3:U");
        r.agent.abort();
        m = r.mark();
        r.tick();  // clock 400: cooled down
        CHECK(r.since(m) == "0:I 1:I 2:I 2:U");
    });
}

TEST_CASE("Cooldown: its expiry is a false -> true edge that preempts a lower child of an ActiveSelector") {
    // 0 ActiveSelector, 1 Cooldown(250ms), 2 AlwaysSuccess, 3 B (running)
    const Tree tree = TreeBuilder("cooldown")
                          .active_selector()
                              .cooldown(250ms).always_success().back()
                              .action("B", test::running_action())
                          .back()
                          .end();
    test::in_both_modes(tree, [&](Run& r) {
        for (int i = 0; i < 5; ++i) r.tick();  // clock 100 (cooling until 350), 200, 300, 400, 500
        CHECK(r.rec.tick(0) == "0:I 1:I 2:I 2:U 2:T(Success) 1:T(Success) 0:T(Success)");
        CHECK(r.rec.tick(1) == "0:I 3:I 3:U");
        CHECK(r.rec.tick(2) == "3:U");
        CHECK(r.rec.tick(3) == "3:T(Aborted) 1:I 2:I 2:U 2:T(Success) 1:T(Success) 0:T(Success)");
        CHECK(r.rec.tick(4) == "0:I 3:I 3:U");  // cooling again until 650
    });
}

TEST_CASE("Timeout: the child is aborted and the node fails once the deadline is reached") {
    const Tree tree = TreeBuilder("timeout").timeout(250ms).action("A", test::running_action()).back().end();
    test::in_both_modes(tree, [&](Run& r) {
        for (int i = 0; i < 3; ++i) CHECK(r.tick() == Status::Running);  // clock 100 (deadline 350), 200, 300
        CHECK(r.tick() == kF);                                            // clock 400
        r.tick();
        CHECK(r.rec.tick(0) == "0:I 1:I 1:U");
        CHECK(r.rec.tick(1) == "1:U");
        CHECK(r.rec.tick(2) == "1:U");
        CHECK(r.rec.tick(3) == "1:T(Aborted) 0:T(Failure)");
        CHECK(r.rec.tick(4) == "0:I 1:I 1:U");
    });
}

TEST_CASE("Timeout: a child that ends in time passes its status through") {
    test::in_both_modes([&](Mode mode) {
        for (Status child : {kS, kF}) {
            Run r(TreeBuilder("timeout").timeout(250ms).action("A", test::finishing_action(2, child)).back().end(), mode);
            r.tick();
            CHECK(r.tick() == child);
            CHECK(r.rec.tick(1) == std::string("1:U 1:T(") + to_string(child) + ") 0:T(" + to_string(child) + ")");
        }
    });
}

TEST_CASE("Timeout: fires when the walk reaches it, after earlier nodes' work of the same tick") {
    // 0 Parallel(RequireAll, RequireOne), 1 A (running), 2 Timeout(150ms), 3 B (running)
    const Tree after = TreeBuilder("after")
                           .parallel(Policy::RequireAll, Policy::RequireOne)
                               .action("A", test::running_action())
                               .timeout(150ms).action("B", test::running_action()).back()
                           .back()
                           .end();
    // 0 Parallel(RequireAll, RequireOne), 1 Timeout(150ms), 2 B (running), 3 A (running)
    const Tree before = TreeBuilder("before")
                            .parallel(Policy::RequireAll, Policy::RequireOne)
                                .timeout(150ms).action("B", test::running_action()).back()
                                .action("A", test::running_action())
                            .back()
                            .end();
    test::in_both_modes([&](Mode mode) {
        Run ra(after, mode), rb(before, mode);
        for (int i = 0; i < 3; ++i) {  // clock 100 (deadline 250), 200, 300
            ra.tick();
            rb.tick();
        }
        CHECK(ra.rec.tick(1) == "1:U 3:U");
        CHECK(ra.rec.tick(2) == "1:U 3:T(Aborted) 2:T(Failure) 1:T(Aborted) 0:T(Failure)");
        CHECK(rb.rec.tick(2) == "2:T(Aborted) 1:T(Failure) 3:T(Aborted) 0:T(Failure)");
    });
}

TEST_CASE("Timeout: on the deadline tick the timer (at the Timeout's position) beats the child's end") {
    test::in_both_modes([&](Mode mode) {
        {   // 0 Timeout(200ms), 1 A (would succeed on its 3rd update, in the deadline tick)
            Run r(TreeBuilder("timeout").timeout(200ms).action("A", test::finishing_action(3, kS)).back().end(), mode);
            for (int i = 0; i < 3; ++i) r.tick();  // clock 100 (deadline 300), 200, 300
            CHECK(r.rec.tick(1) == "1:U");
            CHECK(r.rec.tick(2) == "1:T(Aborted) 0:T(Failure)");
        }
        {   // 0 Timeout(200ms), 1 Wait(200ms): both due in the same tick
            Run r(TreeBuilder("timeout").timeout(200ms).wait(200ms).back().end(), mode);
            for (int i = 0; i < 3; ++i) r.tick();
            CHECK(r.rec.tick(0) == "0:I 1:I");
            CHECK(r.rec.tick(2) == "1:T(Aborted) 0:T(Failure)");
        }
    });
}

TEST_CASE("Delay: waits, then starts the child in the tick the timer fires, ends with its status") {
    test::in_both_modes([&](Mode mode) {
        {
            Run r(TreeBuilder("delay").delay(250ms).action("A", test::finishing_action(1, kS)).back().end(), mode);
            for (int i = 0; i < 3; ++i) CHECK(r.tick() == Status::Running);  // clock 100 (deadline 350), 200, 300
            CHECK(r.status(1) == Status::Invalid);
            CHECK(r.tick() == kS);                                            // clock 400
            CHECK(r.rec.tick(0) == "0:I");
            CHECK(r.rec.tick(1) == "");
            CHECK(r.rec.tick(2) == "");
            CHECK(r.rec.tick(3) == "1:I 1:U 1:T(Success) 0:T(Success)");
        }
        {
            Run r(TreeBuilder("delay").delay(150ms).action("A", test::finishing_action(2, kF)).back().end(), mode);
            for (int i = 0; i < 4; ++i) r.tick();  // clock 100 (deadline 250), 200, 300, 400
            CHECK(r.rec.tick(1) == "");
            CHECK(r.rec.tick(2) == "1:I 1:U");
            CHECK(r.rec.tick(3) == "1:U 1:T(Failure) 0:T(Failure)");
            CHECK(r.agent.status() == kF);
        }
        {
            Run r(TreeBuilder("delay0").delay(0us).action("A", test::finishing_action(1, kS)).back().end(), mode);
            CHECK(r.tick() == kS);
            CHECK(r.rec.tick(0) == "0:I 1:I 1:U 1:T(Success) 0:T(Success)");
        }
    });
}
