// Node contract tests (docs/semantics.md): the leaves (actions, conditions, AlwaysSuccess/AlwaysFailure, Wait) and the clock. Each case runs in both modes
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

TEST_CASE("Action: Running until update returns Success; the root restarts on the next tick") {
    const Tree tree = TreeBuilder("action").action("A", test::finishing_action(3, kS)).end();
    test::in_both_modes(tree, [&](Run& r) {
        r.expect_ticks({{"0:I 0:U", Status::Running}, {"0:U", Status::Running}, {"0:U 0:T(Success)", kS}});
        CHECK(r.agent.status() == kS);
        r.expect_ticks({{"0:I 0:U", Status::Running}});
    });
}

TEST_CASE("Action: update returning Failure ends the run Failure in the same tick") {
    const Tree tree = TreeBuilder("action").action("A", test::finishing_action(1, kF)).end();
    test::in_both_modes(tree, [&](Run& r) {
        r.expect_ticks({{"0:I 0:U 0:T(Failure)", kF}});
        CHECK(r.agent.status(0) == kF);
    });
}

TEST_CASE("Action: onInitialize, then updates, then onTerminate with the end status (Aborted when cut)") {
    test::in_both_modes([&](Mode mode) {
        std::vector<std::string> log;
        ActionSpec spec;
        spec.memory_bytes = sizeof(int);
        spec.on_initialize = [&](ActionContext&) { log.push_back("init"); };
        spec.update = [&](ActionContext& ctx) {
            log.push_back("update");
            return ++ctx.memory<int>() >= 2 ? kF : Status::Running;
        };
        spec.on_terminate = [&](ActionContext&, Status s) { log.push_back(std::string("terminate(") + to_string(s) + ")"); };
        const Tree tree = TreeBuilder("callbacks").sequence().action("A", spec).back().end();
        Run r(tree, mode);
        r.expect_ticks({"0:I 1:I 1:U", "1:U 1:T(Failure) 0:T(Failure)"});
        CHECK((log == std::vector<std::string>{"init", "update", "update", "terminate(Failure)"}));

        log.clear();
        r.tick();  // tick 2: the restarted run
        CHECK(r.rec.tick(2) == "0:I 1:I 1:U");
        const std::size_t mark = r.mark();
        r.agent.abort();
        CHECK(r.since(mark) == "1:T(Aborted) 0:T(Aborted)");
        CHECK(r.agent.status(1) == Status::Aborted);
        CHECK((log == std::vector<std::string>{"init", "update", "terminate(Aborted)"}));
    });
}

TEST_CASE("Action: user memory is zeroed at the start of every run") {
    test::in_both_modes([&](Mode mode) {
        std::vector<int> seen;
        ActionSpec spec;
        spec.memory_bytes = sizeof(int);
        spec.update = [&](ActionContext& ctx) {
            int& m = ctx.memory<int>();
            seen.push_back(m);
            m += 7;
            return m >= 14 ? kS : Status::Running;
        };
        const Tree tree = TreeBuilder("memory").action("A", spec).end();
        Run r(tree, mode);
        r.expect_ticks({"0:I 0:U", "0:U 0:T(Success)", "0:I 0:U", "0:U 0:T(Success)"});
        CHECK((seen == std::vector<int>{0, 7, 0, 7}));
    });
}

TEST_CASE("Action: an update returning a status other than Running/Success/Failure is an error and fails") {
    ActionSpec spec;
    spec.update = [](ActionContext&) { return Status::Aborted; };
    const Tree tree = TreeBuilder("bad").action("A", spec).end();
    test::in_both_modes(tree, [&](Run& r) {
        r.expect_ticks({{"0:I 0:U 0:T(Failure)", kF}});
        CHECK(r.rec.errors().size() == 1);
    });
}

TEST_CASE("Condition as a step: evaluated (C event), no lifecycle events, never has a status") {
    // 0 Selector, 1 k?, 2 A
    const Tree sel = TreeBuilder("step").key<bool>("k").selector().check("k").action("A", test::running_action()).back().end();
    // 0 Sequence, 1 AlwaysSuccess, 2 k? (a step: not leading), 3 AlwaysSuccess
    const Tree seq =
        TreeBuilder("step2").key<bool>("k").sequence().always_success().check("k").always_success().back().end();
    test::in_both_modes([&](Mode mode) {
        {
            Run r(sel, mode);
            r.agent.blackboard().set("k", true);
            CHECK(r.tick() == kS);
            CHECK(r.rec.tick(0) == "0:I 0:T(Success)");
            CHECK(r.rec.all(0) == "0:I 1:C(true) 0:T(Success)");
            CHECK(r.status(1) == Status::Invalid);
        }
        {
            Run r(sel, mode);
            CHECK(r.tick() == Status::Running);
            CHECK(r.rec.tick(0) == "0:I 2:I 2:U");
            CHECK(r.rec.all(0) == "0:I 1:C(false) 2:I 2:U");
            CHECK(r.status(1) == Status::Invalid);
        }
        {
            Run r(seq, mode);
            CHECK(r.tick() == kF);
            CHECK(r.rec.tick(0) == "0:I 1:I 1:U 1:T(Success) 0:T(Failure)");
            CHECK(r.rec.all(0) == "0:I 1:I 1:U 1:T(Success) 2:C(false) 0:T(Failure)");
            CHECK(r.status(3) == Status::Invalid);
        }
    });
}

TEST_CASE("Condition: a negated check and a Not(...) predicate condition succeed when the key is false") {
    // 0 Selector, 1 !k, 2 A
    const Tree negated = TreeBuilder("neg").key<bool>("k").selector().check("k", false).action("A", test::running_action()).back().end();
    const Tree not_pred = TreeBuilder("not").key<bool>("k")
                              .selector().condition(Not(Predicate::is("k"))).action("A", test::running_action()).back()
                              .end();
    CHECK(negated.label(1) == "!k");
    CHECK(negated.kind(1) == NodeKind::Condition);
    test::in_both_modes([&](Mode mode) {
        for (const Tree* tree : {&negated, &not_pred}) {
            CAPTURE(tree->name());
            Run off(*tree, mode);
            CHECK(off.tick() == kS);
            CHECK(off.rec.all(0) == "0:I 1:C(true) 0:T(Success)");
            Run on(*tree, mode);
            on.agent.blackboard().set("k", true);
            CHECK(on.tick() == Status::Running);
            CHECK(on.rec.all(0) == "0:I 1:C(false) 2:I 2:U");
        }
    });
}

TEST_CASE("AlwaysSuccess and AlwaysFailure: Initialize, Update, Terminate in one tick") {
    // 0 Sequence, 1 AlwaysSuccess, 2 AlwaysFailure, 3 A
    const Tree tree = TreeBuilder("always").sequence().always_success().always_failure().action("A", test::running_action()).back().end();
    test::in_both_modes(tree, [&](Run& r) {
        r.expect_ticks({{"0:I 1:I 1:U 1:T(Success) 2:I 2:U 2:T(Failure) 0:T(Failure)", kF}});
        CHECK(r.status(1) == kS);
        CHECK(r.status(2) == kF);
        CHECK(r.status(3) == Status::Invalid);
    });
}

TEST_CASE("Wait: no Update events; ends Success on the first tick whose clock reaches the deadline") {
    // 0 Sequence, 1 Wait(250ms), 2 AlwaysSuccess
    const Tree tree = TreeBuilder("wait").sequence().wait(250ms).always_success().back().end();
    test::in_both_modes(tree, [&](Run& r) {
        for (int i = 0; i < 4; ++i) r.tick();  // clock 100 (deadline 350), 200, 300, 400
        CHECK(r.rec.tick(0) == "0:I 1:I");
        CHECK(r.rec.tick(1) == "");
        CHECK(r.rec.tick(2) == "");
        CHECK(r.rec.tick(3) == "1:T(Success) 2:I 2:U 2:T(Success) 0:T(Success)");
        CHECK(r.agent.stats().updates == 1);  // only the AlwaysSuccess
    });
}

TEST_CASE("Wait: a deadline equal to the clock fires; one microsecond short does not") {
    const Tree tree = TreeBuilder("wait").sequence().wait(200ms).always_success().back().end();
    test::in_both_modes(tree, [&](Run& r) {
        r.tick(100ms);                       // clock 100000 us, deadline 300000 us
        CHECK(r.status(1) == Status::Running);
        r.tick(Duration(199'999));           // clock 299999
        CHECK(r.rec.tick(1) == "");
        CHECK(r.status(1) == Status::Running);
        r.tick(Duration(1));                 // clock 300000 == deadline
        CHECK(r.rec.tick(2) == "1:T(Success) 2:I 2:U 2:T(Success) 0:T(Success)");
    });
}

TEST_CASE("time: dt must be finite, not negative and within the clock's range; a refused tick changes nothing") {
    const Tree tree = TreeBuilder("wait").sequence().wait(250ms).always_success().back().end();
    test::in_both_modes(tree, [&](Run& r) {
        r.tick(100ms);
        const auto refused = [&](auto dt, const std::string& message) {
            CAPTURE(message);
            const TimePoint now = r.agent.now();
            const std::uint64_t ticks = r.agent.ticks();
            CHECK_THROWS_WITH_AS(r.agent.tick(dt), message.c_str(), UsageError);
            CHECK(r.agent.now() == now);
            CHECK(r.agent.ticks() == ticks);
        };
        refused(std::nan(""), "Agent::tick(): dt is NaN");
        refused(std::numeric_limits<double>::infinity(), "Agent::tick(): dt of inf s is past the clock's range (2^61 us, about 73,000 years)");
        refused(1e300, "Agent::tick(): dt of 1e+300 s is past the clock's range (2^61 us, about 73,000 years)");
        refused(-1e-6, "Agent::tick(): negative dt (-1e-06 s)");
        refused(-1e-9, "Agent::tick(): negative dt (-1e-09 s)");  // would round to 0
        refused(Duration::max(), "Agent::tick(): a dt of 9223372036854775807 us would move the agent clock past its limit "
                                 "(2^61 us, about 73,000 years)");
        refused(Duration(-1), "Agent::tick() with a negative dt");
        CHECK(r.agent.now() == 100'000);
        // The agent is unchanged and ticks on.
        r.agent.tick(0.150);
        CHECK(r.agent.now() == 250'000);
        r.tick(Duration(100'000));
        CHECK(r.rec.tick(2) == "1:T(Success) 2:I 2:U 2:T(Success) 0:T(Success)");
        // Up to the limit exactly, then nothing more.
        r.tick(Duration(limits::kMaxClockMicroseconds - r.agent.now()));
        CHECK(r.agent.now() == limits::kMaxClockMicroseconds);
        refused(Duration(1), "Agent::tick(): a dt of 1 us would move the agent clock past its limit (2^61 us, about 73,000 years)");
        CHECK_NOTHROW(r.agent.tick(0us));
    });
}

TEST_CASE("time: deadlines past the clock's range never come (Wait, Timeout, Cooldown of Duration::max())") {
    // 0 Parallel(RequireOne, RequireOne), 1 Wait(max), 2 Timeout(max), 3 A (running), 4 ActiveSelector,
    // 5 Cooldown(max) (preempts B when it stops cooling), 6 AlwaysFailure, 7 B (running)
    const Tree tree = TreeBuilder("forever")
                          .parallel(Policy::RequireOne, Policy::RequireOne)
                              .wait(Duration::max())
                              .timeout(Duration::max()).action("A", test::running_action()).back()
                              .active_selector()
                                  .cooldown(Duration::max()).always_failure().back()
                                  .action("B", test::running_action())
                              .back()
                          .back()
                          .end();
    test::in_both_modes(tree, [&](Run& r) {
        r.tick(1ms);
        CHECK(r.rec.tick(0) == "0:I 1:I 2:I 3:I 3:U 4:I 5:I 6:I 6:U 6:T(Failure) 5:T(Failure) 7:I 7:U");
        // Before: the deadlines wrapped to negative times, so the Wait ended and the Timeout fired at
        // once, and the Cooldown never cooled.
        r.tick(Duration(limits::kMaxClockMicroseconds / 2));
        r.tick(Duration(limits::kMaxClockMicroseconds / 2 - 1'000));
        CHECK(r.agent.now() == limits::kMaxClockMicroseconds);
        CHECK(r.status(1) == Status::Running);
        CHECK(r.status(2) == Status::Running);
        CHECK(r.status(4) == Status::Running);
        CHECK(r.rec.tick(1) == "3:U 7:U");
        CHECK(r.rec.tick(2) == "3:U 7:U");
    });
}

TEST_CASE("Wait: a zero Wait completes on entry") {
    const Tree tree = TreeBuilder("wait0").sequence().wait(0us).always_success().back().end();
    test::expect_ticks_in_both_modes(tree, {{"0:I 1:I 1:T(Success) 2:I 2:U 2:T(Success) 0:T(Success)", kS}});
}
