// Huge pages for the World's storage (engine/world/huge_pages.hpp): the mappings themselves, the
// state-block pool's 2 MiB regions (past the first region's worth of a block size) and the World's big
// slot chunks (at least detail::kHugeThreshold bytes). White-box: blocks are seen through their
// blackboards' values (EngineAccess::raw_values), at the layout's blackboard_offset in the block.
// Each case turns huge pages on (or off) for itself whatever the machine's setting, so that the same
// paths run on a machine whose transparent huge pages are `never` (the kernel then backs the mappings
// with small pages; the addresses and counts checked are the same).
#include "bench_scenarios.hpp"
#include "guard_scenario.hpp"
#include "support/tree_data.hpp"

#include "world/huge_pages.hpp"
#include "world/state_block_pool.hpp"

#include <ebt/detail/engine_access.hpp>
#include <ebt/snapshot.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

using namespace ebt;
using namespace std::chrono_literals;

namespace {

/// Turns huge pages on or off for one case, and back to the system's setting at its end.
struct HugePagesFor {
    explicit HugePagesFor(bool on) { detail::set_huge_pages_for_test(on ? 1 : 0); }
    ~HugePagesFor() { detail::set_huge_pages_for_test(-1); }
    HugePagesFor(const HugePagesFor&) = delete;
    HugePagesFor& operator=(const HugePagesFor&) = delete;
};

std::uintptr_t address(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

/// Where `a`'s state block starts.
std::uintptr_t block_of(const Agent& a) {
    return address(detail::EngineAccess::raw_values(a.blackboard())) - test::data_of(a.tree()).layout.blackboard_offset;
}

Registry guard_registry() {
    Registry reg;
    scenarios::register_guard_actions(reg);
    return reg;
}

constexpr std::size_t kGuardBlock = 96;  // the guard tree's state block (state_layout_test.cpp)

}  // namespace

TEST_CASE("huge pages: a mapping starts on a 2 MiB boundary, is whole huge pages, zero-filled, and counted until unmapped") {
    const HugePagesFor on(true);
    const std::size_t before = detail::mapped_huge_bytes();
    const std::size_t bytes = 3 * (std::size_t{1} << 20);  // 3 MiB: two huge pages
    std::byte* memory = detail::map_huge(bytes);
    REQUIRE(memory != nullptr);
    CHECK(address(memory) % detail::kHugePageBytes == 0);
    CHECK(detail::mapped_huge_bytes() - before == 2 * detail::kHugePageBytes);
    bool zero = true;
    for (std::size_t i = 0; i < 2 * detail::kHugePageBytes; i += 4096) zero = zero && memory[i] == std::byte{0};
    CHECK(zero);
    memory[2 * detail::kHugePageBytes - 1] = std::byte{1};  // the rounding is the caller's to use
    detail::unmap_huge(memory, bytes);
    CHECK(detail::mapped_huge_bytes() == before);
    // Off (THP `never`, or not Linux): no mapping; the callers take the heap.
    detail::set_huge_pages_for_test(0);
    CHECK(detail::map_huge(bytes) == nullptr);
    CHECK(detail::mapped_huge_bytes() == before);
}

// The threshold and the carving: a block size's first pages_per_region pages are allocated one by one
// (no region: a small World pays no 2 MiB); page p past them lies in region p / pages_per_region at
// its place, so that the blocks of a region are one run in slot order from the region's 2 MiB
// boundary. Broken on purpose: regions from page 0 fail the "no region below the threshold" checks;
// pages placed in their region without their stride (or at p % pages_per_region off by one) fail
// the slot-order checks; a region not unmapped at its last page fails the counts at the end.
TEST_CASE("huge pages: the pool carves pages from 2 MiB regions only past a size's first region's worth, in slot order, and unmaps a region with its last page") {
    const HugePagesFor on(true);
    const std::size_t before = detail::mapped_huge_bytes();
    const std::size_t per_page = detail::StateBlockPool::blocks_per_page(kGuardBlock);
    const std::size_t per_region = detail::StateBlockPool::pages_per_region(kGuardBlock);
    REQUIRE(per_page == 64);
    REQUIRE(per_region == detail::kHugePageBytes / (64 * kGuardBlock));  // 341 pages of 6,144 bytes
    const auto threshold = static_cast<std::uint32_t>(per_page * per_region);  // 21,824 slots
    const auto region_slots = threshold;
    std::vector<void*> blocks;
    {
        detail::StateBlockPool pool;
        for (std::uint32_t slot = 0; slot < threshold; ++slot) blocks.push_back(pool.allocate(slot, kGuardBlock));
        CHECK(pool.region_count() == 0);
        CHECK(detail::mapped_huge_bytes() == before);
        CHECK(pool.page_bytes() == per_region * per_page * kGuardBlock);
        // Two regions' worth more: regions 1 and 2.
        for (std::uint32_t slot = threshold; slot < threshold + 2 * region_slots; ++slot)
            blocks.push_back(pool.allocate(slot, kGuardBlock));
        CHECK(pool.region_count() == 2);
        CHECK(detail::mapped_huge_bytes() - before == 2 * detail::kHugePageBytes);
        CHECK(pool.page_bytes() == per_region * per_page * kGuardBlock + 2 * detail::kHugePageBytes);
        for (std::uint32_t region = 1; region <= 2; ++region) {
            CAPTURE(region);
            const std::uint32_t first = region * region_slots;
            const std::uintptr_t base = address(blocks[first]);
            CHECK(base % detail::kHugePageBytes == 0);
            std::size_t out_of_order = 0;
            for (std::uint32_t slot = first; slot < first + region_slots; ++slot)
                if (address(blocks[slot]) != base + (slot - first) * kGuardBlock) ++out_of_order;
            CHECK(out_of_order == 0);
        }
        // The allocations made while growing moved nothing: the pool hands the same places out again.
        for (std::uint32_t slot : {std::uint32_t{0}, threshold - 1, threshold, threshold + region_slots}) {
            CAPTURE(slot);
            pool.release(slot, kGuardBlock, blocks[slot]);
            CHECK(pool.allocate(slot, kGuardBlock) == blocks[slot]);
        }
        // Region 2 stays mapped while one of its pages has a block, and goes with the last one.
        const std::uint32_t second = 2 * region_slots;
        for (std::uint32_t slot = second; slot + 1 < second + region_slots; ++slot) pool.release(slot, kGuardBlock, blocks[slot]);
        CHECK(pool.region_count() == 2);
        pool.release(second + region_slots - 1, kGuardBlock, blocks[second + region_slots - 1]);
        CHECK(pool.region_count() == 1);
        CHECK(detail::mapped_huge_bytes() - before == detail::kHugePageBytes);
        CHECK(pool.page_bytes() == per_region * per_page * kGuardBlock + detail::kHugePageBytes);
        for (std::uint32_t slot = 0; slot < second; ++slot) pool.release(slot, kGuardBlock, blocks[slot]);
        CHECK(pool.region_count() == 0);
        CHECK(pool.page_bytes() == 0);
    }
    CHECK(detail::mapped_huge_bytes() == before);
}

TEST_CASE("huge pages: with huge pages off the pool allocates every page on its own, as before, and keeps large blocks out") {
    const HugePagesFor off(false);
    const std::size_t before = detail::mapped_huge_bytes();
    const std::size_t per_page = detail::StateBlockPool::blocks_per_page(kGuardBlock);
    const auto slots = static_cast<std::uint32_t>(2 * per_page * detail::StateBlockPool::pages_per_region(kGuardBlock));
    detail::StateBlockPool pool;
    std::vector<void*> blocks;
    for (std::uint32_t slot = 0; slot < slots; ++slot) blocks.push_back(pool.allocate(slot, kGuardBlock));
    CHECK(pool.region_count() == 0);
    CHECK(detail::mapped_huge_bytes() == before);
    CHECK(pool.page_bytes() == slots * kGuardBlock);
    std::size_t pages_aligned = 0;
    for (std::uint32_t slot = 0; slot < slots; slot += static_cast<std::uint32_t>(per_page))
        if (address(blocks[slot]) % 64 == 0) ++pages_aligned;
    CHECK(pages_aligned == slots / per_page);
    for (std::uint32_t slot = 0; slot < slots; ++slot) pool.release(slot, kGuardBlock, blocks[slot]);
    CHECK(pool.page_bytes() == 0);
    // Large blocks: never from the pool with huge pages off; from it past the threshold with them on.
    const std::size_t large = 1648;  // wide_64's
    const auto large_threshold = static_cast<std::uint32_t>(detail::StateBlockPool::blocks_per_page(large) *
                                                            detail::StateBlockPool::pages_per_region(large));
    CHECK(detail::StateBlockPool::takes(0, kGuardBlock));
    CHECK(detail::StateBlockPool::takes(large_threshold, kGuardBlock));
    CHECK_FALSE(detail::StateBlockPool::takes(large_threshold, large));
    detail::set_huge_pages_for_test(1);
    CHECK_FALSE(detail::StateBlockPool::takes(large_threshold - 1, large));
    CHECK(detail::StateBlockPool::takes(large_threshold, large));
}

// wide_64's 1,648-byte blocks: on the heap for the first region's worth of slots (1,272), as before;
// past them packed in slot order in huge-page regions, and the agents run the same as with huge
// pages off (the same state hash frame after frame, changes and a despawned and refilled slot included).
TEST_CASE("huge pages: a World's wide_64 agents past the threshold have their blocks packed in slot order on huge pages, and run the same") {
    const Registry reg = guard_registry();
    const Tree wide = scenarios::wide_guard_tree(reg, 64);
    const std::size_t bytes = test::data_of(wide).layout.block_bytes;
    REQUIRE(bytes == 1648);
    const auto threshold = static_cast<std::uint32_t>(detail::StateBlockPool::blocks_per_page(bytes) *
                                                      detail::StateBlockPool::pages_per_region(bytes));
    REQUIRE(threshold == 1272);
    const std::uint32_t agents = threshold + 300;
    const std::size_t before = detail::mapped_huge_bytes();
    auto run = [&](bool huge, std::vector<std::uint64_t>& hashes) {
        const HugePagesFor choice(huge);
        World world;
        std::vector<AgentHandle> handles;
        for (std::uint32_t i = 0; i < agents; ++i) handles.push_back(world.spawn(wide, {.seed = i}));
        // Below the threshold: heap blocks, each its own allocation (not one block size apart).
        CHECK(block_of(world.at(handles[1])) - block_of(world.at(handles[0])) != bytes);
        const std::uintptr_t base = block_of(world.at(handles[threshold]));
        if (huge) {
            CHECK(base % detail::kHugePageBytes == 0);
            std::size_t out_of_order = 0;
            for (std::uint32_t i = threshold; i < agents; ++i)
                if (block_of(world.at(handles[i])) != base + (i - threshold) * bytes) ++out_of_order;
            CHECK(out_of_order == 0);
            CHECK(detail::mapped_huge_bytes() - before == detail::kHugePageBytes);  // one region; no chunk is that big
        } else {
            CHECK(block_of(world.at(handles[threshold + 1])) - base != bytes);
            CHECK(detail::mapped_huge_bytes() == before);
        }
        for (int frame = 0; frame < 6; ++frame) {
            if (frame == 1)
                for (std::uint32_t i = 0; i < agents; i += 97) world.at(handles[i]).blackboard().set("threat_63", true);
            if (frame == 3) {
                REQUIRE(world.despawn(handles[threshold + 5]));
                handles[threshold + 5] = world.spawn(wide, {.seed = 7});
                REQUIRE(handles[threshold + 5].index == threshold + 5);
                if (huge) CHECK(block_of(world.at(handles[threshold + 5])) == base + 5 * bytes);
            }
            world.step(50ms);
            hashes.push_back(world.state_hash());
        }
    };
    std::vector<std::uint64_t> with_huge, without;
    run(true, with_huge);
    CHECK(detail::mapped_huge_bytes() == before);  // the World's region went with it
    run(false, without);
    CHECK(with_huge == without);
}

// The World's slot chunks: chunk c holds 32 << c slots of 192 bytes; chunk 8 (slots 8,160-16,351,
// 1.6 MB) is the first at least detail::kHugeThreshold bytes, mapped on its own 2 MiB boundary; the
// chunks before it come from the heap. Slots never move as the World grows. Broken on purpose: a
// threshold of 0 (every chunk mapped) fails the count after the first 8,160 agents.
TEST_CASE("huge pages: a World maps its slot chunks of at least the threshold on 2 MiB boundaries, and its slots never move") {
    const Registry reg = guard_registry();
    const Tree tree = scenarios::guard_tree(reg);
    const HugePagesFor on(true);
    const std::size_t before = detail::mapped_huge_bytes();
    {
        World world;
        std::vector<AgentHandle> handles;
        for (std::uint32_t i = 0; i < 8160; ++i) handles.push_back(world.spawn(tree));
        // The counts below are for 192-byte slots (and 48-byte records: chunk 10's, past these
        // agents, is the first record chunk mapped).
        REQUIRE(address(world.agent(handles[1])) - address(world.agent(handles[0])) == 192);
        CHECK(detail::mapped_huge_bytes() == before);  // chunks 0-7 and their records: 1.6 MB + 0.4 MB from the heap
        std::vector<const Agent*> places;
        handles.push_back(world.spawn(tree));  // slot 8,160: chunk 8
        REQUIRE(handles.back().index == 8160);
        CHECK(detail::mapped_huge_bytes() - before == detail::kHugePageBytes);  // 8,192 slots; the records (393 KB) from the heap
        CHECK(address(world.agent(handles.back())) % detail::kHugePageBytes < 64);  // the chunk's first slot's Agent
        for (const AgentHandle h : handles) places.push_back(world.agent(h));
        // Grow through chunk 9 (3 MiB: two huge pages) and into the pool's first region (slots past 21,824).
        for (std::uint32_t i = 8161; i < 22000; ++i) handles.push_back(world.spawn(tree));
        CHECK(detail::mapped_huge_bytes() - before == 4 * detail::kHugePageBytes);  // chunk 8, chunk 9 (2), one pool region
        std::size_t moved = 0;
        for (std::size_t i = 0; i < places.size(); ++i) moved += world.agent(handles[i]) != places[i];
        CHECK(moved == 0);
        CHECK(address(world.agent(handles[16352])) % detail::kHugePageBytes < 64);  // chunk 9's first slot
        world.step(50ms);
        CHECK(world.agent(handles[21999])->memory_bytes() <= 256);
    }
    CHECK(detail::mapped_huge_bytes() == before);
}
