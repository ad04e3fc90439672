// The state block's layout (engine/tree/compiler.cpp, build_layout; snapshot format version 2): the
// bytes a quiet event-mode tick reads (the last node's flags and status, the queue's first entries)
// lie within one 32-byte-aligned part of the block, and a World's pool starts its pages on a cache
// line, so that at the guard tree's 96-byte stride those bytes are on one line for every agent
// (docs/benchmarks.md, "The state block's hot line"). White-box: reads the compiled layout.
#include "runtime/runtime.hpp"

#include "bench_scenarios.hpp"
#include "guard_scenario.hpp"

#include <ebt/detail/engine_access.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

using namespace ebt;
using namespace std::chrono_literals;

namespace {

const detail::AgentLayout& layout_of(const Tree& tree) { return detail::EngineAccess::tree_data(tree).layout; }

/// The bytes [first, end) a quiet tick of `tree`'s fallback leaf reads (as compiler.cpp's hot_bytes).
std::pair<std::uint32_t, std::uint32_t> quiet_bytes(const Tree& tree) {
    const detail::AgentLayout& L = layout_of(tree);
    const auto n = static_cast<std::uint32_t>(tree.size());
    return {L.flags_offset + 2 * (n - 1), L.queue_offset + 2 * std::min<std::uint32_t>(3, L.queue_capacity)};
}

/// Every node's memory, as [offset, offset + size) ranges, with the node arrays': none overlaps another.
bool ranges_disjoint(const Tree& tree) {
    const detail::TreeData& t = detail::EngineAccess::tree_data(tree);
    const auto n = static_cast<std::uint32_t>(t.nodes.size());
    std::vector<std::pair<std::uint32_t, std::uint32_t>> ranges{
        {t.layout.flags_offset, t.layout.flags_offset + 2 * n},
        {t.layout.status_offset, t.layout.status_offset + n},
        {t.layout.queue_offset, t.layout.queue_offset + 2 * t.layout.queue_capacity}};
    for (const detail::NodeDef& d : t.nodes)
        if (d.memory_bytes) ranges.push_back({d.memory_offset, d.memory_offset + d.memory_bytes});
    std::sort(ranges.begin(), ranges.end());
    for (std::size_t i = 1; i < ranges.size(); ++i)
        if (ranges[i].first < ranges[i - 1].second) return false;
    return ranges.back().second <= t.layout.engine_bytes;
}

}  // namespace

TEST_CASE("state layout: the guard tree's quiet-tick bytes are in one 32-byte part of its 96-byte block") {
    Registry registry;
    scenarios::register_guard_actions(registry);
    const Tree guard = scenarios::guard_tree(registry);
    const detail::AgentLayout& L = layout_of(guard);
    const detail::TreeData& t = detail::EngineAccess::tree_data(guard);
    REQUIRE(guard.size() == 11);
    // The memory of the first five nodes with memory (the two selectors, the two sequences, Runaway's run
    // id: bytes 0-13) in front; flags 14-35, statuses 36-46, the queue 48-71; the Monitor, Attack and
    // Patrol behind it; the three bool keys at 88.
    CHECK(L.flags_offset == 14);
    CHECK(L.status_offset == 36);
    CHECK(L.queue_offset == 48);
    CHECK(L.queue_capacity == 12);
    CHECK(t.nodes[0].memory_offset == 0);
    CHECK(t.nodes[6].memory_offset == 8);
    CHECK(t.nodes[7].memory_offset == 72);
    CHECK(t.nodes[10].memory_offset == 82);
    CHECK(L.engine_bytes == 88);
    CHECK(L.block_bytes == 96);  // as in version 1: 160 + 96 bytes per agent
    const auto [first, end] = quiet_bytes(guard);
    CHECK(first == 34);  // Patrol's flags
    CHECK(end == 54);    // the queue's third entry
    CHECK(first / 32 == (end - 1) / 32);
    CHECK(ranges_disjoint(guard));
}

TEST_CASE("state layout: the sweep's trees keep their block size; their arrays and memory do not overlap") {
    Registry registry;
    scenarios::register_guard_actions(registry);
    for (const Tree& tree : {scenarios::guard_tree(registry), scenarios::wide_guard_tree(registry, 4),
                             scenarios::wide_guard_tree(registry, 64), scenarios::deep_guard_tree(registry, 8)}) {
        CAPTURE(tree.name());
        CHECK(ranges_disjoint(tree));
        const auto [first, end] = quiet_bytes(tree);
        MESSAGE(tree.name() << ": nodes " << tree.size() << ", flags " << layout_of(tree).flags_offset << ", block "
                            << layout_of(tree).block_bytes << ", quiet bytes " << first << "-" << end - 1);
    }
}

TEST_CASE("state layout: a small tree needs no memory in front; its flags, statuses and queue start the block") {
    Registry registry;
    registry.add_action("Patrol", [](ActionContext&) { return Status::Running; });
    const Tree tree = TreeBuilder("patrol", registry).sequence().action("Patrol").back().end();
    const detail::AgentLayout& L = layout_of(tree);
    CHECK(L.flags_offset == 0);
    CHECK(L.status_offset == 4);
    CHECK(L.queue_offset == 6);
    CHECK(detail::EngineAccess::tree_data(tree).nodes[0].memory_offset == 12);
    CHECK(ranges_disjoint(tree));
}

TEST_CASE("state layout: a World's pool puts every guard agent's block at byte 0 or 32 of a cache line") {
    Registry registry;
    scenarios::register_guard_actions(registry);
    const Tree guard = scenarios::guard_tree(registry);
    World world;
    std::vector<AgentHandle> agents;
    for (int i = 0; i < 640; ++i) agents.push_back(world.spawn(guard));  // 10 pages of 64 blocks
    std::set<std::uintptr_t> starts;
    for (const AgentHandle h : agents) {
        // The block's start, from its blackboard values' place in it.
        const auto values = reinterpret_cast<std::uintptr_t>(detail::EngineAccess::raw_values(world.at(h).blackboard()));
        starts.insert((values - layout_of(guard).blackboard_offset) % 64);
    }
    CHECK(starts == std::set<std::uintptr_t>{0, 32});
}
