// Huge pages for a World's big hot arrays (issue 13; docs/world.md "Storage").
//
// A quiet frame walks a World's slot chunks and its agents' state blocks in slot order. At 10,000
// `wide_64` agents the blocks alone span ~4,000 pages of 4 KiB, one page for every two or three
// agents: a TLB miss and a page walk that often. On transparent huge pages (2 MiB each) the same
// memory is a handful of TLB entries. This file maps such memory:
//
//   map_huge(bytes)    a mapping of its own, 2 MiB-aligned, rounded up to whole 2 MiB pages and
//                      madvise(MADV_HUGEPAGE)d, zero-filled; nullptr where huge pages are off
//                      (then the caller takes the heap, as before).
//   unmap_huge(...)    gives it back to the system.
//
// Which arrays get one is the callers' policy: the World's slot and record chunks of at least
// kHugeThreshold bytes (World::make_chunk, world.cpp), and the 2 MiB regions the StateBlockPool
// carves pages from once a block size has more than a region's worth of slots (state_block_pool.cpp).
// Linux only: elsewhere, and when /sys/kernel/mm/transparent_hugepage/enabled says `[never]`,
// map_huge returns nullptr and nothing else changes. Private to the engine.
#pragma once

#include <cstddef>

namespace ebt::detail {

/// A transparent huge page on x86-64 and most arm64 kernels: the size the mappings are aligned to.
inline constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;
/// The World maps a slot or record chunk of at least this many bytes (World::make_chunk); smaller
/// chunks come from the heap. Half a huge page: a mapping's rounding up to whole huge pages costs at
/// most as much resident memory as the chunk itself, and a World of a few thousand agents maps nothing
/// (its first mapped chunk is the one of slots 8,160-16,351, 1.6 MB of 192-byte slots).
inline constexpr std::size_t kHugeThreshold = kHugePageBytes / 2;

/// Whether map_huge maps in this process: Linux, with transparent huge pages `always` or `madvise`
/// (read once), unless a test chose otherwise (set_huge_pages_for_test).
bool huge_pages_enabled() noexcept;

/// `bytes` (> 0) of zero-filled memory on a huge-page boundary, its length rounded up to whole huge
/// pages (the rounding is resident once touched: a huge page is faulted in whole), madvised for
/// huge pages; nullptr when !huge_pages_enabled(). Throws std::bad_alloc when the mapping fails.
std::byte* map_huge(std::size_t bytes);
/// Gives back what map_huge(bytes) returned (nullptr: nothing).
void unmap_huge(std::byte* memory, std::size_t bytes) noexcept;

/// Bytes the process has mapped through map_huge and not yet unmapped (whole huge pages): what the
/// heap counters of a benchmark do not see (bench/sweep_bench.cpp adds it to heap_bytes_per_agent).
std::size_t mapped_huge_bytes() noexcept;

/// Tests: 1 turns huge pages on whatever the system says (the mappings are made and madvised; the
/// kernel may still back them with small pages), 0 turns them off, -1 goes back to the system's
/// setting. Memory already handed out is freed the way it was taken.
void set_huge_pages_for_test(int enabled) noexcept;

}  // namespace ebt::detail
