// Measurement probe of the parallel phase (h-par, issue 12): time stamps of every task and phase,
// compiled in only with -DEBT_TASK_PROBE (a separate build directory), never in a normal build.
// tick_slots notes each task (thread, range, start, end, agents ticked); tick_in_parallel notes each
// phase (start, end, grain); stand_by notes each worker standby (when called, when run). At exit the records are written to $EBT_TASK_PROBE_OUT (one line each)
// for scripts/task_probe.py to summarise.
#pragma once

#ifdef EBT_TASK_PROBE
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <vector>

namespace ebt::probe {

inline std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct TaskNote {
    std::int64_t start, end;
    std::uint32_t thread, begin, slots_end, ticked;
};
struct PhaseNote {
    std::int64_t start, end;
    std::uint64_t grain, slots, awake;
};

/// A worker standby (World::ParallelState::call_workers, stand_by): when the World called the workers
/// (`called`, on the calling thread), and when a worker ran the standby task (`start`, `end`).
struct StandbyNote {
    std::int64_t called, start, end;
};

/// Per-thread task notes (fixed capacity, no locking in the phase), the phase notes and the standbys.
struct Store {
    static constexpr std::size_t kCap = 1 << 22;
    std::vector<TaskNote> tasks[8];
    std::size_t used[8] = {};
    std::vector<PhaseNote> phases;
    std::mutex standby_lock;  // (a few standbys a burst: a lock is fine)
    std::vector<StandbyNote> standbys;
    Store() {
        for (auto& t : tasks) t.resize(kCap);
        phases.reserve(1 << 20);
    }
    ~Store() {
        const char* path = std::getenv("EBT_TASK_PROBE_OUT");
        if (!path) return;
        FILE* f = std::fopen(path, "w");
        if (!f) return;
        for (const PhaseNote& p : phases)
            std::fprintf(f, "P %lld %lld %llu %llu %llu\n", (long long)p.start, (long long)p.end, (unsigned long long)p.grain,
                         (unsigned long long)p.slots, (unsigned long long)p.awake);
        for (const StandbyNote& n : standbys)
            std::fprintf(f, "S %lld %lld %lld\n", (long long)n.called, (long long)n.start, (long long)n.end);
        for (int t = 0; t < 8; ++t)
            for (std::size_t i = 0; i < used[t]; ++i) {
                const TaskNote& n = tasks[t][i];
                std::fprintf(f, "T %lld %lld %u %u %u %u\n", (long long)n.start, (long long)n.end, n.thread, n.begin, n.slots_end,
                             n.ticked);
            }
        std::fclose(f);
    }
    void task(const TaskNote& n) {
        const std::uint32_t t = n.thread & 7;
        if (used[t] < kCap) tasks[t][used[t]++] = n;
    }
};
inline Store& store() {
    static Store s;
    return s;
}

}  // namespace ebt::probe
#endif
