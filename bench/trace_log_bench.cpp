// What a trace log costs (<ebt/debug/trace_log.hpp>; docs/debugging.md, "Trace logs"): 10,000 agents of
// the seeds' guard tree (scenarios::guard_tree, Patrol updated every frame) in one World, event mode,
// 1% of the agents switching between patrolling and attacking each frame (scenarios::ChurnWriter).
// One iteration is one frame (the writes, then World::step of 50 ms).
//
//   BM_TraceLog/off            no log: the World's own cost
//   BM_TraceLog/one_file       a log of one agent (TraceLogOptions::agents), written to a file in the
//                              temporary directory: every agent's events now pass through the World's
//                              listener call, and every write through the change bus's slot
//   BM_TraceLog/one_memory     the same log kept in memory
//   BM_TraceLog/all_file       a log of every agent, to a file
//   BM_TraceLog/all_memory     a log of every agent, in memory (the memory is released every 256
//                              frames, outside the measurement)
//
// Counters: records_per_frame and log_bytes_per_frame (what the log holds per frame).
// Timings depend on the machine; compare the cases of one run as ratios. The CTest run
// (bench_trace_log) only checks that every case runs.
#include "bench_scenarios.hpp"
#include "guard_scenario.hpp"

#include <benchmark/benchmark.h>
#include <ebt/debug/trace_log.hpp>
#include <ebt/ebt.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace {

namespace sc = ebt::scenarios;
using namespace std::chrono_literals;

enum class Logging { Off, OneFile, OneMemory, AllFile, AllMemory };

constexpr std::size_t kAgents = 10'000;
constexpr double kChange = 0.01;

/// The world of one case, built before its measurement.
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
        frame();
        frame();
    }
    void frame() {
        churn->write_frame([&](std::size_t i) -> ebt::Agent& { return world.at(agents[i]); });
        world.step(50ms);
    }
};

std::string temp_log_path() {
    return (std::filesystem::temp_directory_path() / "ebt_trace_log_bench.ebtlog").string();
}

std::unique_ptr<ebt::debug::TraceLogWriter> make_writer(Logging logging, const Population& p) {
    ebt::debug::TraceLogOptions options;
    if (logging == Logging::OneFile || logging == Logging::OneMemory) options.agents = {p.agents[kAgents / 2]};
    const bool to_file = logging == Logging::OneFile || logging == Logging::AllFile;
    if (to_file) return std::make_unique<ebt::debug::TraceLogWriter>(temp_log_path(), options);
    return std::make_unique<ebt::debug::TraceLogWriter>(options);
}

void BM_TraceLog(benchmark::State& state, Logging logging) {
    Population p;
    std::unique_ptr<ebt::debug::TraceLogWriter> log;
    if (logging != Logging::Off) {
        log = make_writer(logging, p);
        log->attach(p.world);
    }
    std::uint64_t frames = 0, records = 0, bytes = 0;
    for (auto _ : state) {
        p.frame();
        ++frames;
        if (logging == Logging::AllMemory && frames % 256 == 0) {
            state.PauseTiming();  // a log of every agent in memory grows by ~100 KB a frame: start afresh
            records += log->records();
            bytes += log->bytes_written();
            log->close();
            log = make_writer(logging, p);
            log->attach(p.world);
            state.ResumeTiming();
        }
    }
    if (log) {
        log->close();
        records += log->records();
        bytes += log->bytes_written();
    }
    if (frames > 0) {
        state.counters["records_per_frame"] = static_cast<double>(records) / static_cast<double>(frames);
        state.counters["log_bytes_per_frame"] = static_cast<double>(bytes) / static_cast<double>(frames);
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(frames * kAgents));  // agent-frames
    std::filesystem::remove(temp_log_path());
}

BENCHMARK_CAPTURE(BM_TraceLog, off, Logging::Off)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_TraceLog, one_file, Logging::OneFile)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_TraceLog, one_memory, Logging::OneMemory)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_TraceLog, all_file, Logging::AllFile)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_TraceLog, all_memory, Logging::AllMemory)->Unit(benchmark::kMicrosecond);

}  // namespace
