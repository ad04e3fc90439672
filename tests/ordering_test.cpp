// The walk rule of docs/semantics.md: what happens in which order within a tick, in both modes.
#include "support/both_modes.hpp"

using namespace ebt;
using namespace std::chrono_literals;
using test::Run;
using test::TraceRecorder;

namespace {

// DESIGN.md's worked example: 0 ActiveSelector, 1 Sequence "eat", 2 IsHungry, 3 Eat, 4 Work.
Tree hungry_tree() {
    ActionSpec eat = test::finishing_action(2, Status::Success);
    eat.ports = {port<bool>("hungry")};
    eat.on_terminate = [](ActionContext& ctx, Status s) {
        if (s == Status::Success) ctx.out<bool>(0, false);
    };
    return TreeBuilder("hungry")
        .key<bool>("hungry")
        .active_selector()
            .sequence().label("eat")
                .check("hungry")
                .action("Eat", eat)
            .back()
            .action("Work", test::running_action())
        .back()
        .end();
}

}  // namespace

TEST_CASE("worked example of DESIGN.md: identical trace in both modes") {
    test::in_both_modes([&](Mode mode) {
        Run r(hungry_tree(), mode);
        r.tick(100ms);
        r.tick(100ms);
        r.agent.blackboard().set("hungry", true);
        r.tick(100ms);
        r.tick(100ms);
        r.tick(100ms);
        CHECK(r.rec.tick(0) == "0:I 4:I 4:U");
        CHECK(r.rec.tick(1) == "4:U");
        CHECK(r.rec.tick(2) == "4:T(Aborted) 1:I 3:I 3:U");
        CHECK(r.rec.tick(3) == "3:U 3:T(Success) 1:T(Success) 0:T(Success)");
        CHECK(r.rec.tick(4) == "0:I 4:I 4:U");
    });
}

TEST_CASE("worked example: event mode evaluates no guard while nothing changes") {
    TraceRecorder poll_rec, event_rec;
    Agent poll(hungry_tree(), {.mode = Mode::Polling, .listener = &poll_rec});
    Agent event(hungry_tree(), {.mode = Mode::Event, .listener = &event_rec});
    for (int i = 0; i < 2; ++i) {
        poll.tick(100ms);
        event.tick(100ms);
    }
    // tick 1: polling re-checks guard 1 (false -> false, no edge); event mode does not: the guard
    // became live on entry in tick 0, where it was just evaluated, and nothing it reads has changed.
    CHECK(poll_rec.all(1) == "1:G(false) 4:U");
    CHECK(event_rec.all(1) == "4:U");
    poll.tick(100ms);
    event.tick(100ms);
    CHECK(poll_rec.all(2) == "1:G(false) 4:U");
    CHECK(event_rec.all(2) == "4:U");
}

TEST_CASE("a condition that reads the world is re-checked on its interval in event mode, every tick when polling") {
    bool world_alarm = false;  // game state the blackboard does not hold
    Registry registry;
    ConditionSpec alarm;
    alarm.evaluate = [&](const ConditionContext&) { return world_alarm; };
    alarm.recheck_interval = Duration(200'000);  // 200 ms = 4 ticks of 50 ms
    registry.add_condition("Alarm", alarm);
    registry.add_action("Flee", test::running_action());
    registry.add_action("Idle", test::running_action());
    const Tree tree = TreeBuilder("world", registry)
                          .active_selector()
                              .sequence().condition("Alarm").action("Flee").back()
                              .action("Idle")
                          .back()
                          .end();
    test::in_both_modes([&](Mode mode) {
        world_alarm = false;
        TraceRecorder rec;
        Agent agent(tree, {.mode = mode, .listener = &rec});
        agent.tick(50ms);  // tick 0 at 50 ms: Idle
        agent.tick(50ms);  // tick 1 at 100 ms
        world_alarm = true;
        agent.tick(50ms);  // tick 2 at 150 ms: polling notices at once
        agent.tick(50ms);  // tick 3 at 200 ms: the first re-check is due in event mode
        CHECK(rec.tick(0) == "0:I 4:I 4:U");
        if (mode == Mode::Polling) {
            CHECK(rec.tick(2) == "4:T(Aborted) 1:I 3:I 3:U");
        } else {
            CHECK(rec.tick(2) == "4:U");
            CHECK(rec.tick(3) == "4:T(Aborted) 1:I 3:I 3:U");
        }
    });
}

// ---- issue 9: a Self guard is checked at the guarded node's own position --------------------------------

namespace {

/// An action that stays Running and writes `k = true` on its second update.
ActionSpec writes_k_on_second_update() {
    ActionSpec s;
    s.memory_bytes = sizeof(int);
    s.ports = {port<bool>("k")};
    s.update = [](ActionContext& ctx) {
        if (++ctx.memory<int>() == 2) ctx.out<bool>(0, true);
        return Status::Running;
    };
    return s;
}

}  // namespace

TEST_CASE("a Monitor's own guard reacts at the Monitor, in the tick an earlier sibling turns it false") {
    // 0 Parallel(RequireAll, RequireOne), 1 W, 2 Monitor, 3 !k, 4 B
    const Tree tree = TreeBuilder("monitor-race")
                          .key<bool>("k", false)
                          .parallel(Policy::RequireAll, Policy::RequireOne)
                              .action("W", writes_k_on_second_update())
                              .monitor(Policy::RequireAll, Policy::RequireOne)
                                  .check("k", false)
                                  .action("B", test::running_action())
                              .back()
                          .back()
                          .end();
    test::in_both_modes(tree, [&](Run& r) {
        r.tick(100ms);
        r.tick(100ms);
        CHECK(r.rec.tick(0) == "0:I 1:I 1:U 2:I 4:I 4:U");
        // W writes k in its update; the walk reaches the Monitor after it and cuts B before B updates.
        CHECK(r.rec.tick(1) == "1:U 4:T(Aborted) 2:T(Failure) 1:T(Aborted) 0:T(Failure)");
    });
}

TEST_CASE("a ReactiveSequence's leading conditions and a Self precondition react at their node, in the same tick") {
    // 0 Parallel(RequireAll, RequireOne), 1 W, 2 ReactiveSequence, 3 !k, 4 B
    const Tree reactive = TreeBuilder("reactive-race")
                              .key<bool>("k", false)
                              .parallel(Policy::RequireAll, Policy::RequireOne)
                                  .action("W", writes_k_on_second_update())
                                  .reactive_sequence()
                                      .check("k", false)
                                      .action("B", test::running_action())
                                  .back()
                              .back()
                              .end();
    // 0 Parallel(RequireAll, RequireOne), 1 W, 2 B [precondition !k, abort Self]
    const Tree leaf = TreeBuilder("leaf-race")
                          .key<bool>("k", false)
                          .parallel(Policy::RequireAll, Policy::RequireOne)
                              .action("W", writes_k_on_second_update())
                              .action("B", test::running_action()).precondition(Predicate::is("k", false)).abort(AbortMode::Self)
                          .back()
                          .end();
    test::in_both_modes([&](Mode mode) {
        TraceRecorder rec_reactive, rec_leaf;
        Agent a(reactive, {.mode = mode, .listener = &rec_reactive});
        Agent b(leaf, {.mode = mode, .listener = &rec_leaf});
        for (int i = 0; i < 2; ++i) {
            a.tick(100ms);
            b.tick(100ms);
        }
        CHECK(rec_reactive.tick(0) == "0:I 1:I 1:U 2:I 4:I 4:U");
        CHECK(rec_reactive.tick(1) == "1:U 4:T(Aborted) 2:T(Failure) 1:T(Aborted) 0:T(Failure)");
        CHECK(rec_leaf.tick(0) == "0:I 1:I 1:U 2:I 2:U");
        CHECK(rec_leaf.tick(1) == "1:U 2:T(Failure) 1:T(Aborted) 0:T(Failure)");
    });
}

TEST_CASE("a Self cut of a parallel's later child comes at that child's place in pre-order") {
    // 0 Parallel(RequireAll, RequireAll), 1 A, 2 B [precondition k, abort Self]
    const Tree tree = TreeBuilder("self-order")
                          .key<bool>("k", true)
                          .parallel(Policy::RequireAll, Policy::RequireAll)
                              .action("A", test::running_action())
                              .action("B", test::running_action()).precondition(Predicate::is("k")).abort(AbortMode::Self)
                          .back()
                          .end();
    test::in_both_modes(tree, [&](Run& r) {
        r.tick(100ms);
        r.agent.blackboard().set("k", false);
        r.tick(100ms);
        r.tick(100ms);
        CHECK(r.rec.tick(0) == "0:I 1:I 1:U 2:I 2:U");
        CHECK(r.rec.tick(1) == "1:U 2:T(Failure)");  // A is updated before the walk reaches B
        CHECK(r.rec.tick(2) == "1:U");
    });
}

TEST_CASE("a write by a listener on a guard's entry evaluation is seen by that guard once its node runs, in both modes") {
    // 0 Sequence [precondition k, abort Self], 1 A (running). The listener turns k false while the
    // guard's entry evaluation (true) is being reported: the guard is live from the node's entry on,
    // and its last value is stale, so it is re-checked at its position on the next tick.
    struct WritingListener : TraceRecorder {
        Agent* agent = nullptr;
        bool written = false;
        void on_event(const TraceEvent& e) override {
            TraceRecorder::on_event(e);
            if (e.kind == TraceKind::GuardEvaluated && e.node == 0 && e.result && !written) {
                written = true;
                agent->blackboard().set("k", false);
            }
        }
    };
    const Tree tree = TreeBuilder("listener-write")
                          .key<bool>("k", true)
                          .sequence().precondition(Predicate::is("k")).abort(AbortMode::Self)
                              .action("A", test::running_action())
                          .back()
                          .end();
    test::in_both_modes([&](Mode mode) {
        WritingListener rec;
        Agent agent(tree, {.mode = mode, .listener = &rec});
        rec.agent = &agent;
        agent.tick(100ms);
        agent.tick(100ms);
        CHECK(rec.all(0) == "0:G(true) 0:I 1:I 1:U");
        CHECK(rec.all(1) == "0:G(false) 1:T(Aborted) 0:T(Failure)");
    });
}
