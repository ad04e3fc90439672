// World: many agents stepped in a game server's fixed-step frame loop.
//
//   ebt::World world;
//   ebt::AgentHandle guard = world.spawn(tree, {.mode = ebt::Mode::Event});
//   for (;;) {
//       world.agent(guard)->blackboard().set("enemy_seen", perceive());
//       ebt::FrameMetrics m = world.step(50ms);
//   }
//
// The World owns its agents in contiguous storage and refers to them by generational handles: a
// handle whose agent was despawned is stale, and every call taking it reports that (nullptr, false
// or UsageError) instead of touching freed state.
//
// step(dt) touches only agents with work this frame: polling agents (every frame), event agents with
// queued work (running leaves that update, guards woken by blackboard changes, resumes) and agents
// whose earliest deadline has come (kept in a timer heap in world time). An event agent that is only
// waiting costs nothing per frame. Agents are stepped in slot order (deterministic).
//
// Spawning and despawning between frames take effect at once. During a frame (from an action, a
// listener or a change slot) a spawn returns its handle at once but the agent joins at the end of the
// frame and first ticks in the next one; a despawn makes the handle stale at once, stops the agent
// (if it is the one ticking, its tick ends as with Agent::abort()), and frees it at the end of the
// frame. Agent pointers (World::agent) stay valid until the next spawn or despawn is carried out.
//
// Thread-safety: none; one thread steps a world.
#pragma once

#include <ebt/agent.hpp>
#include <ebt/shared_blackboard.hpp>

#include <bit>
#include <chrono>
#include <optional>
#include <vector>

namespace ebt {

/// A generational reference to an agent of a World.
struct AgentHandle {
    std::uint32_t index = 0xFFFFFFFF;
    std::uint32_t generation = 0;
    friend bool operator==(AgentHandle, AgentHandle) = default;
};

struct SpawnOptions {
    Mode mode = Mode::Event;
    std::uint64_t seed = 0;
    bool restart_on_end = true;
    TraceListener* listener = nullptr;
    /// AI level of detail: the agent ticks every `tick_interval` frames (1 = every frame), in the
    /// frames where (frame + slot index) is a multiple of the interval (so that agents with the same
    /// interval spread over its frames), with the dt of the frames in between accumulated so that its
    /// clock and timers stay right.
    std::uint32_t tick_interval = 1;
    /// Binds each shared scope of the tree ("squad") to a shared blackboard of this world.
    std::vector<std::pair<std::string, SharedBlackboard*>> shared = {};
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
    std::chrono::nanoseconds wall_time{0};
};

class World : private AgentHost {
public:
    World();
    ~World();
    World(const World&) = delete;
    World& operator=(const World&) = delete;

    /// Creates an agent of `tree`. Between frames it exists at once; during a frame it joins at the end
    /// of the frame. It first ticks in the next frame.
    AgentHandle spawn(Tree tree, SpawnOptions options = {});
    /// Removes an agent: its running actions get onTerminate(Aborted) when it is freed. Returns false
    /// (and does nothing) for a stale handle.
    bool despawn(AgentHandle handle);
    bool alive(AgentHandle handle) const noexcept;
    /// The agent, or nullptr for a stale handle or an agent spawned during the current frame.
    Agent* agent(AgentHandle handle) noexcept;
    const Agent* agent(AgentHandle handle) const noexcept;
    /// Like agent(), but throws UsageError naming the handle when it is stale.
    Agent& at(AgentHandle handle);

    /// Changes an agent's LOD tick interval (>= 1). Returns false for a stale handle.
    bool set_tick_interval(AgentHandle handle, std::uint32_t interval);

    /// Step at most `agents` agents per frame (0 = no limit). Agents with work that did not fit are
    /// stepped first in the following frames (round robin from where the last frame stopped), so
    /// none starves; their dt accumulates meanwhile.
    void set_agent_budget(std::uint32_t agents) noexcept { budget_ = agents; }

    /// Advances the world by one frame of `dt`. Throws UsageError (changing nothing) for a negative
    /// dt or one that would move the world clock past limits::kMaxClockMicroseconds.
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

    /// The shared bus on which every agent of this world emits its blackboard changes.
    ChangeBus& bus() noexcept { return bus_; }
    std::uint64_t frame() const noexcept { return frame_; }
    TimePoint now() const noexcept { return now_; }
    std::size_t size() const noexcept { return live_; }
    bool in_step() const noexcept { return in_step_; }

    /// A hash of every live agent's node statuses, logical clock and blackboard values, in slot order.
    /// Equal in both modes for the same inputs (docs/world.md).
    std::uint64_t state_hash() const;

    /// Handles of the live agents, in slot order.
    std::vector<AgentHandle> handles() const;

private:
    struct Slot;
    struct PendingSpawn {
        std::uint32_t slot;
        Tree tree;
        SpawnOptions options;
    };
    void on_agent_wake(std::uint32_t slot) override;
    void step_slot(std::uint32_t slot, FrameMetrics& m);
    void schedule_after_step(std::uint32_t slot);
    void finish_frame();
    void materialize(PendingSpawn& spawn);
    void destroy(std::uint32_t slot);
    bool valid(AgentHandle handle) const noexcept;
    // The awake set: a bit per slot, and a bit per 64 slots telling whether any of them is awake, so
    // that finding the awake agents costs O(slots / 4096) when few are (a waiting world), not O(slots).
    void set_awake(std::uint32_t slot) {
        const std::uint32_t word = slot / 64;
        if (word >= awake_.size()) {
            awake_.resize(word + 1, 0);
            awake_words_.resize(word / 64 + 1, 0);
        }
        const std::uint64_t bit = std::uint64_t{1} << (slot % 64);
        if (awake_[word] & bit) return;
        awake_[word] |= bit;
        awake_words_[word / 64] |= std::uint64_t{1} << (word % 64);
        ++awake_count_;
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
    std::uint32_t next_awake(std::uint32_t from, std::uint32_t end) const {
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
    struct SharedEntry {
        std::unique_ptr<SharedBlackboard> blackboard;
        std::vector<std::vector<Subscriber>> subscribers;  // per shared key
        boost::signals2::scoped_connection router;
    };
    void route(std::size_t shared_index, KeyId key);
    std::size_t shared_index(const SharedBlackboard* blackboard) const;
    void validate_bindings(const Tree& tree, const SpawnOptions& options) const;
    void subscribe(std::uint32_t slot, const SpawnOptions& options);

    std::vector<SharedEntry> shared_;
    std::vector<Slot> slots_;
    std::vector<std::uint64_t> awake_;        // bit per slot: has work, step when its LOD frame comes
    std::vector<std::uint64_t> awake_words_;  // bit per word of awake_: that word is not zero
    std::uint32_t awake_count_ = 0;           // bits set in awake_: a frame with none scans nothing
    struct TimerEntry {
        TimePoint due;
        std::uint32_t slot;
        std::uint32_t stamp;
    };
    std::vector<TimerEntry> timers_;    // min-heap on `due`
    std::vector<std::uint32_t> free_;
    std::vector<PendingSpawn> pending_spawns_;
    std::vector<std::uint32_t> pending_frees_;
    ChangeBus bus_;
    TimePoint now_ = 0;
    std::uint64_t frame_ = 0;
    std::uint32_t budget_ = 0;
    std::uint32_t cursor_ = 0;  // where the last budget-limited frame stopped
    std::size_t live_ = 0;
    std::uint32_t stepping_ = 0xFFFFFFFF;
    bool in_step_ = false;
};

}  // namespace ebt
