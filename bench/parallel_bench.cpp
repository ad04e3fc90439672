// Parallel stepping (World::set_threads): the real time of World::step at 1 and 2 threads (and any
// count in EBT_PARALLEL_BENCH_THREADS, e.g. "1,2,4") for the sweep's guard_a, guard_b and wide_64
// worlds and the arena, at 10,000, 100,000 and 1,000,000 agents (EBT_PARALLEL_BENCH_MAX_AGENTS=N
// leaves out the bigger ones). Names: "parallel/guard_a/agents:100000/threads:2".
//
// Each world is built once per scenario and size and stepped at every thread count in turn
// (set_threads between frames). The time measured is World::step alone, on a wall clock (manual
// time: the game's own work between frames, the arena's perception or guard_b's movement system,
// is left out). Counters: agents_stepped per frame, and where World::step's time went on the
// calling thread (World::set_phase_timing, StepPhaseTimes), in µs per frame: before_us, choose_us,
// tick_us, apply_us, after_us; serial_us is all but tick_us. The speed-up is the ratio of the
// times at 1 and N threads in the same run (docs/benchmarks.md, "Parallel stepping").
//
// guard_b's Patrol is a latent move as in the sweep (resumed 30-50 frames later), but its actions
// follow the threading rule: a move is noted in the agent's own record (its user pointer), and
// the game finds the moves that end in this frame by a scan between frames (outside the time).
// Its move lengths, 30 + (index * 7 + tick) % 21, take only three values in a frame (index * 7 % 21
// is 0, 7 or 14): the agents move in three groups, so most frames step no agent and one in about
// eight steps a third of them or more. guard_b_spread is the same world with the lengths spread by a
// hash of the agent and the tick, as the sweep's MovementSystem spreads them: every frame steps
// about 5% of the agents, ~4,900 of 100,000 (the sparse frame; docs/benchmarks.md, "Sixth pass:
// sparse frames").
#include "arena_scenario.hpp"
#include "bench_scenarios.hpp"
#include "guard_scenario.hpp"

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace {

namespace sc = ebt::scenarios;
using namespace std::chrono_literals;

enum class Scenario { GuardA, GuardB, GuardBSpread, Wide64, Arena };

/// guard_b_spread's move length past the shortest (0-20 frames): a hash of the agent and the tick,
/// so that the moves that end in a frame are about 1/40 of the agents whatever frame it is.
std::uint64_t spread_move_extra(std::uint64_t agent_index, std::uint64_t tick) {
    std::uint64_t x = agent_index * 0x9E3779B97F4A7C15ull + tick * 0xC2B2AE3D27D4EB4Full;
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    return x % 21;
}

/// One agent's pending latent move (guard_b): written only by its own agent's Patrol.
struct Move {
    ebt::ResumeHandle handle;
    std::uint64_t due_frame = 0;
    bool pending = false;
};

/// A world of one scenario and size, kept while the benchmarks of its thread counts run.
struct Population {
    Scenario scenario;
    std::size_t agents;
    ebt::Registry registry;
    ebt::Tree tree;
    std::unique_ptr<ebt::World> world;
    std::vector<Move> moves;             // guard_b
    std::unique_ptr<sc::Arena> arena;    // the arena brings its own world
    std::uint64_t frame = 0;

    Population(Scenario s, std::size_t n) : scenario(s), agents(n) {
        if (s == Scenario::Arena) {
            sc::ArenaConfig config;
            config.agents = static_cast<int>(n);
            arena = std::make_unique<sc::Arena>(config);
        } else {
            world = std::make_unique<ebt::World>();
            if (s == Scenario::GuardB || s == Scenario::GuardBSpread) {
                sc::register_fight_actions(registry);
                if (s == Scenario::GuardB) {
                    registry.add_latent_action("Patrol", [](ebt::ActionContext& ctx, const ebt::ResumeHandle& handle) {
                        Move& move = ctx.user<Move>();
                        move.handle = handle;
                        move.due_frame = ctx.tick() + 30 + (ctx.agent_handle().index * 7 + ctx.tick()) % 21;
                        move.pending = true;
                    });
                } else {
                    registry.add_latent_action("Patrol", [](ebt::ActionContext& ctx, const ebt::ResumeHandle& handle) {
                        Move& move = ctx.user<Move>();
                        move.handle = handle;
                        move.due_frame = ctx.tick() + 30 + spread_move_extra(ctx.agent_handle().index, ctx.tick());
                        move.pending = true;
                    });
                }
                tree = sc::guard_tree(registry);
                moves.resize(n);
            } else {
                sc::register_guard_actions(registry);
                tree = s == Scenario::Wide64 ? sc::wide_guard_tree(registry, 64) : sc::guard_tree(registry);
            }
            for (std::size_t i = 0; i < n; ++i) {
                ebt::SpawnOptions options{.seed = i};
                if (s == Scenario::GuardB || s == Scenario::GuardBSpread) options.user = &moves[i];
                world->spawn(tree, std::move(options));
            }
        }
        frame_time();  // the first frame enters the trees
        frame_time();
    }

    ebt::World& the_world() { return arena ? arena->world() : *world; }

    /// One frame; returns World::step's wall time and its metrics.
    ebt::FrameMetrics frame_time() {
        ebt::FrameMetrics m;
        if (arena) {
            m = arena->step().ai;
        } else {
            if (scenario == Scenario::GuardB || scenario == Scenario::GuardBSpread) {
                for (Move& move : moves) {
                    if (move.pending && move.due_frame <= frame) {
                        move.pending = false;
                        world->resume(move.handle, ebt::Status::Success);
                    }
                }
            }
            m = world->step(50ms);
        }
        ++frame;
        return m;
    }
};

std::unique_ptr<Population>& current() {
    static std::unique_ptr<Population> population;
    return population;
}

Population& population(Scenario s, std::size_t n) {
    auto& p = current();
    if (!p || p->scenario != s || p->agents != n) {
        p.reset();  // one world at a time: the 1M-agent worlds take gigabytes
        p = std::make_unique<Population>(s, n);
    }
    return *p;
}

void run(benchmark::State& state, Scenario s, std::size_t n, std::uint32_t threads) {
    Population& p = population(s, n);
    ebt::World& world = p.the_world();
    world.set_threads(threads);
    world.set_phase_timing(true);
    p.frame_time();  // warm-up at this thread count (the task arena's threads start)
    double stepped = 0;
    ebt::StepPhaseTimes sum;
    for (auto _ : state) {
        const ebt::FrameMetrics m = p.frame_time();
        state.SetIterationTime(std::chrono::duration<double>(m.wall_time).count());
        stepped += m.agents_stepped;
        const ebt::StepPhaseTimes& t = world.last_phase_times();
        sum.before += t.before;
        sum.choose += t.choose;
        sum.tick += t.tick;
        sum.apply += t.apply;
        sum.after += t.after;
    }
    const auto frames = static_cast<double>(state.iterations());
    const auto per_frame_us = [frames](std::chrono::nanoseconds t) { return benchmark::Counter(static_cast<double>(t.count()) / 1e3 / frames); };
    state.counters["agents_stepped"] = benchmark::Counter(stepped / frames);
    state.counters["before_us"] = per_frame_us(sum.before);
    state.counters["choose_us"] = per_frame_us(sum.choose);
    state.counters["tick_us"] = per_frame_us(sum.tick);
    state.counters["apply_us"] = per_frame_us(sum.apply);
    state.counters["after_us"] = per_frame_us(sum.after);
    state.counters["serial_us"] = per_frame_us(sum.before + sum.choose + sum.apply + sum.after);
}

std::vector<std::uint32_t> thread_counts() {
    std::vector<std::uint32_t> counts;
    const char* v = std::getenv("EBT_PARALLEL_BENCH_THREADS");
    std::string text = v ? v : "1,2";
    for (std::size_t at = 0; at < text.size();) {
        const std::size_t comma = text.find(',', at);
        counts.push_back(static_cast<std::uint32_t>(std::stoul(text.substr(at, comma - at))));
        at = comma == std::string::npos ? text.size() : comma + 1;
    }
    return counts;
}

std::size_t max_agents() {
    const char* v = std::getenv("EBT_PARALLEL_BENCH_MAX_AGENTS");
    return v ? static_cast<std::size_t>(std::strtoull(v, nullptr, 10)) : 1'000'000;
}

const bool registered = [] {
    const std::pair<const char*, Scenario> scenarios[] = {
        {"guard_a", Scenario::GuardA}, {"guard_b", Scenario::GuardB},
        {"guard_b_spread", Scenario::GuardBSpread}, {"wide_64", Scenario::Wide64}, {"arena", Scenario::Arena}};
    for (const auto& [name, s] : scenarios) {
        for (const std::size_t n : {std::size_t{10'000}, std::size_t{100'000}, std::size_t{1'000'000}}) {
            if (n > max_agents()) continue;
            for (const std::uint32_t threads : thread_counts()) {
                const std::string label = std::string("parallel/") + name + "/agents:" + std::to_string(n) + "/threads:" + std::to_string(threads);
                benchmark::RegisterBenchmark(label.c_str(), [s = s, n, threads](benchmark::State& state) { run(state, s, n, threads); })
                    ->UseManualTime()
                    ->Unit(benchmark::kMillisecond);
            }
        }
    }
    return true;
}();

}  // namespace
