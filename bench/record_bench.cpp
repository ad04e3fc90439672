// What recording costs (docs/debugging.md, "Record and replay"): the arena (samples/arena's world:
// guards in squads, intruders, perception writing blackboards, squad alarms) stepped frame by frame,
// without and with a debug::Recorder writing every frame to a file. Time per frame; the recording's
// size per frame is reported as a counter.
#include "arena_scenario.hpp"

#include <ebt/debug/record.hpp>

#include <benchmark/benchmark.h>

#include <filesystem>
#include <optional>
#include <string>
#include <unistd.h>

namespace {

using ebt::scenarios::Arena;
using ebt::scenarios::ArenaConfig;

ArenaConfig config(benchmark::State& state) {
    ArenaConfig c;
    c.agents = static_cast<int>(state.range(0));
    c.mode = state.range(1) ? ebt::Mode::Event : ebt::Mode::Polling;
    return c;
}

void BM_ArenaFrame(benchmark::State& state) {
    Arena arena(config(state));
    for (auto _ : state) benchmark::DoNotOptimize(arena.step());
}

void BM_ArenaFrameRecorded(benchmark::State& state) {
    const std::filesystem::path file =
        std::filesystem::temp_directory_path() / ("ebt_record_bench_" + std::to_string(::getpid()) + ".ebtrec");
    std::optional<Arena> arena;
    std::optional<ebt::debug::Recorder> recorder;  // after the arena: stops before the world goes
    ArenaConfig c = config(state);
    c.instrument = [&](const ebt::Registry& actions, ebt::World& world) -> const ebt::Registry* {
        recorder.emplace(actions);
        recorder->start(world, file);
        return &recorder->registry();
    };
    arena.emplace(c);
    for (auto _ : state) benchmark::DoNotOptimize(arena->step());
    recorder->stop();
    const auto bytes = std::filesystem::file_size(file);
    state.counters["bytes/frame"] = static_cast<double>(bytes) / static_cast<double>(recorder->frames());
    recorder.reset();
    std::filesystem::remove(file);
}

// Args: guards, event mode (1) or polling (0).
BENCHMARK(BM_ArenaFrame)->Args({1000, 1})->Args({10000, 1})->Args({1000, 0})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ArenaFrameRecorded)->Args({1000, 1})->Args({10000, 1})->Args({1000, 0})->Unit(benchmark::kMicrosecond);

}  // namespace
