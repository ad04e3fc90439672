// The walk rule of docs/semantics.md: what happens in which order within a tick, in both modes.
#include "support/trace_recorder.hpp"

using namespace ebt;
using namespace std::chrono_literals;
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
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        TraceRecorder rec;
        Agent agent(hungry_tree(), {.mode = mode, .listener = &rec});
        agent.tick(100ms);
        agent.tick(100ms);
        agent.blackboard().set("hungry", true);
        agent.tick(100ms);
        agent.tick(100ms);
        agent.tick(100ms);
        CHECK(rec.tick(0) == "0:I 4:I 4:U");
        CHECK(rec.tick(1) == "4:U");
        CHECK(rec.tick(2) == "4:T(Aborted) 1:I 3:I 3:U");
        CHECK(rec.tick(3) == "3:U 3:T(Success) 1:T(Success) 0:T(Success)");
        CHECK(rec.tick(4) == "0:I 4:I 4:U");
    }
}

TEST_CASE("worked example: event mode evaluates no guard while nothing changes") {
    TraceRecorder poll_rec, event_rec;
    Agent poll(hungry_tree(), {.mode = Mode::Polling, .listener = &poll_rec});
    Agent event(hungry_tree(), {.mode = Mode::Event, .listener = &event_rec});
    for (int i = 0; i < 2; ++i) {
        poll.tick(100ms);
        event.tick(100ms);
    }
    // tick 1: polling re-checks guard 1 (false -> false, no edge); event mode evaluates nothing
    // beyond the one re-check that makes the guard live.
    CHECK(poll_rec.all(1) == "1:G(false) 4:U");
    CHECK(event_rec.all(1) == "1:G(false) 4:U");
    poll.tick(100ms);
    event.tick(100ms);
    CHECK(poll_rec.all(2) == "1:G(false) 4:U");
    CHECK(event_rec.all(2) == "4:U");
}
