// Contract tests for every node kind (docs/semantics.md), each run in both modes, asserting exact
// per-tick lifecycle traces and statuses. Node indices in the comments are pre-order (root = 0).
// Every agent ticks by 100 ms unless a test says otherwise; the first tick brings the clock to 100 ms.
#include "support/trace_recorder.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

using namespace ebt;
using namespace std::chrono_literals;
using test::TraceRecorder;

namespace ebt {
// Readable statuses in doctest failure messages (found by ADL; internal linkage on purpose).
[[maybe_unused]] static doctest::String toString(Status s) { return to_string(s); }
}  // namespace ebt

namespace {

constexpr Status kS = Status::Success;
constexpr Status kF = Status::Failure;

/// One agent with its recorder.
struct Run {
    TraceRecorder rec;
    Agent agent;
    Run(const Tree& tree, Mode mode, std::uint64_t seed = 0, bool restart_on_end = true)
        : agent(tree, AgentOptions{.mode = mode, .seed = seed, .restart_on_end = restart_on_end, .listener = &rec}) {}
    Status tick(Duration dt = 100ms) { return agent.tick(dt); }
    Status status(NodeIndex n) const { return agent.status(n); }
    /// Where the recording stands now (for events emitted between ticks, see since()).
    std::size_t mark() const { return rec.entries.size(); }
    /// The lifecycle events recorded since `mark`, rendered like TraceRecorder::tick().
    std::string since(std::size_t mark) const {
        std::string out;
        for (std::size_t i = mark; i < rec.entries.size(); ++i) {
            const TraceEvent& e = rec.entries[i].event;
            if (!e.is_lifecycle()) continue;
            if (!out.empty()) out += ' ';
            out += TraceRecorder::render(e);
        }
        return out;
    }
    /// The nodes (other than the root) that were initialized in tick `tick`, in order.
    std::vector<int> started(std::uint64_t tick) const {
        std::vector<int> v;
        for (const auto& en : rec.entries)
            if (en.event.tick == tick && en.event.kind == TraceKind::Initialize && en.event.node != 0)
                v.push_back(en.event.node);
        return v;
    }
};

/// An action whose k-th run (k counted in `runs`, shared by all its runs) returns results[k] on its
/// first update; the last result repeats.
ActionSpec scripted_runs(std::vector<Status> results, int& runs) {
    ActionSpec s;
    s.update = [results, &runs](ActionContext&) {
        const auto k = std::min<std::size_t>(static_cast<std::size_t>(runs++), results.size() - 1);
        return results[k];
    };
    return s;
}

/// An action that suspends itself on its first update and stores the handle.
ActionSpec suspending_action(ResumeHandle& handle) {
    ActionSpec s;
    s.update = [&handle](ActionContext& ctx) {
        handle = ctx.suspend();
        return Status::Running;
    };
    return s;
}

/// A running action that writes `true` to the bool key bound to its port "k" on its update in tick `at`.
ActionSpec writer_at_tick(std::uint64_t at) {
    ActionSpec s;
    s.ports = {port<bool>("k")};
    s.update = [at](ActionContext& ctx) {
        if (ctx.tick() == at) ctx.out<bool>(0, true);
        return Status::Running;
    };
    return s;
}

}  // namespace

// =====================================================================================================
// Leaves
// =====================================================================================================

TEST_CASE("Action: Running until update returns Success; the root restarts on the next tick") {
    const Tree tree = TreeBuilder("action").action("A", test::finishing_action(3, kS)).end();
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run r(tree, mode);
        CHECK(r.tick() == Status::Running);
        CHECK(r.rec.tick(0) == "0:I 0:U");
        CHECK(r.tick() == Status::Running);
        CHECK(r.rec.tick(1) == "0:U");
        CHECK(r.tick() == kS);
        CHECK(r.rec.tick(2) == "0:U 0:T(Success)");
        CHECK(r.agent.status() == kS);
        CHECK(r.tick() == Status::Running);
        CHECK(r.rec.tick(3) == "0:I 0:U");
    }
}

TEST_CASE("Action: update returning Failure ends the run Failure in the same tick") {
    const Tree tree = TreeBuilder("action").action("A", test::finishing_action(1, kF)).end();
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run r(tree, mode);
        CHECK(r.tick() == kF);
        CHECK(r.rec.tick(0) == "0:I 0:U 0:T(Failure)");
        CHECK(r.agent.status(0) == kF);
    }
}

TEST_CASE("Action: onInitialize, then updates, then onTerminate with the end status (Aborted when cut)") {
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
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
        r.tick();
        r.tick();
        CHECK(r.rec.tick(0) == "0:I 1:I 1:U");
        CHECK(r.rec.tick(1) == "1:U 1:T(Failure) 0:T(Failure)");
        CHECK((log == std::vector<std::string>{"init", "update", "update", "terminate(Failure)"}));

        log.clear();
        r.tick();  // tick 2: the restarted run
        CHECK(r.rec.tick(2) == "0:I 1:I 1:U");
        const std::size_t mark = r.mark();
        r.agent.abort();
        CHECK(r.since(mark) == "1:T(Aborted) 0:T(Aborted)");
        CHECK(r.agent.status(1) == Status::Aborted);
        CHECK((log == std::vector<std::string>{"init", "update", "terminate(Aborted)"}));
    }
}

TEST_CASE("Action: user memory is zeroed at the start of every run") {
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
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
        for (int i = 0; i < 4; ++i) r.tick();
        CHECK(r.rec.tick(0) == "0:I 0:U");
        CHECK(r.rec.tick(1) == "0:U 0:T(Success)");
        CHECK(r.rec.tick(2) == "0:I 0:U");
        CHECK(r.rec.tick(3) == "0:U 0:T(Success)");
        CHECK((seen == std::vector<int>{0, 7, 0, 7}));
    }
}

TEST_CASE("Action: an update returning a status other than Running/Success/Failure is an error and fails") {
    ActionSpec spec;
    spec.update = [](ActionContext&) { return Status::Aborted; };
    const Tree tree = TreeBuilder("bad").action("A", spec).end();
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run r(tree, mode);
        CHECK(r.tick() == kF);
        CHECK(r.rec.tick(0) == "0:I 0:U 0:T(Failure)");
        CHECK(r.rec.errors().size() == 1);
    }
}

TEST_CASE("Condition as a step: evaluated (C event), no lifecycle events, never has a status") {
    // 0 Selector, 1 k?, 2 A
    const Tree sel = TreeBuilder("step").key<bool>("k").selector().check("k").action("A", test::running_action()).back().end();
    // 0 Sequence, 1 AlwaysSuccess, 2 k? (a step: not leading), 3 AlwaysSuccess
    const Tree seq =
        TreeBuilder("step2").key<bool>("k").sequence().always_success().check("k").always_success().back().end();
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
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
    }
}

TEST_CASE("Condition: a negated check and a Not(...) predicate condition succeed when the key is false") {
    // 0 Selector, 1 !k, 2 A
    const Tree negated = TreeBuilder("neg").key<bool>("k").selector().check("k", false).action("A", test::running_action()).back().end();
    const Tree not_pred = TreeBuilder("not").key<bool>("k")
                              .selector().condition(Not(Predicate::is("k"))).action("A", test::running_action()).back()
                              .end();
    CHECK(negated.label(1) == "!k");
    CHECK(negated.kind(1) == NodeKind::Condition);
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
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
    }
}

TEST_CASE("AlwaysSuccess and AlwaysFailure: Initialize, Update, Terminate in one tick") {
    // 0 Sequence, 1 AlwaysSuccess, 2 AlwaysFailure, 3 A
    const Tree tree = TreeBuilder("always").sequence().always_success().always_failure().action("A", test::running_action()).back().end();
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run r(tree, mode);
        CHECK(r.tick() == kF);
        CHECK(r.rec.tick(0) == "0:I 1:I 1:U 1:T(Success) 2:I 2:U 2:T(Failure) 0:T(Failure)");
        CHECK(r.status(1) == kS);
        CHECK(r.status(2) == kF);
        CHECK(r.status(3) == Status::Invalid);
    }
}

TEST_CASE("Wait: no Update events; ends Success on the first tick whose clock reaches the deadline") {
    // 0 Sequence, 1 Wait(250ms), 2 AlwaysSuccess
    const Tree tree = TreeBuilder("wait").sequence().wait(250ms).always_success().back().end();
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run r(tree, mode);
        for (int i = 0; i < 4; ++i) r.tick();  // clock 100 (deadline 350), 200, 300, 400
        CHECK(r.rec.tick(0) == "0:I 1:I");
        CHECK(r.rec.tick(1) == "");
        CHECK(r.rec.tick(2) == "");
        CHECK(r.rec.tick(3) == "1:T(Success) 2:I 2:U 2:T(Success) 0:T(Success)");
        CHECK(r.agent.stats().updates == 1);  // only the AlwaysSuccess
    }
}

TEST_CASE("Wait: a deadline equal to the clock fires; one microsecond short does not") {
    const Tree tree = TreeBuilder("wait").sequence().wait(200ms).always_success().back().end();
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run r(tree, mode);
        r.tick(100ms);                       // clock 100000 us, deadline 300000 us
        CHECK(r.status(1) == Status::Running);
        r.tick(Duration(199'999));           // clock 299999
        CHECK(r.rec.tick(1) == "");
        CHECK(r.status(1) == Status::Running);
        r.tick(Duration(1));                 // clock 300000 == deadline
        CHECK(r.rec.tick(2) == "1:T(Success) 2:I 2:U 2:T(Success) 0:T(Success)");
    }
}

TEST_CASE("time: dt must be finite, not negative and within the clock's range; a refused tick changes nothing") {
    const Tree tree = TreeBuilder("wait").sequence().wait(250ms).always_success().back().end();
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run r(tree, mode);
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
    }
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
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run r(tree, mode);
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
    }
}

TEST_CASE("Wait: a zero Wait completes on entry") {
    const Tree tree = TreeBuilder("wait0").sequence().wait(0us).always_success().back().end();
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run r(tree, mode);
        CHECK(r.tick() == kS);
        CHECK(r.rec.tick(0) == "0:I 1:I 1:T(Success) 2:I 2:U 2:T(Success) 0:T(Success)");
    }
}

// =====================================================================================================
// Decorators
// =====================================================================================================

TEST_CASE("Inverter: swaps Success and Failure, stays Running while the child runs") {
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
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
    }
}

TEST_CASE("ForceSuccess and ForceFailure over actions: fixed status when the child ends") {
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
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
    }
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
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run off(leading, mode);
        off.tick();
        CHECK(off.rec.all(0) == "0:I 1:G(true) 1:I 3:I 3:U");
        Run on(leading, mode);
        on.agent.blackboard().set("k", true);
        on.tick();
        CHECK(on.rec.all(0) == "0:I 1:G(false) 4:I 4:U");
    }
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
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
    }
}

TEST_CASE("Repeat(n): re-runs a succeeding child, one restart per tick, Success after n successes") {
    const Tree tree = TreeBuilder("repeat").repeat(3).action("A", test::finishing_action(1, kS)).back().end();
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run r(tree, mode);
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
    }
}

TEST_CASE("Repeat(n): a multi-tick child restarts fresh on the tick after it ended") {
    const Tree tree = TreeBuilder("repeat").repeat(2).action("A", test::finishing_action(2, kS)).back().end();
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run r(tree, mode);
        for (int i = 0; i < 4; ++i) r.tick();
        CHECK(r.rec.tick(0) == "0:I 1:I 1:U");
        CHECK(r.rec.tick(1) == "1:U 1:T(Success)");
        CHECK(r.rec.tick(2) == "1:I 1:U");
        CHECK(r.rec.tick(3) == "1:U 1:T(Success) 0:T(Success)");
        CHECK(r.agent.status() == kS);
    }
}

TEST_CASE("Repeat(n): Failure at the child's first failure") {
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        int runs = 0;
        const Tree tree = TreeBuilder("repeat").repeat(5).action("A", scripted_runs({kS, kF}, runs)).back().end();
        Run r(tree, mode);
        r.tick();
        CHECK(r.tick() == kF);
        CHECK(r.rec.tick(0) == "0:I 1:I 1:U 1:T(Success)");
        CHECK(r.rec.tick(1) == "1:I 1:U 1:T(Failure) 0:T(Failure)");
    }
}

TEST_CASE("Repeat(kForever, AlwaysSuccess): one run per tick, never ends, cannot hang a tick") {
    const Tree tree = TreeBuilder("forever").repeat(kForever).always_success().back().end();
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run r(tree, mode);
        for (int i = 0; i < 5; ++i) CHECK(r.tick() == Status::Running);
        CHECK(r.rec.tick(0) == "0:I 1:I 1:U 1:T(Success)");
        for (std::uint64_t t = 1; t < 5; ++t) CHECK(r.rec.tick(t) == "1:I 1:U 1:T(Success)");
    }
}

TEST_CASE("Retry(n): re-runs a failing child on the next tick, Failure after n failures") {
    const Tree tree = TreeBuilder("retry").retry(3).action("A", test::finishing_action(1, kF)).back().end();
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run r(tree, mode);
        r.tick();
        r.tick();
        CHECK(r.tick() == kF);
        CHECK(r.rec.tick(0) == "0:I 1:I 1:U 1:T(Failure)");
        CHECK(r.rec.tick(1) == "1:I 1:U 1:T(Failure)");
        CHECK(r.rec.tick(2) == "1:I 1:U 1:T(Failure) 0:T(Failure)");
    }
}

TEST_CASE("Retry(n): Success at the child's first success") {
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        int runs = 0;
        const Tree tree = TreeBuilder("retry").retry_until_successful(3).action("A", scripted_runs({kF, kS}, runs)).back().end();
        Run r(tree, mode);
        CHECK(r.tick() == Status::Running);
        CHECK(r.tick() == kS);
        CHECK(r.rec.tick(0) == "0:I 1:I 1:U 1:T(Failure)");
        CHECK(r.rec.tick(1) == "1:I 1:U 1:T(Success) 0:T(Success)");
    }
}

TEST_CASE("Loop(n): re-runs the child n times whatever it returns, ends with the last run's status") {
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        {
            int runs = 0;
            Run r(TreeBuilder("loop").loop(3).action("A", scripted_runs({kF, kS, kF}, runs)).back().end(), mode);
            r.tick();
            r.tick();
            CHECK(r.tick() == kF);
            CHECK(r.rec.tick(0) == "0:I 1:I 1:U 1:T(Failure)");
            CHECK(r.rec.tick(1) == "1:I 1:U 1:T(Success)");
            CHECK(r.rec.tick(2) == "1:I 1:U 1:T(Failure) 0:T(Failure)");
        }
        {
            int runs = 0;
            Run r(TreeBuilder("loop").loop(2).action("A", scripted_runs({kF, kS}, runs)).back().end(), mode);
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
    }
}

TEST_CASE("Cooldown: skipped with no events while cooling; the cooldown survives root restarts") {
    // 0 Selector, 1 Cooldown(250ms), 2 AlwaysSuccess, 3 AlwaysFailure
    const Tree tree = TreeBuilder("cooldown").selector().cooldown(250ms).always_success().back().always_failure().back().end();
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run r(tree, mode);
        for (int i = 0; i < 4; ++i) r.tick();  // clock 100 (cooling until 350), 200, 300, 400
        CHECK(r.rec.tick(0) == "0:I 1:I 2:I 2:U 2:T(Success) 1:T(Success) 0:T(Success)");
        CHECK(r.rec.tick(1) == "0:I 3:I 3:U 3:T(Failure) 0:T(Failure)");
        CHECK(r.rec.all(1) == "0:I 1:G(false) 3:I 3:U 3:T(Failure) 0:T(Failure)");
        CHECK(r.rec.tick(2) == "0:I 3:I 3:U 3:T(Failure) 0:T(Failure)");
        CHECK(r.rec.tick(3) == "0:I 1:I 2:I 2:U 2:T(Success) 1:T(Success) 0:T(Success)");
    }
}

TEST_CASE("Cooldown: an aborted run starts the cooldown too") {
    // 0 Selector, 1 Cooldown(250ms), 2 A (running), 3 B (running)
    const Tree tree = TreeBuilder("cooldown")
                          .selector()
                              .cooldown(250ms).action("A", test::running_action()).back()
                              .action("B", test::running_action())
                          .back()
                          .end();
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run r(tree, mode);
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
    }
}

TEST_CASE("Cooldown: its expiry is a false -> true edge that preempts a lower child of an ActiveSelector") {
    // 0 ActiveSelector, 1 Cooldown(250ms), 2 AlwaysSuccess, 3 B (running)
    const Tree tree = TreeBuilder("cooldown")
                          .active_selector()
                              .cooldown(250ms).always_success().back()
                              .action("B", test::running_action())
                          .back()
                          .end();
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run r(tree, mode);
        for (int i = 0; i < 5; ++i) r.tick();  // clock 100 (cooling until 350), 200, 300, 400, 500
        CHECK(r.rec.tick(0) == "0:I 1:I 2:I 2:U 2:T(Success) 1:T(Success) 0:T(Success)");
        CHECK(r.rec.tick(1) == "0:I 3:I 3:U");
        CHECK(r.rec.tick(2) == "3:U");
        CHECK(r.rec.tick(3) == "3:T(Aborted) 1:I 2:I 2:U 2:T(Success) 1:T(Success) 0:T(Success)");
        CHECK(r.rec.tick(4) == "0:I 3:I 3:U");  // cooling again until 650
    }
}

TEST_CASE("Timeout: the child is aborted and the node fails once the deadline is reached") {
    const Tree tree = TreeBuilder("timeout").timeout(250ms).action("A", test::running_action()).back().end();
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run r(tree, mode);
        for (int i = 0; i < 3; ++i) CHECK(r.tick() == Status::Running);  // clock 100 (deadline 350), 200, 300
        CHECK(r.tick() == kF);                                            // clock 400
        r.tick();
        CHECK(r.rec.tick(0) == "0:I 1:I 1:U");
        CHECK(r.rec.tick(1) == "1:U");
        CHECK(r.rec.tick(2) == "1:U");
        CHECK(r.rec.tick(3) == "1:T(Aborted) 0:T(Failure)");
        CHECK(r.rec.tick(4) == "0:I 1:I 1:U");
    }
}

TEST_CASE("Timeout: a child that ends in time passes its status through") {
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        for (Status child : {kS, kF}) {
            Run r(TreeBuilder("timeout").timeout(250ms).action("A", test::finishing_action(2, child)).back().end(), mode);
            r.tick();
            CHECK(r.tick() == child);
            CHECK(r.rec.tick(1) == std::string("1:U 1:T(") + to_string(child) + ") 0:T(" + to_string(child) + ")");
        }
    }
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
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run ra(after, mode), rb(before, mode);
        for (int i = 0; i < 3; ++i) {  // clock 100 (deadline 250), 200, 300
            ra.tick();
            rb.tick();
        }
        CHECK(ra.rec.tick(1) == "1:U 3:U");
        CHECK(ra.rec.tick(2) == "1:U 3:T(Aborted) 2:T(Failure) 1:T(Aborted) 0:T(Failure)");
        CHECK(rb.rec.tick(2) == "2:T(Aborted) 1:T(Failure) 3:T(Aborted) 0:T(Failure)");
    }
}

TEST_CASE("Timeout: on the deadline tick the timer (at the Timeout's position) beats the child's end") {
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
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
    }
}

TEST_CASE("Delay: waits, then starts the child in the tick the timer fires, ends with its status") {
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
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
    }
}

// =====================================================================================================
// Composites
// =====================================================================================================

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
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run r(failing, mode);
        CHECK(r.tick() == Status::Running);
        CHECK(r.tick() == kF);
        CHECK(r.rec.tick(0) == "0:I 1:I 1:U 1:T(Success) 2:I 2:U");
        CHECK(r.rec.tick(1) == "2:U 2:T(Success) 3:I 3:U 3:T(Failure) 0:T(Failure)");
        CHECK(r.status(3) == kF);
        CHECK(r.status(4) == Status::Invalid);

        Run p(passing, mode);
        CHECK(p.tick() == kS);
        CHECK(p.rec.tick(0) == "0:I 1:I 1:U 1:T(Success) 2:I 2:U 2:T(Success) 0:T(Success)");
    }
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
        for (Mode mode : test::both_modes()) {
            CAPTURE(std::string(to_string(mode)));
            Run off(tree, mode);
            off.tick();
            CHECK(off.rec.tick(0) == "0:I 4:I 4:U");
            CHECK(off.rec.all(0) == "0:I 1:G(false) 4:I 4:U");
            CHECK(off.status(1) == Status::Invalid);

            Run on(tree, mode);
            on.agent.blackboard().set("k", true);
            on.tick();
            CHECK(on.rec.tick(0) == "0:I 1:I 3:I 3:U");
            // the guard stands for the branch: condition 2 is not evaluated again on entry
            CHECK(on.rec.all(0) == "0:I 1:G(true) 1:I 3:I 3:U");
        }
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
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        for (int bits = 0; bits < 4; ++bits) {
            CAPTURE(bits);
            Run r(tree, mode);
            r.agent.blackboard().set("a", (bits & 1) != 0);
            r.agent.blackboard().set("b", (bits & 2) != 0);
            r.tick();
            if (bits == 3) CHECK(r.rec.all(0) == "0:I 1:G(true) 1:I 4:I 4:U 4:T(Success) 1:T(Success) 0:T(Success)");
            else CHECK(r.rec.all(0) == "0:I 1:G(false) 5:I 5:U 5:T(Failure) 0:T(Failure)");
        }
    }
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
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run r(tree, mode);
        r.tick();
        CHECK(r.rec.tick(0) == "0:I 1:I 1:U 1:T(Success) 3:I 3:U");
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
    }
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
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run r(tree, mode);
        r.tick();
        CHECK(r.rec.tick(0) == "0:I 1:I 3:I 3:U");
        r.agent.blackboard().set("k", false);
        r.tick();
        CHECK(r.rec.tick(1) == "3:T(Aborted) 1:T(Failure) 4:I 4:U");
        CHECK(r.status(1) == kF);
    }
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
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run r(tree, mode);
        CHECK(r.tick() == Status::Running);
        CHECK(r.tick() == kS);
        CHECK(r.rec.tick(0) == "0:I 1:I 1:U 1:T(Failure) 2:I 2:U");
        CHECK(r.rec.tick(1) == "2:U 2:T(Success) 0:T(Success)");
        CHECK(r.status(3) == Status::Invalid);

        Run f(all_fail, mode);
        CHECK(f.tick() == kF);
        CHECK(f.rec.tick(0) == "0:I 1:I 1:U 1:T(Failure) 2:I 2:U 2:T(Failure) 0:T(Failure)");
    }
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
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run r(tree, mode);
        r.tick();
        CHECK(r.rec.tick(0) == "0:I 4:I 4:U");
        r.agent.blackboard().set("k", true);
        r.tick();
        CHECK(r.rec.tick(1) == "4:T(Aborted) 1:I 3:I 3:U");
        // one evaluation, at the parent's position, before the lower branch's update; it stands on entry
        CHECK(r.rec.all(1) == "1:G(true) 4:T(Aborted) 1:I 3:I 3:U");
        CHECK(r.status(4) == Status::Aborted);
        // LowerPriority only: the guard turning false again does not cut the running branch
        r.agent.blackboard().set("k", false);
        r.tick();
        CHECK(r.rec.tick(2) == "3:U");
    }
}

TEST_CASE("ActiveSelector: a branch whose guard stays true after its body failed is not retried") {
    // 0 ActiveSelector, 1 Sequence, 2 k?, 3 F (fails on its 2nd update), 4 B (running)
    const Tree tree = TreeBuilder("active").key<bool>("k", true)
                          .active_selector()
                              .sequence().check("k").action("F", test::finishing_action(2, kF)).back()
                              .action("B", test::running_action())
                          .back()
                          .end();
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run r(tree, mode);
        for (int i = 0; i < 4; ++i) r.tick();
        CHECK(r.rec.tick(0) == "0:I 1:I 3:I 3:U");
        CHECK(r.rec.tick(1) == "3:U 3:T(Failure) 1:T(Failure) 4:I 4:U");
        CHECK(r.rec.tick(2) == "4:U");
        CHECK(r.rec.tick(3) == "4:U");
        r.agent.blackboard().set("k", false);
        r.tick();
        CHECK(r.rec.tick(4) == "4:U");
        r.agent.blackboard().set("k", true);  // a new false -> true edge
        r.tick();
        CHECK(r.rec.tick(5) == "4:T(Aborted) 1:I 3:I 3:U");
    }
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
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
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
    }
}

TEST_CASE("PrioritySelector: a LowerPriority edge switches; a Self cut re-selects from the top in the same tick") {
    // 0 PrioritySelector, 1 Sequence, 2 a?, 3 A (running), 4 B (running)   (children default to Both)
    const Tree tree = TreeBuilder("priority").key<bool>("a")
                          .priority_selector()
                              .sequence().check("a").action("A", test::running_action()).back()
                              .action("B", test::running_action())
                          .back()
                          .end();
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run r(tree, mode);
        r.tick();
        CHECK(r.rec.tick(0) == "0:I 4:I 4:U");
        r.agent.blackboard().set("a", true);
        r.tick();
        CHECK(r.rec.tick(1) == "4:T(Aborted) 1:I 3:I 3:U");
        r.agent.blackboard().set("a", false);
        r.tick();
        CHECK(r.rec.tick(2) == "3:T(Aborted) 1:T(Failure) 4:I 4:U");
        CHECK(r.agent.status() == Status::Running);
    }
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
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run r(tree, mode);
        r.tick();
        CHECK(r.rec.tick(0) == "0:I 4:I 6:I 6:U");
        r.agent.blackboard().set("a", true);  // Self only: no preemption
        r.tick();
        CHECK(r.rec.tick(1) == "6:U");
        r.agent.blackboard().set("b", false);
        r.tick();
        CHECK(r.rec.tick(2) == "6:T(Aborted) 4:T(Failure) 1:I 3:I 3:U");
    }
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
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run r(tree, mode);
        r.tick();
        CHECK(r.rec.tick(0) == "0:I 4:I 6:I 6:U");
        r.agent.blackboard().set("a", true);  // a higher child's guard turns true: no preemption
        r.tick();
        CHECK(r.rec.tick(1) == "6:U");
        r.agent.blackboard().set("b", false);  // Self cut: re-select from the top
        r.tick();
        CHECK(r.rec.tick(2) == "6:T(Aborted) 4:T(Failure) 1:I 3:I 3:U");
        CHECK(r.tick() == kF);
        CHECK(r.rec.tick(3) == "3:U 3:T(Failure) 1:T(Failure) 0:T(Failure)");
    }
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
            for (Mode mode : test::both_modes()) {
                CAPTURE(std::string(to_string(mode)));
                Run r(*tree, mode, seed);
                CHECK(r.tick() == kF);
                const std::vector<int> order = r.started(0);
                CHECK(is_permutation_of_children(order));
                CHECK(r.rec.tick(0) == failing_trace(order));
            }
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
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run r(tree, mode);
        CHECK(r.tick() == Status::Running);
        CHECK(r.rec.tick(0) == "0:I 1:I 2:I 2:U 3:I 3:U 4:I 4:U");
        CHECK(r.tick() == kS);
        CHECK(r.rec.tick(1) == "2:U 3:U 4:U 4:T(Success) 3:T(Aborted) 2:T(Aborted) 1:T(Aborted) 0:T(Success)");
    }
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
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run r(tree, mode);
        CHECK(r.tick() == kS);
        CHECK(r.rec.tick(0) == "0:I 1:I 1:U 2:I 2:U 2:T(Success) 1:T(Aborted) 0:T(Success)");
        CHECK(r.status(3) == Status::Invalid);
    }
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
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run f(failing, mode);
        f.tick();
        CHECK(f.tick() == kF);
        CHECK(f.rec.tick(0) == "0:I 1:I 1:U 2:I 2:U");
        CHECK(f.rec.tick(1) == "1:U 1:T(Failure) 2:T(Aborted) 0:T(Failure)");

        Run p(passing, mode);
        CHECK(p.tick() == Status::Running);
        CHECK(p.tick() == kS);
        CHECK(p.rec.tick(0) == "0:I 1:I 1:U 1:T(Success) 2:I 2:U");
        CHECK(p.rec.tick(1) == "2:U 2:T(Success) 0:T(Success)");
    }
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
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run r(tree, mode);
        r.tick();
        CHECK(r.tick() == Status::Running);
        CHECK(r.rec.tick(0) == "0:I 1:I 1:U 1:T(Failure) 2:I 2:U 3:I 3:U");
        CHECK(r.rec.tick(1) == "2:U 2:T(Failure) 3:U");
        r.tick();
        CHECK(r.rec.tick(2) == "3:U");
    }
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
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run r(tree, mode);
        CHECK(r.tick() == Status::Running);
        CHECK(r.tick() == kS);
        CHECK(r.rec.tick(0) == "0:I 1:I 1:U 1:T(Success) 2:I 2:U 2:T(Failure) 3:I 3:U 4:I 4:U");
        CHECK(r.rec.tick(1) == "3:U 3:T(Success) 4:T(Aborted) 0:T(Success)");
    }
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
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run r(tree, mode);
        CHECK(r.tick() == Status::Running);
        CHECK(r.tick() == kF);
        CHECK(r.rec.tick(0) == "0:I 1:I 1:U 1:T(Success) 2:I 2:U 2:T(Failure) 3:I 3:U");
        CHECK(r.rec.tick(1) == "3:U 3:T(Success) 0:T(Failure)");
    }
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
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run r(tree, mode);
        r.tick();
        CHECK(r.rec.tick(0) == "0:I 1:I 3:I 3:U 4:I 4:U 4:T(Success)");
        CHECK(r.rec.all(0) == "0:I 1:G(true) 1:I 3:I 3:U 4:I 4:U 4:T(Success)");  // no 2:C: a guard, not a step
        CHECK(r.tick() == kS);  // RequireAll = the two actions
        CHECK(r.rec.tick(1) == "3:U 3:T(Success) 1:T(Success) 0:T(Success)");

        Run off(tree, mode);
        off.agent.blackboard().set("k", false);
        off.tick();
        CHECK(off.rec.tick(0) == "0:I 5:I 5:U");
        CHECK(off.status(1) == Status::Invalid);
    }
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
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run r(tree, mode);
        r.tick();
        CHECK(r.rec.tick(0) == "0:I 1:I 3:I 3:U 4:I 4:U");
        r.agent.blackboard().set("k", false);
        r.tick();
        CHECK(r.rec.tick(1) == "4:T(Aborted) 3:T(Aborted) 1:T(Failure) 5:I 5:U");
        CHECK(r.status(1) == kF);
    }
}

TEST_CASE("Monitor as the root: its guard is checked at node 0; while false the root is skipped each tick") {
    // 0 Monitor(RequireAll, RequireOne), 1 k?, 2 A (running)
    const Tree tree = TreeBuilder("monitor-root").key<bool>("k", true)
                          .monitor(Policy::RequireAll, Policy::RequireOne).check("k").action("A", test::running_action()).back()
                          .end();
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run r(tree, mode);
        r.tick();
        CHECK(r.rec.tick(0) == "0:I 2:I 2:U");
        r.agent.blackboard().set("k", false);
        CHECK(r.tick() == kF);
        CHECK(r.rec.tick(1) == "2:T(Aborted) 0:T(Failure)");
        CHECK(r.rec.all(1) == "0:G(false) 2:T(Aborted) 0:T(Failure)");
        r.tick();
        CHECK(r.rec.tick(2) == "");  // restarted, but skipped: no events
        CHECK(r.rec.all(2) == "0:G(false)");
        r.agent.blackboard().set("k", true);
        r.tick();
        CHECK(r.rec.tick(3) == "0:I 2:I 2:U");
    }
}

// =====================================================================================================
// Preconditions and abort modes
// =====================================================================================================

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
        for (Mode mode : test::both_modes()) {
            CAPTURE(std::string(to_string(mode)));
            Run r(tree, mode);
            r.tick();
            if (c.enters) {
                CHECK(r.rec.all(0) == "0:I 1:G(true) 1:I 1:U 1:T(Success) 0:T(Success)");
            } else {
                CHECK(r.rec.all(0) == "0:I 1:G(false) 2:I 2:U 2:T(Failure) 0:T(Failure)");
                CHECK(r.status(1) == Status::Invalid);
            }
        }
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
    for (const auto& [name, open] : kinds) {
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
        for (Mode mode : test::both_modes()) {
            CAPTURE(std::string(to_string(mode)));
            for (int bits = 0; bits < 4; ++bits) {
                CAPTURE(bits);
                Run r(tree, mode);
                r.agent.blackboard().set("a", (bits & 1) != 0);
                r.agent.blackboard().set("b", (bits & 2) != 0);
                r.tick();
                if (bits == 3) CHECK(r.rec.all(0).rfind("0:I 1:G(true) 1:I", 0) == 0);
                else CHECK(r.rec.all(0) == skipped);
            }
        }
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
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run r(tree, mode);
        r.tick();
        CHECK(r.rec.tick(0) == "0:I 2:I 2:U");
        r.agent.blackboard().set("hp", 50);
        r.tick();
        CHECK(r.rec.tick(1) == "2:U");
        r.agent.blackboard().set("hp", 20);
        r.tick();
        CHECK(r.rec.tick(2) == "2:T(Aborted) 1:I 1:U");
    }
}

TEST_CASE("A skipped node counts as a failure for its parent: sequence, selector, parallel, decorator") {
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
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
    }
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
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
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
    }
}

TEST_CASE("Abort modes: Self cuts the running node when its guard turns false") {
    const Tree tree = abort_mode_tree(AbortMode::Self, true);
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run r(tree, mode);
        r.tick();
        r.agent.blackboard().set("a", false);
        r.tick();
        CHECK(r.rec.tick(0) == "0:I 1:I 3:I 3:U");
        CHECK(r.rec.tick(1) == "3:T(Aborted) 1:T(Failure) 4:I 4:U");
        // Self only: turning true again does not preempt B
        r.agent.blackboard().set("a", true);
        r.tick();
        CHECK(r.rec.tick(2) == "4:U");
    }
}

TEST_CASE("Abort modes: LowerPriority on a plain Selector's child preempts a lower sibling") {
    const Tree tree = abort_mode_tree(AbortMode::LowerPriority, false);
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run r(tree, mode);
        r.tick();
        r.agent.blackboard().set("a", true);
        r.tick();
        CHECK(r.rec.tick(0) == "0:I 4:I 4:U");
        CHECK(r.rec.tick(1) == "4:T(Aborted) 1:I 3:I 3:U");
        r.agent.blackboard().set("a", false);  // LowerPriority only: no Self cut
        r.tick();
        CHECK(r.rec.tick(2) == "3:U");
    }
}

TEST_CASE("Abort modes: Both preempts lower siblings and cuts itself") {
    const Tree tree = abort_mode_tree(AbortMode::Both, false);
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run r(tree, mode);
        r.tick();
        r.agent.blackboard().set("a", true);
        r.tick();
        r.agent.blackboard().set("a", false);
        r.tick();
        CHECK(r.rec.tick(0) == "0:I 4:I 4:U");
        CHECK(r.rec.tick(1) == "4:T(Aborted) 1:I 3:I 3:U");
        CHECK(r.rec.tick(2) == "3:T(Aborted) 1:T(Failure) 4:I 4:U");
    }
}

TEST_CASE("Abort modes: an explicit None on an ActiveSelector child disables preemption") {
    const Tree tree = TreeBuilder("none").key<bool>("a")
                          .active_selector()
                              .sequence().check("a").action("A", test::running_action()).back().abort(AbortMode::None)
                              .action("B", test::running_action())
                          .back()
                          .end();
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run r(tree, mode);
        r.tick();
        r.agent.blackboard().set("a", true);
        r.tick();
        CHECK(r.rec.tick(1) == "4:U");
    }
}

TEST_CASE("Abort modes: Self on a leaf under a Parallel: the leaf ends Failure (no update) and counts as one") {
    // 0 Parallel(RequireAll, RequireOne), 1 A (guarded by k, Self), 2 B (running)
    const Tree tree = TreeBuilder("self-leaf").key<bool>("k", true)
                          .parallel(Policy::RequireAll, Policy::RequireOne)
                              .action("A", test::running_action()).precondition(Predicate::is("k")).abort(AbortMode::Self)
                              .action("B", test::running_action())
                          .back()
                          .end();
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run r(tree, mode);
        r.tick();
        CHECK(r.rec.tick(0) == "0:I 1:I 1:U 2:I 2:U");
        r.agent.blackboard().set("k", false);
        CHECK(r.tick() == kF);
        CHECK(r.rec.tick(1) == "1:T(Failure) 2:T(Aborted) 0:T(Failure)");
    }
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

// =====================================================================================================
// Suspension and resume
// =====================================================================================================

TEST_CASE("Suspension: no updates while suspended; a resume between ticks ends it next tick without update") {
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        for (Status given : {kS, kF}) {
            CAPTURE(std::string(to_string(given)));
            ResumeHandle handle;
            // 0 Sequence, 1 Suspend, 2 AlwaysSuccess
            const Tree tree = TreeBuilder("suspend").sequence().action("Suspend", suspending_action(handle)).always_success().back().end();
            Run r(tree, mode);
            r.tick();
            r.tick();
            CHECK(r.rec.tick(0) == "0:I 1:I 1:U");
            CHECK(r.rec.tick(1) == "");
            CHECK(r.status(1) == Status::Running);
            REQUIRE(handle.valid());
            CHECK(r.agent.resume(handle, given));
            CHECK_FALSE(r.agent.resume(handle, given));  // already resumed
            CHECK(r.rec.tick(2) == "");                  // nothing happens before the tick
            r.tick();
            if (given == kS) CHECK(r.rec.tick(2) == "1:T(Success) 2:I 2:U 2:T(Success) 0:T(Success)");
            else CHECK(r.rec.tick(2) == "1:T(Failure) 0:T(Failure)");
            CHECK(r.agent.stats().updates == (given == kS ? 2u : 1u));
            CHECK_FALSE(r.agent.resume(handle, given));  // the run has ended
        }
    }
}

TEST_CASE("Suspension: suspending in onInitialize means no update at all") {
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        ResumeHandle handle;
        int updates = 0;
        ActionSpec spec;
        spec.on_initialize = [&](ActionContext& ctx) { handle = ctx.suspend(); };
        spec.update = [&](ActionContext&) {
            ++updates;
            return Status::Running;
        };
        const Tree tree = TreeBuilder("suspend").sequence().action("Suspend", spec).back().end();
        Run r(tree, mode);
        r.tick();
        r.tick();
        CHECK(r.rec.tick(0) == "0:I 1:I");
        CHECK(r.rec.tick(1) == "");
        CHECK(r.agent.resume(handle, kS));
        r.tick();
        CHECK(r.rec.tick(2) == "1:T(Success) 0:T(Success)");
        CHECK(updates == 0);
    }
}

TEST_CASE("Suspension: a stale handle (aborted run, older run, other agent) is refused and changes nothing") {
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        ResumeHandle handle;
        const Tree tree = TreeBuilder("suspend").sequence().action("Suspend", suspending_action(handle)).back().end();
        Run r(tree, mode);
        Run other(tree, mode);
        r.tick();
        const ResumeHandle first = handle;
        const std::size_t m = r.mark();
        r.agent.abort();
        CHECK(r.since(m) == "1:T(Aborted) 0:T(Aborted)");
        CHECK_FALSE(r.agent.resume(first, kS));  // aborted run
        r.tick();                                // the tree starts afresh; a new suspension
        CHECK(r.since(m) == "1:T(Aborted) 0:T(Aborted) 0:I 1:I 1:U");
        CHECK_FALSE(r.agent.resume(first, kS));  // an older run of the same node
        CHECK_FALSE(other.agent.resume(handle, kS));  // another agent
        CHECK_THROWS_AS(r.agent.resume(handle, Status::Running), UsageError);
        r.tick();
        CHECK(r.rec.tick(2) == "");  // nothing changed
        CHECK(r.agent.resume(handle, kF));
        r.tick();
        CHECK(r.rec.tick(3) == "1:T(Failure) 0:T(Failure)");
    }
}

TEST_CASE("Suspension: resumed from inside a tick, a node the walk has not passed ends this tick") {
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        ResumeHandle handle;
        bool accepted = false;
        ActionSpec resumer;
        resumer.update = [&](ActionContext& ctx) {
            if (ctx.tick() != 1) return Status::Running;
            accepted = ctx.agent().resume(handle, kS);
            return kS;
        };
        // 0 Parallel(RequireAll, RequireOne), 1 Resumer, 2 Suspend
        const Tree tree = TreeBuilder("resume")
                              .parallel(Policy::RequireAll, Policy::RequireOne)
                                  .action("Resumer", resumer)
                                  .action("Suspend", suspending_action(handle))
                              .back()
                              .end();
        Run r(tree, mode);
        r.tick();
        CHECK(r.tick() == kS);
        CHECK(accepted);
        CHECK(r.rec.tick(0) == "0:I 1:I 1:U 2:I 2:U");
        CHECK(r.rec.tick(1) == "1:U 1:T(Success) 2:T(Success) 0:T(Success)");
    }
}

TEST_CASE("Suspension: resumed from inside a tick, a node the walk has passed ends next tick") {
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        ResumeHandle handle;
        bool accepted = false;
        ActionSpec resumer;
        resumer.update = [&](ActionContext& ctx) {
            if (ctx.tick() == 1) accepted = ctx.agent().resume(handle, kS);
            return Status::Running;
        };
        // 0 Parallel(RequireOne, RequireAll), 1 Suspend, 2 Resumer (running)
        const Tree tree = TreeBuilder("resume")
                              .parallel(Policy::RequireOne, Policy::RequireAll)
                                  .action("Suspend", suspending_action(handle))
                                  .action("Resumer", resumer)
                              .back()
                              .end();
        Run r(tree, mode);
        r.tick();
        CHECK(r.tick() == Status::Running);
        CHECK(accepted);
        CHECK(r.tick() == kS);
        CHECK(r.rec.tick(0) == "0:I 1:I 1:U 2:I 2:U");
        CHECK(r.rec.tick(1) == "2:U");
        CHECK(r.rec.tick(2) == "1:T(Success) 2:T(Aborted) 0:T(Success)");
    }
}

// =====================================================================================================
// The walk: ordering within a tick
// =====================================================================================================

TEST_CASE("Walk: a blackboard write in a tick, before the walk reaches the guard's position, acts this tick") {
    // 0 Parallel, 1 Writer (writes k in tick 1), 2 ActiveSelector, 3 Sequence, 4 k?, 5 A, 6 B
    const Tree tree = TreeBuilder("before").key<bool>("k")
                          .parallel(Policy::RequireAll, Policy::RequireAll)
                              .action("Writer", writer_at_tick(1))
                              .active_selector()
                                  .sequence().check("k").action("A", test::running_action()).back()
                                  .action("B", test::running_action())
                              .back()
                          .back()
                          .end();
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run r(tree, mode);
        r.tick();
        r.tick();
        CHECK(r.rec.tick(0) == "0:I 1:I 1:U 2:I 6:I 6:U");
        CHECK(r.rec.tick(1) == "1:U 6:T(Aborted) 3:I 5:I 5:U");
    }
}

TEST_CASE("Walk: a blackboard write in a tick, after the walk passed the guard's position, acts next tick") {
    // 0 Parallel, 1 ActiveSelector, 2 Sequence, 3 k?, 4 A, 5 B, 6 Writer (writes k in tick 1)
    const Tree tree = TreeBuilder("after").key<bool>("k")
                          .parallel(Policy::RequireAll, Policy::RequireAll)
                              .active_selector()
                                  .sequence().check("k").action("A", test::running_action()).back()
                                  .action("B", test::running_action())
                              .back()
                              .action("Writer", writer_at_tick(1))
                          .back()
                          .end();
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run r(tree, mode);
        for (int i = 0; i < 3; ++i) r.tick();
        CHECK(r.rec.tick(0) == "0:I 1:I 5:I 5:U 6:I 6:U");
        CHECK(r.rec.tick(1) == "5:U 6:U");
        CHECK(r.rec.tick(2) == "5:T(Aborted) 2:I 4:I 4:U 6:U");
    }
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
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run r(tree, mode);
        r.tick();
        r.tick();
        CHECK(r.rec.tick(0) == "0:I 1:I 2:I 2:U 4:I 8:I 8:U");
        CHECK(r.rec.tick(1) == "2:U 2:T(Success) 3:I 3:U 8:T(Aborted) 5:I 7:I 7:U");
    }
}

TEST_CASE("Walk: a guard change and a due Wait in the same tick: the guard's position comes first") {
    // 0 ActiveSelector, 1 Sequence, 2 k?, 3 A (running), 4 Wait(200ms)
    const Tree tree = TreeBuilder("guard-first").key<bool>("k")
                          .active_selector()
                              .sequence().check("k").action("A", test::running_action()).back()
                              .wait(200ms)
                          .back()
                          .end();
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run r(tree, mode);
        r.tick();  // clock 100: Wait due at 300
        r.tick();  // clock 200
        r.agent.blackboard().set("k", true);
        r.tick();  // clock 300: due, and the guard turned true
        CHECK(r.rec.tick(0) == "0:I 4:I");
        CHECK(r.rec.tick(1) == "");
        CHECK(r.rec.tick(2) == "4:T(Aborted) 1:I 3:I 3:U");
        CHECK(r.status(4) == Status::Aborted);
    }
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
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run r(tree, mode);
        r.tick();
        r.tick();
        r.agent.blackboard().set("k", true);
        r.tick();  // clock 300
        CHECK(r.rec.tick(0) == "0:I 1:I 2:I 6:I 6:U");
        CHECK(r.rec.tick(1) == "6:U");
        CHECK(r.rec.tick(2) == "1:T(Success) 6:T(Aborted) 3:I 5:I 5:U");
    }
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
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
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
    }
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
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
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
    }
}

TEST_CASE("Walk: a restarted Sequence under Repeat starts over from its first child next tick") {
    // 0 Repeat(2), 1 Sequence, 2 AlwaysSuccess, 3 S (1 update)
    const Tree tree = TreeBuilder("restart")
                          .repeat(2).sequence().always_success().action("S", test::finishing_action(1, kS)).back().back()
                          .end();
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run r(tree, mode);
        r.tick();
        CHECK(r.tick() == kS);
        CHECK(r.rec.tick(0) == "0:I 1:I 2:I 2:U 2:T(Success) 3:I 3:U 3:T(Success) 1:T(Success)");
        CHECK(r.rec.tick(1) == "1:I 2:I 2:U 2:T(Success) 3:I 3:U 3:T(Success) 1:T(Success) 0:T(Success)");
    }
}

TEST_CASE("Walk: with restart_on_end false the agent stops after the root ends until restart()") {
    const Tree tree = TreeBuilder("once").always_success().end();
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Run r(tree, mode, 0, /*restart_on_end=*/false);
        CHECK(r.tick() == kS);
        CHECK(r.tick() == kS);
        CHECK(r.rec.tick(0) == "0:I 0:U 0:T(Success)");
        CHECK(r.rec.tick(1) == "");
        r.agent.restart();
        r.tick();
        CHECK(r.rec.tick(2) == "0:I 0:U 0:T(Success)");
    }
}
