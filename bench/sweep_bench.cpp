// The polling vs event sweep (issue 4): every benchmark scenario (scenarios/bench_scenarios.hpp)
// stepped through a World, over numbers of agents and blackboard change rates, in both modes side by
// side (each polling run is followed at once by the event run of the same configuration).
//
// Benchmark names are "<scenario>/<mode>/agents:<N>/change:<percent>", e.g.
// "guard_a/event/agents:10000/change:1%". Scenarios:
//   guard_a        the seeds' guard tree, Patrol updated every frame (returns Running)
//   guard_b        the guard tree with Patrol a latent move resumed by a MovementSystem every ~40 frames
//   wide_<K>       the guard tree under K extra guarded higher-priority branches (K = 4, 16, 64)
//   deep_<D>       the guard tree inside D nested guarded Sequences (D = 4, 16, 32)
//   waiting        every agent in a 1000-hour Wait or in a suspended action nobody resumes (change:0%)
//   arena          the sample's world (scenarios/arena_scenario.hpp): perception, intruders, squads;
//                  its blackboard changes are the perception's (the name says change:sim)
// and "<scenario>/paired/agents:<N>/change:<percent>" (BM_Paired): the configurations the README
// quotes, both modes in one benchmark, stepped in alternating blocks of frames so that a host whose
// speed changes for seconds at a time slows both alike (counters below).
// Change rate: the share of agents whose blackboard a ChurnWriter changes each frame (two writes
// each that toggle it between patrolling and attacking), before the World steps. At change 0% (the
// quiet world) every agent patrols; otherwise half the agents start attacking, and the toggles keep
// that mix (an attacking agent costs polling two guard evaluations per frame, a patrolling one one).
//
// One iteration is one frame (World::step of 50 ms, plus the frame's writes and movement). The
// population is built once per configuration and kept while Google Benchmark re-runs the same
// benchmark to find its iteration count (so the world keeps running from frame to frame). Counters
// (JSON: plain numbers; times in seconds):
//   time_per_agent_frame      CPU time / (agents x frames)
//   time_per_frame            CPU time per frame
//   agents, change, nodes, event   the configuration (event: 1 = event mode, 0 = polling)
//   guards_per_frame          guard and condition evaluations per frame (FrameMetrics, all agents)
//   updates_per_frame         leaf updates per frame
//   stepped_per_frame         agents the World stepped per frame
//   writes_per_frame          blackboard writes per frame (ChurnWriter)
//   resumes_per_frame         (guard_b) moves finished per frame
//   bytes_per_agent           Agent::memory_bytes(): the Agent object plus its state block
//   heap_bytes_per_agent      bytes requested from the heap while spawning the N agents, / N
//                             (the state block plus the World's slot storage growth, amortized),
//                             plus the huge-page mappings the World made meanwhile (whole 2 MiB
//                             pages: its big slot chunks and pool regions, engine/world/huge_pages.hpp)
//   allocs_per_agent          heap allocations while spawning, / N (counted by a global operator new)
//   create_time_per_agent     wall time to spawn the N agents, / N
// The paired rows' counters instead: polling_time_per_agent_frame and event_time_per_agent_frame
// (each mode's median block), polling_over_event (the median over the pairs of blocks of polling's
// time per frame / event's), agents, change, nodes.
// Results, charts and how to run: docs/benchmarks.md; scripts/bench.sh runs the short sweep.
#include "arena_scenario.hpp"
#include "bench_scenarios.hpp"
#include "guard_scenario.hpp"
#include "support/counting_new.hpp"  // this executable's counting operator new/delete
#include "world/huge_pages.hpp"         // mapped_huge_bytes: the World's memory beside the heap

#include <benchmark/benchmark.h>
#include <ebt/ebt.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <time.h>  // clock_gettime(CLOCK_THREAD_CPUTIME_ID): the paired rows' block times

namespace {

using namespace std::chrono_literals;
using ebt::Mode;
namespace sc = ebt::scenarios;

constexpr ebt::Duration kFrame = 50ms;

enum class TreeKind : std::uint8_t { GuardA, GuardB, Wide, Deep, Waiting };

struct Config {
    TreeKind kind = TreeKind::GuardA;
    int size_param = 0;  // K (wide) or D (deep)
    std::size_t agents = 0;
    double change = 0;
    Mode mode = Mode::Event;
    bool operator==(const Config&) const = default;
};

/// One configuration's world, kept between Google Benchmark's runs of the same benchmark.
struct Population {
    Config config;
    ebt::Registry registry;
    sc::MovementSystem movement;  // guard_b only
    ebt::Tree tree;
    ebt::World world;
    std::vector<ebt::AgentHandle> agents;  // game code keeps handles, never Agent* across frames
    std::optional<sc::ChurnWriter> churn;
    double create_seconds = 0;
    double heap_bytes = 0;
    double allocations = 0;

    explicit Population(const Config& c) : config(c) {
        switch (c.kind) {
        case TreeKind::GuardA: sc::register_guard_actions(registry); break;
        case TreeKind::GuardB: sc::register_latent_guard_actions(registry, movement); break;
        case TreeKind::Wide:
        case TreeKind::Deep: sc::register_guard_actions(registry); break;
        case TreeKind::Waiting: sc::register_waiting_actions(registry); break;
        }
        switch (c.kind) {
        case TreeKind::GuardA:
        case TreeKind::GuardB: tree = sc::guard_tree(registry); break;
        case TreeKind::Wide: tree = sc::wide_guard_tree(registry, c.size_param); break;
        case TreeKind::Deep: tree = sc::deep_guard_tree(registry, c.size_param); break;
        case TreeKind::Waiting: tree = sc::waiting_tree(registry); break;
        }

        const long long allocs_before = ebt::test::allocations();
        const long long bytes_before = ebt::test::allocated_bytes();
        const std::size_t mapped_before = ebt::detail::mapped_huge_bytes();
        const auto start = std::chrono::steady_clock::now();
        agents.reserve(c.agents);
        for (std::size_t i = 0; i < c.agents; ++i) agents.push_back(world.spawn(tree, {.mode = c.mode, .seed = i}));
        create_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        allocations = static_cast<double>(ebt::test::allocations() - allocs_before);
        heap_bytes = static_cast<double>(ebt::test::allocated_bytes() - bytes_before) +
                     static_cast<double>(ebt::detail::mapped_huge_bytes() - mapped_before);

        if (c.kind == TreeKind::Waiting) {
            const auto sleeper = tree.key<bool>(sc::kIsSleeper);
            for (std::size_t i = 0; i < agents.size(); ++i) world.at(agents[i]).blackboard().set(sleeper, i % 2 == 0);
        } else {
            // The quiet world (change 0%) patrols. With changes, half the agents start attacking, so
            // that the writer's toggles keep the mix at half and half.
            const auto seen = tree.key<bool>(sc::kEnemySeen);
            if (c.change > 0)
                for (std::size_t i = 1; i < agents.size(); i += 2) world.at(agents[i]).blackboard().set(seen, true);
            churn.emplace(tree, c.agents, c.change);
        }
        // Two frames outside the measurement: the first enters the branches, the second is a first
        // quiet frame (event mode does not re-evaluate the guards that became live on the first:
        // they were just evaluated).
        frame();
        frame();
    }

    struct FrameTotals {
        ebt::FrameMetrics metrics;
        std::size_t writes = 0;
        std::size_t resumes = 0;
    };
    FrameTotals frame() {
        FrameTotals t;
        if (churn) t.writes = churn->write_frame([this](std::size_t i) -> ebt::Agent& { return world.at(agents[i]); });
        if (config.kind == TreeKind::GuardB) t.resumes = movement.step(world);
        t.metrics = world.step(kFrame);
        return t;
    }
};

std::unique_ptr<Population> g_population;  // the current configuration's, rebuilt when it changes

/// A paired run's two worlds: the same configuration in polling and in event mode, alive at once.
struct PairedPopulations {
    Config config;  // (its mode is not used)
    Population polling;
    Population event;
    explicit PairedPopulations(const Config& c)
        : config(c), polling(with_mode(c, Mode::Polling)), event(with_mode(c, Mode::Event)) {}
    static Config with_mode(Config c, Mode m) {
        c.mode = m;
        return c;
    }
};
std::unique_ptr<PairedPopulations> g_paired;

/// The sample's world: perception and simulation around the AI, N guards.
struct ArenaPopulation {
    std::size_t agents;
    Mode mode;
    std::unique_ptr<sc::Arena> arena;
    double create_seconds = 0, heap_bytes = 0, allocations = 0;
    ArenaPopulation(std::size_t n, Mode m) : agents(n), mode(m) {
        const long long allocs_before = ebt::test::allocations();
        const long long bytes_before = ebt::test::allocated_bytes();
        const std::size_t mapped_before = ebt::detail::mapped_huge_bytes();
        const auto start = std::chrono::steady_clock::now();
        sc::ArenaConfig config;
        config.agents = static_cast<int>(n);
        config.mode = m;
        arena = std::make_unique<sc::Arena>(config);
        create_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        allocations = static_cast<double>(ebt::test::allocations() - allocs_before);
        heap_bytes = static_cast<double>(ebt::test::allocated_bytes() - bytes_before) +
                     static_cast<double>(ebt::detail::mapped_huge_bytes() - mapped_before);
        // Let the arena settle (intruders arrive, alarms start) before measuring.
        for (int i = 0; i < 40; ++i) arena->step();
    }
};
std::unique_ptr<ArenaPopulation> g_arena;

/// Sums over the frames of one run.
struct RunTotals {
    double guards = 0, updates = 0, stepped = 0, writes = 0, resumes = 0, frames = 0;
    void add(const Population::FrameTotals& t) {
        guards += t.metrics.guards_evaluated;
        updates += t.metrics.behaviors_updated;
        stepped += t.metrics.agents_stepped;
        writes += static_cast<double>(t.writes);
        resumes += static_cast<double>(t.resumes);
        frames += 1;
    }
};

void report(benchmark::State& state, const Config& c, double nodes, const RunTotals& run, double bytes_per_agent,
            double heap_bytes, double allocations, double create_seconds) {
    const double n = static_cast<double>(c.agents);
    const double frames = static_cast<double>(state.iterations());
    using benchmark::Counter;
    state.SetItemsProcessed(static_cast<std::int64_t>(c.agents) * state.iterations());
    state.counters["time_per_agent_frame"] = Counter(n * frames, Counter::kIsRate | Counter::kInvert);
    state.counters["time_per_frame"] = Counter(frames, Counter::kIsRate | Counter::kInvert);
    state.counters["agents"] = n;
    state.counters["change"] = c.change;
    state.counters["nodes"] = nodes;
    state.counters["event"] = c.mode == Mode::Event ? 1 : 0;
    if (run.frames > 0) {
        state.counters["guards_per_frame"] = run.guards / run.frames;
        state.counters["updates_per_frame"] = run.updates / run.frames;
        state.counters["stepped_per_frame"] = run.stepped / run.frames;
        state.counters["writes_per_frame"] = run.writes / run.frames;
        if (c.kind == TreeKind::GuardB) state.counters["resumes_per_frame"] = run.resumes / run.frames;
    }
    state.counters["bytes_per_agent"] = bytes_per_agent;
    state.counters["heap_bytes_per_agent"] = heap_bytes / n;
    state.counters["allocs_per_agent"] = allocations / n;
    state.counters["create_time_per_agent"] = create_seconds / n;
}

void BM_Tree(benchmark::State& state, Config c) {
    if (!g_population || !(g_population->config == c)) {
        g_arena.reset();  // free the previous world first: at most one big world at a time
        g_paired.reset();
        g_population.reset();
        g_population = std::make_unique<Population>(c);
    }
    Population& pop = *g_population;
    RunTotals run;
    for (auto _ : state) run.add(pop.frame());
    report(state, c, static_cast<double>(pop.tree.size()), run,
           c.agents ? static_cast<double>(pop.world.at(pop.agents.front()).memory_bytes()) : 0, pop.heap_bytes, pop.allocations,
           pop.create_seconds);
}



/// This thread's CPU time in seconds (the sweep's other rows report CPU time too).
double thread_cpu_seconds() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

double median_of(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const std::size_t h = v.size() / 2;
    return v.size() % 2 ? v[h] : (v[h - 1] + v[h]) / 2;
}

/// The paired rows ("<scenario>/paired/agents:N/change:C"): the polling world and the event world of
/// one configuration stepped in alternating blocks of frames (at least 20 ms and 20 frames of one
/// mode's frames each), each block timed on its own, the order swapped every pair. A shared
/// host that slows down for seconds at a time then slows both modes' blocks alike, where the other
/// rows time polling and event seconds apart. One iteration is one pair of blocks. Counters: each
/// mode's median block (time_per_agent_frame), and the median over the pairs of polling's block time
/// over event's (polling_over_event).
void BM_Paired(benchmark::State& state, Config c) {
    if (!g_paired || !(g_paired->config == c)) {
        g_arena.reset();
        g_population.reset();
        g_paired.reset();
        g_paired = std::make_unique<PairedPopulations>(c);
    }
    PairedPopulations& pair = *g_paired;
    // A block is at least kBlockSeconds and kBlockFrames of one mode's frames, so that what the other
    // mode's block left in the caches, the TLB and the branch predictors is a small part of it: a
    // first version's blocks of a fixed 20 frames (0.5 ms of guard_b's event frames at 10,000 agents)
    // measured them ~45 % slower than their own row, and blocks of 20 ms alone (~8 event frames of
    // guard_a at 100,000 agents and 1 % change) 30-80 % slower (docs/benchmarks.md, "The sweep").
    constexpr double kBlockSeconds = 0.02;
    constexpr std::size_t kBlockFrames = 20;
    const double agents = static_cast<double>(std::max<std::size_t>(1, c.agents));
    const auto block = [](Population& pop) {  // seconds per frame over one block
        const double start = thread_cpu_seconds();
        double elapsed = 0;
        std::size_t frames = 0;
        do {
            pop.frame();
            ++frames;
            elapsed = thread_cpu_seconds() - start;
        } while (elapsed < kBlockSeconds || frames < kBlockFrames);
        return elapsed / static_cast<double>(frames);
    };
    std::vector<double> polling_blocks, event_blocks, ratios;
    bool polling_first = true;
    for (auto _ : state) {
        double p = 0, e = 0;
        if (polling_first) {
            p = block(pair.polling);
            e = block(pair.event);
        } else {
            e = block(pair.event);
            p = block(pair.polling);
        }
        polling_first = !polling_first;
        polling_blocks.push_back(p);
        event_blocks.push_back(e);
        if (e > 0) ratios.push_back(p / e);
    }
    state.counters["polling_time_per_agent_frame"] = median_of(polling_blocks) / agents;
    state.counters["event_time_per_agent_frame"] = median_of(event_blocks) / agents;
    state.counters["polling_over_event"] = median_of(ratios);
    state.counters["agents"] = static_cast<double>(c.agents);
    state.counters["change"] = c.change;
    state.counters["nodes"] = static_cast<double>(pair.event.tree.size());
}


void BM_Arena(benchmark::State& state, std::size_t n, Mode mode) {
    if (!g_arena || g_arena->agents != n || g_arena->mode != mode) {
        g_population.reset();
        g_paired.reset();
        g_arena.reset();
        g_arena = std::make_unique<ArenaPopulation>(n, mode);
    }
    sc::Arena& arena = *g_arena->arena;
    RunTotals run;
    double ai_seconds = 0;
    for (auto _ : state) {
        const sc::ArenaFrame f = arena.step();
        run.add({f.ai, 0, 0});
        ai_seconds += std::chrono::duration<double>(f.ai.wall_time).count();
    }
    const Config c{TreeKind::GuardA, 0, n, 0, mode};
    report(state, c, static_cast<double>(arena.tree().size()), run,
           static_cast<double>(arena.world().agent(arena.handle(0))->memory_bytes()), g_arena->heap_bytes,
           g_arena->allocations, g_arena->create_seconds);
    // The AI's share (World::step, wall time) of the frame: the rest is perception and simulation.
    if (run.frames > 0) state.counters["ai_time_per_agent_frame"] = ai_seconds / (run.frames * static_cast<double>(n));
}

std::string percent(double share) {
    const double p = share * 100;
    std::string s = p == static_cast<int>(p) ? std::to_string(static_cast<int>(p)) : std::to_string(p);
    if (s.find('.') != std::string::npos) {
        while (s.back() == '0') s.pop_back();
    }
    return s + "%";
}

const char* mode_name(Mode m) { return m == Mode::Polling ? "polling" : "event"; }

/// EBT_SWEEP_MAX_AGENTS=N in the environment leaves out the configurations with more than N agents
/// (CTest's sanitizer build runs every scenario once, small).
std::size_t max_agents() {
    const char* v = std::getenv("EBT_SWEEP_MAX_AGENTS");
    return v && *v ? static_cast<std::size_t>(std::strtoull(v, nullptr, 10)) : SIZE_MAX;
}

// Registered by hand so that each polling run is followed by the event run of the same configuration.
[[maybe_unused]] const bool registered = [] {
    const std::size_t limit = max_agents();
    struct Scenario {
        std::string name;
        TreeKind kind;
        int size_param;
    };
    const std::vector<Scenario> trees = {
        {"guard_a", TreeKind::GuardA, 0}, {"guard_b", TreeKind::GuardB, 0}, {"wide_4", TreeKind::Wide, 4},
        {"wide_16", TreeKind::Wide, 16},  {"wide_64", TreeKind::Wide, 64},  {"deep_4", TreeKind::Deep, 4},
        {"deep_16", TreeKind::Deep, 16},  {"deep_32", TreeKind::Deep, 32},
    };
    const std::size_t agent_counts[] = {1, 100, 1'000, 10'000, 100'000};
    const double changes[] = {0, 0.001, 0.01, 0.1, 1};
    const Mode modes[] = {Mode::Polling, Mode::Event};

    for (const Scenario& s : trees)
        for (const std::size_t n : agent_counts) {
            if (n > limit) continue;
            for (const double change : changes)
                for (const Mode mode : modes) {
                    const std::string name = s.name + "/" + mode_name(mode) + "/agents:" + std::to_string(n) +
                                             "/change:" + percent(change);
                    benchmark::RegisterBenchmark(name.c_str(), BM_Tree, Config{s.kind, s.size_param, n, change, mode})
                        ->Unit(benchmark::kMicrosecond);
                }
        }
    // The paired rows: the configurations the README's table and the targets quote (after the others,
    // so that the matrix's order is unchanged).
    struct PairedRow {
        const char* name;
        TreeKind kind;
        int size_param;
        std::size_t agents;
        double change;
    };
    const PairedRow paired[] = {
        {"guard_a", TreeKind::GuardA, 0, 10'000, 0},   {"guard_b", TreeKind::GuardB, 0, 10'000, 0},
        {"wide_64", TreeKind::Wide, 64, 10'000, 0},    {"deep_32", TreeKind::Deep, 32, 10'000, 0},
        {"guard_a", TreeKind::GuardA, 0, 100'000, 0},  {"guard_a", TreeKind::GuardA, 0, 100'000, 0.01},
        {"guard_b", TreeKind::GuardB, 0, 100'000, 0.01},
        {"guard_b", TreeKind::GuardB, 0, 1'000, 0},  // (small: the sanitizer build's sweep runs it)
    };
    for (const std::size_t n : {std::size_t{1'000}, std::size_t{10'000}, std::size_t{100'000}, std::size_t{1'000'000}})
        for (const Mode mode : modes) {
            if (n > limit) continue;
            const std::string name = std::string("waiting/") + mode_name(mode) + "/agents:" + std::to_string(n) + "/change:0%";
            benchmark::RegisterBenchmark(name.c_str(), BM_Tree, Config{TreeKind::Waiting, 0, n, 0, mode})
                ->Unit(benchmark::kMicrosecond);
        }
    for (const std::size_t n : {std::size_t{1'000}, std::size_t{10'000}, std::size_t{100'000}})
        for (const Mode mode : modes) {
            if (n > limit) continue;
            const std::string name = std::string("arena/") + mode_name(mode) + "/agents:" + std::to_string(n) + "/change:sim";
            benchmark::RegisterBenchmark(name.c_str(), BM_Arena, n, mode)->Unit(benchmark::kMicrosecond);
        }
    for (const PairedRow& r : paired) {
        if (r.agents > limit) continue;
        const std::string name = std::string(r.name) + "/paired/agents:" + std::to_string(r.agents) + "/change:" + percent(r.change);
        benchmark::RegisterBenchmark(name.c_str(), BM_Paired, Config{r.kind, r.size_param, r.agents, r.change, Mode::Event})
            ->Unit(benchmark::kMillisecond);
    }
    return true;
}();

}  // namespace
