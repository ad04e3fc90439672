// World::ParallelState: the oneTBB task arena and the per-thread buffers of a World that steps its
// agents on several threads (World::set_threads > 1). Owned by the World (created by set_threads,
// dropped when it goes back to 1); used only by World::step_in_parallel (parallel_phase.cpp) and
// by the deferred shared writes of the ticks it runs.
#pragma once

#include "world/parallel_tick.hpp"

#include <ebt/value_type.hpp>
#include <ebt/world.hpp>

#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <vector>

namespace ebt::detail {

/// A write to a shared blackboard made during the parallel phase, kept for the apply after it.
/// Consecutive writes of one task (a range of slots, ticked in order by one thread) to the same key
/// are kept as one, the last: applying the earlier ones first would change nothing it leaves.
struct DeferredSharedWrite {
    SharedBlackboard* blackboard;
    std::uint32_t owner_index;  // the blackboard's index in the World's shared blackboards, or kNotOwned
    KeyId key;
    bool boxed;                 // the value is in boxed[index], otherwise its bytes from bytes[index]
    /// The value equals the blackboard's pending value as the phase found it (nothing changes a
    /// pending value during the phase: every write is deferred): writing it then would change no
    /// value and emit nothing at the next publish.
    bool same_as_pending;
    std::size_t index;
    static constexpr std::uint32_t kNotOwned = 0xFFFFFFFFu;
};

/// A change of a shared key published at the start of the frame whose routing into the subscribed
/// agents' mirrors is left to the parallel phase: each task mirrors it into the subscribers in its own
/// range of slots before it ticks them (World::publish_shared collects them; docs/world.md "Threads").
struct PendingRoute {
    std::uint32_t shared_index;          // in the World's shared blackboards
    KeyId key;                           // the shared blackboard's key
    std::uint32_t first_slot, last_slot;  // the least and the greatest slot of its subscriber list
};

/// An agent a tick of the parallel phase left for the apply: it goes to sleep (its awake bit is
/// cleared, and with kSleepsWithTimer its new timer entry {due, slot, stamp} is pushed into the
/// World's heap), or the apply decides (kApplyDecides: its tick threw, or it is not live).
struct AgentForApply {
    TimePoint due;
    std::uint32_t slot;
    std::uint32_t stamp;
    std::uint8_t after_tick;  // a World::ParallelState::AfterTick other than kStaysAwake
};

/// What one task of the parallel phase (a range of slots, or of places in the budget's step list)
/// left for the apply: agents[agents_first, agents_end) and writes[writes_first, writes_end) of the
/// buffer of the thread that ran it, in the order it ticked its agents (slot order, then call order).
/// `order` is the range's first slot (or first place): sorted by it, the tasks' records give
/// everything in the order one thread steps the agents.
struct TaskRecord {
    std::uint32_t order;
    const struct ParallelBuffer* buffer;
    std::uint32_t agents_first, agents_end;
    std::uint32_t writes_first, writes_end;
};

/// One thread's buffers for one frame, reused frame to frame (cleared, capacity kept). Padded to a
/// cache line so that two threads' counters never share one.
struct alignas(64) ParallelBuffer {
    FrameMetrics metrics;                      // counters of the agents this thread ticked
    std::vector<AgentForApply> agents;         // agents its ticks put to sleep (or left to the apply)
    std::vector<DeferredSharedWrite> writes;
    std::vector<TaskRecord> tasks;             // the tasks this thread ran that left something
    std::size_t task_first_write = 0;          // writes[task_first_write...] are the current task's
    const std::vector<std::uint32_t>* publish_queue = nullptr;  // the World's: tells its own blackboards
    std::vector<std::byte> bytes;              // values of trivially copyable types
    std::vector<Value> boxed;                  // other values (std::string, user types): allocate
    std::vector<std::uint32_t> wakes;          // other agents woken (only a world breaking the rule)
    std::vector<std::uint32_t> route_candidates;  // the current task's routes (places in ParallelState::routes)
    std::vector<std::uint32_t> routed_awake;      // the current task's agents woken by its routing, sorted
    std::vector<std::uint32_t> routes_with_gone;  // routes whose lists hold agents that left (cleaned after)
    std::int64_t timers_live_change = 0;       // armed timers gained (+) and lost (-) by this thread's agents
    /// Awake bits this thread's tasks cleared themselves, in words of the awake set their ranges held
    /// whole (World::ParallelState::put_to_sleep_in_task); the apply takes them off the World's count.
    std::uint32_t awake_cleared = 0;
    std::vector<std::uint32_t> emptied_words;  // words of the awake set those clears left all zero
    /// Tasks run with this buffer, ever: each task publishes the buffer with a release increment that the
    /// calling thread acquires after the phase (for ThreadSanitizer; see World::ParallelState::phase).
    /// Per buffer, so that no line is written by two threads in the phase (it was one counter of the
    /// ParallelState, next to `phase`, which every task reads: docs/benchmarks.md, "Seventh pass").
    /// A read-modify-write, not a store: an arena slot (and so this buffer) can pass to another thread
    /// within a phase, and only an RMW keeps the earlier thread's release in the sequence acquired.
    std::atomic<std::uint64_t> tasks_done{0};
    /// After a task that used this buffer.
    void note_task_done() { tasks_done.fetch_add(1, std::memory_order_acq_rel); }
    void clear() {
        metrics = FrameMetrics{};
        timers_live_change = 0;
        awake_cleared = 0;
        emptied_words.clear();
        agents.clear();
        writes.clear();
        tasks.clear();
        task_first_write = 0;
        bytes.clear();
        boxed.clear();
        wakes.clear();
        routes_with_gone.clear();
    }
};

/// The standby tasks (World::ParallelState::call_workers) of every World of the process: handed to an
/// arena ever, and not finished yet. Read by tests (tests/world_parallel_test.cpp): none is enqueued at
/// one thread, and none is left running once its World is destroyed or set back to one thread.
struct StandbyCounters {
    std::atomic<std::uint64_t> handed{0};
    std::atomic<std::int64_t> unfinished{0};
};
StandbyCounters& standby_counters() noexcept;

}  // namespace ebt::detail

namespace ebt {

struct World::ParallelState {
    explicit ParallelState(std::uint32_t threads);
    /// Stops the standby tasks and waits for them (running them on this thread if no worker took
    /// them yet): no task of this World is left in the arena when it goes.
    ~ParallelState();
    ParallelState(const ParallelState&) = delete;
    ParallelState& operator=(const ParallelState&) = delete;
    /// World::call_workers, between frames, when the next frame's phase will run on the threads: unless
    /// the standbys of an earlier call are still out, enqueues one StandbyTask per worker of the arena.
    /// An enqueue wakes a sleeping worker (oneTBB's workers sleep after ~0.1-0.2 ms without work), and
    /// the task holds it, yielding, until this World's next phase starts or `standby` has passed; then
    /// the worker is in the arena when the phase's tasks come (docs/benchmarks.md, "Ninth pass").
    void call_workers(std::chrono::microseconds standby);
    /// The body of a standby task (call_workers): waits on a worker, yielding its core on every turn,
    /// until a phase after `phase_seen` starts (`phase` moves), the World stops its standbys, or `until`.
    /// Reads only atomics of this state.
    void stand_by(std::uint64_t phase_seen, std::chrono::steady_clock::time_point until);
    /// What call_workers enqueues: forwards to stand_by. (Named, not a lambda, so that .ci/tsan_tbb.supp
    /// can name it: TBB copies it between threads inside its task objects, out of ThreadSanitizer's sight.)
    struct StandbyTask {
        ParallelState* state;
        std::uint64_t phase_seen;
        std::chrono::steady_clock::time_point until;
        void operator()() const;
    };
    /// A task of the parallel phase, frames without a budget: walks the awake bits of slots
    /// [begin, end) and ticks the live agents whose LOD frame this is, in slot order, on the calling
    /// thread, into that thread's buffer. (No thread lists the frame's agents first: each task finds
    /// its own.)
    void tick_slots(World& world, std::uint32_t begin, std::uint32_t end);
    /// A task of the parallel phase, frames with a budget: ticks step_list[begin, end), the agents
    /// the calling thread chose (World::step_in_parallel), likewise.
    void tick_listed(World& world, std::size_t begin, std::size_t end);
    /// Publishing, with routes deferred (collecting_routes): notes the change of `key` of shared
    /// blackboard `shared_index` instead of mirroring it at once.
    void collect_route(World& world, std::uint32_t shared_index, KeyId key);
    /// After publishing: keeps the collected routes for the phase, sorted for the tasks' look-up; or,
    /// when one of them is too wide for that (its subscribers spread over more than
    /// route_span_limit slots), routes them all now, in the order they were collected.
    void settle_routes(World& world);
    /// First thing in a task of slots [begin, end): mirrors the frame's deferred routes into the
    /// subscribers in that range, in the order one thread routes them (by route, then list order),
    /// and notes the ones that woke (buffer.routed_awake, and a kWoken record each).
    void route_in_range(World& world, std::uint32_t begin, std::uint32_t end, detail::ParallelBuffer& buffer);
    /// After the phase: drops the entries of agents that left from the lists the tasks found them in
    /// (as a serial route does), or, when the phase threw, routes every deferred change again on this
    /// thread (a mirror already made changes nothing; the agents no task reached get theirs).
    void finish_routes(World& world, bool phase_threw);
    /// The current thread's buffer (the calling thread's, outside the arena, is the first).
    detail::ParallelBuffer& this_thread_buffer();
    /// One agent's tick on the current thread (World::tick_slot, the general tick), then
    /// settle_after_tick. `tick` is the thread's current tick (detail::parallel_tick()), set up once by
    /// the task for all its agents: this moves its slot to `index` (what World::agent and on_agent_wake
    /// check during the tick). `owns_word`: the task's range holds the whole word of awake bits `index`
    /// is in (see put_to_sleep_in_task); then an agent that goes to sleep also gets the move hint
    /// "ends a move" (World::SlotSchedule::move_hint), as the serial loop's World::step_slot gives it.
    void tick_one(World& world, std::uint32_t index, detail::ParallelBuffer& buffer, detail::ParallelTick& tick,
                  bool owns_word);
    /// tick_slots' tick of a slot whose move hint (`hint`, its SlotSchedule::move_hint, not None) names
    /// one of a latent move's two ticks, in a word of awake bits the task holds whole (`slot`: its
    /// slot). As the serial loop's World::step_hinted_slot: the entry the hint names
    /// (World::end_move_in_slot or Runtime::world_restart_tick, inline here), the hint for the agent's
    /// next tick, and its sleep settled here (its bit cleared by this task); when the entry declines,
    /// the general tick (tick_one). (The tasks called an out-of-line hinted tick before, then
    /// settle_after_tick, which looked at the agent again: docs/benchmarks.md, "Tenth pass".)
    void tick_move_in_task(World& world, std::uint32_t index, Slot& slot, MoveHint hint, detail::ParallelBuffer& buffer,
                           detail::ParallelTick& tick);
    /// What the apply still has to do for an agent after its tick.
    enum AfterTick : std::uint8_t {
        kStaysAwake = 0,       // live with work pending: nothing (and nothing is noted)
        kApplyDecides = 1,     // not settled in the phase (its tick threw, or it is not live): schedule_after_step
        kSleeps = 2,           // its timer record is settled: clear its awake bit
        kSleepsWithTimer = 3,  // also push its new timer entry into the heap
        kWoken = 4,            // asleep when the phase began, woken by its task's routing: set its awake
                               // bit (noted before its tick's own record, so that the two apply in turn)
    };
    /// Right after the tick of slot `index`, whose agent is `agent` (on the ticking thread): an agent that
    /// is not live is left to the apply (kApplyDecides); one with work pending stays awake (nothing
    /// noted); one going to sleep goes to settle_sleep. Returns true for the last.
    bool settle_after_tick(World& world, std::uint32_t index, const Agent& agent, detail::ParallelBuffer& buffer,
                           bool owns_word);
    /// For a live agent going to sleep after its tick: does the part of schedule_after_step that
    /// touches only its own slot (its timer record, a new stamp; its awake bit when `owns_word`) and
    /// notes the rest (its awake bit otherwise, the timer heap) in buffer.agents for the apply.
    void settle_sleep(World& world, std::uint32_t index, const Agent& agent, detail::ParallelBuffer& buffer, bool owns_word);
    /// For an agent going to sleep whose awake bit is in a word no other task reads or writes in this
    /// phase (the task's range holds all its slots): clears the bit now, on the ticking thread, and
    /// counts it in the buffer, so that the apply does not visit the agent at all. Returns false (the
    /// apply clears it, from the agent's record) when the bit is not set: an agent its task's routing
    /// woke, whose bit the apply sets first (kWoken).
    static bool put_to_sleep_in_task(World& world, std::uint32_t index, detail::ParallelBuffer& buffer);
    /// Whether this frame's publish may leave routing to the tasks: nothing but the World's own router
    /// can see a change before the phase (no bus slots, no world listener or input observer, no other
    /// slot on the blackboards that publish) and no budget chooses agents before it.
    bool may_defer_routes(const World& world, const std::vector<std::uint32_t>& publishing) const;
    /// The body of the phase's tbb::parallel_for: forwards each range to tick_slots (a range of
    /// slots) or, with `listed`, to tick_listed (a range of places in step_list). (Named, not a
    /// lambda, so that .ci/tsan_tbb.supp can name it: TBB copies it between threads inside its task
    /// objects, out of ThreadSanitizer's sight.)
    /// A range of slots is given in units of `unit` slots (64, a word of awake bits, when the grain is
    /// a multiple of 64, so that every task's range holds whole words; otherwise 1), up to `slots`.
    struct TickTask {
        ParallelState* state;
        World* world;
        bool listed;
        std::size_t unit;
        std::size_t slots;
        template <class Range> void operator()(const Range& range) const {
            if (listed) {
                state->tick_listed(*world, range.begin(), range.end());
            } else {
                // (Plain reads of the range and of this body's fields, no std::min taking references:
                // TBB copies both between threads out of ThreadSanitizer's sight, and .ci/tsan_tbb.supp
                // names this function as the top frame of those reads.)
                const std::size_t end = range.end() * unit;
                state->tick_slots(*world, static_cast<std::uint32_t>(range.begin() * unit),
                                  static_cast<std::uint32_t>(end < slots ? end : slots));
            }
        }
    };
    // oneTBB runs at most one thread per core unless told otherwise: asking for more threads than
    // cores raises that limit while this world has them (a process-wide setting: with several
    // such worlds, the smallest of their counts holds; docs/world.md, "Threads").
    std::unique_ptr<tbb::global_control> allow_threads;
    tbb::task_arena arena;
    std::vector<detail::ParallelBuffer> buffers;  // one per thread of the arena
    std::size_t grain;                            // slots (or places of step_list) per task, at least
    std::size_t awake_per_task;                   // a frame's awake agents per task of slots, about (0: `grain` slots always)
    std::size_t last_grain = 0;                   // the grain of the last phase run on the threads (tests read it)
    std::uint32_t phase_slots = 0;                // slots [0, phase_slots) are the current phase's (without a budget)
    /// The grain of a frame's tasks of slots (tick_in_parallel, before the phase): `grain`, or more
    /// when few of the slots are awake, so that a task holds about awake_per_task awake agents
    /// (a sparse frame is cut into a few ranges, not a few hundred). Any split gives the same answer.
    std::size_t slots_per_task(std::size_t slots, std::size_t awake) const {
        if (awake == 0) return std::max(grain, slots);
        return std::max(grain, slots * awake_per_task / awake);
    }
    std::size_t inline_below;                     // frames with fewer awake agents tick on the calling thread
    std::vector<std::uint32_t> step_list;         // with a budget: this frame's agents, in the order one thread steps them
    std::vector<detail::TaskRecord> tasks;        // every thread's task records, sorted by order for applying
    // Routing published shared changes inside the phase (each task into its own slots' agents).
    bool collecting_routes = false;               // publish_shared is running with routes deferred
    std::vector<detail::PendingRoute> routes;     // this frame's deferred routes, in the order one thread routes them
    std::vector<std::uint32_t> routes_by_first;   // places in `routes`, sorted by first_slot
    std::uint32_t widest_route = 0;               // the greatest last_slot - first_slot among them
    std::size_t routed_subscribers = 0;           // their list entries, counted for the choice to tick inline
    std::uint32_t route_span_limit;               // a route spread over more slots is routed serially
    std::vector<std::uint8_t> shared_written_in_apply;  // per World shared blackboard: the apply wrote it (then 0 again)
    std::vector<std::uint32_t> shared_written_list;     // the ones set in shared_written_in_apply
    // ThreadSanitizer cannot see the synchronization inside a oneTBB built without it: the phase
    // publishes its inputs with a release store that each task acquires, and each task publishes
    // its buffer with a release store (ParallelBuffer::tasks_done) that the calling thread acquires
    // after the phase. On a line of its own: the tasks only read it, nothing they write shares it.
    alignas(64) std::atomic<std::uint64_t> phase{0};  // phases started (on the threads or on the calling thread)
    // The standby tasks (call_workers), on a line of their own: each task's end writes `standbys_out`.
    alignas(64) std::atomic<std::uint32_t> standbys_out{0};  // enqueued and not finished
    std::atomic<bool> standbys_stopped{false};                 // set by the destructor: every standby leaves
    bool standbys_handed = false;                              // call_workers enqueued one, ever
#ifdef EBT_TASK_PROBE
    std::atomic<std::int64_t> standby_called_ns{0};            // (the probe: when call_workers last ran)
#endif
    tbb::task_group standby_group;                             // the standbys, for the destructor's wait
};

}  // namespace ebt
