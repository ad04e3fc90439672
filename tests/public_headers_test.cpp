// The public surface a game includes by default (docs/architecture.md, "Public and detail headers"):
//   - <ebt/ebt.hpp> (every public header but <ebt/signals.hpp>) includes no Boost header: a source
//     that builds trees, spawns agents and writes blackboards does not compile Boost.Signals2;
//   - the engine's hooks are not callable from game code: Blackboard::mirror and raw_values,
//     ChangeBus::publish and has_slots, Agent::set_host and tick_numbered, an Agent with a hosted
//     state block (detail::HostedBlock), Tree::data() are reached
//     through detail::EngineAccess only, and the builder's loader hooks (run-time typed declare_key,
//     declare_shared_key and port values, attribute, port_literal, last_error) through
//     detail::BuilderAccess only.
// Both are checked when this file compiles: a Boost header reached through <ebt/ebt.hpp>, or a hook
// made public again, breaks the build of the tests.
#include <ebt/ebt.hpp>

// Before any other include of this file, so that nothing else can have brought Boost in.
#if defined(BOOST_VERSION) || defined(BOOST_CONFIG_HPP)
#error "<ebt/ebt.hpp> includes a Boost header; only <ebt/signals.hpp> may"
#endif

#include <ebt/signals.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

using namespace ebt;

namespace {

// Each is true when game code could make the call (a requires-expression checks access from here).
template <class B> concept can_mirror = requires(B& b) { b.mirror(KeyId{0}, nullptr); };
template <class B> concept can_read_raw_values = requires(const B& b) { b.raw_values(); };
template <class Bus> concept can_publish = requires(Bus& bus, const BlackboardChange& change) { bus.publish(change); };
template <class Bus> concept can_ask_has_slots = requires(const Bus& bus) { bus.has_slots(); };
template <class A> concept can_set_host = requires(A& a) { a.set_host(nullptr, std::uint32_t{0}); };
template <class A> concept can_tick_numbered = requires(A& a) { a.tick_numbered(std::uint64_t{0}, Duration{0}); };

template <class T> concept can_read_tree_data = requires(const T& t) { t.data(); };
template <class B> concept can_declare_key_by_type_info = requires(B& b) { b.declare_key(std::string(), type_of<int>(), nullptr); };
template <class B> concept can_declare_shared_key_by_type_info =
    requires(B& b) { b.declare_shared_key(std::string(), std::string(), type_of<int>(), nullptr); };
template <class B> concept can_give_raw_port_value = requires(B& b) { b.port_value_raw(std::string(), type_of<int>(), nullptr); };
template <class B> concept can_keep_attribute = requires(B& b) { b.attribute(std::string(), std::string()); };
template <class B> concept can_record_port_literal = requires(B& b) { b.port_literal(std::string(), std::string()); };
template <class B> concept can_read_last_error = requires(const B& b) { b.last_error(); };

static_assert(!can_read_tree_data<Tree>);
static_assert(!can_declare_key_by_type_info<TreeBuilder>);
static_assert(!can_declare_shared_key_by_type_info<TreeBuilder>);
static_assert(!can_give_raw_port_value<TreeBuilder>);
static_assert(!can_keep_attribute<TreeBuilder>);
static_assert(!can_record_port_literal<TreeBuilder>);
static_assert(!can_read_last_error<TreeBuilder>);
static_assert(!can_mirror<Blackboard>);
static_assert(!can_read_raw_values<Blackboard>);
static_assert(!can_publish<ChangeBus>);
static_assert(!can_ask_has_slots<ChangeBus>);
static_assert(!can_set_host<Agent>);
static_assert(!can_tick_numbered<Agent>);
// An agent whose state block is its host's (a World's pool) is made by the engine only: game code can
// make no HostedBlock, and the constructor behind it is private.
template <class H> concept can_make_hosted_block = requires(detail::AgentHost& host) { H(host, std::uint32_t{0}); };
static_assert(!can_make_hosted_block<detail::HostedBlock>);
static_assert(!std::is_constructible_v<Agent, Tree, AgentOptions, detail::AgentHost*, std::uint32_t>);

// What game code does use stays reachable.
template <class Bus> concept can_subscribe = requires(Bus& bus) { bus.subscribe([](const BlackboardChange&) {}); };
template <class Bus> concept can_count_slot_errors = requires(const Bus& bus) { bus.slot_errors(); };
static_assert(can_subscribe<ChangeBus>);
static_assert(can_count_slot_errors<ChangeBus>);
template <class B> concept can_declare_typed_key = requires(B& b) { b.template key<int>(std::string(), 0); };
template <class B> concept can_give_typed_port_value = requires(B& b) { b.port_value(std::string(), 1.0f); };
static_assert(can_declare_typed_key<TreeBuilder>);
static_assert(can_give_typed_port_value<TreeBuilder>);

}  // namespace

TEST_CASE("public headers: a game subscribes to a World's changes with <ebt/signals.hpp>") {
    // The subscribing side of the split: World::bus() and SharedBlackboard::changes(), declared in
    // boost-free headers, are complete and connectable once <ebt/signals.hpp> is included.
    World world;
    SharedBlackboard& squad = world.create_shared("squad");
    squad.declare<bool>("alarm", false);
    const Tree tree = TreeBuilder("t").key<int>("n", 0).shared_key<bool>("squad", "alarm", false).always_success().end();
    const AgentHandle h = world.spawn(tree, {.shared = {{"squad", &squad}}});

    std::vector<std::string> seen;
    const boost::signals2::scoped_connection on_bus =
        world.bus().subscribe([&](const BlackboardChange& c) { seen.push_back("bus " + std::string(c.name)); });
    const boost::signals2::scoped_connection on_squad = squad.changes().connect(
        [&](const SharedBlackboard& bb, KeyId key) { seen.push_back(bb.name() + " " + bb.schema().info(key).name); });

    world.at(h).blackboard().set("n", 1);
    squad.set("alarm", true);
    world.step(std::chrono::milliseconds(10));  // publishes squad.alarm, routed into the agent's mirror
    // The World's router was connected first (create_shared), so the mirror's change comes before our slot.
    CHECK(seen == std::vector<std::string>{"bus n", "bus squad.alarm", "squad alarm"});
    CHECK(world.slot_errors() == 0);
}
