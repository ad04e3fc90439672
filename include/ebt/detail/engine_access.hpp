// EngineAccess: the engine's way into the hooks of public classes that game code must not call.
//
// Blackboard, ChangeBus and Agent keep a few members private because calling them from game code
// would break what the engine relies on: writing a shared key's mirror behind the World's back,
// emitting a change nobody made, ticking an agent out of its World's frame order. The engine (the
// World, the runtime, blackboard writes), tools (state hashing, debug views) and white-box tests reach
// them through this class, which those classes befriend. A game includes <ebt/ebt.hpp>, never this.
//
// Each function is a one-line inline forward, so that the engine's hot paths (a write asking its bus
// whether anyone listens, a guard reading a value) cost what a direct member call costs.
#pragma once

#include <ebt/agent.hpp>
#include <ebt/blackboard.hpp>
#include <ebt/detail/agent_host.hpp>
#include <ebt/shared_blackboard.hpp>
#include <ebt/signals.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace ebt::detail {

struct EngineAccess {
    /// The compiled definition behind a tree (engine/tree/tree_data.hpp): what the runtime, the XML
    /// saver and the debug views read. Engine code reaches it here, never through the public Tree.
    static const TreeData& tree_data(const Tree& tree) { return tree.data(); }

    /// The blackboard's values, laid out by its schema (BlackboardSchema::info(key).offset).
    static const std::byte* raw_values(const Blackboard& blackboard) noexcept { return blackboard.raw_values(); }
    /// Stores a shared key's newly published value in an agent's mirror (a World routing a publish):
    /// a change wakes guards and is emitted like any other change. Returns true when the value changed.
    static bool mirror(Blackboard& blackboard, KeyId key, const void* value) { return blackboard.mirror(key, value); }

    /// The value a condition's port `i` reads (a value of the port's type): for a recorder, which
    /// stores the values a condition answered for whatever their type.
    static const void* port_value(const ConditionContext& ctx, std::size_t i) {
        const KeyId key = ctx.ports_.at(i, "condition");
        return ctx.blackboard_->raw_values() + ctx.blackboard_->schema().info(key).offset;
    }

    /// Gives a World's shared blackboard the World's list of written shared blackboards (`queue`) and
    /// its index in it: each first write after a publish adds `index` (and now, if it has writes that
    /// are not published yet), so that World::step publishes only the blackboards that were written.
    static void attach_publish_queue(SharedBlackboard& blackboard, std::vector<std::uint32_t>* queue, std::uint32_t index) {
        blackboard.publish_queue_ = queue;
        blackboard.publish_index_ = index;
        if (blackboard.any_written_) queue->push_back(index);
    }
    /// The index attach_publish_queue gave `blackboard`, when `queue` is the list it was attached to
    /// (the blackboard belongs to that World); otherwise 0xFFFFFFFF.
    static std::uint32_t publish_index(const SharedBlackboard& blackboard, const std::vector<std::uint32_t>* queue) {
        return blackboard.publish_queue_ == queue ? blackboard.publish_index_ : 0xFFFFFFFFu;
    }

    /// Whether a change must be emitted on `bus` (one flag test while nobody ever connected).
    static bool has_slots(const ChangeBus& bus) { return bus.has_slots(); }
    /// Emits `change` to the bus's slots; their exceptions are counted, not thrown.
    static void publish(ChangeBus& bus, const BlackboardChange& change) { bus.publish(change); }

    /// Makes `host` the agent's host, naming it by `slot`: the host is told of wakes from outside the
    /// agent's tick, and Agent::tick() is refused (the host steps the agent).
    static void set_host(Agent& agent, AgentHost* host, std::uint32_t slot) noexcept { agent.set_host(host, slot); }
    /// For Agent(tree, options, hosted): the agent's state block comes from `host`, placed for `slot`.
    static HostedBlock hosted_block(AgentHost& host, std::uint32_t slot) noexcept { return HostedBlock(host, slot); }
    static void move_block_to(Agent& agent, HostedBlock hosted) { agent.move_block_to(hosted); }
    /// Runs one tick numbered `tick` (a world's frame number, so that traces of agents that skip idle
    /// frames stay comparable). UsageError when `tick` goes backwards. The tick's counts are added to
    /// `frame` (a World's frame metrics) as well as to the agent's stats.
    static Status tick_numbered(Agent& agent, std::uint64_t tick, Duration dt, FrameMetrics* frame = nullptr) {
        return agent.tick_numbered(tick, dt, frame);
    }
    /// World::refuse_join (engine/world/world.cpp): a replay making a recorded spawn fail to join as it did.
    static bool refuse_join(World& world, AgentHandle h, std::string message);
    /// Hot reload (World::reload, engine/world/reload.cpp): see the Agent members of the same names.
    static void end_run_for_reload(Agent& agent) { agent.end_run_for_reload(); }
    static void continue_from(Agent& fresh, const Agent& old, const std::vector<std::pair<KeyId, KeyId>>& carried) {
        fresh.continue_from(old, carried);
    }
    static std::vector<KeyId> swap_parameters(Agent& agent, Tree tree) { return agent.swap_parameters(std::move(tree)); }
    /// The handle by which the agent's host (its World) names it; the default handle for an agent
    /// outside a World. For tools that get an Agent from a change (a trace log's change slot).
    static AgentHandle handle(const Agent& agent) noexcept {
        return agent.host_ ? agent.host_->handle_of(agent.host_slot_) : AgentHandle{};
    }
};

}  // namespace ebt::detail
