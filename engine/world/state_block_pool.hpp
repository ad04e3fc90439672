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
    /// The block of `bytes` (a multiple of 16) for the agent in `slot`, uninitialized, aligned for
    /// std::max_align_t. The slot's block of this size must not be in use. Throws std::bad_alloc.
    void* allocate(std::uint32_t slot, std::size_t bytes);
    /// Gives back the block allocate(slot, bytes) returned; a page whose blocks are all free is freed.
    void release(std::uint32_t slot, std::size_t bytes, void* block) noexcept;

    /// How many blocks of `bytes` one page holds: a power of two n, so that slots [k·n, k·n + n) share
    /// page k and their blocks lie side by side in slot order (where one page ends and the next begins
    /// is the allocator's choice).
    static std::size_t blocks_per_page(std::size_t bytes) noexcept {
        return std::bit_floor(std::clamp<std::size_t>(kPageBytes / bytes, 1, kMaxBlocksPerPage));
    }

    /// Bytes of pages allocated (for tests and memory reports).
    std::size_t page_bytes() const noexcept;

    /// The largest block the World takes from the pool; larger ones stay on the heap. Packing pays
    /// for small blocks (the guard tree's 96 bytes: a page of 64 holds them in slot order, without the
    /// allocator's header between them), not for large ones: `wide_64`'s 1,648-byte blocks measured
    /// 2.4x slower per quiet agent-frame at 100,000 agents from 8-block pages than from the heap, and
    /// still 1.2x slower from 256-block pages (2026-11-25, docs/benchmarks.md "The storage").
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
    /// Frees a page's memory (made by allocate with kPageAlignment).
    struct FreePage {
        void operator()(std::byte* memory) const noexcept;
    };
    struct Page {
        std::unique_ptr<std::byte[], FreePage> memory;  // blocks_per_page blocks of `bytes`, when allocated
        std::uint32_t used = 0;                         // blocks handed out
    };
    /// The pages of one block size; page p holds the blocks of slots [p, p + 1) * blocks_per_page.
    struct SizeClass {
        std::size_t bytes = 0;
        std::uint32_t page_shift = 0;  // blocks_per_page = 1 << page_shift
        std::vector<Page> pages;
    };
    SizeClass& size_class(std::size_t bytes);  // made on first use
    std::vector<SizeClass> classes_;           // one per block size seen (a few: one per tree layout)
};

}  // namespace ebt::detail
