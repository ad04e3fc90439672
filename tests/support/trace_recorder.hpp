// Test helpers: a listener that records an agent's trace, and small action factories.
// Running a case in both modes: support/both_modes.hpp.
#pragma once

#include <ebt/ebt.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace ebt::test {

/// Records every event; renders the lifecycle events of one tick as "0:I 4:I 4:U 4:T(Aborted)".
struct TraceRecorder : TraceListener {
    struct Entry {
        TraceEvent event;
        std::string message;
    };
    std::vector<Entry> entries;

    void on_event(const TraceEvent& e) override {
        entries.push_back({e, std::string(e.message)});
        entries.back().event.message = {};
    }

    static std::string render(const TraceEvent& e) {
        std::string s = std::to_string(e.node) + ":";
        switch (e.kind) {
        case TraceKind::Initialize: return s + "I";
        case TraceKind::Update: return s + "U";
        case TraceKind::Terminate: return s + "T(" + to_string(e.status) + ")";
        case TraceKind::GuardEvaluated: return s + "G(" + (e.result ? "true" : "false") + ")";
        case TraceKind::ConditionEvaluated: return s + "C(" + (e.result ? "true" : "false") + ")";
        case TraceKind::Error: return s + "E";
        }
        return s;
    }

    /// Lifecycle events (I, U, T) of tick `tick`, space separated.
    std::string tick(std::uint64_t tick) const {
        std::string out;
        for (const auto& en : entries) {
            if (en.event.tick != tick || !en.event.is_lifecycle()) continue;
            if (!out.empty()) out += ' ';
            out += render(en.event);
        }
        return out;
    }
    /// Every event of tick `tick` including guard and condition evaluations and errors.
    std::string all(std::uint64_t tick) const {
        std::string out;
        for (const auto& en : entries) {
            if (en.event.tick != tick) continue;
            if (!out.empty()) out += ' ';
            out += render(en.event);
        }
        return out;
    }
    /// The whole lifecycle trace as one string per event, "tick node:event".
    std::vector<std::string> lifecycle() const {
        std::vector<std::string> v;
        for (const auto& en : entries)
            if (en.event.is_lifecycle()) v.push_back(std::to_string(en.event.tick) + " " + render(en.event));
        return v;
    }
    std::vector<std::string> errors() const {
        std::vector<std::string> v;
        for (const auto& en : entries)
            if (en.event.kind == TraceKind::Error) v.push_back(std::to_string(en.event.node) + ": " + en.message);
        return v;
    }
    void clear() { entries.clear(); }
};

/// An action that stays Running forever.
inline ActionSpec running_action() {
    ActionSpec s;
    s.update = [](ActionContext&) { return Status::Running; };
    return s;
}

/// An action that returns `result` on its `n`-th update of each run (Running before).
inline ActionSpec finishing_action(int n, Status result) {
    ActionSpec s;
    s.memory_bytes = sizeof(int);
    s.update = [n, result](ActionContext& ctx) {
        int& updates = ctx.memory<int>();
        return ++updates >= n ? result : Status::Running;
    };
    return s;
}

/// An action whose k-th run (k counted in `runs`, shared by all its runs) returns results[k] on its
/// first update; the last result repeats.
inline ActionSpec scripted_runs(std::vector<Status> results, int& runs) {
    ActionSpec s;
    s.update = [results, &runs](ActionContext&) {
        const auto k = std::min<std::size_t>(static_cast<std::size_t>(runs++), results.size() - 1);
        return results[k];
    };
    return s;
}

/// An action that suspends itself on its first update and stores the handle.
inline ActionSpec suspending_action(ResumeHandle& handle) {
    ActionSpec s;
    s.update = [&handle](ActionContext& ctx) {
        handle = ctx.suspend();
        return Status::Running;
    };
    return s;
}

/// A running action that writes `true` to the bool key bound to its port "k" on its update in tick `at`.
inline ActionSpec writer_at_tick(std::uint64_t at) {
    ActionSpec s;
    s.ports = {port<bool>("k")};
    s.update = [at](ActionContext& ctx) {
        if (ctx.tick() == at) ctx.out<bool>(0, true);
        return Status::Running;
    };
    return s;
}

inline const std::vector<Mode>& both_modes() {
    static const std::vector<Mode> modes{Mode::Polling, Mode::Event};
    return modes;
}

}  // namespace ebt::test
