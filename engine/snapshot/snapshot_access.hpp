// SnapshotAccess: engine/snapshot's way into an Agent's private state (Agent befriends it). Saving
// reads, restoring writes, always between ticks. Private to engine/snapshot.
#pragma once

#include "runtime/runtime.hpp"

#include <ebt/agent.hpp>

#include <cstddef>

namespace ebt::detail {

struct SnapshotAccess {
    static std::byte* block(const Agent& a) noexcept { return reinterpret_cast<std::byte*>(a.block_.get()); }
    /// The blackboard values (part of the block the agent owns; written only by a restore).
    static std::byte* values(const Agent& a) noexcept { return const_cast<std::byte*>(EngineAccess::raw_values(a.blackboard_)); }
    static bool in_tick(const Agent& a) noexcept { return a.in_tick_; }
    static bool moved_from(const Agent& a) noexcept { return !a.block_; }
    static bool stopped(const Agent& a) noexcept { return a.stopped_; }
    static bool abort_requested(const Agent& a) noexcept { return a.abort_requested_; }
    static bool restart_on_end(const Agent& a) noexcept { return a.restart_on_end_; }
    static std::uint16_t queue_head(const Agent& a) noexcept { return a.queue_head_; }
    static std::uint16_t queue_size(const Agent& a) noexcept { return a.queue_size_; }
    static TimePoint next_deadline(const Agent& a) noexcept { return a.next_deadline_; }

    /// Sets the scalar state of a freshly made agent (its block is written by the caller).
    static void set_state(Agent& a, TimePoint clock, TimePoint next_deadline, std::uint64_t ticks, const AgentStats& stats,
                          std::uint16_t queue_head, std::uint16_t queue_size, bool stopped, bool abort_requested) noexcept {
        a.clock_ = clock;
        a.next_deadline_ = next_deadline;
        a.ticks_ = ticks;
        a.stats_ = stats;
        a.queue_head_ = queue_head;
        a.queue_size_ = queue_size;
        a.stopped_ = stopped;
        a.walk_pos_ = -1;
        a.abort_requested_ = abort_requested;  // an abort() asked for in the last tick's final user call
    }
};

}  // namespace ebt::detail
