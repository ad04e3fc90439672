// The World's storage: where a World's agents keep their state blocks (engine/world/state_block_pool.hpp).
// An agent spawned into a World takes its block from the World's pool, at its slot's place, so that
// the blocks of neighbouring slots are neighbours in memory; an Agent made on its own keeps a heap
// block. White-box: a block's address is seen through its blackboard's values (EngineAccess::raw_values),
// which sit at a fixed offset in the block.
#include "bench_scenarios.hpp"
#include "guard_scenario.hpp"
#include "support/trace_recorder.hpp"

#include <ebt/detail/engine_access.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <stdexcept>
#include <vector>

using namespace ebt;
using namespace std::chrono_literals;

namespace {

/// Where `a`'s state block is, as its blackboard's values.
const std::byte* block_of(const Agent& a) { return detail::EngineAccess::raw_values(a.blackboard()); }

std::size_t block_bytes(const Agent& a) { return a.memory_bytes() - sizeof(Agent); }

Registry guard_registry() {
    Registry reg;
    scenarios::register_guard_actions(reg);
    return reg;
}

/// A tree of another block size than the guard tree: a counter key and one running action.
Tree counter_tree() {
    return TreeBuilder("counter").key<int>("mark", 0).key<double>("spare", 0.0).action("Run", test::running_action()).end();
}

/// A value whose copy throws while `refuse_copies` is set: the copy of a key's initial value into a new
/// agent's block then fails half-way through the agent's construction.
bool refuse_copies = false;
struct Fragile {
    int value = 0;
    Fragile() = default;
    Fragile(const Fragile& other) : value(other.value) {
        if (refuse_copies) throw std::runtime_error("copy refused");
    }
    Fragile& operator=(const Fragile& other) {
        if (refuse_copies) throw std::runtime_error("copy refused");
        value = other.value;
        return *this;
    }
    friend bool operator==(const Fragile&, const Fragile&) = default;
};

}  // namespace

template <> struct ebt::BlackboardValue<Fragile> {
    static std::uint64_t hash(const Fragile& v) noexcept { return static_cast<std::uint64_t>(v.value); }
};

TEST_CASE("world storage: the state blocks of a World's agents sit side by side in slot order, and a reused slot gets its block back") {
    const Registry reg = guard_registry();
    const Tree tree = scenarios::guard_tree(reg);
    World world;
    std::vector<AgentHandle> agents;
    for (int i = 0; i < 64; ++i) agents.push_back(world.spawn(tree));
    const std::size_t bytes = block_bytes(world.at(agents[0]));
    CHECK(bytes == 96);
    for (std::size_t i = 1; i < agents.size(); ++i) {
        CAPTURE(i);
        CHECK(block_of(world.at(agents[i])) - block_of(world.at(agents[i - 1])) == static_cast<std::ptrdiff_t>(bytes));
    }
    // A slot freed and taken again: the new agent's block is where the old one's was.
    const std::byte* place = block_of(world.at(agents[10]));
    REQUIRE(world.despawn(agents[10]));
    const AgentHandle again = world.spawn(tree);
    REQUIRE(again.index == agents[10].index);
    CHECK(block_of(world.at(again)) == place);
    // The memory footprint per agent is what an Agent of its own has: the Agent and its block.
    const Agent alone(tree);
    CHECK(world.at(again).memory_bytes() == alone.memory_bytes());
    CHECK(alone.memory_bytes() <= 256);
}

TEST_CASE("world storage: a large state block (wide_64's) stays on the heap and runs the same as an Agent of its own") {
    const Registry reg = guard_registry();
    const Tree wide = scenarios::wide_guard_tree(reg, 64);
    REQUIRE(block_bytes(Agent(wide)) > 512);  // above StateBlockPool::kLargestBlock
    World world;
    const AgentHandle a = world.spawn(wide);
    const AgentHandle b = world.spawn(wide);
    // Not side by side at the block's size, as pool blocks are: each is its own heap allocation (a
    // heap block is larger than the layout's bytes, and the allocator's header sits between two).
    CHECK(block_of(world.at(b)) - block_of(world.at(a)) != static_cast<std::ptrdiff_t>(block_bytes(world.at(a))));
    test::TraceRecorder in_world, alone_trace;
    world.set_listener(b, &in_world);
    Agent alone(wide, {.listener = &alone_trace});
    for (int frame = 0; frame < 3; ++frame) {
        if (frame == 1) {
            world.at(b).blackboard().set("threat_63", true);
            alone.blackboard().set("threat_63", true);
        }
        world.step(std::chrono::milliseconds(50));
        alone.tick(std::chrono::milliseconds(50));
    }
    CHECK(in_world.lifecycle().size() > 6);  // started, then threat_63 aborted Patrol for Attack
    CHECK(in_world.lifecycle() == alone_trace.lifecycle());
    CHECK(world.at(b).memory_bytes() == alone.memory_bytes());
    REQUIRE(world.despawn(a));
    CHECK(world.at(b).status() == Status::Running);
}

TEST_CASE("world storage: agents of two block sizes, spawned, despawned and respawned in any order, keep their own state") {
    const Registry reg = guard_registry();
    const Tree guard = scenarios::guard_tree(reg);
    const Tree counter = counter_tree();
    REQUIRE(block_bytes(Agent(guard)) != block_bytes(Agent(counter)));
    World world;
    std::vector<AgentHandle> agents;
    // Slots 0..199: guard, counter, guard, ... (both sizes share every page's slot range).
    for (int i = 0; i < 200; ++i) agents.push_back(world.spawn(i % 2 ? counter : guard));
    const auto mark_all = [&] {
        for (std::size_t i = 0; i < agents.size(); ++i) {
            Agent& a = world.at(agents[i]);
            if (a.tree().name() == "counter") a.blackboard().set("mark", static_cast<int>(i));
            else a.blackboard().set("enemy_seen", i % 3 == 0);
        }
    };
    const auto check_all = [&] {
        for (std::size_t i = 0; i < agents.size(); ++i) {
            CAPTURE(i);
            const Agent& a = world.at(agents[i]);
            if (a.tree().name() == "counter") CHECK(a.blackboard().get<int>("mark") == static_cast<int>(i));
            else CHECK(a.blackboard().get<bool>("enemy_seen") == (i % 3 == 0));
        }
    };
    mark_all();
    world.step(50ms);
    world.step(50ms);
    check_all();
    // Every third agent leaves; the freed slots are taken by agents of the other tree.
    for (std::size_t i = 0; i < agents.size(); i += 3) {
        const bool was_counter = world.at(agents[i]).tree().name() == "counter";
        REQUIRE(world.despawn(agents[i]));
        agents[i] = world.spawn(was_counter ? guard : counter);
    }
    mark_all();
    for (int frame = 0; frame < 3; ++frame) world.step(50ms);
    check_all();
    CHECK(world.size() == 200);
    for (const AgentHandle h : agents) CHECK(world.at(h).status() == Status::Running);
}

TEST_CASE("world storage: a spawn that fails while its agent's block is being filled gives the block back; the world stays usable") {
    TreeBuilder b("fragile");
    b.key<Fragile>("thing", Fragile{}).action("Run", test::running_action());
    const Tree tree = b.end();
    World world;
    const AgentHandle first = world.spawn(tree);
    refuse_copies = true;
    CHECK_THROWS_WITH_AS(world.spawn(tree), "copy refused", std::runtime_error);
    refuse_copies = false;
    CHECK(world.size() == 1);
    // The failed spawn's slot (1) and its block are taken by the next spawn.
    const AgentHandle second = world.spawn(tree);
    CHECK(second.index == 1);
    CHECK(block_of(world.at(second)) - block_of(world.at(first)) == static_cast<std::ptrdiff_t>(block_bytes(world.at(first))));
    world.step(16ms);
    CHECK(world.at(second).status() == Status::Running);
    CHECK(world.despawn(first));
    CHECK(world.despawn(second));
    CHECK(world.size() == 0);
}
