// Agent: one NPC's run of a shared tree definition.
//
// An Agent owns only per-agent state: every node's status and small runtime memory, its scheduler
// queue and its blackboard values, all in one block laid out by the definition (one allocation).
// It is ticked by game code with the frame's `dt`; each tick follows the walk rule of
// docs/semantics.md in either mode:
//   - Mode::Polling walks the running part of the tree from the root every tick (the reference);
//   - Mode::Event touches only what has work: running leaves that update, due timers, guards whose
//     keys changed, resumed actions (the per-agent scheduler queue).
// Both modes produce the same lifecycle trace for trees whose conditions read only the blackboard.
//
// Ownership and threads: an Agent keeps its Tree alive. It is not thread-safe: tick it, resume it and
// write its blackboard from one thread at a time. Agents of the same Tree may live on different threads.
//
// Re-entrancy: from inside a tick (an action, a condition, a ChangeBus slot, a listener) game code may
// write the blackboard, resume suspended actions and call abort(); tick() itself is not re-entrant
// and throws UsageError if called from inside a tick. User code that throws inside a tick is contained:
// the node fails, the error is reported to the listener (TraceKind::Error), and the agent and its
// blackboard stay usable. tick() never throws because of user code.
#pragma once

#include <ebt/blackboard.hpp>
#include <ebt/registry.hpp>
#include <ebt/trace.hpp>
#include <ebt/tree.hpp>

#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace ebt {

namespace detail {
struct Runtime;
struct EngineAccess;
struct SnapshotAccess;  // engine/snapshot: saving and restoring an agent's private state
class AgentHost;  // <ebt/detail/agent_host.hpp>: who embeds an agent (a World)

/// The engine's permission to create an Agent whose state block comes from its host (a World's pool
/// of blocks, placed by slot) instead of its own heap allocation. Only detail::EngineAccess::hosted_block
/// makes one, so game code cannot call the constructor that takes it.
class HostedBlock {
    friend struct EngineAccess;
    friend class ebt::Agent;
    HostedBlock(AgentHost& host, std::uint32_t slot) noexcept : host_(&host), slot_(slot) {}
    AgentHost* host_;
    std::uint32_t slot_;
};
}  // namespace detail
class World;
struct FrameMetrics;

enum class Mode : std::uint8_t { Polling, Event };

/// A frame time in seconds as a Duration, rounded to the nearest microsecond. Throws UsageError,
/// naming `who`, for NaN, an infinity, a negative value (even one that would round to 0) and a value
/// of limits::kMaxClockMicroseconds or more.
Duration duration_from_seconds(double seconds, const char* who = "duration_from_seconds()");
const char* to_string(Mode mode) noexcept;

/// One initial blackboard value given when an agent is created (AgentOptions::blackboard,
/// SpawnOptions::blackboard): a key of the tree and a value of exactly the key's type (a string
/// literal is a std::string).
///   {.blackboard = {{"home_x", 12.5f}, {"squad_leader", true}, {"bark", "halt"}}}
struct InitialValue {
    template <class T>
    InitialValue(std::string key_name, const T& value)  // NOLINT(google-explicit-constructor)
        : key(std::move(key_name)), value(Value::of(value)), type(this->value.type()) {}
    std::string key;
    Value value;  // the value, owned (a copy)
    const TypeInfo* type;
};

/// Checks initial values against `tree`'s blackboard: each names a key of the agent's own (not a
/// shared key), once, with a value of the key's type. Throws UsageError starting with `who`.
void check_initial_values(const Tree& tree, const std::vector<InitialValue>& values, std::string_view who);

struct AgentOptions {
    Mode mode = Mode::Event;
    std::uint64_t seed = 0;             // random and weighted selectors draw from (seed, node, entry count)
    bool restart_on_end = true;         // when the root's run ends, start afresh on the next tick
    TraceListener* listener = nullptr;  // not owned; must outlive the agent or be reset first
    ChangeBus* bus = nullptr;           // not owned; changes are emitted there when set (<ebt/signals.hpp>)
    UserPointer user = {};              // not owned; the game object the agent acts for (ActionContext::user)
    /// Blackboard values the agent starts with instead of the tree's initial ones: set before anything
    /// runs, neither emitted as changes nor waking guards (nothing has run yet). UsageError (nothing is
    /// created) for an unknown or shared key, a key given twice or a value of another type.
    std::vector<InitialValue> blackboard = {};
};

/// Counters kept by every agent (cheap enough to leave on). Totals since creation.
struct AgentStats {
    std::uint32_t nodes_visited = 0;     // work items processed (event) / running nodes walked (polling)
    std::uint32_t guards_evaluated = 0;  // guard and condition evaluations
    std::uint32_t updates = 0;           // leaf update calls
    std::uint32_t timers_fired = 0;
    std::uint32_t listener_errors = 0;   // exceptions thrown by the trace listener (swallowed)
};

class Agent {
public:
    explicit Agent(Tree tree, AgentOptions options = {});
    /// Engine only (a World's spawn): the same, with the state block taken from the host
    /// (AgentHost::allocate_state_block) and given back to it when the agent is destroyed.
    Agent(Tree tree, AgentOptions options, detail::HostedBlock hosted);
    ~Agent();
    Agent(Agent&& other) noexcept;
    Agent& operator=(Agent&& other) noexcept;
    Agent(const Agent&) = delete;
    Agent& operator=(const Agent&) = delete;

    /// Advances the agent clock by `dt` and runs one tick. Returns the root's status afterwards.
    /// Throws UsageError (changing nothing) for an agent owned by a World (the World steps it), for a
    /// negative dt, and for a dt that would move the clock past limits::kMaxClockMicroseconds.
    Status tick(Duration dt);
    /// The same with dt in seconds, rounded to the nearest microsecond; UsageError for NaN, an
    /// infinity, a negative dt or one past the clock's range (see duration_from_seconds).
    Status tick(double dt_seconds) { return tick(duration_from_seconds(dt_seconds, "Agent::tick()")); }

    /// Ends the current run: every running node ends Aborted, leaves first. The tree starts afresh on
    /// the next tick (or stays stopped when restart_on_end is false). Called from inside a tick, it
    /// takes effect as soon as the calling user function returns, and ends that tick.
    void abort();

    /// Finishes a suspended action with `status` (Success or Failure). The action ends when the walk
    /// reaches it: this tick if it has not been passed yet, otherwise the next tick. Returns false,
    /// changing nothing, when the handle is stale (the run ended or was already resumed) or belongs
    /// to another agent. Throws UsageError for a status other than Success or Failure.
    bool resume(const ResumeHandle& handle, Status status);

    /// After the root ended with restart_on_end false, starts the tree again on the next tick.
    void restart();

    Status status() const;                  // the root's status
    Status status(NodeIndex node) const;    // any node's status
    /// A node's status, the node found with Tree::find (UsageError when it is of another tree).
    Status status(NodeRef node) const;
    TimePoint now() const noexcept { return clock_; }
    std::uint64_t ticks() const noexcept { return ticks_; }
    Blackboard& blackboard() noexcept { return blackboard_; }
    const Blackboard& blackboard() const noexcept { return blackboard_; }
    const Tree& tree() const noexcept { return tree_; }
    Mode mode() const noexcept { return mode_; }
    const AgentStats& stats() const noexcept { return stats_; }
    bool in_tick() const noexcept { return in_tick_; }
    void set_listener(TraceListener* listener) noexcept { listener_ = listener; }
    std::uint64_t serial() const noexcept { return serial_; }
    /// The seed the agent was created with (AgentOptions::seed / SpawnOptions::seed).
    std::uint64_t seed() const noexcept { return seed_; }
    /// The user pointer it was created with, as a T (UsageError naming both types for another T or none).
    template <class T> T& user() const { return *static_cast<T*>(user_object(detail::user_type_id<T>(), "Agent")); }
    /// The user pointer it was created with, untyped (nullptr when none).
    void* user_pointer() const noexcept { return user_; }

    /// Bytes of state this agent uses: the Agent object plus its state block (nodes, queue, blackboard).
    std::size_t memory_bytes() const noexcept;

    /// True when the agent has work queued for its next tick (event mode) or always (polling mode).
    bool has_pending_work() const noexcept {
        if (!block_) return false;
        if (mode_ == Mode::Polling) return !stopped_;
        return queue_size_ > 1;  // anything besides the end-of-frame marker
    }
    /// The agent-clock time of its earliest armed deadline (wait, timeout, delay, cooldown, re-check),
    /// or the largest TimePoint when none is armed. Event mode only (polling checks every tick).
    TimePoint next_deadline() const noexcept { return next_deadline_; }

    /// Binds the tree's shared scope `scope` (keys declared with TreeBuilder::shared_key) to `shared`:
    /// the agent's mirrors take its published values now and on every publish routed to this agent
    /// (a World routes them), and the agent's writes to those keys go to `shared`. Throws UsageError
    /// when the tree has no such scope or `shared` lacks one of its keys (or has another type).
    /// `shared` must outlive the binding.
    void bind(std::string_view scope, SharedBlackboard& shared);
    /// The shared blackboard bound to `scope`, or nullptr.
    SharedBlackboard* bound(std::string_view scope) const;

private:
    friend struct detail::Runtime;
    friend struct detail::EngineAccess;  // set_host() and tick_numbered(), for a World
    friend struct detail::SnapshotAccess;  // <ebt/snapshot.hpp>: its whole state, between ticks
    friend class Blackboard;
    friend class ActionContext;
    friend class ConditionContext;

    /// Both public constructors: `block_host` null for a heap block, else the host whose block it is.
    Agent(Tree tree, AgentOptions options, detail::AgentHost* block_host, std::uint32_t slot);
    /// The rest of construction once the state block is there (values, deadlines, the root's start).
    void init_block(const AgentOptions& options);
    /// Frees the state block (delete[], or back to the host that gave it); block_ is null after.
    void free_block() noexcept;
    /// Embedding, between ticks: moves a heap state block into the one `hosted` gives (a World
    /// adopting a restored, migrated or reloaded agent into its pool). The block's bytes are copied and
    /// its non-trivial blackboard values copy-constructed; nothing else points into the block. If that
    /// throws (memory, a value's copy), the host's block is given back and the agent keeps its own,
    /// unchanged. Does nothing for a block that is already a host's.
    void move_block_to(detail::HostedBlock hosted);
    void on_blackboard_change(KeyId key);
    // (World::resume_all resumes an agent through detail::Runtime::resume_suspended,
    // engine/runtime/resume_run.hpp: Agent::resume less what the World does itself.)
    KeyId shared_key_id(KeyId key) const;
    void* user_object(std::uint16_t type, const char* who) const;
    /// Embedding: a host (World) is told of wakes from outside the agent's tick.
    void set_host(detail::AgentHost* host, std::uint32_t slot) noexcept {
        host_ = host;
        host_slot_ = slot;
    }
    /// Embedding: run one tick numbered `tick` (a world's frame number, so that traces of agents that
    /// skip idle frames stay comparable). `tick` must not go backwards. The tick's counts (updates,
    /// guards, events, timers) are also added to `frame` when given (the World's frame metrics).
    Status tick_numbered(std::uint64_t tick, Duration dt, FrameMetrics* frame = nullptr);
    // (A World ticks its agents through detail::Runtime::world_tick, engine/runtime/world_tick.hpp:
    // tick_numbered with a lean path for the quiet event-mode tick.)
    // Hot reload (defined in engine/world/reload.cpp; a World calls them through EngineAccess):
    /// Ends the run between ticks as abort() does (running nodes Aborted, leaves first, heard by the
    /// listener), without telling the host: the agent is about to be replaced.
    void end_run_for_reload();
    /// Makes this fresh agent (not ticked yet) go on from `old`: its clock, tick count and user
    /// pointer, and the values of the keys `carried` pairs (this agent's key, old's key, same type).
    void continue_from(const Agent& old, const std::vector<std::pair<KeyId, KeyId>>& carried);
    /// Swaps in `tree`, of the same structural hash as tree(), keeping every state: the values of its
    /// port literals (private "=..." keys) are taken from `tree`. Returns the keys whose value changed.
    std::vector<KeyId> swap_parameters(Tree tree);

    // Kept small on purpose: this object plus the state block is the agent's whole footprint.
    //
    // The order is the cache's: a World's quiet tick (Runtime::world_tick's lean path, and the
    // World's "stays awake?" test after it) reads and writes only the members from block_ to the
    // tree's data pointer (the first 80 bytes; of stats_ only the first three counters), which a
    // World keeps right after the slot's last_time (World::Slot):
    // 2.25 cache lines per slot on average where the old order, with these members spread over the
    // object, made it read all 2.75 (docs/benchmarks.md, "The lines a tick touches"). The rest is
    // read by the general tick, a write, snapshots and the embedding code. The order changes no byte
    // that a snapshot saves (snapshots save members by name, not this object's image).

    // The state block. Owned by block_ (delete[]) unless block_from_host_: then it is the host's
    // (AgentHost::allocate_state_block), given back by free_block(), never deleted here.
    std::unique_ptr<std::max_align_t[]> block_;
    TraceListener* listener_ = nullptr;
    TimePoint clock_ = 0;
    TimePoint next_deadline_ = 0;
    std::uint64_t ticks_ = 0;
    std::int32_t walk_pos_ = -1;      // how far this tick's walk has come (pre-order index), -1 between ticks
    std::uint16_t queue_head_ = 0;    // event mode: ring buffer of node indices in tree order
    std::uint16_t queue_size_ = 0;
    Mode mode_ = Mode::Event;
    bool in_tick_ = false;
    bool abort_requested_ = false;
    bool stopped_ = false;
    AgentStats stats_;
    Tree tree_;
    // (end of the quiet tick's part) Next what a blackboard write reads besides it: the values'
    // pointer and the host that the write's wake goes to.
    Blackboard blackboard_;  // also holds the ChangeBus pointer
    detail::AgentHost* host_ = nullptr;
    std::uint32_t host_slot_ = 0;
    bool restart_on_end_ = true;
    bool block_from_host_ = false;     // block_ came from host_ (slot host_slot_): see free_block()
    std::uint16_t user_type_ = 0;
    void* user_ = nullptr;             // AgentOptions::user; its type id is user_type_
    std::uint64_t seed_ = 0;
    std::uint64_t serial_ = 0;
};

}  // namespace ebt
