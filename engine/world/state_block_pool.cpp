// StateBlockPool: the state blocks of a World's agents, placed by slot (see the header).
#include "world/state_block_pool.hpp"

#include <ebt/assert.hpp>

#include <algorithm>
#include <bit>
#include <new>

namespace ebt::detail {

void StateBlockPool::FreePage::operator()(std::byte* memory) const noexcept {
    ::operator delete(memory, std::align_val_t{kPageAlignment});
}

StateBlockPool::SizeClass& StateBlockPool::size_class(std::size_t bytes) {
    for (SizeClass& c : classes_)
        if (c.bytes == bytes) return c;
    SizeClass c;
    c.bytes = bytes;
    c.page_shift = static_cast<std::uint32_t>(std::countr_zero(blocks_per_page(bytes)));
    classes_.push_back(std::move(c));
    return classes_.back();
}

void* StateBlockPool::allocate(std::uint32_t slot, std::size_t bytes) {
    EBT_ASSERT(bytes > 0 && bytes % alignof(std::max_align_t) == 0, "a state block's size is a multiple of 16");
    SizeClass& c = size_class(bytes);
    const std::size_t page_index = slot >> c.page_shift;
    if (c.pages.size() <= page_index) c.pages.resize(page_index + 1);
    Page& page = c.pages[page_index];
    if (!page.memory)
        page.memory.reset(static_cast<std::byte*>(::operator new(bytes << c.page_shift, std::align_val_t{kPageAlignment})));
    ++page.used;
    const std::size_t within = slot & ((std::size_t{1} << c.page_shift) - 1);
    return page.memory.get() + within * bytes;
}

void StateBlockPool::release(std::uint32_t slot, std::size_t bytes, void* block) noexcept {
    SizeClass* c = nullptr;
    for (SizeClass& candidate : classes_)
        if (candidate.bytes == bytes) c = &candidate;
    EBT_ASSERT(c != nullptr && (slot >> c->page_shift) < c->pages.size(), "a released state block came from this pool");
    if (!c || (slot >> c->page_shift) >= c->pages.size()) return;
    Page& page = c->pages[slot >> c->page_shift];
    const std::size_t within = slot & ((std::size_t{1} << c->page_shift) - 1);
    EBT_ASSERT(page.used > 0 && block == page.memory.get() + within * bytes,
               "a released state block is its slot's block");
    (void)within;
    (void)block;
    if (--page.used == 0) page.memory.reset();
}

std::size_t StateBlockPool::page_bytes() const noexcept {
    std::size_t total = 0;
    for (const SizeClass& c : classes_)
        for (const Page& page : c.pages)
            if (page.memory) total += c.bytes << c.page_shift;
    return total;
}

}  // namespace ebt::detail
