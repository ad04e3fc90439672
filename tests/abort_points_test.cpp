// Agent::abort() from every point where user code returns into a tick (docs/architecture.md, "Errors"):
// for a few trees with guards, reactive conditions, parallels, repeats, waits and a throwing action,
// the agent is aborted from its listener at the k-th lifecycle or error event, for every k of the run,
// or from a condition at its j-th evaluation. Each listener abort must give the same lifecycle trace in
// both modes, and in every run every started action must end exactly once.
//
// EBT_ABORT_DIGEST=1 prints a digest of every run's full trace (guard evaluations, statuses and counters
// included): equal digests from two builds mean the two abort implementations behave the same.
#include "support/trace_recorder.hpp"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

using namespace ebt;
using namespace std::chrono_literals;
using test::TraceRecorder;

namespace {

/// Counts lifecycle and error events and aborts the agent at the `abort_at`-th of them.
struct AbortingRecorder : TraceRecorder {
    Agent* agent = nullptr;
    int abort_at = -1;
    int seen = 0;
    void on_event(const TraceEvent& e) override {
        TraceRecorder::on_event(e);
        if (!e.is_lifecycle() && e.kind != TraceKind::Error) return;
        if (seen++ == abort_at) agent->abort();
    }
};

/// What one run leaves behind, for the comparisons and the digest.
struct RunResult {
    std::vector<std::string> lifecycle;
    std::string full;  // every event, statuses and counters
    int events = 0;    // lifecycle and error events seen
    std::map<std::string, int> starts, ends;
};

struct Fixture {
    Agent* agent = nullptr;
    int condition_calls = 0;
    int abort_in_condition = -1;  // abort from the condition's j-th evaluation
    RunResult* result = nullptr;

    ActionSpec action(const std::string& name, int updates, Status end, bool throws = false) {
        ActionSpec s;
        s.memory_bytes = sizeof(int);
        s.on_initialize = [this, name](ActionContext&) { ++result->starts[name]; };
        s.update = [updates, end, throws](ActionContext& ctx) {
            int& n = ctx.memory<int>();
            if (++n < updates) return Status::Running;
            if (throws) throw std::runtime_error("boom");
            return end;
        };
        s.on_terminate = [this, name](ActionContext&, Status) { ++result->ends[name]; };
        return s;
    }
    /// The registry of the condition "Is" (reads its port "key"; aborts at its j-th evaluation).
    Registry registry;
    Fixture() {
        registry.add_condition(
            "Is",
            [this](const ConditionContext& ctx) {
                if (condition_calls++ == abort_in_condition) agent->abort();
                return ctx.in<bool>(0);
            },
            {input_port<bool>("key")});
    }
};

using TreeMaker = Tree (*)(Fixture&);

// 0 ActiveSelector, 1 Sequence [a, LowerPriority], 2 a, 3 Strike, 4 Parallel, 5 Patrol, 6 Repeat(3), 7 Step
Tree guarded(Fixture& fx) {
    return TreeBuilder("guarded", fx.registry)
        .key<bool>("a")
        .key<bool>("b")
        .active_selector()
            .sequence().check("a").action("Strike", fx.action("Strike", 3, Status::Success)).back()
            .parallel(Policy::RequireAll, Policy::RequireOne)
                .action("Patrol", fx.action("Patrol", 4, Status::Success))
                .repeat(3).action("Step", fx.action("Step", 1, Status::Success)).back()
            .back()
        .back()
        .end();
}

// 0 Sequence, 1 ReactiveSequence, 2 Is(b), 3 Work, 4 Selector, 5 Boom (throws), 6 Wait 20 ms, 7 Rest
Tree reactive(Fixture& fx) {
    return TreeBuilder("reactive", fx.registry)
        .key<bool>("a")
        .key<bool>("b", true)
        .sequence()
            .reactive_sequence()
                .condition("Is", {{"key", "b"}})
                .action("Work", fx.action("Work", 3, Status::Success))
            .back()
            .selector()
                .action("Boom", fx.action("Boom", 2, Status::Success, /*throws=*/true))
                .wait(20ms)
            .back()
            .action("Rest", fx.action("Rest", 2, Status::Failure))
        .back()
        .end();
}

// 0 Selector, 1 Sequence [precondition Is(a), Self], 2 Hold, 3 Retry(2), 4 Inverter, 5 Fail, 6 Idle
Tree self_guarded(Fixture& fx) {
    return TreeBuilder("self_guarded", fx.registry)
        .key<bool>("a", true)
        .key<bool>("b")
        .selector()
            .sequence()
                .precondition(Predicate::condition("Is", {{"key", "a"}}))
                .abort(AbortMode::Self)
                .action("Hold", fx.action("Hold", 5, Status::Success))
                .retry(2).inverter().action("Fail", fx.action("Fail", 1, Status::Success)).back().back()
            .back()
            .action("Idle", fx.action("Idle", 3, Status::Success))
        .back()
        .end();
}

RunResult run(TreeMaker make, Mode mode, int abort_at, int abort_in_condition) {
    RunResult result;
    Fixture fx;
    fx.result = &result;
    fx.abort_in_condition = abort_in_condition;
    AbortingRecorder rec;
    rec.abort_at = abort_at;
    Agent agent(make(fx), {.mode = mode, .seed = 7, .listener = &rec});
    rec.agent = &agent;
    fx.agent = &agent;
    for (std::uint64_t tick = 0; tick < 12; ++tick) {
        // The same writes in every run: a raises the guard, b falls, a falls again.
        if (tick == 2) agent.blackboard().set("a", !agent.blackboard().get<bool>("a"));
        if (tick == 5) agent.blackboard().set("b", !agent.blackboard().get<bool>("b"));
        if (tick == 8) agent.blackboard().set("a", !agent.blackboard().get<bool>("a"));
        agent.tick(10ms);
        result.full += "|" + std::to_string(tick) + ":" + to_string(agent.status());
        for (NodeIndex n = 0; n < agent.tree().size(); ++n) result.full += to_string(agent.status(n))[0];
    }
    agent.abort();  // every action still running ends now
    for (const auto& en : rec.entries) result.full += " " + std::to_string(en.event.tick) + TraceRecorder::render(en.event);
    const AgentStats& s = agent.stats();
    result.full += " stats " + std::to_string(s.updates) + "/" + std::to_string(s.timers_fired);
    if (mode == Mode::Polling) result.full += "/" + std::to_string(s.guards_evaluated);
    result.lifecycle = rec.lifecycle();
    result.events = rec.seen;
    return result;
}

std::uint64_t fnv(const std::string& s, std::uint64_t h) {
    for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
    return h;
}

}  // namespace

TEST_CASE("abort points: abort() at every event and condition call; same trace in both modes; every action ends once") {
    const std::vector<std::pair<const char*, TreeMaker>> trees{
        {"guarded", &guarded}, {"reactive", &reactive}, {"self_guarded", &self_guarded}};
    std::uint64_t digest = 0xcbf29ce484222325ull;
    int runs = 0;
    for (const auto& tree : trees) {
        const char* const name = tree.first;  // (not a structured binding: CAPTURE's lambda takes it, which Clang 14 refuses)
        const TreeMaker make = tree.second;
        CAPTURE(name);
        const int events = run(make, Mode::Polling, -1, -1).events;
        REQUIRE(events > 10);
        for (int k = -1; k <= events; ++k) {
            for (int j : {-1, 0, 1, 3, 6}) {
                if (k >= 0 && j >= 0) continue;  // one abort source per run
                CAPTURE(k);
                CAPTURE(j);
                const RunResult polling = run(make, Mode::Polling, k, j);
                const RunResult event = run(make, Mode::Event, k, j);
                // A condition's j-th evaluation comes at another point in each mode (polling evaluates
                // every live guard each tick) except the first, on entry.
                if (j <= 0) {
                    CHECK(polling.lifecycle == event.lifecycle);
                    CHECK(polling.starts == event.starts);
                }
                CHECK(polling.starts == polling.ends);  // every started action ended exactly once
                CHECK(event.starts == event.ends);
                digest = fnv(polling.full, fnv(event.full, digest));
                runs += 2;
            }
        }
    }
    if (std::getenv("EBT_ABORT_DIGEST"))
        std::printf("abort points: %d runs, digest %016llx\n", runs, static_cast<unsigned long long>(digest));
}
