// Runtime::resume_run, the resume of a suspended action, and place_in_queue, the queue insertion it
// shares with enqueue: inline, in the bodies of their callers.
//
// Included by engine/runtime/event_scheduler.cpp (enqueue, every write's wake-up), engine/runtime/agent.cpp
// (Agent::resume, World::resume's path) and engine/world/world.cpp (World::resume_all, whose loop over
// a frame's moves has the whole resume of a handle in its own body: no call into the engine and no
// Runtime built in memory per handle; docs/benchmarks.md, "A move through a World, fifth pass: the
// resume").
#pragma once

#include "runtime/runtime.hpp"

#include <string>

namespace ebt::detail {

inline void Runtime::place_in_queue(NodeIndex n) {
    // Common case first: work for the next frame that sorts after everything queued (a running leaf
    // re-queueing itself). Entries behind the marker are sorted, so the tail tells.
    if (passed(n)) {
        const std::uint16_t last = queue_at(static_cast<std::uint16_t>(a.queue_size_ - 1u));
        if (last == kQueueMarker || last < n) {
            EBT_ASSERT(a.queue_size_ < queue_capacity,
                       "scheduler queue overflow: appending node " + std::to_string(n) + " to a full queue of " +
                           std::to_string(a.queue_size_) + " entries");
            queue()[queue_slot(a.queue_size_)] = n;
            ++a.queue_size_;
            return;
        }
    } else if (queue_at(0) > n) {
        // Common case: it sorts before everything queued (a resume or a write between ticks, whose
        // agent had only its marker queued): the ring's head steps back, as queue_insert(0) does.
        EBT_ASSERT(a.queue_size_ < queue_capacity,
                   "scheduler queue overflow: inserting node " + std::to_string(n) + " in front of a full queue of " +
                       std::to_string(a.queue_size_) + " entries");
        a.queue_head_ = static_cast<std::uint16_t>(a.queue_head_ == 0 ? queue_capacity - 1u : a.queue_head_ - 1u);
        queue()[a.queue_head_] = n;
        ++a.queue_size_;
        return;
    }
    place_in_order(a, n);
}

inline bool Runtime::resume_run(const ResumeHandle& handle, Status status, bool& wake) {
    const NodeIndex n = handle.node;
    // A run of this action that is suspended and not resumed yet (one read of the node's flags).
    if (n >= t.nodes.size() || def(n).kind != NodeKind::Action || !running(n) ||
        (fl(n) & (kSuspended | kResumePending)) != kSuspended || run_id(n) != handle.run)
        return false;
    set(n, static_cast<std::uint16_t>(status == Status::Success ? kResumePending | kResumeSuccess : kResumePending));
    if (event_mode() && !has(n, kQueued)) {  // enqueue(n), with the host's wake left to the caller
        set(n, kQueued);
        wake = !a.in_tick_;  // (the caller tells its host, if the agent has one)
        place_in_queue(n);
    }
    return true;
}

inline void Runtime::prefetch_for_resume(const Agent& agent) noexcept {
    // The members resume_in_world reads: the block's address; the walk position, the queue's head and
    // size, the mode and in_tick_ (16 bytes in a row); the tree; and the serial, which the World
    // compares first, in the same line as the optional's flag that follows the agent in its slot.
    __builtin_prefetch(&agent.block_);
    __builtin_prefetch(&agent.walk_pos_);
    __builtin_prefetch(&agent.tree_);
    __builtin_prefetch(&agent.serial_);
}

inline void Runtime::prefetch_block_for_resume(const Agent& agent) noexcept {
    // Its first two lines: the guard tree's 96-byte block (statuses, flags, queue, and the node memory
    // that holds the actions' run ids) lies in two lines wherever it starts.
    if (const auto* block = reinterpret_cast<const char*>(agent.block_.get())) {
        __builtin_prefetch(block);
        __builtin_prefetch(block + 64);
    }
}

inline bool Runtime::resume_in_world(Agent& agent, const ResumeHandle& handle, Status status, bool& wake) {
    Runtime rt(agent);
    const bool accepted = rt.resume_run(handle, status, wake);
    if (accepted && !agent.in_tick_) rt.check_invariants("Agent::resume()");
    return accepted;
}

}  // namespace ebt::detail
