// StateBlockPool: where the state blocks of a World's agents live.
//
// An Agent created on its own allocates its state block (node statuses, queue, blackboard) from the
// heap. An agent spawned into a World takes it from the World's pool instead
// (Agent(tree, options, EngineAccess::hosted_block(world, slot))): blocks of one size sit side by side
// in pages, and the block of slot i is always at the same place, i's place in its page, so that the
// blocks of agents in neighbouring slots are neighbours in memory, in slot order, and a frame that
// steps the agents in slot order reads their blocks as one stream. A slot reused after a despawn gets
// the same block again (or one of another size class, for a tree of another block size).
//
// Huge pages (engine/world/huge_pages.hpp): the first 2 MiB worth of pages of a block size are
// allocated one by one, as they always were; past that (a World of more than ~21,800 guard-tree
// agents, ~1,270 `wide_64` agents), pages are carved from 2 MiB regions on transparent huge pages,
// region r holding the pages [r, r + 1) * pages_per_region in page order, so that blocks stay in slot
// order across pages and regions. A region is unmapped when its last page is freed. Where huge pages
// are off every page is allocated on its own, as before.
//
// Owned by its World (World::blocks_); used on the World's thread only, by the Agent's constructor
// and destructor (through AgentHost). Private to the engine.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace ebt::detail {

class StateBlockPool {
public:
    StateBlockPool() = default;
    StateBlockPool(const StateBlockPool&) = delete;
    StateBlockPool& operator=(const StateBlockPool&) = delete;
    ~StateBlockPool();  // frees the pages and regions left (every block must have been released)

    /// The block of `bytes` (a multiple of 16) for the agent in `slot`, uninitialized, aligned for
    /// std::max_align_t. The slot's block of this size must not be in use. Throws std::bad_alloc.
    void* allocate(std::uint32_t slot, std::size_t bytes);
    /// Gives back the block allocate(slot, bytes) returned; a page whose blocks are all free is freed,
    /// and a region whose pages are all free is unmapped.
    void release(std::uint32_t slot, std::size_t bytes, void* block) noexcept;

    /// Whether the World takes the block of `bytes` for `slot` from the pool (World::materialize,
    /// World::pool_block): a block of at most kLargestBlock bytes always; a larger one only where its
    /// page would be carved from a huge-page region (huge pages on, the slot past its size's first
    /// region's worth), where blocks lie packed in slot order on huge pages. Elsewhere a large block
    /// stays on the heap.
    static bool takes(std::uint32_t slot, std::size_t bytes) noexcept;

    /// How many blocks of `bytes` one page holds: a power of two n, so that slots [k·n, k·n + n) share
    /// page k and their blocks lie side by side in slot order (where one page ends and the next begins
    /// is the allocator's choice, except within a region, where page k + 1 begins at the first cache
    /// line after page k).
    static std::size_t blocks_per_page(std::size_t bytes) noexcept {
        return std::bit_floor(std::clamp<std::size_t>(kPageBytes / bytes, 1, kMaxBlocksPerPage));
    }
    /// How many pages of blocks of `bytes` one 2 MiB region holds (0: a page is larger than a region,
    /// and such pages are always allocated one by one). Pages [0, pages_per_region) of a size are
    /// always allocated one by one: the threshold below which a World maps no region.
    static std::size_t pages_per_region(std::size_t bytes) noexcept;

    /// Bytes of memory the pool holds (for tests and memory reports): its pages allocated one by one,
    /// and its regions, whole (2 MiB each, whatever part of one is in use).
    std::size_t page_bytes() const noexcept;
    /// Regions mapped now (tests).
    std::size_t region_count() const noexcept;

    /// The largest block the World takes from the pool outside huge-page regions; larger ones stay on
    /// the heap there (takes). Packing pays for small blocks (the guard tree's 96 bytes: a page of 64
    /// holds them in slot order, without the allocator's header between them); `wide_64`'s 1,648-byte
    /// blocks measured 2.4x slower per quiet agent-frame at 100,000 agents from 8-block pages than
    /// from the heap, and still 1.2x slower from 256-block pages (2026-11-25, docs/benchmarks.md "The
    /// storage"); from huge-page regions see docs/benchmarks.md "Huge pages for the World's storage".
    static constexpr std::size_t kLargestBlock = 512;

private:
    /// Memory of at most this many bytes per page (at least one block): few allocations for small
    /// blocks (64 guard-tree blocks of 96 bytes in one page), little waste for large ones.
    static constexpr std::size_t kPageBytes = 16384;
    static constexpr std::size_t kMaxBlocksPerPage = 64;
    /// Pages start on a cache line (64 bytes), so that a block's place in its line depends on its
    /// size and slot only: at the guard tree's 96 bytes every block starts at byte 0 or 32 of a line.
    /// (The 16-byte part the layout keeps a quiet tick's reads in, compiler.cpp's build_layout, is on
    /// one line from any 16-byte-aligned start; from the heap, a page started wherever the allocator
    /// put it, 16-byte aligned.)
    static constexpr std::size_t kPageAlignment = 64;
    /// A page's bytes and where the next page of its region starts: blocks_per_page blocks, rounded
    /// up to a cache line.
    static std::size_t page_stride(std::size_t bytes) noexcept {
        return (bytes * blocks_per_page(bytes) + kPageAlignment - 1) / kPageAlignment * kPageAlignment;
    }
    struct Page {
        std::byte* memory = nullptr;  // blocks_per_page blocks of `bytes`, when allocated
        std::uint32_t used = 0;       // blocks handed out
        bool in_region = false;       // carved from its region (else allocated on its own)
    };
    /// 2 MiB on huge pages (huge_pages.hpp) holding pages_per_region consecutive pages.
    struct Region {
        std::byte* memory = nullptr;  // mapped while pages_used > 0
        std::uint32_t pages_used = 0;
    };
    /// The pages of one block size; page p holds the blocks of slots [p, p + 1) * blocks_per_page,
    /// and, when carved from a region, lies in regions[p / pages_per_region] (regions[0] is never
    /// mapped: the first region's worth of pages is allocated one by one).
    struct SizeClass {
        std::size_t bytes = 0;
        std::uint32_t page_shift = 0;  // blocks_per_page = 1 << page_shift
        std::size_t pages_per_region = 0;
        std::vector<Page> pages;
        std::vector<Region> regions;
    };
    SizeClass& size_class(std::size_t bytes);  // made on first use
    /// A page's memory for page `page_index` of `c`: carved from its region past the threshold (when
    /// huge pages are on), else allocated on its own.
    void allocate_page(SizeClass& c, std::size_t page_index);
    void free_page(SizeClass& c, std::size_t page_index) noexcept;  // its memory; its region's, when the last
    std::vector<SizeClass> classes_;           // one per block size seen (a few: one per tree layout)
};

}  // namespace ebt::detail
