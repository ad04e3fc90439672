// Runtime::world_end_move_tick and Runtime::world_restart_tick: a World's two ticks of a latent move,
// entered straight from the World's loops when the slot's hint (World::move_hints_) says which one is
// due, and end_resumed_run's body, which the first of them shares with the general path.
//
// A move through a World takes two ticks: the one that ends the resumed action (and the root's run
// with it) in the frame it is resumed, and the root's restart with the next move's start in the frame
// after (docs/semantics.md, "A completed move"). Through world_tick, which of the two is due is known
// only at the end of a chain of loads (slot, agent, block, queue, flags), too late for the branch that
// decides it (docs/benchmarks.md, "A move through a World, fifth pass: the step"). The World keeps a
// hint per slot instead, read with its awake bits, and calls the entry the hint names. A hint is only
// a guess: each entry checks everything the general path's choice depends on and returns false, with
// nothing changed, when the tick is not the one it does; the World then ticks through world_tick.
// So a wrong or stale hint costs time, never behaviour. Inline, and included by engine/world/world.cpp
// (the loops) and engine/runtime/semantics.cpp (end_resumed_run).
#pragma once

#include "runtime/runtime.hpp"

#include <ebt/limits.hpp>

namespace ebt::detail {

inline NodeIndex Runtime::move_tick_node(const Agent& a, std::uint64_t tick, Duration dt, TimePoint& clock_after) {
    // world_tick's tests, in its order: what tick_numbered refuses, then what sends a tick to
    // checked_tick; a tick that fails one is not a move tick of this kind (world_tick does it).
    if (!a.block_ || a.in_tick_ || tick < a.ticks_ || dt.count() < 0 ||
        dt.count() > limits::kMaxClockMicroseconds - a.clock_)
        return kQueueMarker;
    clock_after = a.clock_ + dt.count();
    if (a.mode_ != Mode::Event || a.listener_ || a.stopped_ || a.queue_size_ != 2 || clock_after >= a.next_deadline_)
        return kQueueMarker;
    const TreeData& t = EngineAccess::tree_data(a.tree_);
    const auto* q = reinterpret_cast<const std::uint16_t*>(reinterpret_cast<const std::byte*>(a.block_.get()) +
                                                           t.layout.queue_offset);
    return q[a.queue_head_];  // (the marker when the queue's one entry is the marker: not a move tick)
}

inline void Runtime::end_resumed_run_in(Agent& a, const TreeData& t, std::uint16_t* flags, Status* statuses,
                                        std::uint16_t* q, NodeIndex n) {
    // finish_resume(n) -> complete(n) -> terminate(n) and child_done(parent) -> complete(parent) -> ...
    // up to root_done(Success): every node of the chain ends Success (terminate's flags), nothing
    // else changes (no onTerminate, no Cooldown, nothing of the chain queued: n was the queue's one
    // entry).
    constexpr auto kKept = static_cast<std::uint16_t>(kGuardPrev | kGuardDirty | kCooldownArmed);
    for (NodeIndex x = n; x != kNoNode; x = t.nodes[x].parent) {
        flags[x] = static_cast<std::uint16_t>(flags[x] & kKept);
        statuses[x] = Status::Success;
    }
    // The queue holds the marker alone (n was popped). root_done queues the restart behind it, then
    // the loop pops the marker and puts it back at the end.
    const std::uint32_t capacity = t.layout.queue_capacity;
    const auto slot_after = [capacity](std::uint32_t at) { return at + 1 >= capacity ? at + 1 - capacity : at + 1; };
    const std::uint32_t behind_marker = slot_after(a.queue_head_);
    if (a.restart_on_end_) {
        flags[0] = static_cast<std::uint16_t>(flags[0] | kStartPending | kQueued);
        q[behind_marker] = 0;
        a.queue_head_ = static_cast<std::uint16_t>(behind_marker);
        q[slot_after(behind_marker)] = kQueueMarker;
        a.queue_size_ = 2;
    } else {
        a.stopped_ = true;
        a.queue_head_ = static_cast<std::uint16_t>(behind_marker);
        q[behind_marker] = kQueueMarker;
        a.queue_size_ = 1;
    }
}

inline bool Runtime::world_end_move_tick(Agent& a, std::uint64_t tick, Duration dt, FrameMetrics& frame) {
    TimePoint clock_after = 0;
    const NodeIndex n = move_tick_node(a, tick, dt, clock_after);
    if (n == kQueueMarker) return false;
    const TreeData& t = EngineAccess::tree_data(a.tree_);
    std::byte* const b = reinterpret_cast<std::byte*>(a.block_.get());
    auto* const flags = reinterpret_cast<std::uint16_t*>(b + t.layout.flags_offset);
    auto* const statuses = reinterpret_cast<Status*>(b + t.layout.status_offset);
    // entry_work's test for end_resumed_run (its work is exactly "resume pending" on a suspended
    // action), with the listener and stopped_ tested above.
    constexpr auto kResumedWithSuccess = static_cast<std::uint16_t>(kResumePending | kSuspended | kResumeSuccess);
    const NodeDef& def = t.nodes[n];
    if ((flags[n] & (kPendingWork | kResumeSuccess)) != kResumedWithSuccess || def.kind != NodeKind::Action ||
        !def.success_ends_root || statuses[n] != Status::Running || a.abort_requested_ ||
        t.action_calls[n].spec->on_terminate)
        return false;
    // single_work_tick from here: the tick begun, n popped and counted as visited. No user code runs in
    // this tick (end_resumed_run calls none), so it needs no TickScope: nothing could see in_tick_.
    a.ticks_ = tick;
    a.clock_ = clock_after;
    auto* const q = reinterpret_cast<std::uint16_t*>(b + t.layout.queue_offset);
    const std::uint32_t head = a.queue_head_ + 1u;
    a.queue_head_ = static_cast<std::uint16_t>(head == t.layout.queue_capacity ? 0u : head);
    a.queue_size_ = 1;
    flags[n] = static_cast<std::uint16_t>(flags[n] & ~kQueued);
    a.walk_pos_ = n;
    ++a.stats_.nodes_visited;
    ++frame.events_handled;
    end_resumed_run_in(a, t, flags, statuses, q, n);
    // finish_tick (no abort can be due: none was asked for, and no user code ran).
    a.walk_pos_ = -1;
    ++a.ticks_;
#if defined(EBT_VALIDATE)
    Runtime(a).check_invariants("a tick");
#endif
    return true;
}

inline bool Runtime::world_restart_tick(Agent& a, std::uint64_t tick, Duration dt, FrameMetrics& frame,
                                       AgentHandle in_world) {
    TimePoint clock_after = 0;
    if (move_tick_node(a, tick, dt, clock_after) != 0) return false;  // (the root, or not this tick)
    const TreeData& t = EngineAccess::tree_data(a.tree_);
    const auto* flags = reinterpret_cast<const std::uint16_t*>(reinterpret_cast<const std::byte*>(a.block_.get()) +
                                                               t.layout.flags_offset);
    // The work single_work_tick would hand to entry_work (which then tries restart_root_plainly).
    if ((flags[0] & kPendingWork) != kStartPending) return false;
    restart_tick_checked(a, tick, clock_after, dt, frame, in_world);
    return true;
}

}  // namespace ebt::detail
