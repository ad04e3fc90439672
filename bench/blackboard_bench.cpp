// The blackboard change path: what one changing write costs, with and without someone listening, and
// what Boost.Signals2 costs next to the engine's direct call (docs/architecture.md, "Blackboard
// changes: the wake path"; results and how to run them: docs/benchmarks.md).
//
// Every benchmark below runs in the same binary so that their times can be compared as ratios taken
// in one run. Every write benchmark writes a bool key, alternating true/false, so that each write is
// a real change (an equal write is not a change and returns early; BM_Write_SameValue measures that).
//
//   write only (one changing write per iteration, nothing ticked; the agent has ticked twice, so
//   Patrol is running and the agent is in its steady state):
//     BM_Write_SameValue             event agent, the value written is the one stored: no change
//     BM_Write_Polling               polling agent, enemy_seen: the engine's hook returns at once
//     BM_Write_Event_Unwatched       event agent, a key no guard reads: an empty watcher scan
//     BM_Write_Event_NotLive         event agent, health_low: read by a guard that is not live
//     BM_Write_Event_LiveGuard       event agent, enemy_seen: the ActiveSelector's LowerPriority
//                                    guard is live while Patrol runs, so the write marks it dirty
//                                    and queues its position (after the first write the position
//                                    is already queued: this is the steady-state cost of a write)
//     BM_Write_Event_Unwatched_EmptyBus  as BM_Write_Event_Unwatched, with a ChangeBus that was
//                                    never connected to (every agent of a World has its bus set):
//                                    one flag test
//     BM_Write_Event_Unwatched_DisconnectedBus  as _EmptyBus, but the bus had a slot that was
//                                    disconnected: the write asks the signal whether it is empty
//     BM_Write_Event_Unwatched_Bus   as BM_Write_Event_Unwatched, with one empty slot on the
//                                    agent's ChangeBus (AgentOptions::bus)
//     BM_Write_Event_LiveGuard_Bus   as BM_Write_Event_LiveGuard, with one empty bus slot
//
//   write + the wake it causes (one tick per iteration; a tree whose live guard reads the key but
//   stays false, so that every write wakes it and no write switches branches):
//     BM_Tick_Quiet/{polling,event}       the tick alone, no write
//     BM_WriteTick_Live/{polling,event}   a changing write of the guard's key, then the tick
//
//   raw Boost.Signals2 (signature void(const BlackboardChange&), the ChangeBus's):
//     BM_SignalEmit<DummyMutexSignal>/{0,1}    emit with 0 or 1 empty slots, dummy_mutex (ChangeBus)
//     BM_SignalEmit<DefaultMutexSignal>/{0,1}  same with the default (pthread) mutex
//     (the engine itself checks empty() before emitting; these call the signal regardless)
//
//   creation (heap allocations and bytes counted by the global operator new of this file):
//     BM_SignalCreate<...>          construct + destroy a signal
//     BM_SignalCreateConnect<...>   construct a signal, connect one slot, destroy both
//     BM_AgentCreate                construct + destroy one event agent of the guard tree
//
// Counters: items_per_second (writes, emits, creations per second of CPU time); allocs and
// heap_bytes per iteration for the creation benchmarks; guards_per_iter for the write + tick pairs
// (how many guard evaluations each iteration caused, to show what was measured).
#include "guard_scenario.hpp"

#include <benchmark/benchmark.h>
#include <ebt/ebt.hpp>
#include <ebt/signals.hpp>

#include <boost/signals2/signal.hpp>

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>
#include <optional>

// ---- counting global allocation functions -----------------------------------------------------------
// Every replaceable operator new/delete, forwarding to malloc/free (aligned_alloc when over-aligned),
// so that the creation benchmarks can report allocations and bytes; compatible with ASan/UBSan.

#include "support/counting_new.hpp"  // this executable's counting operator new/delete

using ebt::test::g_allocated_bytes;
using ebt::test::g_allocations;

// ---- helpers ------------------------------------------------------------------------------------------

namespace {

using namespace std::chrono_literals;
using ebt::Agent;
using ebt::AgentOptions;
using ebt::Key;
using ebt::Mode;

constexpr ebt::Duration kFrame = 50ms;
constexpr const char* kUnreadKey = "mood";  // declared, read by no guard

/// The guard tree (scenarios/guard_scenario.hpp) with one more bool key that nothing reads, so that
/// every write benchmark uses the same 11-node tree.
ebt::Tree guard_tree_with_unread_key(const ebt::Registry& registry) {
    using namespace ebt::scenarios;
    return ebt::TreeBuilder("guard+mood", registry)
        .key<bool>(kUnreadKey)
        .key<bool>(kEnemySeen)
        .key<bool>(kHealthLow)
        .key<bool>(kEnemyDead)
        .subtree(guard_tree(registry), {{kEnemySeen, kEnemySeen}, {kHealthLow, kHealthLow}, {kEnemyDead, kEnemyDead}})
        .end();
}

/// A tree whose live guard reads enemy_seen but stays false while health_low is false:
///   0 ActiveSelector
///     1 Sequence      guard: enemy_seen && health_low (LowerPriority; live while Patrol runs)
///       2 Condition enemy_seen
///       3 Condition health_low
///       4 Action Attack
///     5 Action Patrol
/// A changing write of enemy_seen wakes the guard; the next tick evaluates it (false: no edge, no
/// switch) and updates Patrol, so a write + tick costs the wake and nothing else.
ebt::Tree wake_probe_tree(const ebt::Registry& registry) {
    using namespace ebt::scenarios;
    return ebt::TreeBuilder("wake_probe", registry)
        .key<bool>(kEnemySeen)
        .key<bool>(kHealthLow)
        .active_selector()
            .sequence()
                .check(kEnemySeen)
                .check(kHealthLow)
                .action("Attack")
            .back()
            .action("Patrol")
        .back()
        .end();
}

const ebt::Registry& guard_registry() {
    static const ebt::Registry registry = [] {
        ebt::Registry r;
        ebt::scenarios::register_guard_actions(r);
        return r;
    }();
    return registry;
}

/// One changing write per iteration: `key` alternates between true and false.
void toggle_writes(benchmark::State& state, Agent& agent, Key<bool> key) {
    ebt::Blackboard& bb = agent.blackboard();
    bool value = bb.get(key);
    for (auto _ : state) {
        value = !value;
        benchmark::DoNotOptimize(bb.set(key, value));
        benchmark::ClobberMemory();
    }
    if (bb.get(key) != value) state.SkipWithError("the last write did not land");
    state.SetItemsProcessed(state.iterations());
}

/// Two ticks bring an agent to its steady state: the first enters Patrol, the second is a first
/// quiet tick (event mode does not re-evaluate the guard that became live on the first: it was
/// just evaluated).
void warm_up(Agent& agent) {
    agent.tick(kFrame);
    agent.tick(kFrame);
}

/// An agent of the guard tree (+ unread key) in its steady state: Patrol is running.
Agent patrolling_agent(Mode mode, ebt::ChangeBus* bus = nullptr) {
    AgentOptions options;
    options.mode = mode;
    options.bus = bus;
    Agent agent(guard_tree_with_unread_key(guard_registry()), options);
    warm_up(agent);
    return agent;
}

// ---- write only ----------------------------------------------------------------------------------------

void BM_Write_SameValue(benchmark::State& state) {
    Agent agent = patrolling_agent(Mode::Event);
    ebt::Blackboard& bb = agent.blackboard();
    const Key<bool> key = agent.tree().key<bool>(ebt::scenarios::kEnemySeen);
    const bool value = bb.get(key);
    for (auto _ : state) {
        benchmark::DoNotOptimize(bb.set(key, value));
        benchmark::ClobberMemory();
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Write_SameValue);

void BM_Write_Polling(benchmark::State& state) {
    Agent agent = patrolling_agent(Mode::Polling);
    toggle_writes(state, agent, agent.tree().key<bool>(ebt::scenarios::kEnemySeen));
}
BENCHMARK(BM_Write_Polling);

void BM_Write_Event_Unwatched(benchmark::State& state) {
    Agent agent = patrolling_agent(Mode::Event);
    toggle_writes(state, agent, agent.tree().key<bool>(kUnreadKey));
}
BENCHMARK(BM_Write_Event_Unwatched);

void BM_Write_Event_NotLive(benchmark::State& state) {
    Agent agent = patrolling_agent(Mode::Event);
    toggle_writes(state, agent, agent.tree().key<bool>(ebt::scenarios::kHealthLow));
}
BENCHMARK(BM_Write_Event_NotLive);

void BM_Write_Event_LiveGuard(benchmark::State& state) {
    Agent agent = patrolling_agent(Mode::Event);
    toggle_writes(state, agent, agent.tree().key<bool>(ebt::scenarios::kEnemySeen));
}
BENCHMARK(BM_Write_Event_LiveGuard);

void BM_Write_Event_Unwatched_EmptyBus(benchmark::State& state) {
    ebt::ChangeBus bus;  // never connected to: the write tests the bus's flag only
    Agent agent = patrolling_agent(Mode::Event, &bus);
    toggle_writes(state, agent, agent.tree().key<bool>(kUnreadKey));
}
BENCHMARK(BM_Write_Event_Unwatched_EmptyBus);

void BM_Write_Event_Unwatched_DisconnectedBus(benchmark::State& state) {
    ebt::ChangeBus bus;
    bus.subscribe([](const ebt::BlackboardChange&) {}).disconnect();  // no slot left, flag set
    Agent agent = patrolling_agent(Mode::Event, &bus);
    toggle_writes(state, agent, agent.tree().key<bool>(kUnreadKey));
}
BENCHMARK(BM_Write_Event_Unwatched_DisconnectedBus);

void BM_Write_Event_Unwatched_Bus(benchmark::State& state) {
    ebt::ChangeBus bus;
    const boost::signals2::scoped_connection slot = bus.subscribe([](const ebt::BlackboardChange&) {});
    Agent agent = patrolling_agent(Mode::Event, &bus);
    toggle_writes(state, agent, agent.tree().key<bool>(kUnreadKey));
}
BENCHMARK(BM_Write_Event_Unwatched_Bus);

void BM_Write_Event_LiveGuard_Bus(benchmark::State& state) {
    ebt::ChangeBus bus;
    const boost::signals2::scoped_connection slot = bus.subscribe([](const ebt::BlackboardChange&) {});
    Agent agent = patrolling_agent(Mode::Event, &bus);
    toggle_writes(state, agent, agent.tree().key<bool>(ebt::scenarios::kEnemySeen));
}
BENCHMARK(BM_Write_Event_LiveGuard_Bus);

// ---- write + the wake it causes ----------------------------------------------------------------------------

/// One tick per iteration; with `write`, a changing write of enemy_seen before each tick.
void BM_WakeProbe(benchmark::State& state, Mode mode, bool write) {
    AgentOptions options;
    options.mode = mode;
    Agent agent(wake_probe_tree(guard_registry()), options);
    warm_up(agent);
    ebt::Blackboard& bb = agent.blackboard();
    const Key<bool> key = agent.tree().key<bool>(ebt::scenarios::kEnemySeen);
    bool value = bb.get(key);
    const std::uint32_t guards_before = agent.stats().guards_evaluated;
    for (auto _ : state) {
        if (write) {
            value = !value;
            benchmark::DoNotOptimize(bb.set(key, value));
        }
        benchmark::DoNotOptimize(agent.tick(kFrame));
        benchmark::ClobberMemory();
    }
    if (agent.status(5) != ebt::Status::Running) state.SkipWithError("Patrol stopped running: the probe switched");
    state.counters["guards_per_iter"] = benchmark::Counter(
        static_cast<double>(agent.stats().guards_evaluated - guards_before), benchmark::Counter::kAvgIterations);
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK_CAPTURE(BM_WakeProbe, Tick_Quiet/polling, Mode::Polling, false);
BENCHMARK_CAPTURE(BM_WakeProbe, WriteTick_Live/polling, Mode::Polling, true);
BENCHMARK_CAPTURE(BM_WakeProbe, Tick_Quiet/event, Mode::Event, false);
BENCHMARK_CAPTURE(BM_WakeProbe, WriteTick_Live/event, Mode::Event, true);

// ---- raw Boost.Signals2 -------------------------------------------------------------------------------------

using DummyMutexSignal = ebt::ChangeBus::Signal;  // keywords::mutex_type<dummy_mutex>
using DefaultMutexSignal = boost::signals2::signal<void(const ebt::BlackboardChange&)>;  // signals2::mutex

/// Emits one change per iteration on a signal with state.range(0) empty slots.
template <class Signal> void BM_SignalEmit(benchmark::State& state) {
    // A real BlackboardChange (what the bus carries), from a real agent.
    Agent agent = patrolling_agent(Mode::Event);
    const ebt::BlackboardChange change{agent.blackboard(), 0, kUnreadKey, &agent};
    Signal signal;
    for (std::int64_t i = 0; i < state.range(0); ++i) signal.connect([](const ebt::BlackboardChange&) {});
    for (auto _ : state) {
        signal(change);
        benchmark::ClobberMemory();
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK_TEMPLATE(BM_SignalEmit, DummyMutexSignal)->Arg(0)->Arg(1);
BENCHMARK_TEMPLATE(BM_SignalEmit, DefaultMutexSignal)->Arg(0)->Arg(1);

// ---- creation ---------------------------------------------------------------------------------------------------

/// Reports the allocations and bytes made inside the timed loop, per iteration.
class AllocationCounter {
public:
    explicit AllocationCounter(benchmark::State& state)
        : state_(state), count_(g_allocations.load()), bytes_(g_allocated_bytes.load()) {}
    ~AllocationCounter() {
        state_.counters["allocs"] = benchmark::Counter(static_cast<double>(g_allocations.load() - count_),
                                                       benchmark::Counter::kAvgIterations);
        state_.counters["heap_bytes"] = benchmark::Counter(static_cast<double>(g_allocated_bytes.load() - bytes_),
                                                           benchmark::Counter::kAvgIterations);
        state_.SetItemsProcessed(state_.iterations());
    }
    AllocationCounter(const AllocationCounter&) = delete;
    AllocationCounter& operator=(const AllocationCounter&) = delete;

private:
    benchmark::State& state_;
    long long count_;
    long long bytes_;
};

template <class Signal> void BM_SignalCreate(benchmark::State& state) {
    const AllocationCounter counter(state);
    for (auto _ : state) {
        Signal signal;
        benchmark::DoNotOptimize(&signal);
        benchmark::ClobberMemory();
    }
}
BENCHMARK_TEMPLATE(BM_SignalCreate, DummyMutexSignal);
BENCHMARK_TEMPLATE(BM_SignalCreate, DefaultMutexSignal);

template <class Signal> void BM_SignalCreateConnect(benchmark::State& state) {
    const AllocationCounter counter(state);
    for (auto _ : state) {
        Signal signal;
        boost::signals2::connection connection = signal.connect([](const ebt::BlackboardChange&) {});
        benchmark::DoNotOptimize(&signal);
        benchmark::DoNotOptimize(&connection);
        benchmark::ClobberMemory();
    }
}
BENCHMARK_TEMPLATE(BM_SignalCreateConnect, DummyMutexSignal);
BENCHMARK_TEMPLATE(BM_SignalCreateConnect, DefaultMutexSignal);

void BM_AgentCreate(benchmark::State& state) {
    const ebt::Tree tree = ebt::scenarios::guard_tree(guard_registry());
    std::size_t bytes = 0;
    {
        const AllocationCounter counter(state);
        for (auto _ : state) {
            Agent agent(tree);
            benchmark::DoNotOptimize(&agent);
            benchmark::ClobberMemory();
        }
    }
    bytes = Agent(tree).memory_bytes();
    state.counters["agent_memory_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_AgentCreate);

}  // namespace
