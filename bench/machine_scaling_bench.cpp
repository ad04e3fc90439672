// What this machine gives two threads, without ebt: the ceiling for World::set_threads's speed-up
// (docs/benchmarks.md, "Parallel stepping"). Each workload runs on 1 and 2 threads of a oneTBB
// task arena, entered and cut into blocks the way World::step_in_parallel does it (one
// arena.execute and one tbb::parallel_for of 256-item blocks per iteration):
//
//   machine/compute/items:N/threads:T    N independent items of pure arithmetic (about 60 ns each,
//                                        no memory traffic): what two cores give at best
//   machine/scattered/blocks:N/threads:T N 256-byte blocks, each its own heap allocation (as an
//                                        agent's World slot and state block are), visited in
//                                        allocation order: read the whole block, write 16 bytes
//   machine/shuffled/blocks:N/threads:T  the same blocks visited in a random order fixed at
//                                        construction: every visit a cache miss once N blocks
//                                        outgrow the caches (memory latency, not bandwidth)
//
// N is 10,000, 100,000 or 1,000,000; EBT_MACHINE_BENCH_MAX=N leaves out the bigger ones. The time
// is the wall time of one pass (manual time). The speed-up is the ratio of the 1- and 2-thread
// times of the same workload in the same run.
#include <benchmark/benchmark.h>

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace {

constexpr std::size_t kGrain = 256;  // World's agents per task (engine/world/parallel_phase.cpp)

/// One 256-byte block, standing for one agent's data.
struct Block {
    std::uint64_t words[32];
};

/// The blocks of the scattered workload, each its own allocation, kept between benchmarks.
struct Blocks {
    std::vector<std::unique_ptr<Block>> blocks;
    std::vector<Block*> shuffled;  // the same blocks in a random order
    explicit Blocks(std::size_t n) {
        blocks.reserve(n);
        // Small allocations in between, as a tree's other allocations would be, so that the blocks
        // are not one dense array.
        std::vector<std::unique_ptr<std::uint64_t[]>> spacers;
        for (std::size_t i = 0; i < n; ++i) {
            blocks.push_back(std::make_unique<Block>());
            for (std::uint64_t& w : blocks.back()->words) w = i;
            spacers.push_back(std::make_unique<std::uint64_t[]>(1 + i % 7));
        }
        for (auto& b : blocks) shuffled.push_back(b.get());
        std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937_64(12));
    }
};

std::uint64_t compute_item(std::size_t i) {
    std::uint64_t x = i * 0x9E3779B97F4A7C15ull + 1;
    for (int k = 0; k < 64; ++k) x = x * 6364136223846793005ull + (x >> 29);
    return x;
}

void visit_block(Block& b) {
    std::uint64_t sum = 0;
    for (const std::uint64_t w : b.words) sum += w;
    b.words[0] = sum;
    b.words[1] += 1;
}

tbb::task_arena& arena(int threads) {
    static tbb::task_arena one(1), two(2);
    tbb::task_arena& a = threads == 1 ? one : two;
    a.initialize();
    return a;
}

template <class Body>
double timed_pass(int threads, std::size_t n, const Body& body) {
    const auto start = std::chrono::steady_clock::now();
    arena(threads).execute([&] {
        tbb::parallel_for(tbb::blocked_range<std::size_t>(0, n, kGrain), [&](const tbb::blocked_range<std::size_t>& r) {
            for (std::size_t i = r.begin(); i < r.end(); ++i) body(i);
        });
    });
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void compute(benchmark::State& state, std::size_t n, int threads) {
    std::vector<std::uint64_t> out(n);
    for (auto _ : state) state.SetIterationTime(timed_pass(threads, n, [&](std::size_t i) { out[i] = compute_item(i); }));
    benchmark::DoNotOptimize(out.data());
}

enum class Workload { Compute, Scattered, Shuffled };

void visit_blocks(benchmark::State& state, std::size_t n, int threads, bool shuffle) {
    static std::unique_ptr<Blocks> blocks;
    if (!blocks || blocks->blocks.size() != n) {
        blocks.reset();
        blocks = std::make_unique<Blocks>(n);
    }
    if (shuffle) {
        auto& v = blocks->shuffled;
        for (auto _ : state) state.SetIterationTime(timed_pass(threads, n, [&](std::size_t i) { visit_block(*v[i]); }));
    } else {
        auto& v = blocks->blocks;
        for (auto _ : state) state.SetIterationTime(timed_pass(threads, n, [&](std::size_t i) { visit_block(*v[i]); }));
    }
}

std::size_t max_items() {
    const char* v = std::getenv("EBT_MACHINE_BENCH_MAX");
    return v ? static_cast<std::size_t>(std::strtoull(v, nullptr, 10)) : 1'000'000;
}

const bool registered = [] {
    const std::pair<const char*, Workload> workloads[] = {
        {"compute/items:", Workload::Compute}, {"scattered/blocks:", Workload::Scattered}, {"shuffled/blocks:", Workload::Shuffled}};
    for (const auto& [name, workload] : workloads) {
        for (const std::size_t n : {std::size_t{10'000}, std::size_t{100'000}, std::size_t{1'000'000}}) {
            if (n > max_items()) continue;
            for (const int threads : {1, 2}) {
                const std::string label = std::string("machine/") + name + std::to_string(n) + "/threads:" + std::to_string(threads);
                benchmark::RegisterBenchmark(label.c_str(), [w = workload, n, threads](benchmark::State& state) {
                    if (w == Workload::Compute)
                        compute(state, n, threads);
                    else
                        visit_blocks(state, n, threads, w == Workload::Shuffled);
                })->UseManualTime()->Unit(benchmark::kMicrosecond);
            }
        }
    }
    return true;
}();

}  // namespace
