// The assert hook (include/ebt/assert.hpp) and the scheduler's invariant checks (engine/runtime/
// validation.cpp). White-box: these tests reach into an agent's state block through the private
// Runtime, break one invariant on purpose and check that the hook reports it with a clear message.
// Runtime::validate() exists in every build; the automatic checks after each tick and the checks of
// every state-block access only in a build with EBT_VALIDATE=ON (those cases say so and are skipped
// otherwise).
#include "runtime/runtime.hpp"
#include "support/trace_recorder.hpp"

#include <ebt/assert.hpp>

#include <stdexcept>
#include <string>
#include <vector>

using namespace ebt;
using namespace std::chrono_literals;

namespace {

/// What the throwing test handler throws: the failure, as text.
struct AssertionThrown : std::runtime_error {
    using std::runtime_error::runtime_error;
};

void throwing_handler(const AssertionFailure& f) { throw AssertionThrown(std::string(f.message)); }

AssertionFailure last_failure;
std::string last_message;
int failures_seen = 0;
void recording_handler(const AssertionFailure& f) {
    last_message = std::string(f.message);
    last_failure = f;
    last_failure.message = last_message;
    ++failures_seen;
}

/// Installs a handler for the scope of a test and puts the previous one back.
struct HandlerScope {
    AssertHandler previous;
    explicit HandlerScope(AssertHandler h) : previous(set_assert_handler(h)) {}
    ~HandlerScope() { set_assert_handler(previous); }
};

/// 0 Sequence, 1 Wait(1 s), 2 Patrol (runs forever), 3 Guard (runs forever); key "flag".
Tree patrol_tree() {
    return TreeBuilder("patrol")
        .key<bool>("flag")
        .sequence()
            .wait(1s)
            .action("Patrol", test::running_action())
            .action("Guard", test::running_action())
        .back()
        .end();
}

/// Event agent whose Patrol (node 2) runs: the queue is [2, marker].
Agent patrolling_agent() {
    Agent agent(patrol_tree(), {.mode = Mode::Event});
    agent.tick(1s);
    agent.tick(1s);  // the wait ends, Patrol starts
    REQUIRE(agent.status(2) == Status::Running);
    return agent;
}

std::string validate(Agent& agent) {
    const HandlerScope scope(&throwing_handler);
    try {
        detail::Runtime(agent).validate("the test's change");
    } catch (const AssertionThrown& e) {
        return e.what();
    }
    return "";
}

}  // namespace

// ---- the hook ----------------------------------------------------------------------------------------------

TEST_CASE("assert hook: the default is installed; set_assert_handler returns the previous one") {
    // (function pointers compared outside CHECK: doctest cannot print them)
    CHECK(static_cast<bool>(assert_handler() == &default_assert_handler));
    const AssertHandler before = set_assert_handler(&recording_handler);
    CHECK(static_cast<bool>(before == &default_assert_handler));
    CHECK(static_cast<bool>(assert_handler() == &recording_handler));
    const AssertHandler replaced = set_assert_handler(nullptr);  // nullptr: back to the default
    CHECK(static_cast<bool>(replaced == &recording_handler));
    CHECK(static_cast<bool>(assert_handler() == &default_assert_handler));
}

TEST_CASE("assert hook: a failed check reaches the installed handler with its condition, message and place") {
    const HandlerScope scope(&recording_handler);
    failures_seen = 0;
    detail::assertion_failed("a < b", "a is " + std::to_string(3), "engine/x.cpp", 42);
    CHECK(failures_seen == 1);
    CHECK(last_failure.condition == "a < b");
    CHECK(last_failure.message == "a is 3");
    CHECK(std::string(last_failure.file) == "engine/x.cpp");
    CHECK(last_failure.line == 42);
#if EBT_ASSERTS
    // The macro evaluates its message only on failure.
    int evaluated = 0;
    const auto message = [&] {
        ++evaluated;
        return std::string("broken");
    };
    EBT_ASSERT(1 + 1 == 2, message());
    CHECK(evaluated == 0);
    CHECK(failures_seen == 1);
    EBT_ASSERT(1 + 1 == 3, message());
    CHECK(evaluated == 1);
    CHECK(failures_seen == 2);
    CHECK(last_failure.condition == "1 + 1 == 3");
    CHECK(last_failure.message == "broken");
#endif
}

TEST_CASE("assert hook: a throwing handler's exception leaves the check") {
    const HandlerScope scope(&throwing_handler);
    CHECK_THROWS_WITH_AS(detail::assertion_failed("x", "it broke", __FILE__, __LINE__), "it broke", AssertionThrown);
}

// ---- a healthy agent passes ----------------------------------------------------------------------------------

TEST_CASE("validation: a healthy agent passes in both modes at every step") {
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Agent agent(patrol_tree(), {.mode = mode});
        CHECK(validate(agent) == "");
        for (int i = 0; i < 4; ++i) {
            agent.tick(400ms);
            CHECK(validate(agent) == "");
        }
        agent.blackboard().set("flag", true);
        CHECK(validate(agent) == "");
        agent.abort();
        CHECK(validate(agent) == "");
    }
}

// ---- each invariant, broken on purpose ---------------------------------------------------------------------

TEST_CASE("validation: queue out of tree order") {
    Agent agent = patrolling_agent();
    detail::Runtime rt(agent);
    rt.set(3, detail::kStartPending);  // node 3 entitled to be queued, then put in front of node 2
    rt.set(3, detail::kQueued);
    rt.queue_insert(0, 3);  // [3, 2, marker]
    CHECK(validate(agent) == "scheduler invariant broken after the test's change (tree 'patrol', agent " +
                                 std::to_string(agent.serial()) +
                                 "): queue out of tree order: entry 1 is node 2 (Patrol), after node 3");
    rt.queue_remove_at(0);  // put it right for the destructor
    rt.clear(3, detail::kQueued | detail::kStartPending);
    CHECK(validate(agent) == "");
}

TEST_CASE("validation: a queued node without work") {
    Agent agent = patrolling_agent();
    detail::Runtime rt(agent);
    rt.set(3, detail::kQueued);
    rt.queue_insert(1, 3);  // [2, 3, marker]: node 3 has not started and has nothing pending
    CHECK(validate(agent) == "scheduler invariant broken after the test's change (tree 'patrol', agent " +
                                 std::to_string(agent.serial()) +
                                 "): node 3 (Guard) is queued without work (status Invalid, flags 0x0001)");
    rt.queue_remove_at(1);
    rt.clear(3, detail::kQueued);
}

TEST_CASE("validation: a running action left out of the queue, and the end-of-frame marker") {
    Agent agent = patrolling_agent();
    detail::Runtime rt(agent);
    const std::string prefix = "scheduler invariant broken after the test's change (tree 'patrol', agent " +
                               std::to_string(agent.serial()) + "): ";
    rt.dequeue(2);  // [marker]
    CHECK(validate(agent) ==
          prefix + "node 2 (Patrol) is a running action, not suspended, but not queued: it would get no update");
    rt.enqueue(2);  // [2, marker]: whole again
    CHECK(validate(agent) == "");
    rt.queue_insert(0, detail::kQueueMarker);  // [marker, 2, marker]
    CHECK(validate(agent) == prefix + "the queue holds 2 end-of-frame markers (must be 1)");
    rt.queue_remove_at(0);
    rt.queue_remove_at(1);  // [2]
    rt.queue_insert(0, detail::kQueueMarker);  // [marker, 2]
    CHECK(validate(agent) == prefix + "the end-of-frame marker is not the last queue entry between ticks");
    rt.queue_remove_at(0);
    rt.queue_insert(1, detail::kQueueMarker);
    CHECK(validate(agent) == "");
}

TEST_CASE("validation: queue size bounds, marks without entries, walk position and deadlines") {
    Agent agent = patrolling_agent();
    detail::Runtime rt(agent);
    const std::string prefix = "scheduler invariant broken after the test's change (tree 'patrol', agent " +
                               std::to_string(agent.serial()) + "): ";
    rt.queue_remove_at(0);
    rt.queue_remove_at(0);  // nothing left, not even the marker
    CHECK(validate(agent) == prefix + "queue size 0 is outside [1, 5] (the end-of-frame marker and at most one entry per node)");
    rt.queue_insert(0, detail::kQueueMarker);
    rt.queue_insert(0, 2);
    CHECK(validate(agent) == "");

    rt.set(3, detail::kQueued);  // marked, but not in the queue
    CHECK(validate(agent) == prefix + "2 nodes are marked queued, but the queue holds 1");
    rt.clear(3, detail::kQueued);

    rt.advance(3);  // as if a walk had reached node 3, between ticks
    CHECK(validate(agent) == prefix + "walk position is 3 between ticks (must be -1)");
    agent.tick(10ms);  // a tick starts and ends at -1
    CHECK(validate(agent) == "");

    Agent waiting(patrol_tree(), {.mode = Mode::Event});
    waiting.tick(100ms);  // the Wait (node 1) is armed until 1 s
    CHECK(waiting.next_deadline() == 1'100'000);
    detail::Runtime wrt(waiting);
    wrt.deadline(1) = 500'000;
    CHECK(validate(waiting) == "scheduler invariant broken after the test's change (tree 'patrol', agent " +
                                   std::to_string(waiting.serial()) +
                                   "): node 1 (Wait) has a deadline at 500000 us before the agent's next deadline "
                                   "1100000 us: it would be missed");
    wrt.deadline(1) = 1'100'000;
    CHECK(validate(waiting) == "");
}

// ---- EBT_VALIDATE: checked by the engine itself ---------------------------------------------------------------

TEST_CASE("validation build: a tick reports a broken invariant through the hook") {
    if (!validation_enabled()) {
        MESSAGE("skipped: ebt was built without EBT_VALIDATE");
        return;
    }
    Agent agent = patrolling_agent();
    detail::Runtime rt(agent);
    rt.dequeue(2);  // Patrol runs but will never be updated again
    {
        const HandlerScope scope(&throwing_handler);
        CHECK_THROWS_WITH_AS(agent.tick(10ms),
                             ("scheduler invariant broken after a tick (tree 'patrol', agent " +
                              std::to_string(agent.serial()) +
                              "): node 2 (Patrol) is a running action, not suspended, but not queued: it would get no "
                              "update")
                                 .c_str(),
                             AssertionThrown);
    }
    rt.enqueue(2);
    agent.tick(10ms);  // whole again: no report (the default handler would abort the test program)
    CHECK(agent.status(2) == Status::Running);
}

TEST_CASE("validation build: a write from outside a tick is checked") {
    if (!validation_enabled()) {
        MESSAGE("skipped: ebt was built without EBT_VALIDATE");
        return;
    }
    Agent agent = patrolling_agent();
    detail::Runtime rt(agent);
    rt.set(3, detail::kQueued);
    const HandlerScope scope(&recording_handler);
    failures_seen = 0;
    agent.blackboard().set("flag", true);
    CHECK(failures_seen == 1);
    CHECK(last_message == "scheduler invariant broken after a blackboard write (tree 'patrol', agent " +
                              std::to_string(agent.serial()) + "): 2 nodes are marked queued, but the queue holds 1");
    rt.clear(3, detail::kQueued);
}

TEST_CASE("validation build: state-block accesses out of bounds and a walk going backwards") {
    if (!validation_enabled()) {
        MESSAGE("skipped: ebt was built without EBT_VALIDATE");
        return;
    }
    Agent agent = patrolling_agent();
    detail::Runtime rt(agent);
    const HandlerScope scope(&throwing_handler);
    CHECK_THROWS_WITH_AS(rt.st(7), "state-block access out of bounds: node 7 of tree 'patrol' with 4 nodes",
                         AssertionThrown);
    // Layout: statuses 0-3, flags 4-11, queue 12-21, Sequence 22, Wait 24, Patrol 32, Guard 38-43.
    CHECK_THROWS_WITH_AS(rt.mem<std::uint64_t>(3),
                         "state-block access out of bounds: 8 bytes at offset 0 of node 3 (Guard)'s memory in tree "
                         "'patrol' (its memory is 6 bytes from byte 38)",
                         AssertionThrown);
    CHECK_NOTHROW(rt.mem<std::uint16_t>(3, 4));
    // Within the block but past the node's own memory (into Guard's): refused too.
    CHECK_THROWS_WITH_AS(rt.mem<std::uint16_t>(2, 6),
                         "state-block access out of bounds: 2 bytes at offset 6 of node 2 (Patrol)'s memory in tree "
                         "'patrol' (its memory is 6 bytes from byte 32)",
                         AssertionThrown);
    CHECK_THROWS_WITH_AS(rt.mem<std::uint16_t>(0, 2),
                         "state-block access out of bounds: 2 bytes at offset 2 of node 0 (Sequence)'s memory in tree "
                         "'patrol' (its memory is 2 bytes from byte 22)",
                         AssertionThrown);
    rt.advance(3);
    CHECK_THROWS_WITH_AS(rt.process(2),
                         "walk position: tree 'patrol' processes node 2 (Patrol) after the tick's walk reached node 3",
                         AssertionThrown);
    rt.set(2, detail::kQueued);  // process() had taken it off before the check
    agent.tick(10ms);
    CHECK(agent.status(2) == Status::Running);
}

std::vector<std::string> messages_seen;
void collecting_handler(const AssertionFailure& f) { messages_seen.emplace_back(f.message); }

TEST_CASE("validation build: a quiet tick checks that the queued action it updates without reading its status is running") {
    // The World's lean tick (Runtime::world_tick) and an agent's own (Runtime::single_entry_tick) do not
    // read the status of a queued action with no work pending: the scheduler's invariants make it
    // Running (docs/benchmarks.md, "The wide tree's hot line"). A validation build checks it there; here
    // Patrol's status is forged to Success while it stays queued, and the tick reports it first.
    if (!validation_enabled()) {
        MESSAGE("skipped: ebt was built without EBT_VALIDATE");
        return;
    }
    const auto expected = [](const Agent& agent) {
        return "scheduler invariant broken after the agent's last operation (tree 'patrol', agent " +
               std::to_string(agent.serial()) + "): node 2 is queued with no work pending but is not running";
    };
    SUBCASE("an agent's own tick") {
        Agent agent = patrolling_agent();
        detail::Runtime rt(agent);
        rt.st(2) = Status::Success;
        {
            const HandlerScope scope(&collecting_handler);
            messages_seen.clear();
            agent.tick(10ms);
        }
        REQUIRE(!messages_seen.empty());
        CHECK(messages_seen.front() == expected(agent));
        rt.st(2) = Status::Running;
        agent.tick(10ms);  // whole again: no report (the default handler would abort the test program)
    }
    SUBCASE("a World's tick") {
        World world;
        const AgentHandle h = world.spawn(patrol_tree());
        world.step(1s);
        world.step(1s);  // the wait ends, Patrol starts: the queue is [2, marker]
        Agent& agent = world.at(h);
        REQUIRE(agent.status(2) == Status::Running);
        detail::Runtime rt(agent);
        rt.st(2) = Status::Success;
        {
            const HandlerScope scope(&collecting_handler);
            messages_seen.clear();
            world.step(10ms);
        }
        REQUIRE(!messages_seen.empty());
        CHECK(messages_seen.front() == expected(agent));
        rt.st(2) = Status::Running;
        world.step(10ms);
    }
}
