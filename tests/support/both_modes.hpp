// Running one test case in both modes: an agent with its trace recorder (Run), the loop over
// Polling and Event (in_both_modes) and the per-tick trace check most contract tests make
// (Run::expect_ticks). Used by the node contract tests (tests/nodes_*_test.cpp), the walk and
// re-entrancy tests; header-only, test code only.
#pragma once

#include "support/trace_recorder.hpp"

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

namespace ebt {
// Readable statuses in doctest failure messages (found by ADL; internal linkage on purpose).
[[maybe_unused]] static doctest::String toString(Status s) { return to_string(s); }
}  // namespace ebt

namespace ebt::test {

/// One agent of a test case with the recorder that sees all its events. Owned by the test case;
/// used between and after ticks. Every tick of `tick()` advances the clock by 100 ms unless told.
struct Run {
    TraceRecorder rec;
    Agent agent;

    Run(const Tree& tree, Mode mode, std::uint64_t seed = 0, bool restart_on_end = true)
        : agent(tree, AgentOptions{.mode = mode, .seed = seed, .restart_on_end = restart_on_end, .listener = &rec}) {}

    Status tick(Duration dt = std::chrono::milliseconds(100)) { return agent.tick(dt); }
    Status status(NodeIndex n) const { return agent.status(n); }

    /// One expected tick: its lifecycle trace and, when given, the status tick() returns.
    struct Tick {
        Tick(const char* trace_) : trace(trace_) {}  // NOLINT: a bare trace string is the common case
        Tick(const char* trace_, Status status_) : trace(trace_), status(status_) {}
        std::string trace;
        std::optional<Status> status;
    };

    /// Ticks once per entry of `expected` (by `dt`) and checks that tick's lifecycle trace, and its
    /// returned status where the entry names one. Each failure names the tick it is about.
    void expect_ticks(std::initializer_list<Tick> expected, Duration dt = std::chrono::milliseconds(100)) {
        for (const Tick& t : expected) {
            const std::uint64_t number = agent.ticks();
            CAPTURE(number);
            const Status returned = tick(dt);
            CHECK(rec.tick(number) == t.trace);
            if (t.status) CHECK(returned == *t.status);
        }
    }

    /// Where the recording stands now (for events emitted between ticks, see since()).
    std::size_t mark() const { return rec.entries.size(); }
    /// The lifecycle events recorded since `mark`, rendered like TraceRecorder::tick().
    std::string since(std::size_t mark) const {
        std::string out;
        for (std::size_t i = mark; i < rec.entries.size(); ++i) {
            const TraceEvent& e = rec.entries[i].event;
            if (!e.is_lifecycle()) continue;
            if (!out.empty()) out += ' ';
            out += TraceRecorder::render(e);
        }
        return out;
    }
    /// The nodes (other than the root) that were initialized in tick `tick`, in order.
    std::vector<int> started(std::uint64_t tick) const {
        std::vector<int> v;
        for (const auto& en : rec.entries)
            if (en.event.tick == tick && en.event.kind == TraceKind::Initialize && en.event.node != 0)
                v.push_back(en.event.node);
        return v;
    }
};

/// Runs `body(mode)` for Polling, then Event, with the mode named in any failure message.
template <class Body>
void in_both_modes(Body&& body) {
    for (Mode mode : both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        body(mode);
    }
}

/// Runs `body(run)` on a fresh Run of `tree` in Polling, then in Event mode (failures name the mode).
template <class Body>
void in_both_modes(const Tree& tree, Body&& body) {
    in_both_modes([&](Mode mode) {
        Run run(tree, mode);
        body(run);
    });
}

/// For each setting of the bool keys "a" and "b" (bits = 0..3: a is bit 0, b is bit 1), in Polling
/// then Event mode: a fresh Run of `tree` with a and b set, ticked once, then `check(bits, run)`.
template <class Check>
void for_each_ab_setting(const Tree& tree, Check&& check) {
    in_both_modes([&](Mode mode) {
        for (int bits = 0; bits < 4; ++bits) {
            CAPTURE(bits);
            Run run(tree, mode);
            run.agent.blackboard().set("a", (bits & 1) != 0);
            run.agent.blackboard().set("b", (bits & 2) != 0);
            run.tick();
            check(bits, run);
        }
    });
}

/// The commonest contract test: a fresh agent of `tree` in each mode ticks once per entry of
/// `expected`, and each tick's lifecycle trace (and status, where given) must be exactly that.
inline void expect_ticks_in_both_modes(const Tree& tree, std::initializer_list<Run::Tick> expected,
                                       Duration dt = std::chrono::milliseconds(100)) {
    in_both_modes(tree, [&](Run& run) { run.expect_ticks(expected, dt); });
}

}  // namespace ebt::test
