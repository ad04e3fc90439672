// Parallel stepping of a World (World::set_threads > 1): the tasks of the world's oneTBB task arena
// each walk a range of slots and tick the agents they find awake there (with a budget: the agents the
// calling thread chose, in slot order), and what their ticks leave for the world (sleeping, timers,
// shared blackboard writes) is applied afterwards in slot order, task by task, so that the result
// does not depend on the thread count (docs/world.md, "Threads").
#include "runtime/runtime.hpp"  // Runtime::prefetch_quiet_line
#include "runtime/move_ticks.hpp"  // the move entries, inline in tick_move_in_task
#include "world/end_move_in_slot.hpp"
#include "world/parallel_state.hpp"
#include "world/world_slot.hpp"
#include "world/task_probe.hpp"

#include <ebt/signals.hpp>
#include <ebt/detail/engine_access.hpp>

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <string>
#include <thread>

namespace ebt {

namespace {
/// The tick the current thread runs in a parallel phase (see detail::parallel_tick()).
thread_local detail::ParallelTick* current_tick = nullptr;

/// Sets the current thread's tick for the duration of one agent's tick.
struct TickScope {
    explicit TickScope(detail::ParallelTick& tick) noexcept { current_tick = &tick; }
    ~TickScope() { current_tick = nullptr; }
    TickScope(const TickScope&) = delete;
    TickScope& operator=(const TickScope&) = delete;
};

/// Slots (or, with a budget, chosen agents) per task at least: enough that scheduling costs little
/// beside ticking (an agent's tick is 20 ns to a few µs), few enough that 2-8 threads share a frame of
/// a few thousand agents evenly.
constexpr std::size_t kGrain = 256;
/// Awake agents per task of slots, about: a frame with few of its slots awake gets ranges of more than
/// kGrain slots (ParallelState::slots_per_task), as many awake agents as a dense frame's ranges hold
/// slots. At 5% awake, 100,000 slots are cut into 32 ranges of ~150 awake agents, not ~128 of ~40:
/// fewer tasks to hand out, steal and record, still several a thread to balance 2-8 threads
/// (docs/benchmarks.md, "Sixth pass: sparse frames").
constexpr std::size_t kAwakePerTask = kGrain;
/// Frames with fewer awake agents than this run their phase on the calling thread (same rules, same
/// buffering: only cheaper).
constexpr std::size_t kInlineBelow = 2 * kGrain;
/// A published change whose subscribers spread over more slots than this is routed on the calling
/// thread before the phase (with the frame's others): every task whose range it meets would read its
/// whole list. A squad's agents, spawned together, sit within a few hundred slots.
constexpr std::uint32_t kRouteSpanLimit = 4096;

/// For the whole of a task: its buffer's release (ParallelBuffer::note_task_done) when the task ends,
/// also when a tick throws out of it, so that the calling thread's acquire after the phase orders
/// everything the task wrote before what the apply reads (ThreadSanitizer cannot see TBB's own wait).
/// And an acquire when the task starts: an arena slot, and with it the buffer, can pass from one
/// thread to another within a phase, and the thread before released the buffer at its task's end.
struct TaskDone {
    detail::ParallelBuffer& buffer;
    explicit TaskDone(detail::ParallelBuffer& b) : buffer(b) { static_cast<void>(buffer.tasks_done.load(std::memory_order_acquire)); }
    ~TaskDone() { buffer.note_task_done(); }
    TaskDone(const TaskDone&) = delete;
    TaskDone& operator=(const TaskDone&) = delete;
};

/// While a task runs on a thread: what it adds to the thread's buffer (agents for the apply, shared
/// writes) is kept as one TaskRecord, also when a tick throws out of the task.
struct TaskScope {
    detail::ParallelBuffer& buffer;
    std::uint32_t order;
    std::size_t agents_first;
    TaskScope(detail::ParallelBuffer& b, std::uint32_t first) : buffer(b), order(first), agents_first(b.agents.size()) {
        buffer.task_first_write = buffer.writes.size();
    }
    ~TaskScope() {
        if (buffer.agents.size() > agents_first || buffer.writes.size() > buffer.task_first_write)
            buffer.tasks.push_back(detail::TaskRecord{order, &buffer, static_cast<std::uint32_t>(agents_first),
                                                      static_cast<std::uint32_t>(buffer.agents.size()),
                                                      static_cast<std::uint32_t>(buffer.task_first_write),
                                                      static_cast<std::uint32_t>(buffer.writes.size())});
        buffer.task_first_write = buffer.writes.size();
    }
    TaskScope(const TaskScope&) = delete;
    TaskScope& operator=(const TaskScope&) = delete;
};
constexpr std::uint32_t kMaxThreads = 256;

}  // namespace

detail::ParallelTick* detail::parallel_tick() noexcept { return current_tick; }

void detail::defer_shared_write(SharedBlackboard& blackboard, KeyId key, const void* value) {
    ParallelTick& tick = *current_tick;
    ParallelBuffer& buffer = *tick.buffer;
    const TypeInfo* type = blackboard.schema().info(key).type;
    // Read here, on the ticking thread, so that the apply need not touch the blackboard for a write
    // that changes nothing (the common case: an agent keeping up a value, like the arena's attackers
    // their squad's alarm). No one writes a pending value during the phase.
    const bool same_as_pending = detail::values_equal(type, blackboard.pending_value(key), value);
    if (buffer.writes.size() > buffer.task_first_write) {
        // The task's last write was to the same key (an agent writing it twice, or the next agent
        // of a squad): this one replaces it, as it would when both were applied in turn.
        DeferredSharedWrite& last = buffer.writes.back();
        if (last.blackboard == &blackboard && last.key == key) {
            if (last.boxed) detail::assign_value(type, buffer.boxed[last.index].data(), value);
            else std::memcpy(buffer.bytes.data() + last.index, value, type->size);
            last.same_as_pending = same_as_pending;
            return;
        }
    }
    DeferredSharedWrite write{&blackboard, detail::EngineAccess::publish_index(blackboard, buffer.publish_queue), key, false,
                              same_as_pending, 0};
    if (type->ops) {
        write.boxed = true;
        write.index = buffer.boxed.size();
        buffer.boxed.emplace_back(type, value);
    } else {
        write.index = buffer.bytes.size();
        buffer.bytes.resize(buffer.bytes.size() + type->size);
        std::memcpy(buffer.bytes.data() + write.index, value, type->size);
    }
    buffer.writes.push_back(write);
}

World::ParallelState::ParallelState(std::uint32_t threads)
    : allow_threads(threads > static_cast<std::uint32_t>(tbb::this_task_arena::max_concurrency())
                        ? std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism, threads)
                        : nullptr),
      arena(static_cast<int>(threads)), buffers(threads), grain(kGrain), awake_per_task(kAwakePerTask), inline_below(kInlineBelow),
      route_span_limit(kRouteSpanLimit) {
    // No line written by two threads in the phase: each thread's buffer (its counters and its
    // tasks_done) starts a line of its own, and this state, which the tasks only read, ends with
    // `phase` alone on its line (docs/benchmarks.md, "Seventh pass").
    static_assert(alignof(detail::ParallelBuffer) == 64 && sizeof(detail::ParallelBuffer) % 64 == 0);
    static_assert(alignof(ParallelState) == 64 && sizeof(ParallelState) % 64 == 0);
}

detail::StandbyCounters& detail::standby_counters() noexcept {
    static StandbyCounters counters;
    return counters;
}

World::ParallelState::~ParallelState() {
    if (!standbys_handed) return;
    standbys_stopped.store(true, std::memory_order_release);
    // A standby no worker has taken yet is run here (it sees standbys_stopped and leaves at once); one
    // running on a worker leaves within a turn of its loop.
    arena.execute([this] { standby_group.wait(); });
    // (Each standby's last act is its release of standbys_out: acquired here for ThreadSanitizer,
    // which cannot see the wait inside TBB.)
    while (standbys_out.load(std::memory_order_acquire) != 0) std::this_thread::yield();
}

void World::ParallelState::call_workers(std::chrono::microseconds standby) {
    if (standbys_out.load(std::memory_order_acquire) != 0) return;  // this frame's are out already
    const auto workers = static_cast<std::uint32_t>(buffers.size() - 1);
    const StandbyTask task{this, phase.load(std::memory_order_relaxed), std::chrono::steady_clock::now() + standby};
    standbys_out.store(workers, std::memory_order_release);  // (acquired by each standby: see stand_by)
    standbys_handed = true;
#ifdef EBT_TASK_PROBE
    standby_called_ns.store(probe::now_ns(), std::memory_order_relaxed);
#endif
    detail::StandbyCounters& counters = detail::standby_counters();
    for (std::uint32_t i = 0; i < workers; ++i) {
        counters.handed.fetch_add(1, std::memory_order_relaxed);
        counters.unfinished.fetch_add(1, std::memory_order_relaxed);
        arena.enqueue(standby_group.defer(task));
    }
}

void World::ParallelState::StandbyTask::operator()() const {
    // (Only this body's own fields are read here, in TBB's task object: .ci/tsan_tbb.supp.)
    state->stand_by(phase_seen, until);
}

void World::ParallelState::stand_by(std::uint64_t phase_seen, std::chrono::steady_clock::time_point until) {
    // ThreadSanitizer cannot see TBB hand the task over: this acquire of call_workers' release orders
    // this state's construction (its atomics' first values included) before the reads below.
    static_cast<void>(standbys_out.load(std::memory_order_acquire));
#ifdef EBT_TASK_PROBE
    const std::int64_t probe_start = probe::now_ns();
    struct ProbeNote {
        std::int64_t start, called;
        ~ProbeNote() {
            const std::lock_guard lock(probe::store().standby_lock);
            probe::store().standbys.push_back(probe::StandbyNote{called, start, probe::now_ns()});
        }
    } probe_note{probe_start, standby_called_ns.load(std::memory_order_relaxed)};
#endif
    while (phase.load(std::memory_order_acquire) == phase_seen && !standbys_stopped.load(std::memory_order_acquire) &&
           std::chrono::steady_clock::now() < until)
        std::this_thread::yield();  // the core to any other thread that wants it; back at once if none does
    // The counter first: `this` may be gone as soon as standbys_out is released (the destructor waits for it).
    detail::standby_counters().unfinished.fetch_sub(1, std::memory_order_release);
    standbys_out.fetch_sub(1, std::memory_order_release);
}

detail::ParallelBuffer& World::ParallelState::this_thread_buffer() {
    const int thread = tbb::this_task_arena::current_thread_index();
    return buffers[thread < 0 ? 0 : static_cast<std::size_t>(thread)];
}

void World::ParallelState::tick_slots(World& world, std::uint32_t begin, std::uint32_t end) {
    static_cast<void>(phase.load(std::memory_order_acquire));  // (for TSan: see `phase`)
    detail::ParallelBuffer& buffer = this_thread_buffer();
    const TaskDone done{buffer};  // (last: publishes the buffer, also when a tick throws)
#ifdef EBT_TASK_PROBE
    const std::int64_t probe_start = probe::now_ns();
    const auto probe_ticked = buffer.metrics.agents_stepped;
#endif
    {
        TaskScope task{buffer, begin};  // (kept before the release below, which publishes it)
        // The frame's published shared changes reach this range's agents first, as they reached every
        // agent before the first tick with one thread. The agents they woke join the awake bits.
        buffer.routed_awake.clear();
        if (!routes.empty()) route_in_range(world, begin, end, buffer);
        const std::vector<std::uint32_t>& routed = buffer.routed_awake;  // sorted
        std::size_t next_routed = 0;
        const auto next_slot = [&](std::uint32_t from) {
            const std::uint32_t awake = world.next_awake(from, end);
            return next_routed < routed.size() ? std::min(awake, routed[next_routed]) : awake;
        };
        // The thread's current tick for every agent of this task (tick_one moves its slot along): set
        // once here rather than around each agent's tick. Between two ticks only this loop runs.
        detail::ParallelTick tick{&world, 0, &buffer};
        TickScope tick_scope(tick);
        // As the serial loop (World::prefetch_blocks_), within this task's range: the agents ahead
        // are this task's, which no other thread changes during the phase.
        const bool prefetch_blocks = world.prefetch_blocks_;
        // The slots of this task's move ticks and those of the awake agents prefetched ahead, each in
        // ascending order (World::SlotCursor: a slot of the chunk kept costs no chunk look-up).
        SlotCursor slots(world);
        SlotCursor ahead(world);
        // The choice the serial loop makes, a word of awake bits (64 slots) at a time, over this task's
        // slots only. Only this task changes an awake bit of its range during the phase (its own agents
        // going to sleep, in the words it holds whole; wakes of other agents wait for the apply), so a
        // word read once stays right.
        for (std::uint32_t i = next_slot(begin); i < end;) {
            const std::uint32_t word = i / 64;
            const std::uint64_t word_end = std::uint64_t{word} * 64 + 64;
            // The word's slots (those below phase_slots: the others hold no agent) are all in this
            // task's range: no other task reads or writes the word in this phase.
            const bool owns_word = std::uint64_t{word} * 64 >= begin && std::min<std::uint64_t>(word_end, phase_slots) <= end;
            std::uint64_t bits = world.awake_[word] & (~std::uint64_t{0} << (i % 64));  // slots i and up
            if (word_end > end) bits &= (std::uint64_t{1} << (end % 64)) - 1;           // below `end`
            for (; next_routed < routed.size() && routed[next_routed] < word_end; ++next_routed)
                bits |= std::uint64_t{1} << (routed[next_routed] % 64);  // (all in [i, end): i came from next_slot)
            for (; bits != 0; bits &= bits - 1) {
                const std::uint32_t index = word * 64 + static_cast<std::uint32_t>(std::countr_zero(bits));
                // As the serial loop: in a sparse frame, the next awake slot of this task (step_serial).
                if (const std::uint64_t later = bits & (bits - 1); later != 0) {
                    const std::uint32_t next = word * 64 + static_cast<std::uint32_t>(std::countr_zero(later));
                    if (next > index + 1) detail::prefetch_slot(ahead[next]);
                }
                const SlotSchedule slot_schedule = world.schedule(index);  // state and interval: one 8-byte read
                if (slot_schedule.state != detail::SlotState::Live) {
                    buffer.agents.push_back(detail::AgentForApply{0, index, 0, kApplyDecides});  // (its bit is cleared)
                    continue;
                }
                if (slot_schedule.interval > 1 && (world.frame_ + index) % slot_schedule.interval != 0) continue;  // LOD (lod_frame)
                if (prefetch_blocks && index + kBlockPrefetchDistance < end) {
                    // (A live slot has its agent: its schedule word, not the optional's flag in the
                    // slot's third line, which a quiet tick does not read; world_slot.hpp.)
                    const Slot& later = world.slot(index + kBlockPrefetchDistance);
                    if (world.schedule(index + kBlockPrefetchDistance).state == detail::SlotState::Live)
                        detail::Runtime::prefetch_quiet_line(*later.agent);
                }
                // As the serial loop: a slot whose hint (read with its state) names a move tick takes
                // that entry first, in a word this task holds whole (its sleep is then this task's).
                if (owns_word && slot_schedule.move_hint != MoveHint::None)
                    tick_move_in_task(world, index, slots[index], slot_schedule.move_hint, buffer, tick);
                else
                    tick_one(world, index, buffer, tick, owns_word);
            }
            if (word_end >= end) break;
            i = next_slot(static_cast<std::uint32_t>(word_end));
        }
    }
#ifdef EBT_TASK_PROBE
    {
        const int t = tbb::this_task_arena::current_thread_index();
        probe::store().task(probe::TaskNote{probe_start, probe::now_ns(), static_cast<std::uint32_t>(t < 0 ? 0 : t), begin, end,
                                            static_cast<std::uint32_t>(buffer.metrics.agents_stepped - probe_ticked)});
    }
#endif
}

void World::ParallelState::tick_listed(World& world, std::size_t begin, std::size_t end) {
    static_cast<void>(phase.load(std::memory_order_acquire));  // (for TSan: see `phase`)
    detail::ParallelBuffer& buffer = this_thread_buffer();
    const TaskDone done{buffer};  // (as in tick_slots)
    {
        TaskScope task{buffer, static_cast<std::uint32_t>(begin)};
        detail::ParallelTick tick{&world, 0, &buffer};  // (as in tick_slots)
        TickScope tick_scope(tick);
        for (std::size_t pos = begin; pos < end; ++pos) tick_one(world, step_list[pos], buffer, tick, false);
    }
}

inline void World::ParallelState::tick_one(World& world, std::uint32_t index, detail::ParallelBuffer& buffer,
                                           detail::ParallelTick& tick, bool owns_word) {
    tick.slot = index;
    SlotTick done;
    try {
        done = world.tick_slot(index, buffer.metrics);
    } catch (...) {
        buffer.agents.push_back(detail::AgentForApply{0, index, 0, kApplyDecides});
        throw;
    }
    // After a quiet tick (Runtime::world_tick) the agent is live with its running action queued: it
    // stays awake, which is what settle_after_tick would find (nothing for the apply).
    if (done.quiet) return;
    // As World::step_slot: an agent that goes to sleep after its tick likely wakes to end a resumed
    // move, whose entry its next tick tries first (the hint is this task's to set in a word it holds).
    if (settle_after_tick(world, index, *done.agent, buffer, owns_word) && owns_word)
        world.schedule(index).move_hint = MoveHint::EndsMove;
}

inline void World::ParallelState::tick_move_in_task(World& world, std::uint32_t index, Slot& s, MoveHint hint,
                                                    detail::ParallelBuffer& buffer, detail::ParallelTick& tick) {
    tick.slot = index;
    FrameMetrics& m = buffer.metrics;
    Agent& a = *s.agent;
    if (hint == MoveHint::EndsMove) {
        // The serial loop's end of a move (World::end_move_in_slot: the hint moved on, the time kept,
        // the counts). It runs no user code, so it cannot throw, and the agent is still live.
        const MoveEnd end = world.end_move_in_slot(index, s, m);
        if (end == MoveEnd::RestartQueued) return;  // stays awake: the root's restart is its next tick
        if (end == MoveEnd::RunEnded) {
            settle_sleep(world, index, a, buffer, true);  // (an agent that does not restart: its run has ended)
            return;
        }
    } else {
        world.schedule(index).move_hint = MoveHint::None;
        // The tick's time keeping (World::tick_agent's), put back when the entry declines, for the
        // general tick to do it again.
        const TimePoint last_time = s.last_time;
        s.last_time = world.now_;
        bool restarted = false;
        try {
            // (The agent's handle in the World, as handle_of(index) makes it for a live agent.)
            restarted = detail::Runtime::world_restart_tick(a, world.frame_, Duration(world.now_ - last_time), m,
                                                            AgentHandle{index, s.generation});
        } catch (...) {
            buffer.agents.push_back(detail::AgentForApply{0, index, 0, kApplyDecides});
            throw;
        }
        if (restarted) {
            ++m.agents_stepped;
            // The next move's start ran user code, which may have despawned the agent (the apply decides).
            SlotSchedule& schedule_after = world.schedule(index);
            if (schedule_after.state != detail::SlotState::Live) {
                buffer.agents.push_back(detail::AgentForApply{0, index, 0, kApplyDecides});
                return;
            }
            if (a.has_pending_work()) return;  // stays awake (the start did not suspend)
            // The next move's start suspended: the agent sleeps until its resume, whose tick ends the move.
            schedule_after.move_hint = MoveHint::EndsMove;
            // settle_sleep's common case, inline as in World::step_hinted_slot: no deadline while no
            // slot has a timer, the bit set (not one the apply sets first: kWoken): only the bit goes.
            const std::uint64_t bit = std::uint64_t{1} << (index % 64);
            std::uint64_t& word = world.awake_[index / 64];
            if (a.next_deadline() == std::numeric_limits<TimePoint>::max() && world.timers_live_ == 0 && (word & bit) != 0) {
                word &= ~bit;
                ++buffer.awake_cleared;
                if (word == 0) buffer.emptied_words.push_back(index / 64);  // its summary bit is the apply's to clear
                return;
            }
            settle_sleep(world, index, a, buffer, true);
            return;
        }
        s.last_time = last_time;
    }
    tick_one(world, index, buffer, tick, true);
}

inline bool World::ParallelState::settle_after_tick(World& world, std::uint32_t index, const Agent& agent,
                                                    detail::ParallelBuffer& buffer, bool owns_word) {
    // Decided here, while the agent is in this thread's cache. Nothing else in the phase can take its
    // pending work away or give it a deadline (only its own tick could), so what it has now is what the
    // apply would find; and no one else touches its slot's timer record until the phase ends (arming
    // and disarming are serial, and the World's functions that do are refused during the phase).
    if (world.schedule(index).state != detail::SlotState::Live) {
        buffer.agents.push_back(detail::AgentForApply{0, index, 0, kApplyDecides});
        return false;
    }
    if (agent.has_pending_work()) return false;  // stays awake: nothing for the apply
    settle_sleep(world, index, agent, buffer, owns_word);
    return true;
}

inline bool World::ParallelState::put_to_sleep_in_task(World& world, std::uint32_t index, detail::ParallelBuffer& buffer) {
    std::uint64_t& word = world.awake_[index / 64];
    const std::uint64_t bit = std::uint64_t{1} << (index % 64);
    if ((word & bit) == 0) return false;  // woken by the task's routing: its bit waits for the apply (kWoken)
    word &= ~bit;
    ++buffer.awake_cleared;
    if (word == 0) buffer.emptied_words.push_back(index / 64);  // its summary bit is the apply's to clear
    return true;
}

inline void World::ParallelState::settle_sleep(World& world, std::uint32_t index, const Agent& a,
                                               detail::ParallelBuffer& buffer, bool owns_word) {
    // schedule_after_step's decisions, the slot's own part of them done here.
    // The common case first, as World::fall_asleep's: no deadline while no slot has a timer armed (a
    // latent move's next start, which suspends): the slot's cold record is not read, and the agent
    // has nothing for the apply but its awake bit. timers_live_ is the count the phase began with
    // (the threads' changes wait for the apply), and only this tick could have armed this slot's
    // timer since.
    const bool no_deadline = a.next_deadline() == std::numeric_limits<TimePoint>::max();
    if (no_deadline && world.timers_live_ == 0) {
        if (!(owns_word && put_to_sleep_in_task(world, index, buffer))) buffer.agents.push_back(detail::AgentForApply{0, index, 0, kSleeps});
        return;
    }
    const TimePoint due = no_deadline ? std::numeric_limits<TimePoint>::max() : world.sleep_due(a);
    if (due == std::numeric_limits<TimePoint>::max()) {  // no deadline: its old timer entry goes stale
        if (world.timers_live_ != 0) {
            SlotRecord& s = world.record(index);
            if (s.timer_armed) --buffer.timers_live_change;
            s.timer_armed = false;
        }
        if (!(owns_word && put_to_sleep_in_task(world, index, buffer))) buffer.agents.push_back(detail::AgentForApply{0, index, 0, kSleeps});
        return;
    }
    SlotRecord& s = world.record(index);  // its timer fields
    if (s.timer_armed && s.timer_due == due) {  // its entry in the heap serves
        if (!(owns_word && put_to_sleep_in_task(world, index, buffer))) buffer.agents.push_back(detail::AgentForApply{0, index, 0, kSleeps});
        return;
    }
    if (!s.timer_armed) ++buffer.timers_live_change;  // (a re-armed one stays counted once)
    s.timer_armed = true;
    s.timer_due = due;
    // The heap is the World's: its entry waits for the apply, in slot order. The bit may go now (the
    // apply's clear then finds it clear).
    if (owns_word) put_to_sleep_in_task(world, index, buffer);
    buffer.agents.push_back(detail::AgentForApply{due, index, ++s.timer_stamp, kSleepsWithTimer});
}

bool World::ParallelState::may_defer_routes(const World& world, const std::vector<std::uint32_t>& publishing) const {
    if (world.budget_ != 0 || !world.listeners_.empty() || world.input_observer_ != nullptr ||
        detail::EngineAccess::has_slots(*world.bus_))
        return false;
    for (const std::uint32_t index : publishing)  // only the World's router on the ones that publish
        if (world.shared_[index].blackboard->changes().num_slots() != 1) return false;
    return true;
}

void World::ParallelState::collect_route(World& world, std::uint32_t shared_index, KeyId key) {
    const SharedEntry& entry = world.shared_[shared_index];
    if (entry.subscribers.size() <= key || entry.subscribers[key].empty()) return;
    const std::vector<Subscriber>& list = entry.subscribers[key];
    detail::PendingRoute route{shared_index, key, list.front().slot, list.front().slot};
    for (const Subscriber& sub : list) {  // (12 bytes an entry, in a row: no agent is read here)
        route.first_slot = std::min(route.first_slot, sub.slot);
        route.last_slot = std::max(route.last_slot, sub.slot);
    }
    routes.push_back(route);
    routed_subscribers += list.size();
}

void World::ParallelState::settle_routes(World& world) {
    routes_by_first.clear();
    widest_route = 0;
    for (std::uint32_t r = 0; r < routes.size(); ++r) {
        const std::uint32_t span = routes[r].last_slot - routes[r].first_slot;
        if (span >= route_span_limit) {
            // Too wide for the tasks' look-up: this frame routes on this thread, in publish order.
            std::vector<detail::PendingRoute> now;
            now.swap(routes);
            routed_subscribers = 0;
            for (const detail::PendingRoute& route : now) world.route(route.shared_index, route.key);
            now.clear();
            routes.swap(now);  // (its capacity kept)
            return;
        }
        widest_route = std::max(widest_route, span);
        routes_by_first.push_back(r);
    }
    std::sort(routes_by_first.begin(), routes_by_first.end(),
              [this](std::uint32_t a, std::uint32_t b) { return routes[a].first_slot < routes[b].first_slot; });
    // Every thread's lists for route_in_range, sized here on the calling thread: whichever thread runs
    // a task, a steady frame allocates nothing in the phase (tests/allocation_test.cpp; a thread that
    // first routed in a late frame used to grow them there).
    for (detail::ParallelBuffer& buffer : buffers) {
        buffer.route_candidates.reserve(routes.size());
        buffer.routes_with_gone.reserve(routes.size());
        buffer.routed_awake.reserve(routed_subscribers);
    }
}

void World::ParallelState::route_in_range(World& world, std::uint32_t begin, std::uint32_t end, detail::ParallelBuffer& buffer) {
    // The routes whose subscribers' slots meet [begin, end): first slot below `end`, last at `begin` or
    // later. Their first slots are at least begin - widest_route.
    buffer.route_candidates.clear();
    const std::uint32_t lowest_first = begin > widest_route ? begin - widest_route : 0;
    auto it = std::lower_bound(routes_by_first.begin(), routes_by_first.end(), lowest_first,
                               [this](std::uint32_t r, std::uint32_t slot) { return routes[r].first_slot < slot; });
    for (; it != routes_by_first.end() && routes[*it].first_slot < end; ++it)
        if (routes[*it].last_slot >= begin) buffer.route_candidates.push_back(*it);
    std::sort(buffer.route_candidates.begin(), buffer.route_candidates.end());  // the order one thread routes them in
    bool woke = false;
    detail::ParallelTick tick{&world, 0, &buffer, &woke};
    TickScope scope(tick);
    for (const std::uint32_t r : buffer.route_candidates) {
        const detail::PendingRoute& route = routes[r];
        const SharedEntry& entry = world.shared_[route.shared_index];
        const void* value = entry.blackboard->published(route.key);
        bool saw_gone = false;
        for (const Subscriber& sub : entry.subscribers[route.key]) {  // (no one changes a list during the phase)
            if (sub.slot < begin || sub.slot >= end) continue;
            if (world.schedule(sub.slot).state != detail::SlotState::Live || world.slot(sub.slot).generation != sub.generation) {
                saw_gone = true;  // dropped from the list after the phase, as a serial route drops it
                continue;
            }
            tick.slot = sub.slot;
            woke = false;
            // As World::route: wakes the agent (through World::on_agent_wake, which sets `woke`) if a
            // live guard reads the key.
            detail::EngineAccess::mirror(world.slot(sub.slot).agent->blackboard(), sub.tree_key, value);
            if (woke && !world.is_awake(sub.slot)) buffer.routed_awake.push_back(sub.slot);
        }
        if (saw_gone) buffer.routes_with_gone.push_back(r);
    }
    std::sort(buffer.routed_awake.begin(), buffer.routed_awake.end());
    buffer.routed_awake.erase(std::unique(buffer.routed_awake.begin(), buffer.routed_awake.end()), buffer.routed_awake.end());
    for (const std::uint32_t index : buffer.routed_awake) buffer.agents.push_back(detail::AgentForApply{0, index, 0, kWoken});
}

void World::ParallelState::finish_routes(World& world, bool phase_threw) {
    if (routes.empty()) return;
    if (phase_threw) {
        for (const detail::PendingRoute& route : routes) world.route(route.shared_index, route.key);
    } else {
        for (const detail::ParallelBuffer& buffer : buffers)
            for (const std::uint32_t r : buffer.routes_with_gone) {
                // World::route's removal, in its order (a snapshot saves the lists as they are).
                std::vector<Subscriber>& list = world.shared_[routes[r].shared_index].subscribers[routes[r].key];
                for (std::size_t i = 0; i < list.size();) {
                    const Subscriber sub = list[i];
                    if (world.schedule(sub.slot).state != detail::SlotState::Live || world.slot(sub.slot).generation != sub.generation) {
                        list[i] = list.back();
                        list.pop_back();
                        continue;
                    }
                    ++i;
                }
            }
    }
    routes.clear();
    routes_by_first.clear();
    routed_subscribers = 0;
}

void World::set_parallel_grain_for_test(std::uint32_t grain) {
    if (!parallel_ || grain == 0) throw UsageError("set_parallel_grain_for_test(): needs set_threads(n > 1) and a grain > 0");
    parallel_->grain = grain;
    parallel_->awake_per_task = 0;  // every frame's ranges of `grain` slots, sparse or not (the tests' tiny tasks)
    parallel_->inline_below = 2 * std::size_t{grain};
    parallel_->route_span_limit = std::numeric_limits<std::uint32_t>::max();  // every route in the tasks
    if (call_workers_at_ != kNeverCallWorkers) call_workers_at_ = static_cast<std::uint32_t>(parallel_->inline_below);
}

World::World(WorldOptions options) : World() { set_threads(options.threads, options.parallel); }

void World::set_threads(std::uint32_t threads, ParallelOptions options) {
    if (threads < 1 || threads > kMaxThreads)
        throw UsageError("World::set_threads(" + std::to_string(threads) + "): the thread count must be 1 to " +
                         std::to_string(kMaxThreads));
    if (callback_running()) throw UsageError("World::set_threads() during a frame: change it between frames");
    if (threads != threads_) {
        if (threads == 1) {
            parallel_.reset();  // (waits for its standby tasks)
        } else {
            parallel_ = std::make_unique<ParallelState>(threads);
            for (detail::ParallelBuffer& buffer : parallel_->buffers) buffer.publish_queue = &shared_written_;
            parallel_->arena.initialize();  // its threads start now, not in the first frame
        }
        threads_ = threads;
    }
    parallel_options_ = options;
    call_workers_at_ = threads > 1 && options.worker_standby.count() > 0 ? static_cast<std::uint32_t>(parallel_->inline_below)
                                                                         : kNeverCallWorkers;
}

void World::call_workers() {
    // Between frames only: in a step, the phase is about to start (timers falling due) or over.
    if (in_step_ || !parallel_) return;
    parallel_->call_workers(parallel_options_.worker_standby);
}

void World::refuse_parallel(const char* who) const {
    throw UsageError(std::string(who) + " while the world ticks its agents on " + std::to_string(threads_) +
                     " threads: an action may touch only its own agent then (docs/world.md, \"Threads\")");
}

void World::tick_in_parallel(FrameMetrics& m, std::uint32_t count, bool listed) {
    ParallelState& p = *parallel_;
    for (auto& buffer : p.buffers) buffer.clear();
    const std::size_t n = listed ? p.step_list.size() : count;  // places of the step list, or slots
    p.phase_slots = count;
    // (The agents the phase's routing may wake are counted as awake: a frame of many alarms runs on threads.)
    const std::size_t awake = listed ? p.step_list.size() : awake_count_ + p.routed_subscribers;
    // Debugging tools and game code subscribed to the bus are called from the ticks: with world
    // listeners, an input observer (a recorder hears lifecycle events and direct agent calls) or
    // ChangeBus slots, the phase runs on this thread, in slot order; so do small frames.
    // The rules (refusals, buffering) are the same either way.
#ifdef EBT_TASK_PROBE
    static const bool probe_inline = std::getenv("EBT_PROBE_INLINE") != nullptr;  // the parallel code, one thread
#else
    constexpr bool probe_inline = false;
#endif
    const bool on_this_thread = probe_inline || awake < p.inline_below || !listeners_.empty() || input_observer_ != nullptr ||
                                detail::EngineAccess::has_slots(*bus_);
    parallel_phase_ = true;
    struct PhaseScope {
        bool& flag;
        ~PhaseScope() { flag = false; }
    } phase_scope{parallel_phase_};
    if (on_this_thread) {
        p.phase.fetch_add(1, std::memory_order_release);  // (a standby waiting for this frame leaves)
        if (listed) p.tick_listed(*this, 0, n);
        else p.tick_slots(*this, 0, count);
    } else {
        p.phase.fetch_add(1, std::memory_order_release);
        // A step list is all agents to tick: its places are cut by `grain`. Slots by how many are awake,
        // in whole words of awake bits when the grain allows (every word but the last then belongs to one
        // task, which puts its sleepers' bits out itself: put_to_sleep_in_task).
        std::size_t grain = listed ? p.grain : p.slots_per_task(n, awake);
        std::size_t unit = 1;
        if (!listed && p.grain % 64 == 0) {
            unit = 64;
            grain = (grain + 63) / 64 * 64;
        }
        p.last_grain = grain;
        const ParallelState::TickTask task{&p, this, listed, unit, n};
#ifdef EBT_TASK_PROBE
        const std::int64_t probe_start = probe::now_ns();
#endif
        // Every task's buffer (and the agents it ticked) is acquired after the phase, also when a
        // tick threw out of it: TBB waits for the other tasks before it rethrows, in code TSan cannot
        // see (each task's release is its TaskDone, which runs when its tick throws as well).
        const auto acquire_tasks = [&p] {
            for (const detail::ParallelBuffer& buffer : p.buffers) static_cast<void>(buffer.tasks_done.load(std::memory_order_acquire));
        };
        const std::size_t units = (n + unit - 1) / unit;
        const std::size_t grain_units = grain / unit;
        try {
            p.arena.execute([&task, units, grain_units] {
                tbb::parallel_for(tbb::blocked_range<std::size_t>(0, units, grain_units), task);
            });
        } catch (...) {
            acquire_tasks();
            throw;
        }
#ifdef EBT_TASK_PROBE
        probe::store().phases.push_back(probe::PhaseNote{probe_start, probe::now_ns(), grain, n, awake});
#endif
        acquire_tasks();
    }
    parallel_phase_ = false;
    for (const detail::ParallelBuffer& buffer : p.buffers) {
        m.agents_stepped += buffer.metrics.agents_stepped;
        m.behaviors_updated += buffer.metrics.behaviors_updated;
        m.guards_evaluated += buffer.metrics.guards_evaluated;
        m.events_handled += buffer.metrics.events_handled;
        m.timers_fired += buffer.metrics.timers_fired;
    }
}

void World::gather_parallel_tasks() {
    ParallelState& p = *parallel_;
    p.tasks.clear();
    std::size_t agents = 0, writes = 0, value_bytes = 0, emptied = 0;
    for (const detail::ParallelBuffer& buffer : p.buffers) {
        p.tasks.insert(p.tasks.end(), buffer.tasks.begin(), buffer.tasks.end());
        agents += buffer.agents.size();
        emptied += buffer.emptied_words.size();
        writes += buffer.writes.size();
        value_bytes += buffer.bytes.size();
    }
    // Work stealing gives each thread another share of the slots every frame: every thread gets room
    // for the whole frame's records, so that once a frame's workload was seen no later frame of that
    // size allocates, however the slots are shared out.
    for (detail::ParallelBuffer& buffer : p.buffers) {
        buffer.agents.reserve(agents);
        buffer.emptied_words.reserve(emptied);
        buffer.writes.reserve(writes);
        buffer.tasks.reserve(p.tasks.size());
        buffer.bytes.reserve(value_bytes);
    }
    // A task is a range of slots (or of places in the step list) ticked by one thread in order: sorted
    // by their first slot, the tasks' records give the agents and their writes in slot order, then
    // call order, as with one thread. A few hundred tasks a frame, where sorting what they left would
    // be thousands.
    std::sort(p.tasks.begin(), p.tasks.end(), [](const detail::TaskRecord& a, const detail::TaskRecord& b) { return a.order < b.order; });
}

void World::apply_sleeps_and_wakes() {
    ParallelState& p = *parallel_;
    for (const detail::ParallelBuffer& buffer : p.buffers) {
        timers_live_ = static_cast<std::size_t>(static_cast<std::int64_t>(timers_live_) + buffer.timers_live_change);
        // The sleepers the tasks put out themselves (put_to_sleep_in_task): the count, and the summary
        // bits of the words they emptied (a word the loop below wakes again gets its bit back there).
        awake_count_ -= buffer.awake_cleared;
        for (const std::uint32_t word : buffer.emptied_words)
            if (awake_[word] == 0) awake_words_[word / 64] &= ~(std::uint64_t{1} << (word % 64));
    }
    // In slot order, as one thread would (a heap's layout depends on the order of its pushes). Only
    // the agents that go to sleep were noted: the ones that stay awake (most of a busy frame) cost
    // the apply nothing.
    for (const detail::TaskRecord& task : p.tasks) {
        for (std::uint32_t i = task.agents_first; i < task.agents_end; ++i) {
            const detail::AgentForApply& a = task.buffer->agents[i];
            switch (a.after_tick) {
            case ParallelState::kApplyDecides: schedule_after_step(a.slot); break;
            case ParallelState::kWoken: set_awake(a.slot); break;
            case ParallelState::kSleepsWithTimer:
                push_timer(TimerEntry{a.due, a.slot, a.stamp});
                clear_awake(a.slot);
                break;
            default: clear_awake(a.slot); break;  // kSleeps
            }
        }
    }
    // Other agents woken by a tick (a world breaking the rule): after the sleeps, so that an agent
    // given work after its own tick stays awake, as it would with one thread.
    for (const detail::ParallelBuffer& buffer : p.buffers)
        for (const std::uint32_t woken : buffer.wakes) on_agent_wake(woken);
}

void World::apply_deferred_writes() {
    ParallelState& p = *parallel_;
    // A write equal to the pending value the phase found changes nothing as long as nothing was written
    // to its blackboard since: it is left out without touching the blackboard. (Its key is not marked
    // written, so the blackboard may not publish: a publish of it would change nothing either.)
    if (p.shared_written_in_apply.size() < shared_.size()) p.shared_written_in_apply.resize(shared_.size(), 0);
    struct ClearMarks {  // (also if a value's copy throws)
        ParallelState& p;
        ~ClearMarks() {
            for (const std::uint32_t index : p.shared_written_list) p.shared_written_in_apply[index] = 0;
            p.shared_written_list.clear();
        }
    } clear_marks{p};
    for (const detail::TaskRecord& task : p.tasks) {
        for (std::uint32_t i = task.writes_first; i < task.writes_end; ++i) {
            const detail::DeferredSharedWrite& w = task.buffer->writes[i];
            if (w.owner_index != detail::DeferredSharedWrite::kNotOwned) {
                std::uint8_t& written = p.shared_written_in_apply[w.owner_index];
                if (w.same_as_pending && !written) continue;
                if (!written) {
                    written = 1;
                    p.shared_written_list.push_back(w.owner_index);
                }
            }
            const void* value = w.boxed ? task.buffer->boxed[w.index].data() : static_cast<const void*>(task.buffer->bytes.data() + w.index);
            w.blackboard->set_raw(w.key, value);
        }
    }
}

}  // namespace ebt
