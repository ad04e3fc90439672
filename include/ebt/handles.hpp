// Handles: the values game code keeps, across frames, to name an agent of a World or one suspended
// run of an action. Both are plain values, safe to copy and to keep after what they name is gone:
// every call taking a stale handle reports it (false, nullptr or UsageError) and touches nothing.
#pragma once

#include <ebt/status.hpp>

#include <cstdint>

namespace ebt {

/// A generational reference to an agent of a World (World::spawn, ActionContext::agent_handle).
/// The default handle names no agent.
struct AgentHandle {
    std::uint32_t index = 0xFFFFFFFF;
    std::uint32_t generation = 0;
    friend bool operator==(AgentHandle, AgentHandle) = default;
};

/// Identifies one suspension of one action run: returned by ActionContext::suspend() (and given to a
/// latent action's start function). Hand it to the system that finishes the work, which calls
/// World::resume(handle, status) for an agent of a World, or Agent::resume(handle, status). It names
/// its agent twice: by the agent's World handle (`agent`, the default handle for an agent outside a
/// World) and by its serial; and the run by the action's node and run id. A handle whose agent is
/// gone, or whose run has ended (aborted, already resumed), is stale: resume reports it and changes
/// nothing.
struct ResumeHandle {
    AgentHandle agent;
    std::uint64_t agent_serial = 0;
    NodeIndex node = kNoNode;
    std::uint64_t run = 0;  // which run of the action (48 bits used; never repeats in practice)
    bool valid() const noexcept { return node != kNoNode; }
};

}  // namespace ebt
