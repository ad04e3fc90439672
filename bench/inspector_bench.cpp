// What the live inspector costs the game thread (<ebt/debug/inspector.hpp>; docs/debugging.md, "The
// live inspector"): 10,000 agents of the seeds' guard tree (scenarios::guard_tree, Patrol updated every
// frame) in one World, event mode, 1% of the agents switching between patrolling and attacking each
// frame (scenarios::ChurnWriter). One iteration is one frame as a game runs it with an inspector:
// the writes, before_frame(), World::step of 50 ms, after_frame().
//
//   BM_Inspector/off              no inspector: the World's own cost
//   BM_Inspector/attached         an Inspector with its HTTP server on 127.0.0.1, nobody asking
//   BM_Inspector/watched          a page watching one agent: every 5th frame (the page refreshes
//                                 every 250 ms, a frame is 50 ms) the requests the page makes (state,
//                                 metrics, the agent list, the agent) go through Inspector::handle,
//                                 the call the server's threads make; they are not timed (in a game
//                                 they run on the server's threads). Snapshots at most every 100 ms of
//                                 wall time (the default publish_interval): ten a second, however
//                                 fast the frames run, so their share of a frame depends on the frame
//                                 rate (at 20 frames a second: one snapshot every 2nd frame; here, with
//                                 frames back to back, fewer).
//   BM_Inspector/watched_every    the same with a snapshot every frame (publish_interval 0): the
//                                 worst case, a game at 10 frames a second or slower
//   BM_InspectorCalls/attached    before_frame() and after_frame() alone, without World::step, nobody
//                                 watching: what an attached inspector adds to a frame, measured
//                                 without the frame (whose run-to-run noise on a shared machine is
//                                 larger than that cost)
//
// Timings depend on the machine; compare the cases of one run as ratios. The CTest run
// (bench_inspector) only checks that every case runs.
#include "bench_scenarios.hpp"
#include "guard_scenario.hpp"

#include <benchmark/benchmark.h>
#include <ebt/debug/inspector.hpp>
#include <ebt/ebt.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace {

namespace sc = ebt::scenarios;
using namespace std::chrono_literals;

enum class Inspecting { Off, Attached, Watched, WatchedEvery };

constexpr std::size_t kAgents = 10'000;
constexpr double kChange = 0.01;

/// The world of one case, built before its measurement (as in trace_log_bench.cpp).
struct Population {
    ebt::Registry registry;
    ebt::Tree tree;
    ebt::World world;
    std::vector<ebt::AgentHandle> agents;
    std::optional<sc::ChurnWriter> churn;

    Population() {
        sc::register_guard_actions(registry);
        tree = sc::guard_tree(registry);
        agents.reserve(kAgents);
        for (std::size_t i = 0; i < kAgents; ++i) agents.push_back(world.spawn(tree, {.seed = i}));
        const auto seen = tree.key<bool>(sc::kEnemySeen);
        for (std::size_t i = 1; i < agents.size(); i += 2) world.at(agents[i]).blackboard().set(seen, true);
        churn.emplace(tree, kAgents, kChange);
        write();
        world.step(50ms);
        write();
        world.step(50ms);
    }
    void write() {
        churn->write_frame([&](std::size_t i) -> ebt::Agent& { return world.at(agents[i]); });
    }
};

/// The requests of one refresh of the page watching `agent` (engine/debug/inspector_page.cpp).
void page_refresh(ebt::debug::Inspector& inspector, const std::string& agent) {
    benchmark::DoNotOptimize(inspector.handle("GET", "/api/state"));
    benchmark::DoNotOptimize(inspector.handle("GET", "/api/metrics"));
    benchmark::DoNotOptimize(inspector.handle("GET", "/api/agents?limit=200&q="));
    benchmark::DoNotOptimize(inspector.handle("GET", "/api/agent?handle=" + agent));
}

void BM_Inspector(benchmark::State& state, Inspecting inspecting) {
    Population p;
    std::unique_ptr<ebt::debug::Inspector> inspector;
    const ebt::AgentHandle watched = p.agents[kAgents / 2 + 1];  // an attacking guard
    const std::string agent = std::to_string(watched.index) + "." + std::to_string(watched.generation);
    if (inspecting != Inspecting::Off) {
        ebt::debug::InspectorOptions options;
        options.watch_timeout = 1h;  // the page's requests count as watching, however slow the run
        if (inspecting == Inspecting::WatchedEvery) options.publish_interval = 0ms;
        inspector = std::make_unique<ebt::debug::Inspector>(p.world, options);
        if (inspecting != Inspecting::Attached) page_refresh(*inspector, agent);
    }
    std::uint64_t frames = 0;
    for (auto _ : state) {
        p.write();
        if (!inspector) {
            p.world.step(50ms);
        } else {
            if (inspector->before_frame()) inspector->after_frame(p.world.step(50ms));
            if (inspecting != Inspecting::Attached && frames % 5 == 4) {
                state.PauseTiming();
                page_refresh(*inspector, agent);
                state.ResumeTiming();
            }
        }
        ++frames;
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(frames * kAgents));  // agent-frames
}

/// The inspector's own calls around a frame, without the frame (the world does not move), nobody
/// watching.
void BM_InspectorCalls(benchmark::State& state) {
    Population p;
    ebt::debug::Inspector inspector(p.world);
    ebt::FrameMetrics metrics;
    metrics.agents_stepped = kAgents;
    for (auto _ : state) {
        if (inspector.before_frame()) inspector.after_frame(metrics);
        ++metrics.frame;
    }
}

BENCHMARK_CAPTURE(BM_Inspector, off, Inspecting::Off)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Inspector, attached, Inspecting::Attached)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Inspector, watched, Inspecting::Watched)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Inspector, watched_every, Inspecting::WatchedEvery)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_InspectorCalls)->Name("BM_InspectorCalls/attached");

}  // namespace
