// Counting replacements of every replaceable global operator new/delete, shared by the allocation
// test (ebt_alloc_tests) and the blackboard benchmark. They forward to malloc/free (aligned_alloc for
// over-aligned requests), so they stay compatible with AddressSanitizer and UBSan.
//
// Include this header in exactly ONE source file of an executable: it defines the global operators.
// Read the totals with ebt::test::allocations() / allocated_bytes().
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace ebt::test {

inline std::atomic<long long> g_allocations{0};
inline std::atomic<long long> g_allocated_bytes{0};

inline std::atomic<long long> g_frees{0};  // calls of operator delete with a pointer that is not null

inline long long allocations() noexcept { return g_allocations.load(std::memory_order_relaxed); }
/// Allocations not freed yet (of those made since the program started).
inline long long live_allocations() noexcept {
    return g_allocations.load(std::memory_order_relaxed) - g_frees.load(std::memory_order_relaxed);
}
inline void counted_free(void* p) noexcept {
    if (p) g_frees.fetch_add(1, std::memory_order_relaxed);
    std::free(p);
}
inline long long allocated_bytes() noexcept { return g_allocated_bytes.load(std::memory_order_relaxed); }

inline void* counted_malloc(std::size_t size) noexcept {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
    g_allocated_bytes.fetch_add(static_cast<long long>(size), std::memory_order_relaxed);
    return std::malloc(size != 0 ? size : 1);
}

inline void* counted_aligned(std::size_t size, std::align_val_t align) noexcept {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
    g_allocated_bytes.fetch_add(static_cast<long long>(size), std::memory_order_relaxed);
    std::size_t a = static_cast<std::size_t>(align);
    if (a < sizeof(void*)) a = sizeof(void*);
    std::size_t rounded = (size + a - 1) / a * a;  // aligned_alloc wants a multiple of the alignment
    if (rounded == 0) rounded = a;
    return std::aligned_alloc(a, rounded);
}

/// Failure injection for tests: set to n > 0, the n-th throwing allocation from then on fails, once,
/// with std::bad_alloc (0: none fails).
inline std::atomic<long long> g_fail_countdown{0};

inline void* allocated_or_throw(void* p) {
    if (g_fail_countdown.load(std::memory_order_relaxed) > 0 && g_fail_countdown.fetch_sub(1, std::memory_order_relaxed) == 1) {
        std::free(p);
        throw std::bad_alloc();
    }
    if (!p) throw std::bad_alloc();
    return p;
}

}  // namespace ebt::test

void* operator new(std::size_t size) { return ebt::test::allocated_or_throw(ebt::test::counted_malloc(size)); }
void* operator new[](std::size_t size) { return ebt::test::allocated_or_throw(ebt::test::counted_malloc(size)); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept { return ebt::test::counted_malloc(size); }
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept { return ebt::test::counted_malloc(size); }
void* operator new(std::size_t size, std::align_val_t align) {
    return ebt::test::allocated_or_throw(ebt::test::counted_aligned(size, align));
}
void* operator new[](std::size_t size, std::align_val_t align) {
    return ebt::test::allocated_or_throw(ebt::test::counted_aligned(size, align));
}
void* operator new(std::size_t size, std::align_val_t align, const std::nothrow_t&) noexcept {
    return ebt::test::counted_aligned(size, align);
}
void* operator new[](std::size_t size, std::align_val_t align, const std::nothrow_t&) noexcept {
    return ebt::test::counted_aligned(size, align);
}

void operator delete(void* p) noexcept { ebt::test::counted_free(p); }
void operator delete[](void* p) noexcept { ebt::test::counted_free(p); }
void operator delete(void* p, std::size_t) noexcept { ebt::test::counted_free(p); }
void operator delete[](void* p, std::size_t) noexcept { ebt::test::counted_free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { ebt::test::counted_free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { ebt::test::counted_free(p); }
void operator delete(void* p, std::align_val_t) noexcept { ebt::test::counted_free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { ebt::test::counted_free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { ebt::test::counted_free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { ebt::test::counted_free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { ebt::test::counted_free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { ebt::test::counted_free(p); }
