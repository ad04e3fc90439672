// Re-entrancy and error containment (docs/semantics.md, "Blackboard writes", "Aborts", "Errors and
// re-entrancy"): user code that writes the blackboard, aborts, resumes or ticks from inside a tick,
// user code that throws, API misuse, and destroying an agent with running actions. Every case runs
// in both modes and must give the same lifecycle trace.
#include "support/both_modes.hpp"
#include "support/trace_recorder.hpp"

#include <ebt/signals.hpp>

#include <stdexcept>
#include <string>
#include <vector>

using namespace ebt;
using namespace std::chrono_literals;
using test::Run;
using test::TraceRecorder;

namespace {

using Log = std::vector<std::string>;

/// An action that stays Running and logs "name:Status" when its run ends.
ActionSpec logged(std::string name, Log& log) {
    ActionSpec s = test::running_action();
    s.on_terminate = [name = std::move(name), &log](ActionContext&, Status st) { log.push_back(name + ":" + to_string(st)); };
    return s;
}

/// The status the Update event of `node` in `tick` carried.
Status update_status(const TraceRecorder& rec, std::uint64_t tick, NodeIndex node) {
    for (const auto& en : rec.entries)
        if (en.event.tick == tick && en.event.node == node && en.event.kind == TraceKind::Update) return en.event.status;
    return Status::Invalid;
}

/// A guard positioned before or after a writer.
///   writer first: 0 Parallel, 1 Writer, 2 ActiveSelector, 3 Sequence [flag], 4 flag, 5 A, 6 B
///   writer last:  0 Parallel, 1 ActiveSelector, 2 Sequence [flag], 3 flag, 4 A, 5 B, 6 Writer
Tree writer_tree(ActionSpec writer, bool writer_first) {
    TreeBuilder b("writer");
    b.key<bool>("flag").key<bool>("trigger");
    b.parallel(Policy::RequireAll, Policy::RequireAll);
    if (writer_first) b.action("Writer", writer);
    b.active_selector()
        .sequence()
            .check("flag")
            .action("A", test::running_action())
        .back()
        .action("B", test::running_action())
    .back();
    if (!writer_first) b.action("Writer", writer);
    return b.back().end();
}

/// An action that stays Running and, on its update in tick `at`, writes `key` = true.
ActionSpec writes_at(std::uint64_t at, const char* key) {
    ActionSpec s;
    s.update = [at, key](ActionContext& ctx) {
        if (ctx.tick() == at) ctx.blackboard().set(key, true);
        return Status::Running;
    };
    return s;
}

/// 0 Parallel, 1 Sequence, 2 A, 3 Aborter, 4 C; all actions stay Running and log their end.
/// Aborter calls agent.abort() in its update of tick `abort_at` (never when abort_at < 0).
struct AbortFixture {
    Log log;
    bool still_running_inside = false;
    Tree tree(int abort_at) {
        ActionSpec aborter = logged("Aborter", log);
        aborter.update = [this, abort_at](ActionContext& ctx) {
            if (static_cast<int>(ctx.tick()) == abort_at) {
                ctx.agent().abort();
                // The abort takes effect when this function returns, not before.
                still_running_inside = ctx.agent().status(2) == Status::Running && ctx.agent().status(0) == Status::Running;
            }
            return Status::Running;
        };
        return TreeBuilder("abort")
            .key<bool>("trigger")
            .parallel(Policy::RequireAll, Policy::RequireAll)
                .sequence()
                    .action("A", logged("A", log))
                .back()
                .action("Aborter", aborter)
                .action("C", logged("C", log))
            .back()
            .end();
    }
};

const char* const kAbortStart = "0:I 1:I 2:I 2:U 3:I 3:U 4:I 4:U";
const char* const kAbortAll = "4:T(Aborted) 3:T(Aborted) 2:T(Aborted) 1:T(Aborted) 0:T(Aborted)";

/// A recorder that calls agent->abort() when it sees one given event.
struct AbortingListener : TraceRecorder {
    Agent* agent = nullptr;
    std::uint64_t at_tick = 0;
    NodeIndex at_node = 0;
    TraceKind at_kind = TraceKind::Update;
    bool fired = false;
    void on_event(const TraceEvent& e) override {
        TraceRecorder::on_event(e);
        if (!fired && agent && e.tick == at_tick && e.node == at_node && e.kind == at_kind) {
            fired = true;
            agent->abort();
        }
    }
};

}  // namespace

// ---- blackboard writes from inside a tick -------------------------------------------------------------

TEST_CASE("reentrancy: an action's write is seen this tick by a guard positioned after it") {
    test::in_both_modes([&](Mode mode) {
        Run r(writer_tree(writes_at(1, "flag"), true), mode);
        r.expect_ticks({"0:I 1:I 1:U 2:I 6:I 6:U", "1:U 6:T(Aborted) 3:I 5:I 5:U", "1:U 5:U"}, 10ms);
    });
}

TEST_CASE("reentrancy: an action's write is seen next tick by a guard positioned before it") {
    test::in_both_modes([&](Mode mode) {
        Run r(writer_tree(writes_at(1, "flag"), false), mode);
        r.expect_ticks({"0:I 1:I 5:I 5:U 6:I 6:U", "5:U 6:U", "5:T(Aborted) 2:I 4:I 4:U 6:U", "4:U 6:U"}, 10ms);
    });
}

TEST_CASE("reentrancy: a write in onTerminate follows the same position rule") {
    // 0 Parallel, 1 Sequence, 2 Once (succeeds on its 2nd update; writes flag in onTerminate),
    // 3 ActiveSelector, 4 Sequence [flag], 5 flag, 6 A, 7 B
    test::in_both_modes([&](Mode mode) {
        ActionSpec once = test::finishing_action(2, Status::Success);
        once.on_terminate = [](ActionContext& ctx, Status) { ctx.blackboard().set("flag", true); };
        TraceRecorder rec;
        const Tree tree = TreeBuilder("hooks")
                              .key<bool>("flag")
                              .parallel(Policy::RequireAll, Policy::RequireAll)
                                  .sequence().action("Once", once).back()
                                  .active_selector()
                                      .sequence().check("flag").action("A", test::running_action()).back()
                                      .action("B", test::running_action())
                                  .back()
                              .back()
                              .end();
        Agent agent(tree, {.mode = mode, .listener = &rec});
        for (int i = 0; i < 3; ++i) agent.tick(10ms);
        CHECK(rec.tick(0) == "0:I 1:I 2:I 2:U 3:I 7:I 7:U");
        // Once ends in tick 1 and writes in onTerminate; the guard of 4 (at position 3) is still ahead.
        CHECK(rec.tick(1) == "2:U 2:T(Success) 1:T(Success) 7:T(Aborted) 4:I 6:I 6:U");
        CHECK(rec.tick(2) == "6:U");
    });
}

TEST_CASE("reentrancy: a write in onInitialize follows the same position rule") {
    ActionSpec writer = test::running_action();
    writer.on_initialize = [](ActionContext& ctx) { ctx.blackboard().set("flag", true); };
    test::in_both_modes([&](Mode mode) {
        {
            // Writer first: the ActiveSelector is entered after the write and picks the guarded branch.
            TraceRecorder rec;
            Agent agent(writer_tree(writer, true), {.mode = mode, .listener = &rec});
            agent.tick(10ms);
            agent.tick(10ms);
            CHECK(rec.tick(0) == "0:I 1:I 1:U 2:I 3:I 5:I 5:U");
            CHECK(rec.tick(1) == "1:U 5:U");
        }
        {
            // Writer last: the guard's position is passed; the switch happens next tick.
            TraceRecorder rec;
            Agent agent(writer_tree(writer, false), {.mode = mode, .listener = &rec});
            agent.tick(10ms);
            agent.tick(10ms);
            CHECK(rec.tick(0) == "0:I 1:I 5:I 5:U 6:I 6:U");
            CHECK(rec.tick(1) == "5:T(Aborted) 2:I 4:I 4:U 6:U");
        }
    });
}

TEST_CASE("reentrancy: a ChangeBus slot writing another key during a tick") {
    for (bool writer_first : {true, false}) {
        test::in_both_modes([&](Mode mode) {
            CAPTURE(writer_first);
            ChangeBus bus;
            std::vector<std::string> seen;
            boost::signals2::scoped_connection relay = bus.subscribe([&](const BlackboardChange& c) {
                seen.emplace_back(c.name);
                if (c.name == "trigger") c.agent->blackboard().set("flag", c.blackboard.get<bool>(Key<bool>{c.key}));
            });
            TraceRecorder rec;
            Agent agent(writer_tree(writes_at(1, "trigger"), writer_first), {.mode = mode, .listener = &rec, .bus = &bus});
            for (int i = 0; i < 3; ++i) agent.tick(10ms);
            CHECK(seen == std::vector<std::string>{"trigger", "flag"});
            CHECK(agent.blackboard().get<bool>("flag"));
            if (writer_first) {
                CHECK(rec.tick(0) == "0:I 1:I 1:U 2:I 6:I 6:U");
                CHECK(rec.tick(1) == "1:U 6:T(Aborted) 3:I 5:I 5:U");  // the relayed write is ahead of the walk
                CHECK(rec.tick(2) == "1:U 5:U");
            } else {
                CHECK(rec.tick(0) == "0:I 1:I 5:I 5:U 6:I 6:U");
                CHECK(rec.tick(1) == "5:U 6:U");
                CHECK(rec.tick(2) == "5:T(Aborted) 2:I 4:I 4:U 6:U");
            }
        });
    }
}

TEST_CASE("reentrancy: a ChangeBus slot relaying a write made between ticks") {
    test::in_both_modes([&](Mode mode) {
        ChangeBus bus;
        boost::signals2::scoped_connection relay = bus.subscribe([&](const BlackboardChange& c) {
            if (c.name == "trigger") c.agent->blackboard().set("flag", true);
        });
        TraceRecorder rec;
        Agent agent(writer_tree(test::running_action(), false), {.mode = mode, .listener = &rec, .bus = &bus});
        agent.tick(10ms);
        agent.blackboard().set("trigger", true);
        CHECK(agent.blackboard().get<bool>("flag"));
        agent.tick(10ms);
        CHECK(rec.tick(0) == "0:I 1:I 5:I 5:U 6:I 6:U");
        CHECK(rec.tick(1) == "5:T(Aborted) 2:I 4:I 4:U 6:U");
    });
}

// ---- abort() -----------------------------------------------------------------------------------------------

TEST_CASE("reentrancy: abort() from inside an action's update ends the tick; leaves end first; restart next tick") {
    test::in_both_modes([&](Mode mode) {
        AbortFixture fx;
        Run r(fx.tree(1), mode);
        r.tick(10ms);
        const Status after = r.tick(10ms);
        CHECK(fx.still_running_inside);
        CHECK(after == Status::Aborted);
        CHECK(r.agent.status() == Status::Aborted);
        for (NodeIndex n = 1; n < 5; ++n) CHECK(r.agent.status(n) == Status::Aborted);
        CHECK(r.rec.tick(0) == kAbortStart);
        // C (node 4) gets no update: the tick ended with the abort.
        CHECK(r.rec.tick(1) == std::string("2:U 3:U ") + kAbortAll);
        CHECK(update_status(r.rec, 1, 3) == Status::Running);
        CHECK(fx.log == Log{"C:Aborted", "Aborter:Aborted", "A:Aborted"});
        r.tick(10ms);
        CHECK(r.rec.tick(2) == kAbortStart);
        r.tick(10ms);
        CHECK(r.rec.tick(3) == "2:U 3:U 4:U");
        CHECK(r.rec.errors().empty());
    });
}

TEST_CASE("reentrancy: abort() from a listener takes effect when the listener returns") {
    test::in_both_modes([&](Mode mode) {
        AbortFixture fx;
        AbortingListener rec;
        rec.at_tick = 1;
        rec.at_node = 2;
        rec.at_kind = TraceKind::Update;
        Agent agent(fx.tree(-1), {.mode = mode, .listener = &rec});
        rec.agent = &agent;
        agent.tick(10ms);
        agent.tick(10ms);
        CHECK(rec.fired);
        CHECK(rec.tick(0) == kAbortStart);
        CHECK(rec.tick(1) == std::string("2:U ") + kAbortAll);
        CHECK(fx.log == Log{"C:Aborted", "Aborter:Aborted", "A:Aborted"});
        agent.tick(10ms);
        CHECK(rec.tick(2) == kAbortStart);
    });
}

TEST_CASE("reentrancy: abort() from a listener on an action's Terminate event still runs its onTerminate") {
    // 0 Sequence, 1 Quick (succeeds on its first update), 2 Runner (stays Running). The listener
    // aborts the agent on every Terminate of Quick. Every started action ends exactly once.
    struct Counts {
        int quick_starts = 0, quick_ends = 0, runner_starts = 0, runner_ends = 0;
    };
    test::in_both_modes([&](Mode mode) {
        Counts n;
        ActionSpec quick;
        quick.on_initialize = [&n](ActionContext&) { ++n.quick_starts; };
        quick.update = [](ActionContext&) { return Status::Success; };
        quick.on_terminate = [&n](ActionContext&, Status s) {
            CHECK(s == Status::Success);
            ++n.quick_ends;
        };
        ActionSpec runner = test::running_action();
        runner.on_initialize = [&n](ActionContext&) { ++n.runner_starts; };
        runner.on_terminate = [&n](ActionContext&, Status) { ++n.runner_ends; };
        const Tree tree = TreeBuilder("terminate-abort").sequence().action("Quick", quick).action("Runner", runner).back().end();
        struct Aborter : TraceRecorder {
            Agent* agent = nullptr;
            void on_event(const TraceEvent& e) override {
                TraceRecorder::on_event(e);
                if (e.node == 1 && e.kind == TraceKind::Terminate) agent->abort();
            }
        } rec;
        Agent agent(tree, {.mode = mode, .listener = &rec});
        rec.agent = &agent;
        for (int i = 0; i < 4; ++i) agent.tick(10ms);
        // Before the fix: 4 starts, 0 ends (the abort unwound before onTerminate ran).
        CHECK(n.quick_starts == 4);
        CHECK(n.quick_ends == 4);
        CHECK(n.runner_starts == 0);  // the abort ends each tick before the sequence moves on
        CHECK(rec.tick(0) == "0:I 1:I 1:U 1:T(Success) 0:T(Aborted)");
        CHECK(rec.tick(3) == "0:I 1:I 1:U 1:T(Success) 0:T(Aborted)");
    });
}

TEST_CASE("reentrancy: a resume handle of an old run never matches a later run of the same action") {
    // The run id was 16 bits: the handle of run 1 resumed run 65,537. An action that suspends on
    // entry; each tick is ended by abort(), so every tick is a new run.
    test::in_both_modes([&](Mode mode) {
        ResumeHandle current;
        ActionSpec s = test::running_action();
        s.on_initialize = [&current](ActionContext& ctx) { current = ctx.suspend(); };
        const Tree tree = TreeBuilder("suspender").action("Suspender", s).end();
        Agent agent(tree, {.mode = mode});
        agent.tick(10ms);
        const ResumeHandle first = current;
        for (int run = 2; run <= 65'537; ++run) {
            agent.abort();
            agent.tick(10ms);
        }
        CHECK(current.run == first.run + 65'536);
        CHECK_FALSE(agent.resume(first, Status::Success));
        CHECK(agent.status(0) == Status::Running);
        CHECK(agent.resume(current, Status::Success));
        agent.tick(10ms);
        CHECK(agent.status(0) == Status::Success);
    });
}

TEST_CASE("reentrancy: abort() from a ChangeBus slot during a tick") {
    test::in_both_modes([&](Mode mode) {
        AbortFixture fx;
        ChangeBus bus;
        boost::signals2::scoped_connection c = bus.subscribe([](const BlackboardChange& ch) {
            if (ch.name == "trigger") ch.agent->abort();
        });
        // Swap the Aborter for an action that writes "trigger" in tick 1.
        ActionSpec writer = logged("Aborter", fx.log);
        writer.update = [](ActionContext& ctx) {
            if (ctx.tick() == 1) ctx.blackboard().set("trigger", true);
            return Status::Running;
        };
        const Tree tree = TreeBuilder("abort_slot")
                              .key<bool>("trigger")
                              .parallel(Policy::RequireAll, Policy::RequireAll)
                                  .sequence().action("A", logged("A", fx.log)).back()
                                  .action("Aborter", writer)
                                  .action("C", logged("C", fx.log))
                              .back()
                              .end();
        TraceRecorder rec;
        Agent agent(tree, {.mode = mode, .listener = &rec, .bus = &bus});
        agent.tick(10ms);
        agent.tick(10ms);
        CHECK(rec.tick(1) == std::string("2:U 3:U ") + kAbortAll);
        CHECK(fx.log == Log{"C:Aborted", "Aborter:Aborted", "A:Aborted"});
        CHECK(agent.blackboard().get<bool>("trigger"));  // the write itself stands
        agent.tick(10ms);
        CHECK(rec.tick(2) == kAbortStart);
    });
}

TEST_CASE("reentrancy: abort() between ticks happens at once; the tree restarts on the next tick") {
    test::in_both_modes([&](Mode mode) {
        AbortFixture fx;
        Run r(fx.tree(-1), mode);
        r.tick(10ms);
        r.tick(10ms);
        r.rec.clear();
        r.agent.abort();
        CHECK_FALSE(r.agent.in_tick());
        CHECK(r.agent.status() == Status::Aborted);
        CHECK(r.rec.lifecycle() == std::vector<std::string>{"2 4:T(Aborted)", "2 3:T(Aborted)", "2 2:T(Aborted)",
                                                           "2 1:T(Aborted)", "2 0:T(Aborted)"});
        CHECK(fx.log == Log{"C:Aborted", "Aborter:Aborted", "A:Aborted"});
        r.rec.clear();
        r.agent.abort();  // nothing runs: nothing happens
        CHECK(r.rec.entries.empty());
        r.tick(10ms);
        CHECK(r.rec.tick(2) == kAbortStart);
        r.tick(10ms);
        CHECK(r.rec.tick(3) == "2:U 3:U 4:U");
    });
}

TEST_CASE("reentrancy: abort() before the first tick changes nothing") {
    test::in_both_modes([&](Mode mode) {
        AbortFixture fx;
        Run r(fx.tree(-1), mode);
        r.agent.abort();
        CHECK(r.rec.entries.empty());
        CHECK(fx.log.empty());
        r.tick(10ms);
        CHECK(r.rec.tick(0) == kAbortStart);
    });
}

TEST_CASE("reentrancy: abort() with restart_on_end false stops the agent until restart()") {
    test::in_both_modes([&](Mode mode) {
        AbortFixture fx;
        TraceRecorder rec;
        Agent agent(fx.tree(1), {.mode = mode, .restart_on_end = false, .listener = &rec});
        agent.tick(10ms);
        agent.tick(10ms);  // aborted from inside
        CHECK(rec.tick(1) == std::string("2:U 3:U ") + kAbortAll);
        agent.tick(10ms);
        agent.tick(10ms);
        CHECK(rec.tick(2) == "");
        CHECK(rec.tick(3) == "");
        agent.restart();
        agent.tick(10ms);
        CHECK(rec.tick(4) == kAbortStart);
    });
}

// ---- resume() from inside a tick -----------------------------------------------------------------------------

namespace {

struct ResumeFixture {
    ResumeHandle handle;
    int sleeper_updates = 0;
    bool first = false, second = true;
    Status resume_with = Status::Success;

    ActionSpec sleeper() {
        ActionSpec s;
        s.on_initialize = [this](ActionContext& ctx) { handle = ctx.suspend(); };
        s.update = [this](ActionContext&) {
            ++sleeper_updates;
            return Status::Running;
        };
        return s;
    }
    ActionSpec resumer(std::uint64_t at) {
        ActionSpec s;
        s.update = [this, at](ActionContext& ctx) {
            if (ctx.tick() == at) {
                first = ctx.agent().resume(handle, resume_with);
                second = ctx.agent().resume(handle, resume_with);  // already resumed: stale
            }
            return Status::Running;
        };
        return s;
    }
    /// The first resume was accepted, the second refused as stale, and the Sleeper never updated.
    void check_resumed_once_without_update() const {
        CHECK(first);
        CHECK_FALSE(second);
        CHECK(sleeper_updates == 0);
    }
    /// 0 Parallel(RequireAll, RequireAll), 1 Sleeper, 2 Resumer (resumes the Sleeper in tick 1).
    Tree sleeper_then_resumer(const char* name) {
        return TreeBuilder(name)
            .parallel(Policy::RequireAll, Policy::RequireAll)
                .action("Sleeper", sleeper())
                .action("Resumer", resumer(1))
            .back()
            .end();
    }
};

}  // namespace

TEST_CASE("reentrancy: resume() from another action's update: this tick if the walk has not passed the action") {
    test::in_both_modes([&](Mode mode) {
        ResumeFixture fx;
        // 0 Parallel, 1 Resumer, 2 Sleeper
        const Tree tree = TreeBuilder("resume_ahead")
                              .parallel(Policy::RequireAll, Policy::RequireOne)
                                  .action("Resumer", fx.resumer(1))
                                  .action("Sleeper", fx.sleeper())
                              .back()
                              .end();
        Run r(tree, mode);
        for (int i = 0; i < 3; ++i) r.tick(10ms);
        fx.check_resumed_once_without_update();
        CHECK(r.rec.tick(0) == "0:I 1:I 1:U 2:I");
        CHECK(r.rec.tick(1) == "1:U 2:T(Success)");
        CHECK(r.rec.tick(2) == "1:U");
        CHECK_FALSE(r.agent.resume(fx.handle, Status::Success));  // the run has ended
    });
}

TEST_CASE("reentrancy: resume() from another action's update: next tick if the walk has passed the action") {
    test::in_both_modes([&](Mode mode) {
        ResumeFixture fx;
        fx.resume_with = Status::Failure;
        // 0 Parallel(RequireAll, RequireAll), 1 Sleeper, 2 Resumer
        const Tree tree = fx.sleeper_then_resumer("resume_behind");
        Run r(tree, mode);
        for (int i = 0; i < 4; ++i) r.tick(10ms);
        fx.check_resumed_once_without_update();
        CHECK(r.rec.tick(0) == "0:I 1:I 2:I 2:U");
        CHECK(r.rec.tick(1) == "2:U");
        // Resumed in tick 1 after the walk passed node 1: it ends in tick 2, with the status given.
        CHECK(r.rec.tick(2) == "1:T(Failure) 2:U");
        CHECK(r.rec.tick(3) == "2:U");
    });
}

TEST_CASE("reentrancy: an action resumes another agent's action; a foreign handle is refused") {
    test::in_both_modes([&](Mode mode) {
        ResumeFixture fx;
        const Tree sleeper_tree = TreeBuilder("sleeper").sequence().action("Sleeper", fx.sleeper()).back().end();
        TraceRecorder sleeper_rec;
        Agent sleeper(sleeper_tree, {.mode = mode, .listener = &sleeper_rec});
        bool foreign = true, own = false;
        ActionSpec resumer;
        resumer.update = [&](ActionContext& ctx) {
            foreign = ctx.agent().resume(fx.handle, Status::Success);  // not this agent's handle
            own = sleeper.resume(fx.handle, Status::Success);
            return Status::Success;
        };
        const Tree resumer_tree = TreeBuilder("resumer").action("Resumer", resumer).end();
        Agent other(resumer_tree, {.mode = mode});
        sleeper.tick(10ms);
        CHECK(sleeper_rec.tick(0) == "0:I 1:I");
        other.tick(10ms);
        CHECK_FALSE(foreign);
        CHECK(own);
        sleeper.tick(10ms);
        CHECK(sleeper_rec.tick(1) == "1:T(Success) 0:T(Success)");
    });
}

TEST_CASE("reentrancy: resume() with a status other than Success or Failure throws UsageError, changing nothing") {
    test::in_both_modes([&](Mode mode) {
        ResumeFixture fx;
        const Tree tree = TreeBuilder("resume_bad").sequence().action("Sleeper", fx.sleeper()).back().end();
        Run r(tree, mode);
        r.tick(10ms);
        REQUIRE(fx.handle.valid());
        CHECK_THROWS_WITH_AS(r.agent.resume(fx.handle, Status::Running),
                             "Agent::resume() needs Success or Failure, got Running", UsageError);
        CHECK_THROWS_WITH_AS(r.agent.resume(fx.handle, Status::Aborted),
                             "Agent::resume() needs Success or Failure, got Aborted", UsageError);
        CHECK_THROWS_WITH_AS(r.agent.resume(fx.handle, Status::Invalid),
                             "Agent::resume() needs Success or Failure, got Invalid", UsageError);
        r.tick(10ms);
        CHECK(r.rec.tick(1) == "");
        CHECK(r.agent.status(1) == Status::Running);
        CHECK(r.agent.resume(fx.handle, Status::Failure));
        r.tick(10ms);
        CHECK(r.rec.tick(2) == "1:T(Failure) 0:T(Failure)");
    });
}

TEST_CASE("reentrancy: resume() with a bad status from inside a tick is contained as an error of the caller") {
    test::in_both_modes([&](Mode mode) {
        ResumeFixture fx;
        fx.resume_with = Status::Running;
        // 0 Parallel(RequireAll, RequireAll), 1 Sleeper, 2 Resumer (fails in tick 1)
        const Tree tree = fx.sleeper_then_resumer("resume_bad_inside");
        Run r(tree, mode);
        r.tick(10ms);
        r.tick(10ms);
        CHECK(r.rec.tick(1) == "2:U 2:T(Failure)");
        CHECK(r.rec.errors() == std::vector<std::string>{"2: Agent::resume() needs Success or Failure, got Running"});
        CHECK(r.agent.status(1) == Status::Running);  // the sleeper was not resumed
    });
}

// ---- tick() from inside a tick ----------------------------------------------------------------------------------

TEST_CASE("reentrancy: tick() from inside an action is contained: Error event, the node fails") {
    test::in_both_modes([&](Mode mode) {
        bool armed = true;
        ActionSpec ticker;
        ticker.update = [&armed](ActionContext& ctx) {
            if (armed) ctx.agent().tick(50ms);
            return Status::Success;
        };
        // 0 Selector, 1 Ticker, 2 AlwaysSuccess
        const Tree tree = TreeBuilder("ticker").selector().action("Ticker", ticker).always_success().back().end();
        TraceRecorder rec;
        Agent agent(tree, {.mode = mode, .listener = &rec});
        CHECK(agent.tick(100ms) == Status::Success);
        CHECK(rec.tick(0) == "0:I 1:I 1:U 1:T(Failure) 2:I 2:U 2:T(Success) 0:T(Success)");
        CHECK(rec.all(0) == "0:I 1:I 1:E 1:U 1:T(Failure) 2:I 2:U 2:T(Success) 0:T(Success)");
        CHECK(update_status(rec, 0, 1) == Status::Failure);
        CHECK(rec.errors() == std::vector<std::string>{"1: Agent::tick() called from inside a tick of the same agent"});
        CHECK(agent.ticks() == 1);         // the nested tick did not count
        CHECK(agent.now() == 100'000);     // nor advance the clock
        CHECK_FALSE(agent.in_tick());
        armed = false;
        agent.tick(100ms);
        CHECK(rec.tick(1) == "0:I 1:I 1:U 1:T(Success) 0:T(Success)");
    });
}

// ---- user code that throws -------------------------------------------------------------------------------------

namespace {

enum class Where { Initialize, Update, Terminate };
const char* where_name(Where w) {
    return w == Where::Initialize ? "onInitialize" : w == Where::Update ? "update" : "onTerminate";
}

/// 0 Selector, 1 Thrower (writes written=7 then throws in `where` while armed; else succeeds), 2 AlwaysSuccess
Tree thrower_tree(Where where, const bool& armed) {
    ActionSpec s;
    s.ports = {port<int>("written")};
    auto maybe_throw = [where, &armed](ActionContext& ctx, Where here) {
        if (armed && where == here) {
            ctx.out<int>(0, 7);
            throw std::runtime_error(std::string("boom in ") + where_name(here));
        }
    };
    s.on_initialize = [maybe_throw](ActionContext& ctx) { maybe_throw(ctx, Where::Initialize); };
    s.update = [maybe_throw](ActionContext& ctx) {
        maybe_throw(ctx, Where::Update);
        return Status::Success;
    };
    s.on_terminate = [maybe_throw](ActionContext& ctx, Status) { maybe_throw(ctx, Where::Terminate); };
    return TreeBuilder("thrower")
        .key<int>("written", 0)
        .key<int>("other", 42)
        .selector()
            .action("Thrower", s)
            .always_success()
        .back()
        .end();
}

}  // namespace

TEST_CASE("reentrancy: an action throwing in onInitialize / update / onTerminate is contained") {
    struct Expect {
        Where where;
        const char* lifecycle;
        const char* all;
    };
    const Expect cases[] = {
        {Where::Initialize, "0:I 1:I 1:T(Failure) 2:I 2:U 2:T(Success) 0:T(Success)",
         "0:I 1:I 1:E 1:T(Failure) 2:I 2:U 2:T(Success) 0:T(Success)"},
        {Where::Update, "0:I 1:I 1:U 1:T(Failure) 2:I 2:U 2:T(Success) 0:T(Success)",
         "0:I 1:I 1:E 1:U 1:T(Failure) 2:I 2:U 2:T(Success) 0:T(Success)"},
        // An exception from onTerminate is reported and ignored: the node keeps its status.
        {Where::Terminate, "0:I 1:I 1:U 1:T(Success) 0:T(Success)", "0:I 1:I 1:U 1:T(Success) 1:E 0:T(Success)"},
    };
    for (const Expect& ex : cases) {
        test::in_both_modes([&](Mode mode) {
            CAPTURE(std::string(where_name(ex.where)));
            bool armed = true;
            Run r(thrower_tree(ex.where, armed), mode);
            Status result = Status::Invalid;
            CHECK_NOTHROW(result = r.tick(10ms));
            CHECK(result == Status::Success);
            CHECK(r.rec.tick(0) == ex.lifecycle);
            CHECK(r.rec.all(0) == ex.all);
            CHECK(r.rec.errors() == std::vector<std::string>{std::string("1: boom in ") + where_name(ex.where)});
            // The blackboard is intact: the write before the throw stands, the rest is untouched and usable.
            CHECK(r.agent.blackboard().get<int>("written") == 7);
            CHECK(r.agent.blackboard().get<int>("other") == 42);
            CHECK(r.agent.blackboard().set("other", 43));
            CHECK_FALSE(r.agent.in_tick());
            // The r.agent keeps working.
            armed = false;
            r.tick(10ms);
            r.tick(10ms);
            CHECK(r.rec.tick(1) == "0:I 1:I 1:U 1:T(Success) 0:T(Success)");
            CHECK(r.rec.tick(2) == "0:I 1:I 1:U 1:T(Success) 0:T(Success)");
            CHECK(r.rec.errors().size() == 1);
            // And it fails again when armed again.
            armed = true;
            r.tick(10ms);
            CHECK(r.rec.tick(3) == ex.lifecycle);
            CHECK(r.rec.errors().size() == 2);
        });
    }
}

TEST_CASE("reentrancy: a non-std exception and an invalid update status are contained too") {
    test::in_both_modes([&](Mode mode) {
        ActionSpec weird;
        weird.update = [](ActionContext& ctx) -> Status {
            if (ctx.tick() == 0) throw 42;
            if (ctx.tick() == 1) return Status::Aborted;  // not a status update may return
            return Status::Invalid;
        };
        const Tree tree = TreeBuilder("weird").selector().action("Weird", weird).always_failure().back().end();
        Run r(tree, mode);
        for (int i = 0; i < 3; ++i) CHECK_NOTHROW(r.tick(10ms));
        for (std::uint64_t t = 0; t < 3; ++t) {
            CAPTURE(t);
            CHECK(r.rec.tick(t) == "0:I 1:I 1:U 1:T(Failure) 2:I 2:U 2:T(Failure) 0:T(Failure)");
            CHECK(update_status(r.rec, t, 1) == Status::Failure);
        }
        CHECK(r.rec.errors() == std::vector<std::string>{"1: unknown exception", "1: update returned an invalid status",
                                                       "1: update returned an invalid status"});
    });
}

namespace {

Registry flaky_registry(const bool& armed) {
    Registry reg;
    reg.add_condition(
        "Flaky",
        [&armed](const ConditionContext& ctx) {
            (void)ctx.in<int>(0);
            if (armed) throw std::runtime_error("flaky");
            return true;
        },
        {port<int>("k")});
    return reg;
}

}  // namespace

TEST_CASE("reentrancy: a condition that throws as a step counts as false") {
    test::in_both_modes([&](Mode mode) {
        bool armed = true;
        const Registry reg = flaky_registry(armed);
        // 0 Selector, 1 Sequence, 2 AlwaysSuccess, 3 Flaky (a step), 4 Done, 5 AlwaysSuccess
        const Tree tree = TreeBuilder("flaky_step", reg)
                              .key<int>("k").key<int>("other", 5)
                              .selector()
                                  .sequence()
                                      .always_success()
                                      .condition("Flaky")
                                      .action("Done", test::finishing_action(1, Status::Success))
                                  .back()
                                  .always_success()
                              .back()
                              .end();
        Run r(tree, mode);
        r.expect_ticks({
            {"0:I 1:I 2:I 2:U 2:T(Success) 1:T(Failure) 5:I 5:U 5:T(Success) 0:T(Success)", Status::Success}
        }, 10ms);
        CHECK(r.rec.all(0) == "0:I 1:I 2:I 2:U 2:T(Success) 3:E 3:C(false) 1:T(Failure) 5:I 5:U 5:T(Success) 0:T(Success)");
        CHECK(r.rec.errors() == std::vector<std::string>{"3: flaky"});
        armed = false;
        r.expect_ticks({"0:I 1:I 2:I 2:U 2:T(Success) 4:I 4:U 4:T(Success) 1:T(Success) 0:T(Success)"}, 10ms);
        CHECK(r.agent.blackboard().get<int>("other") == 5);
    });
}

TEST_CASE("reentrancy: a condition that throws in a guard counts as false") {
    test::in_both_modes([&](Mode mode) {
        bool armed = true;
        const Registry reg = flaky_registry(armed);
        // 0 Selector, 1 Sequence [Flaky], 2 Flaky, 3 Done, 4 AlwaysSuccess
        const Tree tree = TreeBuilder("flaky_guard", reg)
                              .key<int>("k")
                              .selector()
                                  .sequence()
                                      .condition("Flaky")
                                      .action("Done", test::finishing_action(1, Status::Success))
                                  .back()
                                  .always_success()
                              .back()
                              .end();
        Run r(tree, mode);
        r.expect_ticks({"0:I 4:I 4:U 4:T(Success) 0:T(Success)"}, 10ms);
        CHECK(r.rec.all(0) == "0:I 1:E 1:G(false) 4:I 4:U 4:T(Success) 0:T(Success)");
        REQUIRE(r.rec.errors().size() == 1);
        CHECK(r.rec.errors()[0] == "1: flaky");
        armed = false;
        r.expect_ticks({"0:I 1:I 3:I 3:U 3:T(Success) 1:T(Success) 0:T(Success)"}, 10ms);
    });
}

TEST_CASE("reentrancy: a live guard whose condition throws on re-check turns false and cuts its branch") {
    test::in_both_modes([&](Mode mode) {
        bool armed = false;
        const Registry reg = flaky_registry(armed);
        // 0 Selector, 1 Monitor [Flaky], 2 Flaky, 3 A, 4 B
        const Tree tree = TreeBuilder("flaky_live", reg)
                              .key<int>("k")
                              .selector()
                                  .monitor(Policy::RequireAll, Policy::RequireOne)
                                      .condition("Flaky")
                                      .action("A", test::running_action())
                                  .back()
                                  .action("B", test::running_action())
                              .back()
                              .end();
        TraceRecorder rec;
        Agent agent(tree, {.mode = mode, .listener = &rec});
        agent.tick(10ms);
        CHECK(rec.tick(0) == "0:I 1:I 3:I 3:U");
        armed = true;
        agent.blackboard().set("k", 1);  // the guard reads k: event mode re-checks it too
        agent.tick(10ms);
        CHECK(rec.tick(1) == "3:T(Aborted) 1:T(Failure) 4:I 4:U");
        CHECK(rec.errors().size() == 1);
        armed = false;
        agent.tick(10ms);
        CHECK(rec.tick(2) == "4:U");
    });
}

TEST_CASE("reentrancy: onTerminate(Aborted) throwing during abort() is reported and ignored") {
    test::in_both_modes([&](Mode mode) {
        bool armed = true;
        ActionSpec grumpy = test::running_action();
        grumpy.on_terminate = [&armed](ActionContext&, Status s) {
            if (armed && s == Status::Aborted) throw std::runtime_error("cannot stop");
        };
        Log log;
        // 0 Parallel, 1 Grumpy, 2 B; aborted between ticks, then from inside (B aborts in tick 3).
        ActionSpec aborter = logged("B", log);
        aborter.update = [](ActionContext& ctx) {
            if (ctx.tick() == 3) ctx.agent().abort();
            return Status::Running;
        };
        const Tree tree = TreeBuilder("grumpy")
                              .parallel(Policy::RequireAll, Policy::RequireAll)
                                  .action("Grumpy", grumpy)
                                  .action("B", aborter)
                              .back()
                              .end();
        TraceRecorder rec;
        Agent agent(tree, {.mode = mode, .listener = &rec});
        agent.tick(10ms);
        agent.tick(10ms);
        CHECK_NOTHROW(agent.abort());
        CHECK(rec.lifecycle().back() == "2 0:T(Aborted)");
        CHECK(rec.errors() == std::vector<std::string>{"1: cannot stop"});
        CHECK(log == Log{"B:Aborted"});
        rec.clear();
        agent.tick(10ms);
        CHECK(rec.tick(2) == "0:I 1:I 1:U 2:I 2:U");
        CHECK_NOTHROW(agent.tick(10ms));
        CHECK(rec.tick(3) == "1:U 2:U 2:T(Aborted) 1:T(Aborted) 0:T(Aborted)");
        CHECK(rec.errors() == std::vector<std::string>{"1: cannot stop"});
        armed = false;
        agent.tick(10ms);
        CHECK(rec.tick(4) == "0:I 1:I 1:U 2:I 2:U");
    });
}

namespace {

/// A recorder whose on_event misbehaves once, on the Update of node 1 in tick 1.
struct MisbehavingListener : TraceRecorder {
    Agent* agent = nullptr;
    bool call_tick = false;  // false: throw; true: call agent->tick() (UsageError)
    bool fired = false;
    void on_event(const TraceEvent& e) override {
        TraceRecorder::on_event(e);
        if (fired || !agent || e.tick != 1 || e.node != 1 || e.kind != TraceKind::Update) return;
        fired = true;
        if (call_tick) agent->tick(10ms);
        else throw std::runtime_error("listener failed");
    }
};

}  // namespace

// Regression: an exception from the listener used to escape Agent::tick() and lose queued work.
TEST_CASE("reentrancy: a listener that throws or calls tick() cannot break the agent") {
    for (bool call_tick : {false, true}) {
        test::in_both_modes([&](Mode mode) {
            CAPTURE(call_tick);
            // 0 Parallel, 1 A, 2 B: both stay Running.
            const Tree tree = TreeBuilder("listener")
                                  .parallel(Policy::RequireAll, Policy::RequireAll)
                                      .action("A", test::running_action())
                                      .action("B", test::running_action())
                                  .back()
                                  .end();
            MisbehavingListener rec;
            rec.call_tick = call_tick;
            Agent agent(tree, {.mode = mode, .listener = &rec});
            rec.agent = &agent;
            for (int i = 0; i < 4; ++i) CHECK_NOTHROW(agent.tick(10ms));
            CHECK(rec.fired);
            CHECK(agent.ticks() == 4);
            CHECK(rec.tick(2) == "1:U 2:U");
            CHECK(rec.tick(3) == "1:U 2:U");
        });
    }
}

// ---- destroying an agent ------------------------------------------------------------------------------------------

TEST_CASE("reentrancy: destroying an agent aborts its running actions (onTerminate(Aborted), no listener)") {
    test::in_both_modes([&](Mode mode) {
        Log log;
        ResumeFixture fx;
        ActionSpec sleeper = fx.sleeper();
        sleeper.on_terminate = [&log](ActionContext&, Status s) { log.push_back(std::string("Sleeper:") + to_string(s)); };
        ActionSpec done = test::finishing_action(1, Status::Success);
        done.on_terminate = [&log](ActionContext&, Status s) { log.push_back(std::string("Done:") + to_string(s)); };
        // 0 Parallel, 1 A, 2 Sequence, 3 Done, 4 B, 5 Sleeper, 6 Wait
        const Tree tree = TreeBuilder("destroy")
                              .parallel(Policy::RequireAll, Policy::RequireAll)
                                  .action("A", logged("A", log))
                                  .sequence()
                                      .action("Done", done)
                                      .action("B", logged("B", log))
                                  .back()
                                  .action("Sleeper", sleeper)
                                  .wait(1h)
                              .back()
                              .end();
        TraceRecorder rec;
        {
            Agent agent(tree, {.mode = mode, .listener = &rec});
            agent.tick(10ms);
            agent.tick(10ms);
            CHECK(rec.tick(0) == "0:I 1:I 1:U 2:I 3:I 3:U 3:T(Success) 4:I 4:U 5:I 6:I");
            CHECK(log == Log{"Done:Success"});
            log.clear();
            rec.clear();
        }
        CHECK(log == Log{"Sleeper:Aborted", "B:Aborted", "A:Aborted"});
        CHECK(rec.entries.empty());
    });
}

TEST_CASE("reentrancy: destroying an agent that never ran or has finished calls nothing") {
    test::in_both_modes([&](Mode mode) {
        Log log;
        ActionSpec once = test::finishing_action(1, Status::Success);
        once.on_terminate = [&log](ActionContext&, Status s) { log.push_back(std::string("Once:") + to_string(s)); };
        const Tree tree = TreeBuilder("quiet").sequence().action("Once", once).back().end();
        { Agent never(tree, {.mode = mode}); }
        CHECK(log.empty());
        {
            Agent finished(tree, {.mode = mode, .restart_on_end = false});
            finished.tick(10ms);
            CHECK(log == Log{"Once:Success"});
        }
        CHECK(log == Log{"Once:Success"});
    });
}
