// The state block's layout (engine/tree/compiler.cpp, build_layout; snapshot format version 3): the
// bytes a quiet event-mode tick reads (the last node's flags, the queue's first entries: 8 bytes in a
// row, the statuses first and the flags right before the queue) lie within one 16-byte-aligned part of
// the block, so that they are on one cache line for every tree wherever its block is (blocks start on
// 16 bytes at least; docs/benchmarks.md, "The state block's hot line", "The wide tree's hot line").
// White-box: reads the compiled layout.
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

/// The bytes [first, end) a quiet tick of `tree`'s fallback leaf reads (as compiler.cpp's hot_bytes): its
/// flags, and the queue's first three entries (head at entry 1, the marker at entry 2).
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

TEST_CASE("state layout: the guard tree's quiet-tick bytes are in one 16-byte part of its 96-byte block") {
    Registry registry;
    scenarios::register_guard_actions(registry);
    const Tree guard = scenarios::guard_tree(registry);
    const detail::AgentLayout& L = layout_of(guard);
    const detail::TreeData& t = detail::EngineAccess::tree_data(guard);
    REQUIRE(guard.size() == 11);
    // Statuses 0-10, flags 12-33, the queue 34-57, then every node's memory (none in front: the quiet
    // bytes fit as they are), the three bool keys at 88.
    CHECK(L.status_offset == 0);
    CHECK(L.flags_offset == 12);
    CHECK(L.queue_offset == 34);
    CHECK(L.queue_capacity == 12);
    CHECK(t.nodes[0].memory_offset == 58);
    CHECK(t.nodes[6].memory_offset == 66);
    CHECK(t.nodes[7].memory_offset == 72);
    CHECK(t.nodes[10].memory_offset == 82);
    CHECK(L.engine_bytes == 88);
    CHECK(L.block_bytes == 96);  // as in versions 1 and 2: 160 + 96 bytes per agent
    const auto [first, end] = quiet_bytes(guard);
    CHECK(first == 32);  // Patrol's flags
    CHECK(end == 40);    // the queue's third entry
    CHECK(first / 16 == (end - 1) / 16);
    CHECK(ranges_disjoint(guard));
}

TEST_CASE("state layout: wide_64's quiet-tick bytes are in one 16-byte part of its 1,648-byte block") {
    Registry registry;
    scenarios::register_guard_actions(registry);
    const Tree wide = scenarios::wide_guard_tree(registry, 64);
    const detail::AgentLayout& L = layout_of(wide);
    REQUIRE(wide.size() == 204);
    // Statuses 0-203, flags 204-611, the queue 612-1021 (version 2 had the flags first: the last node's
    // flags at 406-407, 205 bytes before its status and the queue, on another cache line).
    CHECK(L.status_offset == 0);
    CHECK(L.flags_offset == 204);
    CHECK(L.queue_offset == 612);
    CHECK(L.block_bytes == 1648);  // unchanged: (1,648 + 160 - 256) / 193 extra nodes = 8.0 B per node
    const auto [first, end] = quiet_bytes(wide);
    CHECK(first == 610);  // the last node's flags (Patrol's), right before the queue
    CHECK(end == 618);
    CHECK(first / 16 == (end - 1) / 16);
    CHECK(ranges_disjoint(wide));
}

TEST_CASE("state layout: where the quiet bytes would cross 16 bytes, the first nodes' memory goes in front (wide_8)") {
    Registry registry;
    scenarios::register_guard_actions(registry);
    const Tree wide = scenarios::wide_guard_tree(registry, 8);
    const detail::AgentLayout& L = layout_of(wide);
    const detail::TreeData& t = detail::EngineAccess::tree_data(wide);
    REQUIRE(wide.size() == 36);
    // In the plain order the statuses (0-35), flags (36-107) and queue (108-) put the quiet bytes at
    // 106-113, across byte 112; the memory of the root selector, the first branch's selector and its
    // Sequence (bytes 0-9) in front moves them to 116-123. The block stays 304 bytes.
    CHECK(t.nodes[0].memory_offset == 0);
    CHECK(t.nodes[1].memory_offset == 2);
    CHECK(t.nodes[3].memory_offset == 4);
    CHECK(L.status_offset == 10);
    CHECK(L.flags_offset == 46);
    CHECK(L.queue_offset == 118);
    CHECK(L.block_bytes == 304);
    const auto [first, end] = quiet_bytes(wide);
    CHECK(first == 116);
    CHECK(end == 124);
    CHECK(ranges_disjoint(wide));
}

TEST_CASE("state layout: the sweep's trees have their quiet bytes in one 16-byte part; arrays and memory do not overlap") {
    Registry registry;
    scenarios::register_guard_actions(registry);
    for (const Tree& tree : {scenarios::guard_tree(registry), scenarios::wide_guard_tree(registry, 1),
                             scenarios::wide_guard_tree(registry, 4), scenarios::wide_guard_tree(registry, 8),
                             scenarios::wide_guard_tree(registry, 16), scenarios::wide_guard_tree(registry, 64),
                             scenarios::deep_guard_tree(registry, 4), scenarios::deep_guard_tree(registry, 8),
                             scenarios::deep_guard_tree(registry, 32)}) {
        CAPTURE(tree.name());
        CHECK(ranges_disjoint(tree));
        const auto [first, end] = quiet_bytes(tree);
        CHECK(first / 16 == (end - 1) / 16);
        MESSAGE(tree.name() << ": nodes " << tree.size() << ", flags " << layout_of(tree).flags_offset << ", block "
                            << layout_of(tree).block_bytes << ", quiet bytes " << first << "-" << end - 1);
    }
}

TEST_CASE("state layout: a small tree needs no memory in front; its statuses, flags and queue start the block") {
    Registry registry;
    registry.add_action("Patrol", [](ActionContext&) { return Status::Running; });
    const Tree tree = TreeBuilder("patrol", registry).sequence().action("Patrol").back().end();
    const detail::AgentLayout& L = layout_of(tree);
    CHECK(L.status_offset == 0);
    CHECK(L.flags_offset == 2);
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

TEST_CASE("state layout: in a World every guard_a and wide_64 agent's quiet bytes are on one cache line") {
    // The guard tree's blocks come from the World's pool (64-byte-aligned pages of 96-byte blocks),
    // wide_64's from the heap (16-byte aligned): either way the 16-byte part holding the quiet bytes is
    // within one line, found here from the blocks' real addresses.
    Registry registry;
    scenarios::register_guard_actions(registry);
    for (const Tree& tree : {scenarios::guard_tree(registry), scenarios::wide_guard_tree(registry, 64)}) {
        CAPTURE(tree.name());
        World world;
        std::vector<AgentHandle> agents;
        for (int i = 0; i < 200; ++i) agents.push_back(world.spawn(tree));
        const auto [first, end] = quiet_bytes(tree);
        int on_one_line = 0;
        for (const AgentHandle h : agents) {
            const auto values = reinterpret_cast<std::uintptr_t>(detail::EngineAccess::raw_values(world.at(h).blackboard()));
            const std::uintptr_t block = values - layout_of(tree).blackboard_offset;
            if ((block + first) / 64 == (block + end - 1) / 64) ++on_one_line;
        }
        CHECK(on_one_line == 200);
    }
}
