// Spawning into a World after a large World was destroyed (docs/benchmarks.md, "Spawning after a
// large World was destroyed"): ROUNDS Worlds one after the other in one process, each spawning AGENTS
// agents of the guard tree, stepping them twice and being destroyed. Prints per round the time per
// spawn (wall and the process's CPU time) and the minor page faults per 1,000 spawns, and the same for
// the destruction. Built like the callgrind drivers (scripts/callgrind_driver.sh); run it plainly:
//
//   respawn_driver [AGENTS [ROUNDS]]      (100,000 and 3)
//
// The environment's glibc tunables (MALLOC_TRIM_THRESHOLD_, MALLOC_TOP_PAD_) show what the allocator
// does with the memory of the World destroyed before.
#include "guard_scenario.hpp"

#include <ebt/ebt.hpp>

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>

namespace {

/// Wall time, CPU time of the process and minor page faults, read together.
struct Sample {
    std::chrono::steady_clock::time_point wall;
    double cpu_seconds = 0;
    long minor_faults = 0;
};

Sample sample() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    Sample s;
    s.wall = std::chrono::steady_clock::now();
    s.cpu_seconds = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                    static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
    s.minor_faults = usage.ru_minflt;
    return s;
}

/// Prints what happened between `from` and `to`, per agent (ns) and per 1,000 agents (faults).
void print(const char* what, int round, std::size_t agents, const Sample& from, const Sample& to) {
    const double wall_ns = std::chrono::duration<double, std::nano>(to.wall - from.wall).count();
    std::printf("round %d %-8s %7.1f ns wall  %7.1f ns cpu  %6.1f minor faults per 1000 agents\n", round, what,
                wall_ns / static_cast<double>(agents), (to.cpu_seconds - from.cpu_seconds) * 1e9 / static_cast<double>(agents),
                static_cast<double>(to.minor_faults - from.minor_faults) * 1000.0 / static_cast<double>(agents));
}

}  // namespace

int main(int argc, char** argv) {
    const std::size_t agents = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 100'000;
    const int rounds = argc > 2 ? std::atoi(argv[2]) : 3;
    ebt::Registry registry;
    ebt::scenarios::register_guard_actions(registry);
    const ebt::Tree tree = ebt::scenarios::guard_tree(registry);
    for (int round = 1; round <= rounds; ++round) {
        auto world = std::make_unique<ebt::World>();
        const Sample before_spawn = sample();
        for (std::size_t i = 0; i < agents; ++i) world->spawn(tree, {.seed = i});
        const Sample after_spawn = sample();
        world->step(std::chrono::milliseconds(50));
        world->step(std::chrono::milliseconds(50));
        const Sample before_destroy = sample();
        world.reset();
        const Sample after_destroy = sample();
        print("spawn", round, agents, before_spawn, after_spawn);
        print("destroy", round, agents, before_destroy, after_destroy);
    }
    return 0;
}
