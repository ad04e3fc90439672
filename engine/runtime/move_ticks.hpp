// Runtime::world_end_move_tick and Runtime::world_restart_tick: a World's two ticks of a latent move,
// entered straight from the World's loops when the slot's hint (World::SlotSchedule::move_hint) says
// which one is due, and end_resumed_run's body, which the first of them shares with the general path.
//
// A move through a World takes two ticks: the one that ends the resumed action (and the root's run
// with it) in the frame it is resumed, and the root's restart with the next move's start in the frame
// after (docs/semantics.md, "A completed move"). Through world_tick, which of the two is due is known
// only at the end of a chain of loads (slot, agent, block, queue, flags), too late for the branch that
// decides it (docs/benchmarks.md, "A move through a World, fifth pass: the step"). The World keeps a
// hint per slot instead, read with the slot's state, and calls the entry the hint names. A hint is
// only a guess: each entry checks everything the general path's choice depends on and declines, with
// nothing changed, when the tick is not the one it does; the World then ticks through world_tick.
// So a wrong or stale hint costs time, never behaviour. Inline, and included by engine/world/world.cpp
// (the loops) and engine/runtime/semantics.cpp (end_resumed_run).
#pragma once

#include "runtime/runtime.hpp"

#include <ebt/limits.hpp>

#include <bit>
#include <cstddef>
#include <cstring>

namespace ebt::detail {

/// The bytes of an Agent from queue_head_ to stopped_, in the Agent's order (Runtime::move_tick_node
/// reads them as one 8-byte word; its static_asserts hold the Agent to this order). The two images
/// below are what a move tick needs in them: any queue head, two queue entries, event mode, not in a
/// tick, no abort asked for, not stopped.
struct AgentQueueAndFlagBytes {
    std::uint16_t queue_head;
    std::uint16_t queue_size;
    std::uint8_t mode;
    std::uint8_t in_tick;
    std::uint8_t abort_requested;
    std::uint8_t stopped;
};
inline constexpr std::uint64_t kMoveTickBytesMask =
    std::bit_cast<std::uint64_t>(AgentQueueAndFlagBytes{0, 0xFFFF, 0xFF, 0xFF, 0xFF, 0xFF});
inline constexpr std::uint64_t kMoveTickBytesWanted = std::bit_cast<std::uint64_t>(
    AgentQueueAndFlagBytes{0, 2, static_cast<std::uint8_t>(Mode::Event), 0, 0, 0});

inline Runtime::MoveTickStart Runtime::move_tick_start(const Agent& a, std::uint64_t tick, Duration dt) {
    // world_tick's tests (what tick_numbered refuses, then what sends a tick to checked_tick), and
    // abort_requested_ (a move entry does not carry out an abort): a tick that fails one is not a move
    // tick of this kind (world_tick does it). Five of them (the queue's size, mode_, in_tick_,
    // abort_requested_, stopped_: adjacent bytes of the Agent) are one compare of the word that also
    // holds the queue's head.
    static_assert(sizeof(bool) == 1 && sizeof(Mode) == 1);
    static_assert(offsetof(Agent, queue_size_) - offsetof(Agent, queue_head_) == offsetof(AgentQueueAndFlagBytes, queue_size) &&
                  offsetof(Agent, mode_) - offsetof(Agent, queue_head_) == offsetof(AgentQueueAndFlagBytes, mode) &&
                  offsetof(Agent, in_tick_) - offsetof(Agent, queue_head_) == offsetof(AgentQueueAndFlagBytes, in_tick) &&
                  offsetof(Agent, abort_requested_) - offsetof(Agent, queue_head_) ==
                      offsetof(AgentQueueAndFlagBytes, abort_requested) &&
                  offsetof(Agent, stopped_) - offsetof(Agent, queue_head_) == offsetof(AgentQueueAndFlagBytes, stopped) &&
                  sizeof(AgentQueueAndFlagBytes) == 8);
    std::uint64_t bytes = 0;
    std::memcpy(&bytes, &a.queue_head_, sizeof bytes);  // (the static_assert above: 8 adjacent bytes of the Agent)
    if (!a.block_ || (bytes & kMoveTickBytesMask) != kMoveTickBytesWanted || a.listener_ || tick < a.ticks_ ||
        dt.count() < 0 || dt.count() > limits::kMaxClockMicroseconds - a.clock_)
        return {};
    const TimePoint clock_after = a.clock_ + dt.count();
    if (clock_after >= a.next_deadline_) return {};
    const TreeData& t = EngineAccess::tree_data(a.tree_);
    const auto* q = reinterpret_cast<const std::uint16_t*>(reinterpret_cast<const std::byte*>(a.block_.get()) +
                                                           t.layout.queue_offset);
    const auto head = static_cast<std::uint16_t>(bytes);
    return {q[head], head, clock_after};  // (the marker when the queue's one entry is the marker: not a move tick)
}

inline NodeIndex Runtime::move_tick_node(const Agent& a, std::uint64_t tick, Duration dt, TimePoint& clock_after) {
    const MoveTickStart start = move_tick_start(a, tick, dt);
    clock_after = start.clock_after;
    return start.node;
}

/// The queue place after `at` (a place of the ring: at < capacity) in a ring of `capacity` places
/// (Runtime::queue_slot(1)'s result, for the lean entries that build no Runtime).
inline std::uint32_t next_queue_place(std::uint32_t at, std::uint32_t capacity) {
    return at + 1 == capacity ? 0 : at + 1;
}

inline void Runtime::end_resumed_run_in(Agent& a, const TreeData& t, std::uint16_t* flags, Status* statuses,
                                        std::uint16_t* q, NodeIndex n) {
    end_resumed_run_at(a, t, flags, statuses, q, n, a.queue_head_);
}

inline bool Runtime::end_resumed_run_at(Agent& a, const TreeData& t, std::uint16_t* flags, Status* statuses,
                                        std::uint16_t* q, NodeIndex n, std::uint32_t marker_at) {
    // finish_resume(n) -> complete(n) -> terminate(n) and child_done(parent) -> complete(parent) -> ...
    // up to root_done(Success). The queue holds the marker alone, at marker_at (n was popped).
    // root_done queues the restart behind it, then the loop pops the marker and puts it back at the
    // end. (The queue and the agent's members are written before the chain's flags and statuses:
    // what the compiler must read again after a store through the statuses, whose bytes may alias
    // anything, is then nothing.)
    const std::uint32_t capacity = t.layout.queue_capacity;
    const std::uint32_t behind_marker = next_queue_place(marker_at, capacity);
    const bool restarts = a.restart_on_end_;
    if (restarts) {
        q[behind_marker] = 0;
        q[next_queue_place(behind_marker, capacity)] = kQueueMarker;
        a.queue_head_ = static_cast<std::uint16_t>(behind_marker);
        a.queue_size_ = 2;
    } else {
        a.stopped_ = true;
        q[behind_marker] = kQueueMarker;
        a.queue_head_ = static_cast<std::uint16_t>(behind_marker);
        a.queue_size_ = 1;
    }
    // Every node of the chain ends Success (terminate's flags), nothing else changes (no onTerminate,
    // no Cooldown, nothing of the chain queued: n was the queue's one entry); then the root's restart
    // is pending and queued.
    constexpr auto kKept = static_cast<std::uint16_t>(kGuardPrev | kGuardDirty | kCooldownArmed);
    for (NodeIndex x = n; x != kNoNode; x = t.nodes[x].parent) {
        flags[x] = static_cast<std::uint16_t>(flags[x] & kKept);
        statuses[x] = Status::Success;
    }
    if (restarts) flags[0] = static_cast<std::uint16_t>(flags[0] | kStartPending | kQueued);
    return restarts;
}

inline void Runtime::end_run_of_root_child(Agent& a, std::uint16_t* flags, Status* statuses, std::uint16_t* q,
                                          NodeIndex n, std::uint32_t head) {
    // The queue held n at `head` and the marker behind it; end_resumed_run_at pops n, queues the root's
    // restart behind the marker and moves the marker behind the restart: the restart at head + 2, the
    // marker at head + 3 (both written by one store), the head at head + 2 and two entries (the
    // queue's head and size are adjacent members: one store too).
    const std::uint16_t restart_then_marker[2] = {0, kQueueMarker};
    std::memcpy(q + head + 2, restart_then_marker, sizeof restart_then_marker);
    static_assert(offsetof(Agent, queue_size_) == offsetof(Agent, queue_head_) + sizeof(std::uint16_t));
    static_assert(std::endian::native == std::endian::little);  // (the head in the word's low half)
    const std::uint32_t head_and_size = (head + 2) | (std::uint32_t{2} << 16);
    std::memcpy(&a.queue_head_, &head_and_size, sizeof head_and_size);  // (the queue's head, then its size)
    // The chain's two nodes end Success with terminate's flags (end_resumed_run_at's loop), and the
    // root's restart is pending and queued.
    constexpr auto kKept = static_cast<std::uint16_t>(kGuardPrev | kGuardDirty | kCooldownArmed);
    flags[n] = static_cast<std::uint16_t>(flags[n] & kKept);
    statuses[n] = Status::Success;
    flags[0] = static_cast<std::uint16_t>((flags[0] & kKept) | kStartPending | kQueued);
    statuses[0] = Status::Success;
}

inline Runtime::MoveEndTick Runtime::world_end_move_tick(Agent& a, std::uint64_t tick, Duration dt, FrameMetrics& frame) {
    const MoveTickStart start = move_tick_start(a, tick, dt);
    const NodeIndex n = start.node;
    if (n == kQueueMarker) return MoveEndTick::Declined;
    const TreeData& t = EngineAccess::tree_data(a.tree_);
    std::byte* const b = reinterpret_cast<std::byte*>(a.block_.get());
    auto* const flags = reinterpret_cast<std::uint16_t*>(b + t.layout.flags_offset);
    auto* const statuses = reinterpret_cast<Status*>(b + t.layout.status_offset);
    // entry_work's test for end_resumed_run (its work is exactly "resume pending" on a suspended
    // action; the action's Success ends the run, it has no onTerminate: NodeDef::success_ends_run_plainly),
    // with the listener, stopped_ and abort_requested_ tested above.
    constexpr auto kResumedWithSuccess = static_cast<std::uint16_t>(kResumePending | kSuspended | kResumeSuccess);
    if ((flags[n] & (kPendingWork | kResumeSuccess)) != kResumedWithSuccess || !t.nodes[n].success_ends_run_plainly ||
        statuses[n] != Status::Running)
        return MoveEndTick::Declined;
    // single_work_tick from here: the tick begun, n popped (the marker, the place after n's, is then
    // the queue's one entry) and counted as visited, the run ended (end_resumed_run: n's flags, kQueued
    // with them, are its terminate's), the tick finished. No user code runs in this tick, so it needs
    // no TickScope (nothing could see in_tick_), and the walk's position, -1 between ticks, is not
    // read before finish_lean_tick sets it back to -1.
    a.clock_ = start.clock_after;
    ++a.stats_.nodes_visited;
    ++frame.events_handled;
    auto* const q = reinterpret_cast<std::uint16_t*>(b + t.layout.queue_offset);
    const std::uint32_t head = start.head;
    bool restarts = true;
    if (head + 3 < t.layout.queue_capacity && a.restart_on_end_ && t.nodes[n].parent == 0) {
        // end_resumed_run_at's common case, written with fewer stores: the queue's next three places
        // (the marker's, the restart's, the marker's next) do not wrap, and the chain is n and the root.
        end_run_of_root_child(a, flags, statuses, q, n, head);
    } else {
        restarts = end_resumed_run_at(a, t, flags, statuses, q, n, next_queue_place(head, t.layout.queue_capacity));
    }
    a.ticks_ = tick;      // (finish_lean_tick counts it: one store of tick + 1)
    finish_lean_tick(a);  // (no abort can be due: none was asked for, and no user code ran)
    return restarts ? MoveEndTick::RestartQueued : MoveEndTick::RunEnded;
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
