// AgentHost: the interface by which an Agent tells whoever embeds it (a World) about wakes, and
// takes its state block from the host's storage when the host creates it.
//
// Not part of the API a game uses: World implements it (privately), and the engine attaches a host to
// an agent through detail::EngineAccess::set_host. It lives in a header of its own, without Boost,
// so that <ebt/world.hpp> can derive from it.
#pragma once

#include <ebt/handles.hpp>

#include <cstddef>
#include <cstdint>

namespace ebt::detail {

/// Who embeds an agent (a World): told when something outside the agent's own tick gives it work for
/// its next tick (a blackboard write, a resume, an abort or restart), so that idle agents need not be
/// polled. Called synchronously, on the thread that caused the wake. Not owned by the agent; it must
/// outlive the agents it hosts.
class AgentHost {
public:
    virtual void on_agent_wake(std::uint32_t slot) = 0;
    /// The handle by which the host names the agent in `slot` (ActionContext::agent_handle).
    virtual AgentHandle handle_of(std::uint32_t slot) const noexcept = 0;

    // Inputs game code gives the agent itself rather than through the host (world.agent(h)->abort()),
    // so that the host can show them to its input observer (a recorder). Called synchronously by the
    // agent's own function, also from inside ticks; the host must not call back into the agent.
    /// Agent::abort(), before it takes effect.
    virtual void on_agent_abort(std::uint32_t slot) = 0;
    /// Agent::resume() with a handle of this agent (its serial), after the agent answered `accepted`.
    virtual void on_agent_resume(std::uint32_t slot, const ResumeHandle& handle, Status status, bool accepted) = 0;
    /// Agent::restart() of a stopped agent, after it took effect.
    virtual void on_agent_restart(std::uint32_t slot) = 0;
    /// A tick the host asked for (with its FrameMetrics: World::step) that the agent refused before
    /// anything changed (Agent::tick_numbered's checks; the UsageError follows): no tick happened, so
    /// the host gives the slot back the `dt_us` it handed out, and the agent's next tick has that time
    /// too (docs/world.md, "A step that throws"). Called on the thread that ticks the agent.
    virtual void on_tick_refused(std::uint32_t slot, std::int64_t dt_us) noexcept = 0;

    // State blocks of agents the host creates with EngineAccess::hosted_block(host, slot): the agent's
    // constructor asks for its block (`bytes`, a multiple of 16, aligned for std::max_align_t; may
    // throw std::bad_alloc) and its destructor gives it back. One block per slot and size at a time.
    virtual void* allocate_state_block(std::uint32_t slot, std::size_t bytes) = 0;
    virtual void release_state_block(std::uint32_t slot, std::size_t bytes, void* block) noexcept = 0;

protected:
    ~AgentHost() = default;
};

}  // namespace ebt::detail
