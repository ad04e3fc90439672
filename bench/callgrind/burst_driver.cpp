// The parallel bench's bursty `guard_b` world (bench/parallel_bench.cpp) as a small program, for the
// task probe (engine/world/task_probe.hpp) and for timing its burst frames apart from the empty ones
// (docs/benchmarks.md, "Ninth pass: the burst frames").
//
//   burst_driver THREADS [AGENTS [FRAMES [MODE [STANDBY_US]]]]
//
// Builds AGENTS (100,000) guard_b agents, steps 20 warm-up frames at THREADS threads, then FRAMES
// (2,000) measured frames: before each, the game's movement system resumes the moves due (as the
// bench does, one World::resume each; MODE "all": one World::resume_all; MODE "evict": one resume
// each, then the calling thread reads 16 MB of its own, so that the resumed agents' lines are no
// longer in its core's caches when the phase starts). STANDBY_US: ParallelOptions::worker_standby in
// µs (0: off, the code before it; default: the World's default). Prints, over the frames that stepped agents:
// their count, the median agents stepped, the median time of the resumes and of World::step, and
// the state hash (the same at every thread count and mode).
#include "guard_scenario.hpp"

#include <ebt/ebt.hpp>
#include <ebt/snapshot.hpp>
#include <ebt/detail/hash.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

namespace sc = ebt::scenarios;
using Clock = std::chrono::steady_clock;

/// One agent's pending latent move: written only by its own agent's Patrol (the bench's Move).
struct Move {
    ebt::ResumeHandle handle;
    std::uint64_t due_frame = 0;
    bool pending = false;
};

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s THREADS [AGENTS [FRAMES [one|all|evict [STANDBY_US]]]]\n", argv[0]);
        return 2;
    }
    const auto threads = static_cast<std::uint32_t>(std::strtoul(argv[1], nullptr, 10));
    const std::size_t n = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 100'000;
    const int frames = argc > 3 ? std::atoi(argv[3]) : 2'000;
    const std::string mode = argc > 4 ? argv[4] : "one";
    ebt::ParallelOptions options;
    if (argc > 5) options.worker_standby = std::chrono::microseconds(std::strtoll(argv[5], nullptr, 10));

    ebt::Registry registry;
    sc::register_fight_actions(registry);
    registry.add_latent_action("Patrol", [](ebt::ActionContext& ctx, const ebt::ResumeHandle& handle) {
        Move& move = ctx.user<Move>();
        move.handle = handle;
        move.due_frame = ctx.tick() + 30 + (ctx.agent_handle().index * 7 + ctx.tick()) % 21;
        move.pending = true;
    });
    const ebt::Tree tree = sc::guard_tree(registry);
    std::vector<Move> moves(n);
    ebt::World world;
    for (std::size_t i = 0; i < n; ++i) world.spawn(tree, {.seed = i, .user = &moves[i]});
    world.set_threads(threads, options);

    std::vector<char> evictor(16u << 20, 1);
    std::vector<ebt::ResumeHandle> due;
    std::uint64_t frame = 0;
    std::vector<double> resume_us, step_us, stepped;
    volatile unsigned sink = 0;
    for (int f = 0; f < 20 + frames; ++f, ++frame) {
        const auto t0 = Clock::now();
        due.clear();
        for (Move& move : moves) {
            if (move.pending && move.due_frame <= frame) {
                move.pending = false;
                if (mode == "all") due.push_back(move.handle);
                else world.resume(move.handle, ebt::Status::Success);
            }
        }
        if (mode == "all") world.resume_all(due, ebt::Status::Success);
        if (mode == "evict") {
            unsigned s = 0;
            for (std::size_t i = 0; i < evictor.size(); i += 64) s += static_cast<unsigned char>(evictor[i]++);
            sink = sink + s;
        }
        const auto t1 = Clock::now();
        const ebt::FrameMetrics m = world.step(std::chrono::milliseconds(50));
        const auto t2 = Clock::now();
        if (f >= 20 && m.agents_stepped > 0) {
            resume_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
            step_us.push_back(std::chrono::duration<double, std::micro>(t2 - t1).count());
            stepped.push_back(static_cast<double>(m.agents_stepped));
        }
    }
    const std::vector<std::byte> bytes = ebt::save_world(world);
    ebt::detail::Fnv1a hash;
    hash.bytes(bytes.data(), bytes.size());
    std::printf("threads %u agents %zu mode %s standby %lld us: %zu frames stepped agents (median %.0f); resumes p50 %.1f us; step p50 %.1f us; "
                "state hash %016llx\n",
                threads, n, mode.c_str(), static_cast<long long>(options.worker_standby.count()), stepped.size(), median(stepped), median(resume_us), median(step_us),
                static_cast<unsigned long long>(hash.value()));
    return 0;
}
