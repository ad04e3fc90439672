// The seeds' guard scenario as a frame-by-frame trace, in both modes: patrol; enemy seen -> patrol
// aborted, attack; health low while attacking -> attack aborted, run away; healed -> the run ends and
// restarts into the attack; enemy dead -> attack stops, patrol.
#include "guard_scenario.hpp"
#include "support/guard_tree_text.hpp"
#include "support/trace_recorder.hpp"

using namespace ebt;
using namespace std::chrono_literals;

namespace {

/// The scenario's 12 frames of 50 ms: enemy seen before frame 3, health low before 5 and fine again
/// before 7, enemy dead before 10.
void play_scenario(Agent& guard) {
    auto& bb = guard.blackboard();
    for (int frame = 0; frame < 12; ++frame) {
        if (frame == 3) bb.set(scenarios::kEnemySeen, true);
        if (frame == 5) bb.set(scenarios::kHealthLow, true);
        if (frame == 7) bb.set(scenarios::kHealthLow, false);
        if (frame == 10) bb.set(scenarios::kEnemyDead, true);
        guard.tick(50ms);
    }
}

}  // namespace

TEST_CASE("guard scenario: frame-by-frame trace in both modes") {
    Registry registry;
    scenarios::register_guard_actions(registry);
    const Tree tree = scenarios::guard_tree(registry);
    REQUIRE(tree.size() == 11);
    CHECK(tree.describe() == test::kGuardTreeDescribed);

    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        test::TraceRecorder rec;
        Agent guard(tree, {.mode = mode, .listener = &rec});
        play_scenario(guard);
        CHECK(rec.tick(0) == "0:I 10:I 10:U");
        CHECK(rec.tick(1) == "10:U");
        CHECK(rec.tick(2) == "10:U");
        CHECK(rec.tick(3) == "10:T(Aborted) 1:I 3:I 7:I 9:I 9:U");
        CHECK(rec.tick(4) == "9:U");
        CHECK(rec.tick(5) == "9:T(Aborted) 7:T(Aborted) 4:I 6:I 6:U");
        CHECK(rec.tick(6) == "6:U");
        CHECK(rec.tick(7) == "6:U 6:T(Success) 4:T(Success) 3:T(Success) 1:T(Success) 0:T(Success)");
        CHECK(rec.tick(8) == "0:I 1:I 3:I 7:I 9:I 9:U");
        CHECK(rec.tick(9) == "9:U");
        CHECK(rec.tick(10) == "9:T(Aborted) 7:T(Failure) 3:T(Failure) 1:T(Failure) 10:I 10:U");
        CHECK(rec.tick(11) == "10:U");
        CHECK(guard.status() == Status::Running);
        CHECK(guard.status(10) == Status::Running);
        CHECK(guard.status(7) == Status::Failure);
        CHECK(guard.status(9) == Status::Aborted);
    }
}

TEST_CASE("guard scenario: a quiet event-mode agent evaluates no guard") {
    Registry registry;
    scenarios::register_guard_actions(registry);
    const Tree tree = scenarios::guard_tree(registry);
    Agent poll(tree, {.mode = Mode::Polling});
    Agent event(tree, {.mode = Mode::Event});
    for (int i = 0; i < 3; ++i) {
        poll.tick(50ms);
        event.tick(50ms);
    }
    const auto poll_before = poll.stats().guards_evaluated, event_before = event.stats().guards_evaluated;
    for (int i = 0; i < 100; ++i) {
        poll.tick(50ms);
        event.tick(50ms);
    }
    CHECK(poll.stats().guards_evaluated - poll_before == 100);  // guard 1 re-checked every frame
    CHECK(event.stats().guards_evaluated - event_before == 0);
    CHECK(event.stats().updates == poll.stats().updates);       // Patrol updated every frame in both
}

namespace {

/// The guard and condition evaluations of one tick, space separated ("1:G(false) 7:G(true)").
std::string evaluations(const test::TraceRecorder& rec, std::uint64_t tick) {
    std::string out;
    for (const auto& en : rec.entries) {
        if (en.event.tick != tick) continue;
        if (en.event.kind != TraceKind::GuardEvaluated && en.event.kind != TraceKind::ConditionEvaluated) continue;
        if (!out.empty()) out += ' ';
        out += test::TraceRecorder::render(en.event);
    }
    return out;
}

}  // namespace

TEST_CASE("guard scenario: event mode evaluates a guard on entry and when a key it reads changes, never else") {
    Registry registry;
    scenarios::register_guard_actions(registry);
    const Tree tree = scenarios::guard_tree(registry);
    test::TraceRecorder rec;
    Agent guard(tree, {.mode = Mode::Event, .listener = &rec});
    play_scenario(guard);
    const std::vector<std::string> expected = {
        "1:G(false)",                        // 0: entry: enemy_seen false, Patrol runs
        "",                                  // 1: guard 1 is live, but was evaluated on entry: no re-check
        "",                                  // 2
        "1:G(true) 4:G(false) 7:G(true)",    // 3: enemy_seen wakes guard 1 (switch); entry of 3 evaluates 4 and 7
        "",                                  // 4: guard 4 is live, but was evaluated on entry one tick earlier
        "4:G(true)",                         // 5: health_low wakes guard 4 (switch to Runaway)
        "",                                  // 6
        "",                                  // 7: health_low changes while guard 4 is not live; Runaway ends the run
        "1:G(true) 4:G(false) 7:G(true)",    // 8: the tree restarts: entry evaluations
        "",                                  // 9
        "7:G(false)",                        // 10: enemy_dead wakes the Monitor's guard at the Monitor (cut, Patrol)
        "",                                  // 11: guard 1 is live again, unchanged since tick 8: no re-check
    };
    for (std::size_t tick = 0; tick < expected.size(); ++tick) {
        CAPTURE(tick);
        CHECK(evaluations(rec, tick) == expected[tick]);
    }
    CHECK(guard.stats().guards_evaluated == 9);
}
