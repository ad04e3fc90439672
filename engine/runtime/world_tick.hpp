// Runtime::world_tick: a World's tick of one agent, with the lean path of the quiet event-mode tick.
//
// Inline, and included only by engine/world/world.cpp: World::tick_agent (the single-threaded loop's
// step and the parallel tasks' tick) has it in its own body, so that a quiet agent-frame pays no call
// into the engine and no second set of saved registers (docs/benchmarks.md, "The quiet tick's
// instructions, second pass"). Everything that is not the quiet tick goes to out-of-line functions of
// agent.cpp and the runtime.
#pragma once

#include "runtime/runtime.hpp"

#include <ebt/limits.hpp>

namespace ebt::detail {

// Most ticks of a quiet event-mode world find the agent's queue holding its one running action and
// the end-of-frame marker, no deadline due, and an update that returns Running and changes nothing:
// "update this running leaf again". For that tick the general path (tick_numbered -> event_tick ->
// single_entry_tick -> run_update) builds a Runtime and re-checks what the World guarantees at every
// level. This path reads only what that tick needs and leaves every counter, clock, queue entry and
// flag as the general path would; whatever else happens goes on through the general path's own
// functions from the same point:
//   - before anything changes, a tick that tick_numbered would refuse goes to tick_numbered, which
//     throws the same UsageError; any other tick that is not such a tick goes to
//     Runtime::checked_tick (tick_numbered less its checks, which have passed), or for a queued node
//     with work other than an update (a move's two ticks) to Runtime::single_work_tick;
//   - after the update, anything but "Running, nothing else changed" (the update threw, returned
//     another status, suspended, queued work, asked for an abort, or a trace listener is now set)
//     goes on in a Runtime from the update's return (finish_world_update: finish_update,
//     single_update_done, event_loop, finish_tick, as single_entry_tick and tick_numbered would).
// It repeats the general path's bookkeeping for that one case: a change to what a tick, a pop or an
// update counts or sets must be made here too (tests/differential_test.cpp's World test compares the
// two after every frame and fails otherwise). Only the frame's counts of a quiet tick (one agent
// stepped, one event handled, one behavior updated) are left to the caller, which adds them when it
// returns true (World's count_quiet_ticks: the serial loop adds all of its frame's at once).
inline bool Runtime::world_tick(Agent& agent, std::uint64_t tick, Duration dt, FrameMetrics& frame) {
    Agent& a = agent;
    // First what tick_numbered refuses (it throws the UsageError), then one test each for what the
    // lean path does not do; those ticks go to the general path without its checks made again. An
    // agent with a trace listener (its own, or its World's forwarder) always takes the general path,
    // which reports every event; dt < next_deadline_ - clock_ keeps the deadlines out of the tick
    // (the general path's collect_due_timers).
    if (!a.block_ || a.in_tick_ || tick < a.ticks_ || dt.count() < 0 ||
        dt.count() > limits::kMaxClockMicroseconds - a.clock_) [[unlikely]] {
        a.tick_numbered(tick, dt, &frame);
        return false;
    }
    // The clock after this tick: the test above keeps it within the clock's limit (no overflow), so
    // "dt < next_deadline_ - clock_" is "clock_after < next_deadline_".
    const TimePoint clock_after = a.clock_ + dt.count();
    if (a.mode_ != Mode::Event || a.listener_ || a.stopped_ || a.queue_size_ != 2 ||
        clock_after >= a.next_deadline_) [[unlikely]] {
        checked_tick(a, tick, dt, &frame);
        return false;
    }
    const TreeData& t = EngineAccess::tree_data(a.tree_);
    std::byte* const b = reinterpret_cast<std::byte*>(a.block_.get());
    const std::uint16_t* const q = reinterpret_cast<const std::uint16_t*>(b + t.layout.queue_offset);
    const std::uint16_t head = a.queue_head_;
    const NodeIndex n = q[head];
    if (n == kQueueMarker) [[unlikely]] {
        checked_tick(a, tick, dt, &frame);
        return false;
    }
    std::uint16_t& flags = reinterpret_cast<std::uint16_t*>(b + t.layout.flags_offset)[n];
    const ActionCall& call = t.action_calls[n];
    // A queued action with no work pending but its update is running (the scheduler's invariants: a
    // queued node is entitled to be, validation.cpp), so its status is not read: a quiet tick reads the
    // leaf's flags and the queue, side by side in the block (docs/benchmarks.md, "The wide tree's hot line").
    if ((flags & kPendingWork) != 0 || call.spec == nullptr) [[unlikely]] {  // (a node that is not an action has no spec)
        single_work_tick(a, tick, dt, frame);  // a move's two ticks (h-moves3)
        return false;
    }
#if defined(EBT_VALIDATE)
    if (reinterpret_cast<const Status*>(b + t.layout.status_offset)[n] != Status::Running)
        Runtime(a).report_broken("the agent's last operation", "node " + std::to_string(n) +
                                                                    " is queued with no work pending but is not running");
#endif
    // From here on the state is what the general path leaves when it calls the update: the tick
    // begun (tick_numbered), n popped and counted as visited (single_entry_tick).
    TickScope scope(a.in_tick_);
    a.ticks_ = tick;
    a.clock_ = clock_after;
    a.walk_pos_ = n;
    a.queue_head_ = static_cast<std::uint16_t>(head + 1u == t.layout.queue_capacity ? 0u : head + 1u);
    a.queue_size_ = 1;
    flags = static_cast<std::uint16_t>(flags & ~kQueued);
    ++a.stats_.nodes_visited;  // (the frame's events_handled: by the caller or finish_world_update)
    // The update, with the context the general path gives it.
    ActionContext ctx = make_action_context(a, call, n, dt);
    Status s = Status::Failure;
    try {
        s = call.spec->update(ctx);
    } catch (...) {
        keep_world_update_error();  // for finish_world_update, below
    }
    // (An update that threw left s at Failure: "Running" also says it returned.)
    if (s == Status::Running && !a.listener_ && !a.abort_requested_ &&
        (flags & (kSuspended | kQueued)) == 0 && a.queue_size_ == 1) [[likely]] {
        // Running and nothing else changed: counted as run_update counts; the queue put back as
        // single_update_done puts it back; the tick ended as finish_tick ends it (no abort is due:
        // finish_lean_tick, shared with the lean end of a move, runtime/move_ticks.hpp).
        ++a.stats_.updates;  // (the frame's behaviors_updated: by the caller)
        a.queue_head_ = head;
        a.queue_size_ = 2;
        flags = static_cast<std::uint16_t>(flags | kQueued);
        finish_lean_tick(a);
        return true;
    }
    finish_world_update(a, n, head, s, dt, frame);  // anything else (a thrown exception included)
    return false;
}

}  // namespace ebt::detail
