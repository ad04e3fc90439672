// StateBlockPool: the state blocks of a World's agents, placed by slot (see the header).
#include "world/state_block_pool.hpp"

#include "world/huge_pages.hpp"

#include <ebt/assert.hpp>

#include <algorithm>
#include <bit>
#include <new>

namespace ebt::detail {

StateBlockPool::~StateBlockPool() {
    for (SizeClass& c : classes_)
        for (std::size_t p = 0; p < c.pages.size(); ++p)
            if (c.pages[p].memory) free_page(c, p);
}

std::size_t StateBlockPool::pages_per_region(std::size_t bytes) noexcept { return kHugePageBytes / page_stride(bytes); }

bool StateBlockPool::takes(std::uint32_t slot, std::size_t bytes) noexcept {
    if (bytes <= kLargestBlock) return true;
    const std::size_t per_region = pages_per_region(bytes);
    return per_region > 0 && slot / blocks_per_page(bytes) >= per_region && huge_pages_enabled();
}

StateBlockPool::SizeClass& StateBlockPool::size_class(std::size_t bytes) {
    for (SizeClass& c : classes_)
        if (c.bytes == bytes) return c;
    SizeClass c;
    c.bytes = bytes;
    c.page_shift = static_cast<std::uint32_t>(std::countr_zero(blocks_per_page(bytes)));
    c.pages_per_region = pages_per_region(bytes);
    classes_.push_back(std::move(c));
    return classes_.back();
}

void StateBlockPool::allocate_page(SizeClass& c, std::size_t page_index) {
    Page& page = c.pages[page_index];
    if (c.pages_per_region > 0 && page_index >= c.pages_per_region && huge_pages_enabled()) {
        const std::size_t r = page_index / c.pages_per_region;
        if (c.regions.size() <= r) c.regions.resize(r + 1);
        Region& region = c.regions[r];
        if (!region.memory) region.memory = map_huge(kHugePageBytes);  // nullptr: huge pages went off (a test)
        if (region.memory) {
            page.memory = region.memory + (page_index % c.pages_per_region) * page_stride(c.bytes);
            page.in_region = true;
            ++region.pages_used;
            return;
        }
    }
    page.memory = static_cast<std::byte*>(::operator new(c.bytes << c.page_shift, std::align_val_t{kPageAlignment}));
    page.in_region = false;
}

void StateBlockPool::free_page(SizeClass& c, std::size_t page_index) noexcept {
    Page& page = c.pages[page_index];
    if (page.in_region) {
        // The page's memory stays mapped (a part of a huge page) until its region's last page goes.
        Region& region = c.regions[page_index / c.pages_per_region];
        if (--region.pages_used == 0) {
            unmap_huge(region.memory, kHugePageBytes);
            region.memory = nullptr;
        }
    } else {
        ::operator delete(page.memory, std::align_val_t{kPageAlignment});
    }
    page.memory = nullptr;
    page.in_region = false;
}

void* StateBlockPool::allocate(std::uint32_t slot, std::size_t bytes) {
    EBT_ASSERT(bytes > 0 && bytes % alignof(std::max_align_t) == 0, "a state block's size is a multiple of 16");
    SizeClass& c = size_class(bytes);
    const std::size_t page_index = slot >> c.page_shift;
    if (c.pages.size() <= page_index) c.pages.resize(page_index + 1);
    if (!c.pages[page_index].memory) allocate_page(c, page_index);
    Page& page = c.pages[page_index];
    ++page.used;
    const std::size_t within = slot & ((std::size_t{1} << c.page_shift) - 1);
    return page.memory + within * bytes;
}

void StateBlockPool::release(std::uint32_t slot, std::size_t bytes, void* block) noexcept {
    SizeClass* c = nullptr;
    for (SizeClass& candidate : classes_)
        if (candidate.bytes == bytes) c = &candidate;
    EBT_ASSERT(c != nullptr && (slot >> c->page_shift) < c->pages.size(), "a released state block came from this pool");
    if (!c || (slot >> c->page_shift) >= c->pages.size()) return;
    const std::size_t page_index = slot >> c->page_shift;
    Page& page = c->pages[page_index];
    const std::size_t within = slot & ((std::size_t{1} << c->page_shift) - 1);
    EBT_ASSERT(page.used > 0 && block == page.memory + within * bytes, "a released state block is its slot's block");
    (void)within;
    (void)block;
    if (--page.used == 0) free_page(*c, page_index);
}

std::size_t StateBlockPool::page_bytes() const noexcept {
    std::size_t total = 0;
    for (const SizeClass& c : classes_) {
        for (const Page& page : c.pages)
            if (page.memory && !page.in_region) total += c.bytes << c.page_shift;
        for (const Region& region : c.regions)
            if (region.memory) total += kHugePageBytes;
    }
    return total;
}

std::size_t StateBlockPool::region_count() const noexcept {
    std::size_t count = 0;
    for (const SizeClass& c : classes_)
        count += static_cast<std::size_t>(std::count_if(c.regions.begin(), c.regions.end(),
                                                        [](const Region& r) { return r.memory != nullptr; }));
    return count;
}

}  // namespace ebt::detail
