// World: many agents stepped in a game server's fixed-step frame loop.
//
//   ebt::World world;
//   ebt::AgentHandle guard = world.spawn(tree, {.user = &npc, .blackboard = {{"hp", 80}}});
//   for (;;) {
//       world.at(guard).blackboard().set("enemy_seen", perceive());
//       movement.finish_arrivals(world);  // calls world.resume(run, Status::Success) per latent move
//       ebt::FrameMetrics m = world.step(50ms);
//   }
//
// Actions read their NPC (ctx.user<Npc>()), their agent's handle and the frame's dt from the
// context; a latent action's ResumeHandle names its agent and run, so World::resume needs nothing
// else and refuses a stale one. World::set_listener hears every agent's trace.
//
// The World owns its agents in slots that never move (chunks of fixed size, added as the world
// grows) and refers to them by generational handles: a handle whose agent was despawned is stale, and
// every call taking it reports that (nullptr, false or UsageError) instead of touching freed state.
// A handle never becomes valid again: a cancelled spawn changes its slot's generation too, and a slot
// whose generations are used up (2^32 - 1 agents) is retired.
//
// step(dt) touches only agents with work this frame: polling agents (every frame), event agents with
// queued work (running leaves that update, guards woken by blackboard changes, resumes) and agents
// whose earliest deadline has come (kept in a timer heap in world time, at most one live entry per
// agent). An event agent that is only waiting costs nothing per frame. Agents are stepped in slot
// order (deterministic).
//
// Spawning and despawning between frames take effect at once, except that an agent is never freed
// while a callback may still use it. During a frame (from an action, a listener or a change slot) a
// spawn returns its handle at once but the agent joins at the end of the frame and first ticks in the
// next one; a despawn makes the handle stale at once, stops the agent (if it is the one ticking, its
// tick ends as with Agent::abort()), and frees it at the end of the frame. Between frames, a despawn
// from a callback (a change slot, an onTerminate of an agent being freed or aborted) is deferred the
// same way: the handle is stale at once, the agent is freed when no callback runs any more (at the
// end of the outermost world call, or else at the next spawn, despawn or step). An Agent pointer
// (World::agent) stays valid until that agent is freed. Destroying the world makes every handle
// stale before the agents' onTerminate callbacks run, and refuses spawns from them. See docs/world.md.
//
// Thread-safety: one thread calls the world. With set_threads(n > 1) (WorldOptions::threads), step()
// ticks the frame's agents on n threads (oneTBB), with the same result as with one thread for every
// world whose actions follow the threading rule (docs/world.md, "Threads"): during that phase an
// agent's tick touches only its own agent and game data of its own; shared blackboard writes are
// buffered and applied after the phase in slot order; the World's functions that reach other agents
// or the world's state (spawn, despawn, resume, abort, another agent's agent()/at(), ...) are refused
// with UsageError. ChangeBus slots and world listeners are never called from two threads at once:
// a frame with either runs its phase on the thread that called step().
#pragma once

#include <ebt/agent.hpp>
#include <ebt/detail/agent_host.hpp>
#include <ebt/shared_blackboard.hpp>

#include <array>
#include <bit>
#include <chrono>
#include <exception>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ebt {

struct WorldTestAccess;
struct WorldParallelTestAccess;
struct WorldStorageTestAccess;
namespace detail {
/// What a slot of a World holds.
enum class SlotState : std::uint8_t {
    Free,     // no agent (or one being freed)
    Joining,  // spawned during a frame: joins at its end (its tree waits in pending_spawns_)
    Live,     // has an agent that is stepped
    Dying,    // despawned: the handle is stale; freed once no callback uses the agent
};
struct WorldSnapshotAccess;
class StateBlockPool;  // engine/world/state_block_pool.hpp: the agents' state blocks
/// Frees a chunk of a World's slots or records (engine/world/world.cpp): destroys its `count`
/// elements, then gives its memory back the way World::make_chunk took it (a huge-page mapping,
/// engine/world/huge_pages.hpp, or the heap).
template <class T> struct ChunkFree {
    std::size_t count = 0;
    bool mapped = false;
    void operator()(T* chunk) const noexcept;
};
}

/// Receives the trace events of every agent of a World (World::add_listener), with the agent's handle
/// and the agent, whose tree names the node: `agent.tree().path(event.node)`. Called synchronously
/// during the agent's tick, after the agent's own listener (SpawnOptions::listener), if any. It is
/// an observer: an exception from it is swallowed and counted (AgentStats::listener_errors).
class WorldListener {
public:
    virtual ~WorldListener() = default;
    virtual void on_event(AgentHandle handle, const Agent& agent, const TraceEvent& event) = 0;
};

struct SpawnOptions {
    Mode mode = Mode::Event;
    std::uint64_t seed = 0;
    bool restart_on_end = true;
    TraceListener* listener = nullptr;
    /// The game object the agent acts for (not owned): its actions read it with ctx.user<T>().
    UserPointer user = {};
    /// AI level of detail: the agent ticks every `tick_interval` frames (1 = every frame), in the
    /// frames where (frame + slot index) is a multiple of the interval (so that agents with the same
    /// interval spread over its frames), with the dt of the frames in between accumulated so that its
    /// clock and timers stay right.
    std::uint32_t tick_interval = 1;
    /// Binds each shared scope of the tree ("squad") to a shared blackboard of this world.
    std::vector<std::pair<std::string, SharedBlackboard*>> shared = {};
    /// Blackboard values the agent starts with (see AgentOptions::blackboard), also for an agent
    /// spawned during a frame: set when it is created, before its first tick, without change events.
    /// Checked at spawn: UsageError, nothing spawned, for an unknown or shared key, a key given twice,
    /// a value of another type.
    std::vector<InitialValue> blackboard = {};
};

/// What one World::step cost. Counters are sums over the agents stepped.
struct FrameMetrics {
    std::uint64_t frame = 0;
    std::uint32_t agents_stepped = 0;
    std::uint32_t behaviors_updated = 0;  // leaf update calls
    std::uint32_t guards_evaluated = 0;
    std::uint32_t events_handled = 0;     // scheduler work items / walked nodes
    std::uint32_t timers_fired = 0;
    std::uint32_t agents_waiting = 0;     // agents left for the next frame by the budget
    std::uint32_t slot_errors = 0;        // exceptions thrown by change slots during the frame (contained): the bus's, and the shared blackboards' as the step publishes them
    std::chrono::nanoseconds wall_time{0};
};

/// Where the calling thread's time in one World::step went: for benchmarks and profiling, measured
/// only while World::set_phase_timing(true) (off by default: a frame then reads no extra clock).
/// With one thread, choosing the agents, ticking them and putting them to sleep are one loop, all
/// counted as `tick`; with several, `tick` is the parallel phase (whose tasks also find the agents
/// they tick) and `choose` and `apply` are the serial work around it. The serial part of a frame is
/// everything but `tick`.
struct StepPhaseTimes {
    std::chrono::nanoseconds before{0};  // checks, deferred frees, publishing, timers falling due
    std::chrono::nanoseconds choose{0};  // (threads > 1, with a budget) the frame's agents, in slot order, into a list
    std::chrono::nanoseconds tick{0};    // the agents' ticks (threads > 1: the parallel phase)
    std::chrono::nanoseconds apply{0};   // (threads > 1) sleep, timers, other wakes, shared writes
    std::chrono::nanoseconds after{0};   // the budget's count, frees and joins at the end of the frame
};

/// Where a World::step that threw was cut short (docs/world.md, "A step that throws"), for its input
/// observer (WorldInputObserver::on_step_threw), which a recorder writes down so that a replay can
/// make its step throw at the same place.
struct StepThrow {
    enum class Stage : std::uint8_t {
        Publish,  // a shared blackboard's publish threw (a value's copy): `shared` says which
        Tick,     // an agent's tick was refused (game code misused the agent, docs/world.md)
        Join,     // a spawn made in the frame could not join at its end (a value's copy, memory)
        Other,    // the input observer threw (on_publish, after_publish)
    };
    Stage stage = Stage::Other;
    std::string message;  // the exception's what(), "unknown exception" for one that is not a std::exception
    std::uint32_t shared = 0;  // Publish: the shared blackboard's index, in the order they were created
    /// The spawns of the frame its end cancelled because they could not join (at any stage: a frame
    /// that threw earlier still joins its spawns), in the order they were tried.
    std::vector<AgentHandle> joins_refused;
};

/// Hears every input game code gives a World, for a recorder (debug::Recorder): what a replay must
/// feed a new World to run it again. Set with World::set_input_observer (one at a time, not owned);
/// a World without one tests one pointer per call. Called synchronously from the World's functions
/// (and from Agent::abort, resume and restart on an agent of the world), also when they are called
/// from user callbacks during a frame; an observer must not call back into the world. An exception from it propagates to the caller of the world function (a recorder that
/// cannot write its file).
class WorldInputObserver {
public:
    virtual ~WorldInputObserver() = default;
    /// World::step(dt), after its checks, before anything of the frame happens.
    virtual void on_step(Duration dt) = 0;
    /// In step(), just before the shared blackboards publish.
    virtual void on_publish() = 0;
    /// At the end of step(), after the frame's joins and frees.
    virtual void on_step_end(const FrameMetrics& metrics) = 0;
    /// A spawn that succeeded, with the handle it returns.
    virtual void on_spawn(AgentHandle handle, const Tree& tree, const SpawnOptions& options) = 0;
    /// A despawn of a live handle, before it takes effect (before any onTerminate it causes).
    virtual void on_despawn(AgentHandle handle) = 0;
    /// World::resume with a valid status, and whether it was accepted.
    virtual void on_resume(const ResumeHandle& handle, Status status, bool accepted) = 0;
    /// World::abort of a live agent, before it takes effect (before any onTerminate it causes).
    virtual void on_abort(AgentHandle handle) = 0;
    /// set_tick_interval of a live handle.
    virtual void on_tick_interval(AgentHandle handle, std::uint32_t interval) = 0;
    virtual void on_agent_budget(std::uint32_t agents) = 0;
    virtual void on_create_shared(SharedBlackboard& blackboard) = 0;

    // With a body that does nothing, for observers that do not need them:
    /// World::spawn, after the world's own checks, before anything changes: an observer that cannot
    /// follow this spawn (a recorder and a tree it cannot record) throws, and the spawn changes nothing.
    virtual void before_spawn(const Tree& /*tree*/, const SpawnOptions& /*options*/) {}
    /// Agent::restart() called on an agent of the world (there is no World::restart).
    virtual void on_restart(AgentHandle /*handle*/) {}
    /// A trace event of an agent, before any listener hears it (the agent's own, then the world's);
    /// called only while the world has a listener. Lets a recorder place what listeners do during a
    /// frame. Must not throw.
    virtual void before_event(AgentHandle /*handle*/, const TraceEvent& /*event*/) {}
    /// In step(), just after the shared blackboards published (and their change slots ran).
    virtual void after_publish() {}
    /// A step that threw, in place of on_step_end: after its frame was finished (frees, joins), just
    /// before the exception leaves step(). An exception from it is dropped (the step's own leaves).
    virtual void on_step_threw(const StepThrow& /*what*/) {}
};

/// Hot reload (World::reload; docs/hot_reload.md): what replacing a tree definition did.
/// A blackboard key whose value was not carried over to the new definition, and why.
struct DroppedKey {
    std::string name;
    std::string reason;  // "not in the new tree", "type changed from float to int", "now a shared key"
};
/// The agents of one old definition (one Tree, by identity) and what happened to them.
struct ReloadChange {
    std::string old_tree;  // the old definition's name
    /// False: the new definition differs only in parameter values (the same structural_hash, which
    /// leaves out the values of ports given literals); the agents kept running on it. True: each
    /// agent's run ended (running nodes Aborted, leaves first) and the new tree starts on its next tick.
    bool restarted = false;
    std::vector<AgentHandle> agents;  // in slot order; the handles stay valid
    std::vector<std::string> kept;    // local keys whose values were carried over (by name and type)
    std::vector<DroppedKey> dropped;  // local keys of the old tree whose values were dropped
    std::vector<std::string> added;   // local keys of names the old tree did not have (at their initial value)
};
/// What one World::reload did (or, for a reload requested during a frame, what it will do).
struct ReloadReport {
    std::string tree;  // the name matched (World::reload(name, tree))
    /// True once applied. A reload requested during a frame (from an action, a listener, a change
    /// slot) returns applied == false; it is applied at the end of that frame and its applied report
    /// is kept for World::take_reload_reports().
    bool applied = false;
    /// The first frame (World::frame()) the agents run with the new definition.
    std::uint64_t frame = 0;
    std::uint32_t agents_restarted = 0;
    std::uint32_t agents_updated = 0;  // parameter-only changes: kept running
    std::vector<ReloadChange> changes;  // one per old definition, in the order their first agent comes
    /// A reload applied at the end of a frame that could no longer be applied then (an agent that
    /// joined during the frame lacks a shared binding the new tree needs): why; nothing changed.
    std::string error;
};

/// How a World with several threads (World::set_threads(n > 1, options)) treats its task arena's
/// worker threads between frames (docs/world.md, "Threads").
struct ParallelOptions {
    /// When game code between frames wakes enough agents that the next frame's phase will run on the
    /// threads (the awake count reaches the 512 below which a frame ticks on the calling thread: a
    /// large resume_all, or the resumes, writes and spawns of a burst), the World hands its arena one
    /// standby task per worker at once: it wakes a sleeping worker and holds it until the phase starts,
    /// for at most this long, giving the core away (std::this_thread::yield) on every turn. So the
    /// workers' wake-up overlaps the game's work instead of delaying the phase. Changes no result.
    /// 0 (the default): off, the workers wake when the phase starts, as oneTBB wakes them. Off by
    /// default because on a quiet host it measured no gain (the bursty `guard_b`'s burst frames took
    /// the same time with 2 ms and without: docs/benchmarks.md, "Ninth pass"); it helped only where
    /// other processes kept the worker from a core. 1-2 ms is the value to try there.
    std::chrono::microseconds worker_standby{0};
};

/// How a World is set up (World(WorldOptions)).
struct WorldOptions {
    /// Threads that tick a frame's agents (World::set_threads): 1 (the default) steps them on the
    /// calling thread, with no task arena and no buffering.
    std::uint32_t threads = 1;
    ParallelOptions parallel{};  // with threads > 1
};

/// The many-agent container described at the top of this file. Final: it is not a base class (its
/// destructor is not virtual, and the host interface it implements is private).
class World final : private detail::AgentHost {
public:
    World();
    explicit World(WorldOptions options);
    ~World();
    World(const World&) = delete;
    World& operator=(const World&) = delete;

    /// Creates an agent of `tree`. Between frames it exists at once; during a frame it joins at the end
    /// of the frame. It first ticks in the next frame. Throws UsageError for an empty tree, a bad
    /// tick interval, bad shared bindings, and while the world is being destroyed.
    AgentHandle spawn(Tree tree, SpawnOptions options = {});
    /// Removes an agent: its handle is stale at once; its running actions get onTerminate(Aborted)
    /// when it is freed (at once between frames, unless a callback is running: see above). Returns
    /// false (and does nothing) for a stale handle.
    bool despawn(AgentHandle handle);
    bool alive(AgentHandle handle) const noexcept;
    /// The agent, or nullptr for a stale handle or an agent spawned during the current frame. The
    /// pointer stays valid until the agent is freed (other spawns and despawns do not move it).
    /// During the parallel phase of a frame stepped on several threads, asking for an agent other
    /// than the one whose tick is calling is refused (UsageError; see set_threads).
    Agent* agent(AgentHandle handle);
    const Agent* agent(AgentHandle handle) const;
    /// Like agent(), but throws UsageError naming the handle when it is stale.
    Agent& at(AgentHandle handle);

    /// Listeners for every agent of the world, present and future (a trace log, an inspector and a
    /// test's recorder at once). Not owned: each must outlive the world or be removed first. They hear
    /// each event in the order they were added, after the agent's own listener; every one hears it
    /// even when an earlier one throws. Agents keep their own listeners too. Adding or removing one
    /// from inside a frame's callbacks (an action, a listener, a change slot) is refused (UsageError),
    /// as is adding one twice or a null one.
    void add_listener(WorldListener* listener);
    /// Returns false when `listener` was not added.
    bool remove_listener(WorldListener* listener);
    /// Replaces all of the world's listeners by `listener` (nullptr: none).
    void set_listener(WorldListener* listener);
    const std::vector<WorldListener*>& listeners() const noexcept { return listeners_; }
    /// The first listener, or nullptr.
    WorldListener* listener() const noexcept { return listeners_.empty() ? nullptr : listeners_.front(); }
    /// Changes an agent's own listener (SpawnOptions::listener). Returns false for a stale handle.
    /// (Agent::set_listener on an agent of a World replaces the world's listener for that agent.)
    bool set_listener(AgentHandle handle, TraceListener* listener);
    /// An agent's own listener, as set_listener(handle, ...) or SpawnOptions::listener last set it
    /// (nullptr: none, or a stale handle). A tool that chains itself in front of it (the inspector)
    /// reads it here first.
    TraceListener* listener(AgentHandle handle) const noexcept;

    /// Finishes a suspended action of an agent of this world (handle from ActionContext::suspend()).
    /// Returns false, touching nothing, when the handle's agent is gone (stale handle, despawned, never
    /// of this world) or its run has ended (aborted, already resumed): a stale handle never reaches
    /// another agent. Otherwise as Agent::resume: the action ends when the walk reaches it, and the
    /// agent is stepped in this frame if its slot is still to come, else in the next. Throws
    /// UsageError for a status other than Success or Failure.
    bool resume(const ResumeHandle& handle, Status status);
    /// resume(handle, status) for each handle in order (a game system finishing a frame's moves), with
    /// the next handles' agents fetched from memory while the current one is resumed: the agents of a
    /// frame's resumes lie anywhere in the world's storage, and each resume would otherwise wait for
    /// its agent's lines in turn. Returns how many were accepted. Same results, trace and input
    /// observer calls as the single calls.
    std::size_t resume_all(std::span<const ResumeHandle> handles, Status status);

    /// Agent::abort() on an agent of this world. Returns false for a stale handle or an agent spawned
    /// during the current frame. (Agent::abort, resume and restart called on an agent of a world are
    /// seen by the input observer as well: the agent tells the world.)
    bool abort(AgentHandle handle);

    /// Changes an agent's LOD tick interval (>= 1). Returns false for a stale handle.
    bool set_tick_interval(AgentHandle handle, std::uint32_t interval);

    /// Step at most `agents` agents per frame (0 = no limit). Agents with work that did not fit are
    /// stepped first in the following frames (round robin from where the last frame stopped), so
    /// none starves; their dt accumulates meanwhile.
    void set_agent_budget(std::uint32_t agents) {
        refuse_in_parallel_phase("World::set_agent_budget()");
        if (input_observer_) input_observer_->on_agent_budget(agents);
        budget_ = agents;
    }

    /// Ticks each frame's agents on `threads` threads (>= 1; at most 256) of a oneTBB task arena the
    /// world owns. 1 keeps the single-threaded step (no arena, nothing buffered). With more, a frame
    /// ticks the agents one thread would step in parallel (the parallel phase: each task finds the
    /// awake agents of its own range of slots), then, in slot order on the calling thread, puts them
    /// to sleep or arms their timers and applies their shared blackboard writes. The result (traces, state hash, FrameMetrics
    /// counters) is the same at every thread count for a world that follows the threading rule
    /// (docs/world.md, "Threads"). Throws UsageError for 0, more than 256, and from inside a frame.
    /// `options`: what the World does with the arena's workers between frames (ParallelOptions).
    void set_threads(std::uint32_t threads, ParallelOptions options = {});
    std::uint32_t threads() const noexcept { return threads_; }
    const ParallelOptions& parallel_options() const noexcept { return parallel_options_; }
    /// True while the agents of this frame are being ticked on several threads.
    bool in_parallel_phase() const noexcept { return parallel_phase_; }
    /// Measures where each step's time goes (StepPhaseTimes); off by default. last_phase_times() is
    /// the last step's, all zero while off.
    void set_phase_timing(bool on) noexcept { phase_timing_ = on; }
    const StepPhaseTimes& last_phase_times() const noexcept { return phase_times_; }

    /// The input observer (see WorldInputObserver), or nullptr for none. Changing it from inside a
    /// frame's callbacks is refused (UsageError).
    void set_input_observer(WorldInputObserver* observer);
    WorldInputObserver* input_observer() const noexcept { return input_observer_; }

    /// Advances the world by one frame of `dt`. Throws UsageError (changing nothing) for a negative
    /// dt or one that would move the world clock past limits::kMaxClockMicroseconds, and when called
    /// from inside a step or from a callback the world is running (a change slot of its bus, an
    /// onTerminate of an agent being freed). An exception out of the frame itself (a UsageError from
    /// an agent's tick that game code misused, an input observer's) leaves step() once the frame is
    /// finished: its despawns freed, its spawns joined, frame() moved on (docs/world.md).
    FrameMetrics step(Duration dt);
    /// The same with dt in seconds, rounded to the nearest microsecond; UsageError for NaN, an
    /// infinity, a negative dt or one past the clock's range (see duration_from_seconds).
    FrameMetrics step(double dt_seconds) { return step(duration_from_seconds(dt_seconds, "World::step()")); }

    /// Creates a shared blackboard owned by the world (stable address). Every step starts by
    /// publishing all of them, in creation order; a published change is routed to the agents whose
    /// trees read the key (one Boost.Signals2 connection per shared blackboard, not per agent), and
    /// wakes those whose live guards read it. Throws UsageError on a duplicate name.
    SharedBlackboard& create_shared(std::string name);
    /// The shared blackboard called `name`, or nullptr.
    SharedBlackboard* shared(std::string_view name) noexcept;

    /// The shared bus on which every agent of this world emits its blackboard changes (include
    /// <ebt/signals.hpp> to subscribe).
    ChangeBus& bus() noexcept { return *bus_; }
    std::uint64_t frame() const noexcept { return frame_; }
    TimePoint now() const noexcept { return now_; }
    std::size_t size() const noexcept { return live_; }
    bool in_step() const noexcept { return in_step_; }
    /// Entries in the timer heap: at most one live entry per agent, and, between calls to the world,
    /// never more stale entries (of deadlines that moved, of agents that left) than live ones plus 64.
    std::size_t timer_entries() const noexcept { return timers_.size(); }
    /// Exceptions thrown by change slots (of bus() and of the shared blackboards' changes()) since the
    /// world was created. Each was swallowed; the change reached the other slots (FrameMetrics::slot_errors
    /// counts those of one step).
    std::uint64_t slot_errors() const noexcept;

    /// A hash of every live agent's node statuses, logical clock and blackboard values, in slot order.
    /// Equal in both modes for the same inputs (docs/world.md).
    std::uint64_t state_hash() const;

    /// Handles of the live agents, in slot order.
    std::vector<AgentHandle> handles() const;

    // ---- hot reload (engine/world/reload.cpp; docs/hot_reload.md) ------------------------------------
    /// Replaces the definition of every live agent whose tree is named `name` by `tree`. Between frames
    /// it is applied at once: an agent whose tree differs only in parameter values (same
    /// structural_hash) keeps running on the new one; any other ends its run (running nodes get
    /// Aborted, leaves first, heard by the listeners) and starts `tree` on its next tick, with its
    /// local blackboard values carried over by key name and type, its shared bindings, handle, user
    /// pointer, listener, mode, seed, LOD interval and clock; its resume handles go stale. Agents of
    /// other trees are untouched. Requested during a frame (or from a callback between frames), it is
    /// checked now and applied at the end of the frame (or at the start of the next step); the
    /// report returned then has applied == false (see take_reload_reports). Throws UsageError,
    /// changing nothing, for an empty tree, a tree that reads a shared scope an agent is not bound to
    /// or whose shared key types do not fit, during the parallel phase and while the world is being
    /// destroyed. Key<T>s obtained from the old tree are refused by the new one: get them again.
    ReloadReport reload(std::string_view name, Tree tree);
    /// reload(tree.name(), tree): the agents of the tree with the same name.
    ReloadReport reload(Tree tree);
    /// The reports of reloads requested during a frame and applied since the last call (applied in
    /// the order requested); empties the list. At most reload_report_limit() of them are kept: a game
    /// that never takes them (a server hot-reloading for days) does not grow the list without bound.
    std::vector<ReloadReport> take_reload_reports();
    /// The most reports take_reload_reports() keeps (kDefaultReloadReportLimit unless changed; 0 keeps
    /// none). When a deferred reload is applied with the list full, the oldest report is dropped and
    /// counted (dropped_reload_reports()); lowering the limit drops the oldest reports over it at once.
    /// Refused (UsageError) during the parallel phase.
    void set_reload_report_limit(std::size_t limit);
    std::size_t reload_report_limit() const noexcept { return reload_report_limit_; }
    /// Reports the limit dropped since the world was created (take_reload_reports does not reset it).
    std::uint64_t dropped_reload_reports() const noexcept { return dropped_reload_reports_; }
    /// A report lists every agent it reloaded (8 bytes a handle): 16 reports of a 100,000-agent tree
    /// are about 13 MB.
    static constexpr std::size_t kDefaultReloadReportLimit = 16;

private:
    friend struct WorldTestAccess;  // tests/world_test.cpp: sets a slot's generation near its end
    void set_generation_for_test(std::uint32_t index, std::uint32_t generation);
    friend struct WorldStorageTestAccess;   // tests/world_storage_test.cpp: whether the loops prefetch blocks
    friend struct WorldParallelTestAccess;  // tests/world_parallel_test.cpp: small frames in parallel
    /// Agents per task, and frames of fewer than 2 * grain agents tick on the calling thread (after set_threads).
    void set_parallel_grain_for_test(std::uint32_t grain);
    friend struct detail::WorldSnapshotAccess;  // engine/snapshot/world_snapshot.cpp: save_world, restore_world
    friend struct detail::EngineAccess;  // refuse_join, for debug::Replay (engine/debug/replay.cpp)
    /// Makes the join of `h`, a spawn of the frame being stepped, fail at the frame's end with
    /// std::runtime_error(message), as a spawn whose value's copy threw there: a replay reproducing a
    /// recorded step that threw (StepThrow::joins_refused). False when `h` is not such a spawn.
    bool refuse_join(AgentHandle h, std::string message);

    struct Slot;        // the hot part: the agent and its last tick's time (world_slot.hpp)
    struct SlotRecord;  // the cold part: trace forwarder, timer (the generation is in the Slot)
    struct Forwarder;
    struct PendingSpawn {
        std::uint32_t slot;
        Tree tree;
        SpawnOptions options;
        std::string refusal;  // refuse_join: the join fails with this message (empty: it joins)
    };
    // Slot storage: chunk c holds (kFirstChunk << c) slots, allocated when the world first needs it,
    // and as many SlotRecords in its twin chunk of records_ (a chunk of 1 MiB or more on huge pages:
    // make_chunk). Slots never move, so that an agent stays where it is while its own callbacks spawn.
    static constexpr std::uint32_t kChunkShift = 5;
    static constexpr std::uint32_t kFirstChunk = std::uint32_t{1} << kChunkShift;
    static constexpr std::uint32_t kChunks = 33 - kChunkShift;  // enough for indices up to 2^32 - 2
    Slot& slot(std::uint32_t index) const noexcept;          // the slot at `index` (< slot_count_)
    class SlotCursor;  // the serial loop's slot(index), its chunk kept from one slot to the next (world.cpp)
    SlotRecord& record(std::uint32_t index) const noexcept;  // its cold part
    /// The part of a slot that choosing a frame's agents reads for every awake slot, kept in one
    /// contiguous array (schedules_, indexed by slot) rather than in the slot, so that the choice reads
    /// 8 bytes per agent instead of a cache line of its slot. The array may move when slots are added:
    /// it is only ever used by index, never through a kept reference.
    /// A guess at what the agent's next tick is, for the loops' choice of entry (step_serial, the
    /// parallel tasks): the end of a resumed move, or the root's restart after it. Set by the loops
    /// where a tick leaves the next one known (a move's end leaves the root's restart; a restart that
    /// suspended the next move, or any tick after which the agent sleeps, leaves the end of a resumed
    /// move), None once the hinted entry is tried. Only a guess: each entry checks what it relies on
    /// and declines, changing nothing, when the tick is not its kind (runtime/move_ticks.hpp), so a
    /// stale hint (a despawn, a restore, an abort, a wake by a write, a listener set) costs time,
    /// never behaviour. Not saved in a snapshot.
    enum class MoveHint : std::uint8_t { None, EndsMove, RestartsRoot };
    struct SlotSchedule {
        detail::SlotState state = detail::SlotState::Free;
        /// Read with the state by the loops, so that the choice of a move's entry costs no other
        /// load. Each slot's own: a parallel task writes only its own slots' hints.
        MoveHint move_hint = MoveHint::None;
        std::uint16_t unused = 0;  // (named, so that the 8 bytes have no padding)
        std::uint32_t interval = 1;  // LOD: tick every `interval` frames
    };
    /// True when a slot's schedule says Live and ticked every frame (its interval 0 or 1, so no LOD
    /// test): one compare of the 8 bytes, the hint and the unused bytes masked out. The serial loop's
    /// first test of every awake slot (step_serial_loop); when false, it tests the state and the
    /// interval each alone.
    static bool live_every_frame(const SlotSchedule& schedule) noexcept {
        constexpr std::uint64_t kMask =
            std::bit_cast<std::uint64_t>(SlotSchedule{static_cast<detail::SlotState>(0xFF), MoveHint::None, 0, 0xFFFFFFFE});
        constexpr std::uint64_t kWanted =
            std::bit_cast<std::uint64_t>(SlotSchedule{detail::SlotState::Live, MoveHint::None, 0, 0});
        return (std::bit_cast<std::uint64_t>(schedule) & kMask) == kWanted;
    }
    SlotSchedule& schedule(std::uint32_t index) noexcept { return schedules_[index]; }
    const SlotSchedule& schedule(std::uint32_t index) const noexcept { return schedules_[index]; }
    std::uint32_t new_slot();                         // a free slot, or a new one at the end
    void on_agent_wake(std::uint32_t slot) override;
    AgentHandle handle_of(std::uint32_t slot) const noexcept override;
    void on_agent_abort(std::uint32_t slot) override;    // tell the input observer, when the agent is live
    void on_agent_resume(std::uint32_t slot, const ResumeHandle& handle, Status status, bool accepted) override;
    void on_agent_restart(std::uint32_t slot) override;
    void on_tick_refused(std::uint32_t slot, std::int64_t dt_us) noexcept override;
    void* allocate_state_block(std::uint32_t slot, std::size_t bytes) override;  // from blocks_
    void release_state_block(std::uint32_t slot, std::size_t bytes, void* block) noexcept override;
    /// With one thread: steps the awake agents of slots [from, to) in slot order, agents woken by an
    /// earlier tick included. Returns true when the budget stopped it (cursor_ is then where).
    bool step_serial(FrameMetrics& m, std::uint32_t from, std::uint32_t to);
    /// step_serial's loop. kHinted: a slot whose hint (SlotSchedule::move_hint) names a move tick goes
    /// through step_hinted_slot; without, the loop of a world whose hints were never set (a quiet one),
    /// which has no hint to test and keeps the registers it had before there were hints.
    /// kPrefetchBlocks: prefetch_blocks_, chosen once per frame rather than tested per agent.
    template <bool kHinted, bool kPrefetchBlocks>
    bool step_serial_loop(FrameMetrics& m, std::uint32_t from, std::uint32_t to);
    /// step_serial's step of one slot (`s`: slot(slot)): its tick, then its sleep. Returns true for a
    /// quiet tick, which it leaves to the caller to count in `m` (count_quiet_ticks in world.cpp).
    bool step_slot(std::uint32_t slot, Slot& s, FrameMetrics& m);
    /// step_serial's step of a slot whose hint `hint` (its SlotSchedule::move_hint, not None) names one
    /// of a move's two ticks: that entry first, with step_slot's after-tick work for the kind it did,
    /// and the hint for the agent's next tick; step_slot when the entry declines. Returns step_slot's
    /// result (true: a quiet tick).
    bool step_hinted_slot(std::uint32_t slot, Slot& s, MoveHint hint, FrameMetrics& m);
    /// What end_move_in_slot did: declined (nothing changed: the caller ticks the slot the general
    /// way), or ended the agent's resumed move and with it its run, the root's restart queued (the
    /// agent stays awake: its next tick is the restart) or not (an agent that does not restart).
    enum class MoveEnd : std::uint8_t { Declined, RestartQueued, RunEnded };
    /// The lean end of a move for the slot `s` (index `slot`) whose hint is MoveHint::EndsMove:
    /// Runtime::world_end_move_tick, then the slot's hint (RestartsRoot when the restart is queued,
    /// else None) and, when the entry took the tick, the slot's time of its last tick and the frame's
    /// agents_stepped. Shared by step_hinted_slot and a parallel task's ParallelState::tick_move_in_task
    /// (each settles the agent's sleep its own way).
    MoveEnd end_move_in_slot(std::uint32_t slot, Slot& s, FrameMetrics& m);
    /// What a parallel task's tick of a slot leaves (tick_slot): the agent ticked (still there after the
    /// tick: agents are freed at the end of the frame, so the task need not look its slot up again to
    /// settle it) and whether the tick was a quiet one (Runtime::world_tick: the agent stays awake with
    /// nothing for the apply, so there is nothing to settle).
    struct SlotTick {
        const Agent* agent = nullptr;
        bool quiet = false;
    };
    SlotTick tick_slot(std::uint32_t slot, FrameMetrics& m);  // step_slot's tick; the rest is schedule_after_step
    bool tick_agent(Slot& s, FrameMetrics& m);            // tick_slot, the slot's address known; true: a quiet tick (not counted in m)
    /// After its tick: the agent is live with work pending, so it stays awake and needs no scheduling.
    bool stays_awake(std::uint32_t slot) const noexcept;
    // Parallel stepping (engine/world/parallel_phase.cpp): the task arena and per-thread buffers.
    struct ParallelState;
    /// With threads_ > 1: ticks this frame's agents (the ones the serial loop would step) in the
    /// parallel phase, each task finding its own in a range of slots (with a budget: from a list
    /// chosen first), then applies what they left for the world in slot order. Returns whether the
    /// budget stopped the choice early.
    bool step_in_parallel(FrameMetrics& m, std::uint32_t count, std::uint32_t start);
    /// The parallel phase: over slots [0, count), or with `listed` over ParallelState::step_list.
    void tick_in_parallel(FrameMetrics& m, std::uint32_t count, bool listed);
    void gather_parallel_tasks();            // after the phase: the tasks' records, in slot order
    void apply_sleeps_and_wakes();           // then, in slot order: sleeps, timers, wakes
    void apply_deferred_writes();            // then the phase's shared blackboard writes, in slot order
    /// UsageError naming `who` while the agents of a frame are ticked on several threads.
    void refuse_in_parallel_phase(const char* who) const {
        if (parallel_phase_) refuse_parallel(who);
    }
    [[noreturn]] void refuse_parallel(const char* who) const;
    void schedule_after_step(std::uint32_t slot);       // after a tick: sleep, and arm the agent's deadline
    /// schedule_after_step's second half, for a live agent with no work pending (`agent` is the
    /// slot's): the slot goes to sleep, with a timer for the agent's next deadline if it has one.
    void fall_asleep(std::uint32_t slot, const Agent& agent);
    /// When a sleeping agent's next deadline falls due in world time (its greatest TimePoint: never).
    TimePoint sleep_due(const Agent& a) const noexcept;
    void arm_timer(std::uint32_t slot, TimePoint due);  // gives the slot its (one) live heap entry
    void disarm_timer(SlotRecord& r) noexcept;          // its entry, if any, goes stale
    void compact_timers();                              // drops the stale entries from the heap
    void compact_timers_if_stale();                     // ... once they outnumber the live ones (+ 64)
    void finish_frame();                                // frees and joins of the frame
    /// finish_frame, for a spawn whose agent could not be made as it joins (a value's copy threw, no
    /// memory): the spawn is cancelled, its handle stale, as a despawn before joining would.
    void cancel_join(std::uint32_t slot);
    std::uint64_t run_frame(Duration dt, FrameMetrics& m);  // step()'s frame, after its checks (world.cpp)
    /// step()'s catch, when run_frame threw: the frame's frees, joins and reloads (finish_frame), its
    /// count, and the budget's cursor back where the frame found it. An exception of its own is dropped.
    void finish_thrown_frame(std::uint32_t cursor_before) noexcept;
    /// step()'s catch, with an input observer: tells it where the frame threw (on_step_threw).
    void tell_step_threw(const std::exception_ptr& error) noexcept;
    void materialize(std::uint32_t slot, Tree tree, const SpawnOptions& options);  // creates the agent
    /// Moves the heap state block of an agent that arrived made (restored, migrated, reloaded) into
    /// the pool at its slot's place, as a spawned agent's; a large block stays on the heap (unless its
    /// place is in a huge-page region of the pool: StateBlockPool::takes), and so does
    /// a block whose move fails (memory, a value's copy throwing): the agent runs the same either way.
    void pool_block(std::uint32_t slot) noexcept;
    void next_generation(std::uint32_t slot) noexcept;  // stales every handle to the slot; retires it when used up
    void release(std::uint32_t slot);        // empties the slot and returns it to the free list
    void destroy(std::uint32_t slot);        // frees the agent (its onTerminate callbacks run), then release()
    /// Whether user code run by the world may be on the stack (a step, an agent being freed, a change
    /// slot of the bus): then despawned agents are not freed at once.
    bool callback_running() const noexcept;
    void free_when_idle();  // frees the deferred despawns unless a callback is running
    void free_deferred();   // frees the deferred despawns (except agents still inside their own tick)
    bool valid(AgentHandle handle) const noexcept;
    // The awake set: a bit per slot, and a bit per 64 slots telling whether any of them is awake, so
    // that finding the awake agents costs O(slots / 4096) when few are (a waiting world), not O(slots).
    /// Makes the awake set's words cover awake word `word`. new_slot
    /// calls it for every slot it makes; set_awake for a slot index past them (none in a World's own
    /// paths since new_slot does, kept so that set_awake is safe for any index).
    void grow_awake_set(std::uint32_t word) {
        if (word < awake_.size()) return;
        awake_.resize(word + 1, 0);
        awake_words_.resize(word / 64 + 1, 0);
    }
    void set_awake(std::uint32_t slot) {
        const std::uint32_t word = slot / 64;
        if (word >= awake_.size()) grow_awake_set(word);
        const std::uint64_t bit = std::uint64_t{1} << (slot % 64);
        if (awake_[word] & bit) return;
        awake_[word] |= bit;
        awake_words_[word / 64] |= std::uint64_t{1} << (word % 64);
        ++awake_count_;
        if (awake_count_ == call_workers_at_) [[unlikely]] call_workers();
    }
    void clear_awake(std::uint32_t slot) {
        const std::uint32_t word = slot / 64;
        const std::uint64_t bit = std::uint64_t{1} << (slot % 64);
        if (word >= awake_.size() || !(awake_[word] & bit)) return;
        awake_[word] &= ~bit;
        if (awake_[word] == 0) awake_words_[word / 64] &= ~(std::uint64_t{1} << (word % 64));
        --awake_count_;
    }
    bool is_awake(std::uint32_t slot) const {
        return slot / 64 < awake_.size() && (awake_[slot / 64] >> (slot % 64)) & 1;
    }
    /// The first awake slot in [from, end), or `end`. Inline for the busy case (the next awake slot
    /// is in the same word); next_awake_far() skips empty words through the summary bits.
    [[gnu::always_inline]] std::uint32_t next_awake(std::uint32_t from, std::uint32_t end) const {
        const std::uint32_t word = from / 64;
        if (word < awake_.size()) {
            const std::uint64_t bits = awake_[word] >> (from % 64);
            if (bits) {
                const std::uint32_t i = from + static_cast<std::uint32_t>(std::countr_zero(bits));
                return i < end ? i : end;
            }
        }
        return next_awake_far(from, end);
    }
    std::uint32_t next_awake_far(std::uint32_t from, std::uint32_t end) const;
    bool lod_frame(std::uint32_t slot) const;

    struct Subscriber {
        std::uint32_t slot;
        std::uint32_t generation;
        KeyId tree_key;
    };
    struct SharedEntry;  // a shared blackboard, its subscribers and its routing connection (world.cpp)
    void route(std::size_t shared_index, KeyId key);
    /// Makes `blackboard` the world's next shared blackboard: its entry, its routing connection and its
    /// publish queue (create_shared, and the snapshots' restores). Between frames.
    SharedBlackboard& adopt_shared(std::unique_ptr<SharedBlackboard> blackboard);
    /// At the start of a step: publishes the shared blackboards written since they last published, in
    /// index order; returns the exceptions their change slots threw meanwhile.
    std::uint64_t publish_shared();
    std::vector<std::uint32_t> shared_written_;     // indices in shared_, each added at its first write after a publish
    std::vector<std::uint32_t> shared_publishing_;  // publish_shared()'s sorted batch (capacity kept)
    std::size_t shared_index(const SharedBlackboard* blackboard) const;
    void validate_bindings(const Tree& tree, const SpawnOptions& options) const;
    void subscribe(std::uint32_t slot, const SpawnOptions& options);

    std::vector<SharedEntry> shared_;
    // The state blocks of the agents materialize() creates, placed by slot (by pointer: the pool's
    // class is the engine's). Declared before the slots: it outlives every agent.
    std::unique_ptr<detail::StateBlockPool> blocks_;
    template <class T> using Chunk = std::unique_ptr<T[], detail::ChunkFree<T>>;
    /// A chunk of `count` default-constructed elements (new_slot), on huge pages when it is at least
    /// detail::kHugeThreshold bytes and huge pages are on, else from the heap.
    template <class T> static Chunk<T> make_chunk(std::size_t count);
    std::array<Chunk<Slot>, kChunks> chunks_;
    std::array<Chunk<SlotRecord>, kChunks> records_;  // chunk c: the records of chunks_[c]'s slots
    std::uint32_t slot_count_ = 0;            // slots handed out so far: indices [0, slot_count_)
    std::vector<SlotSchedule> schedules_;     // per slot, [0, slot_count_)
    std::vector<std::uint64_t> awake_;        // bit per slot: has work, step when its LOD frame comes
    std::vector<std::uint64_t> awake_words_;  // bit per word of awake_: that word is not zero
    std::uint32_t awake_count_ = 0;           // bits set in awake_: a frame with none scans nothing
    // A move hint was set once (SlotSchedule::move_hint): step_serial then takes its hinted loop.
    bool move_hints_used_ = false;
    // Whether the loops that tick agents (step_serial, the parallel tasks) prefetch the state block of
    // the slot kBlockPrefetchDistance places ahead: set for good once an agent whose block is larger
    // than kPrefetchBlockBytes has joined (note_block_bytes). Small blocks lie close enough in the
    // World's pool for the hardware to fetch them ahead; larger ones (a wide tree's) are a cache miss
    // each, which the prefetch hides (docs/benchmarks.md, "Prefetching the next agents' blocks").
    bool prefetch_blocks_ = false;
    static constexpr std::size_t kPrefetchBlockBytes = 128;
    static constexpr std::uint32_t kBlockPrefetchDistance = 8;
    void note_block_bytes(std::size_t bytes) noexcept {
        if (bytes > kPrefetchBlockBytes) prefetch_blocks_ = true;
    }
    struct TimerEntry {
        TimePoint due;
        std::uint32_t slot;
        std::uint32_t stamp;  // live while it equals its slot's timer_stamp and the slot's timer is armed
    };
    std::vector<TimerEntry> timers_;    // min-heap on `due`
    void push_timer(const TimerEntry& entry);  // into the heap (its slot already records it as armed)
    std::size_t timers_live_ = 0;       // slots with an armed timer (each has exactly one live entry)
    std::vector<std::uint32_t> free_;
    std::vector<PendingSpawn> pending_spawns_;
    std::vector<std::uint32_t> pending_frees_;  // despawned, freed when no callback uses them
    std::unique_ptr<ChangeBus> bus_;  // by pointer so that this header needs no Boost
    TimePoint now_ = 0;
    std::uint64_t frame_ = 0;
    std::uint32_t budget_ = 0;
    std::uint32_t cursor_ = 0;  // where the last budget-limited frame stopped
    std::size_t live_ = 0;
    std::uint32_t busy_ = 0;     // depth of world calls running user callbacks (freeing an agent)
    std::uint32_t routing_ = 0;  // depth of route(): subscriber lists are not compacted meanwhile
    std::vector<WorldListener*> listeners_;
    WorldInputObserver* input_observer_ = nullptr;
    void attach_forwarders();  // after listeners_ changed: each agent's listener is its forwarder or its own
    bool in_step_ = false;
    bool closing_ = false;       // in ~World: spawns are refused
    bool parallel_phase_ = false;  // agents are being ticked on several threads (set_threads)
    std::uint32_t threads_ = 1;
    std::unique_ptr<ParallelState> parallel_;  // with threads_ > 1
    ParallelOptions parallel_options_;
    /// The awake count at which set_awake (and resume_all, before its resumes) calls the workers: the
    /// parallel phase's inline threshold with threads_ > 1 and a worker standby, else never.
    static constexpr std::uint32_t kNeverCallWorkers = 0xFFFFFFFFu;
    std::uint32_t call_workers_at_ = kNeverCallWorkers;
    /// Between frames, when the coming frame's phase will run on the threads: hands the arena its
    /// standby tasks (ParallelState::call_workers). Called by set_awake as the awake count reaches
    /// call_workers_at_ and by resume_all before resumes that will reach it; nothing during a step.
    void call_workers();
    // Hot reload (engine/world/reload.cpp).
    struct PendingReload {
        std::string name;
        Tree tree;
    };
    std::vector<PendingReload> pending_reloads_;  // requested during a frame or a callback
    std::vector<ReloadReport> reload_reports_;    // applied deferred reloads, for take_reload_reports
    std::size_t reload_report_limit_ = kDefaultReloadReportLimit;  // at most this many in reload_reports_
    std::uint64_t dropped_reload_reports_ = 0;    // reports the limit dropped, oldest first
    /// Appends a deferred reload's report (apply_pending_reloads), dropping the oldest over the limit.
    void keep_reload_report(ReloadReport report);
    void check_reload(std::string_view name, const Tree& tree, std::vector<std::uint32_t>& slots) const;
    ReloadReport apply_reload(std::string_view name, const Tree& tree, std::uint64_t first_frame);
    void apply_pending_reloads(std::uint64_t first_frame);  // in request order, into reload_reports_
    bool phase_timing_ = false;                // set_phase_timing
    StepPhaseTimes phase_times_;               // of the last step, while phase_timing_
    std::chrono::steady_clock::time_point phase_mark_;  // where the phase being timed began
    /// With phase_timing_: adds the time since the last mark to `phase` and marks now.
    void end_phase(std::chrono::nanoseconds StepPhaseTimes::*phase) {
        if (!phase_timing_) return;
        const auto now = std::chrono::steady_clock::now();
        phase_times_.*phase += std::chrono::duration_cast<std::chrono::nanoseconds>(now - phase_mark_);
        phase_mark_ = now;
    }
    /// What the frame being stepped has reached, and what threw in it, for the input observer of a
    /// step that throws (StepThrow). Set by run_frame, publish_shared's catch and finish_frame.
    StepThrow::Stage frame_stage_ = StepThrow::Stage::Other;
    std::optional<std::uint32_t> publish_threw_;  // the shared blackboard whose publish threw
    std::vector<AgentHandle> joins_refused_;      // the frame's spawns that could not join
};

}  // namespace ebt
