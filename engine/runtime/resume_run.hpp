// Runtime::resume_suspended, the resume of a suspended action given its agent (resume_run is its
// wrapper for a Runtime), and place_in_queue, the queue insertion that enqueue and resume_suspended's
// uncommon placements share: inline, in the bodies of their callers.
//
// Included by engine/runtime/event_scheduler.cpp (enqueue, every write's wake-up), engine/runtime/agent.cpp
// (Agent::resume, World::resume's path) and engine/world/world.cpp (World::resume_all, whose loop over
// a frame's moves has the whole resume of a handle in its own body: no call into the engine and no
// Runtime built per handle; docs/benchmarks.md, "A move through a World", fifth and sixth passes:
// the resume).
#pragma once

#include "runtime/runtime.hpp"

#include <cstring>
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
    const ResumeOutcome outcome = resume_suspended(a, handle, resume_flags(status));
    wake = outcome == ResumeOutcome::AcceptedWake;
    return outcome != ResumeOutcome::Refused;
}

inline Runtime::ResumeOutcome Runtime::resume_suspended(Agent& agent, const ResumeHandle& handle,
                                                        std::uint16_t resume_flags) {
    // resume_run's work with only the reads it needs, in the order of their lines: the tree's node
    // array (in the cache), then the block's flags, status and the run id (the block's first lines,
    // prefetched by World::resume_all), no Runtime of its own (its queue and status pointers cost
    // a computation each whether or not they are read).
    const TreeData& tree = EngineAccess::tree_data(agent.tree_);
    const NodeIndex n = handle.node;
    // n < nodes.size(), read as the queue's capacity (nodes + 1, AgentLayout), in the line of the
    // layout's offsets read next: size() would divide by sizeof(NodeDef).
    EBT_ASSERT(tree.layout.queue_capacity == tree.nodes.size() + 1, "a layout's queue capacity is its nodes + 1");
    if (std::uint32_t{n} + 1 >= tree.layout.queue_capacity) return ResumeOutcome::Refused;
    const NodeDef& node = tree.nodes.data()[n];
    auto* const block = reinterpret_cast<std::byte*>(agent.block_.get());
    auto* const flags = reinterpret_cast<std::uint16_t*>(block + tree.layout.flags_offset);
    const std::uint16_t f = flags[n];
    // A run of this action that is suspended and not resumed yet.
    if (node.kind != NodeKind::Action || (f & (kSuspended | kResumePending)) != kSuspended ||
        reinterpret_cast<const Status*>(block + tree.layout.status_offset)[n] != Status::Running)
        return ResumeOutcome::Refused;
    // The run id (run_id(n): 48 bits as three 16-bit words, 2-byte aligned) against the handle's, as
    // its low 32 bits and the rest: a handle whose id has bits above 48 matches no run, as before.
    std::uint32_t id_low = 0;
    std::uint16_t id_high = 0;
    std::memcpy(&id_low, block + node.memory_offset, sizeof id_low);
    std::memcpy(&id_high, block + node.memory_offset + sizeof id_low, sizeof id_high);
    if (id_low != static_cast<std::uint32_t>(handle.run) || std::uint64_t{id_high} != handle.run >> 32)
        return ResumeOutcome::Refused;
    if (agent.mode_ != Mode::Event || (f & kQueued)) {
        flags[n] = static_cast<std::uint16_t>(f | resume_flags);
        return ResumeOutcome::Accepted;
    }
    // enqueue(n), with the host's wake left to the caller: queued, and placed as place_in_queue
    // places it. Its common case here inline: a sleeping agent between ticks (the walk has not passed
    // n) whose queue holds entries that all sort after n (its marker): the ring's head steps back.
    flags[n] = static_cast<std::uint16_t>(f | resume_flags | kQueued);
    auto* const queue = reinterpret_cast<std::uint16_t*>(block + tree.layout.queue_offset);
    const std::uint16_t head = agent.queue_head_;
    if (static_cast<std::int32_t>(n) > agent.walk_pos_ && queue[head] > n) {
        EBT_ASSERT(agent.queue_size_ < tree.layout.queue_capacity,
                   "scheduler queue overflow: inserting node " + std::to_string(n) + " in front of a full queue of " +
                       std::to_string(agent.queue_size_) + " entries");
        const std::uint16_t new_head = static_cast<std::uint16_t>(head == 0 ? tree.layout.queue_capacity - 1u : head - 1u);
        queue[new_head] = n;
        agent.queue_head_ = new_head;
        ++agent.queue_size_;
        return agent.in_tick_ ? ResumeOutcome::Accepted : ResumeOutcome::AcceptedWake;
    }
    return place_resumed(agent, n);
}

inline void Runtime::prefetch_block_for_resume(const Agent& agent) noexcept {
    // Its first two lines: the guard tree's 96-byte block (statuses, flags, queue, and the node memory
    // that holds the actions' run ids) lies in two lines wherever it starts.
    if (const auto* block = reinterpret_cast<const char*>(agent.block_.get())) {
        __builtin_prefetch(block);
        __builtin_prefetch(block + 64);
    }
}

}  // namespace ebt::detail
