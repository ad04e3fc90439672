// Huge pages for a World's big hot arrays (see the header).
#include "world/huge_pages.hpp"

#include <atomic>
#include <cstdint>
#include <fstream>
#include <new>
#include <string>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace ebt::detail {

namespace {

std::atomic<int> test_choice{-1};             // set_huge_pages_for_test: -1 the system's setting
std::atomic<std::size_t> mapped_bytes_now{0};  // mapped_huge_bytes

/// Whether the kernel places madvise(MADV_HUGEPAGE)d memory on transparent huge pages: its setting is
/// `always` or `madvise` (the bracketed word of /sys/kernel/mm/transparent_hugepage/enabled). Read once.
bool system_has_huge_pages() noexcept {
#if defined(__linux__)
    static const bool enabled = [] {
        try {
            std::ifstream file("/sys/kernel/mm/transparent_hugepage/enabled");
            std::string setting;
            std::getline(file, setting);
            return setting.find("[always]") != std::string::npos || setting.find("[madvise]") != std::string::npos;
        } catch (...) {
            return false;
        }
    }();
    return enabled;
#else
    return false;
#endif
}

std::size_t round_up(std::size_t bytes, std::size_t to) noexcept { return (bytes + to - 1) / to * to; }

#if defined(__linux__)
/// A mapping of `length` bytes (a multiple of kHugePageBytes) that starts on a huge-page boundary:
/// `length` plus one huge page is mapped, and what lies before the boundary and after the length is
/// unmapped again. Returns nullptr when the system has no address space or memory to give.
std::byte* map_aligned(std::size_t length) noexcept {
    const std::size_t reserved = length + kHugePageBytes;
    void* raw = ::mmap(nullptr, reserved, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return nullptr;
    const auto start = reinterpret_cast<std::uintptr_t>(raw);
    const std::uintptr_t aligned = round_up(start, kHugePageBytes);
    if (aligned > start) ::munmap(raw, aligned - start);
    const std::uintptr_t end = start + reserved;
    if (end > aligned + length) ::munmap(reinterpret_cast<void*>(aligned + length), end - (aligned + length));
    // Only a hint: without it (THP `madvise`) the kernel would use small pages. A failure leaves them.
    (void)::madvise(reinterpret_cast<void*>(aligned), length, MADV_HUGEPAGE);
    return reinterpret_cast<std::byte*>(aligned);
}
#endif

}  // namespace

bool huge_pages_enabled() noexcept {
#if defined(__linux__)
    const int choice = test_choice.load(std::memory_order_relaxed);
    return choice < 0 ? system_has_huge_pages() : choice > 0;
#else
    return false;
#endif
}

void set_huge_pages_for_test(int enabled) noexcept { test_choice.store(enabled < 0 ? -1 : enabled > 0 ? 1 : 0); }

std::byte* map_huge(std::size_t bytes) {
#if defined(__linux__)
    if (!huge_pages_enabled()) return nullptr;
    const std::size_t length = round_up(bytes, kHugePageBytes);
    std::byte* memory = map_aligned(length);
    if (!memory) throw std::bad_alloc();
    mapped_bytes_now.fetch_add(length, std::memory_order_relaxed);
    return memory;
#else
    (void)bytes;
    return nullptr;
#endif
}

void unmap_huge(std::byte* memory, std::size_t bytes) noexcept {
#if defined(__linux__)
    if (!memory) return;
    const std::size_t length = round_up(bytes, kHugePageBytes);
    ::munmap(memory, length);
    mapped_bytes_now.fetch_sub(length, std::memory_order_relaxed);
#else
    (void)memory;
    (void)bytes;
#endif
}

std::size_t mapped_huge_bytes() noexcept { return mapped_bytes_now.load(std::memory_order_relaxed); }

}  // namespace ebt::detail
