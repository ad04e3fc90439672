// AgentHost: the interface by which an Agent tells whoever embeds it (a World) about wakes.
//
// Not part of the API a game uses: World implements it (privately), and the engine attaches a host to
// an agent through detail::EngineAccess::set_host. It lives in a header of its own, without Boost,
// so that <ebt/world.hpp> can derive from it.
#pragma once

#include <ebt/handles.hpp>

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

protected:
    ~AgentHost() = default;
};

}  // namespace ebt::detail
