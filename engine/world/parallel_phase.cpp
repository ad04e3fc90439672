// Parallel stepping of a World (World::set_threads > 1): the frame's agents are chosen in slot order
// on the calling thread, ticked on the world's oneTBB task arena, and what their ticks leave for the
// world (sleeping, timers, shared blackboard writes) is applied afterwards in slot order, so that the
// result does not depend on the thread count (docs/world.md, "Threads").
#include "world/parallel_state.hpp"
#include "world/world_slot.hpp"

#include <ebt/signals.hpp>
#include <ebt/detail/engine_access.hpp>

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>

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

/// Agents per task: enough that scheduling costs little beside ticking (an agent's tick is 20 ns to
/// a few µs), few enough that 2-8 threads share a frame of a few thousand agents evenly.
constexpr std::size_t kGrain = 256;
/// Frames that step fewer agents than this run their phase on the calling thread (same rules, same
/// buffering: only cheaper).
constexpr std::size_t kInlineBelow = 2 * kGrain;
constexpr std::uint32_t kMaxThreads = 256;

}  // namespace

detail::ParallelTick* detail::parallel_tick() noexcept { return current_tick; }

void detail::defer_shared_write(SharedBlackboard& blackboard, KeyId key, const void* value) {
    ParallelTick& tick = *current_tick;
    ParallelBuffer& buffer = *tick.buffer;
    const TypeInfo* type = blackboard.schema().info(key).type;
    DeferredSharedWrite write{tick.position, static_cast<std::uint32_t>(buffer.writes.size()), &blackboard, key, &buffer, false, 0};
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
      arena(static_cast<int>(threads)), buffers(threads), grain(kGrain), inline_below(kInlineBelow) {}

void World::ParallelState::tick_block(World& world, std::size_t begin, std::size_t end) {
    static_cast<void>(phase.load(std::memory_order_acquire));  // (for TSan: see `phase`)
    const int thread = tbb::this_task_arena::current_thread_index();
    detail::ParallelBuffer& buffer = buffers[thread < 0 ? 0 : static_cast<std::size_t>(thread)];
    for (std::size_t pos = begin; pos < end; ++pos) {
        detail::ParallelTick tick{&world, step_list[pos], static_cast<std::uint32_t>(pos), &buffer};
        TickScope scope(tick);
        world.tick_slot(tick.slot, buffer.metrics);
        after_tick[pos] = settle_after_tick(world, pos, buffer);
    }
    blocks_done.fetch_add(1, std::memory_order_acq_rel);
}

World::ParallelState::AfterTick World::ParallelState::settle_after_tick(World& world, std::size_t pos,
                                                                        detail::ParallelBuffer& buffer) {
    // Decided here, while the agent is in this thread's cache. Nothing else in the phase can take its
    // pending work away or give it a deadline (only its own tick could), so what it has now is what the
    // apply would find; and no one else touches its slot's timer record until the phase ends (arming
    // and disarming are serial, and the World's functions that do are refused during the phase).
    const std::uint32_t index = step_list[pos];
    if (world.schedule(index).state != detail::SlotState::Live) return kApplyDecides;
    const Agent& a = *world.slot(index).agent;
    SlotRecord& s = world.record(index);  // its timer fields
    if (a.has_pending_work()) return kStaysAwake;
    // schedule_after_step's decisions, the slot's own part of them done here.
    const TimePoint due = world.sleep_due(a);
    if (due == std::numeric_limits<TimePoint>::max()) {  // no deadline: its old timer entry goes stale
        if (s.timer_armed) --buffer.timers_live_change;
        s.timer_armed = false;
        return kSleeps;
    }
    if (s.timer_armed && s.timer_due == due) return kSleeps;  // its entry in the heap serves
    if (!s.timer_armed) ++buffer.timers_live_change;           // (a re-armed one stays counted once)
    s.timer_armed = true;
    s.timer_due = due;
    timer_entries[pos] = TimerEntry{due, index, ++s.timer_stamp};
    return kSleepsWithTimer;
}

void World::set_parallel_grain_for_test(std::uint32_t grain) {
    if (!parallel_ || grain == 0) throw UsageError("set_parallel_grain_for_test(): needs set_threads(n > 1) and a grain > 0");
    parallel_->grain = grain;
    parallel_->inline_below = 2 * std::size_t{grain};
}

World::World(WorldOptions options) : World() { set_threads(options.threads); }

void World::set_threads(std::uint32_t threads) {
    if (threads < 1 || threads > kMaxThreads)
        throw UsageError("World::set_threads(" + std::to_string(threads) + "): the thread count must be 1 to " +
                         std::to_string(kMaxThreads));
    if (callback_running()) throw UsageError("World::set_threads() during a frame: change it between frames");
    if (threads == threads_) return;
    if (threads == 1) {
        parallel_.reset();
    } else {
        parallel_ = std::make_unique<ParallelState>(threads);
        parallel_->arena.initialize();  // its threads start now, not in the first frame
    }
    threads_ = threads;
}

void World::refuse_parallel(const char* who) const {
    throw UsageError(std::string(who) + " while the world ticks its agents on " + std::to_string(threads_) +
                     " threads: an action may touch only its own agent then (docs/world.md, \"Threads\")");
}

void World::tick_in_parallel(FrameMetrics& m) {
    ParallelState& p = *parallel_;
    for (auto& buffer : p.buffers) buffer.clear();
    const std::size_t n = p.step_list.size();
    // A tick that throws leaves its place (and the rest of its block's) at kApplyDecides.
    p.after_tick.assign(n, ParallelState::kApplyDecides);
    if (p.timer_entries.size() < n) p.timer_entries.resize(n);
    // Debugging tools and game code subscribed to the bus are called from the ticks: with world
    // listeners, an input observer (a recorder hears lifecycle events and direct agent calls) or
    // ChangeBus slots, the phase runs on this thread, in slot order; so do small frames.
    // The rules (refusals, buffering) are the same either way.
    const bool on_this_thread = n < p.inline_below || !listeners_.empty() || input_observer_ != nullptr ||
                                detail::EngineAccess::has_slots(*bus_);
    parallel_phase_ = true;
    struct PhaseScope {
        bool& flag;
        ~PhaseScope() { flag = false; }
    } phase_scope{parallel_phase_};
    if (on_this_thread) {
        p.tick_block(*this, 0, n);
    } else {
        p.phase.fetch_add(1, std::memory_order_release);
        p.blocks_done.store(0, std::memory_order_relaxed);
        const ParallelState::TickTask task{&p, this};
        p.arena.execute([&p, &task, n] { tbb::parallel_for(tbb::blocked_range<std::size_t>(0, n, p.grain), task); });
        static_cast<void>(p.blocks_done.load(std::memory_order_acquire));
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

void World::apply_sleeps_and_wakes() {
    ParallelState& p = *parallel_;
    for (const detail::ParallelBuffer& buffer : p.buffers)
        timers_live_ = static_cast<std::size_t>(static_cast<std::int64_t>(timers_live_) + buffer.timers_live_change);
    // In slot order, as one thread would (a heap's layout depends on the order of its pushes). The
    // agents that stay awake (most of a busy frame) are skipped eight places at a time.
    const std::size_t n = p.step_list.size();
    for (std::size_t pos = 0; pos < n;) {
        std::uint64_t eight = 0;
        if (pos + 8 <= n) {
            std::memcpy(&eight, p.after_tick.data() + pos, 8);
            if (eight == 0) {
                pos += 8;
                continue;
            }
        }
        for (const std::size_t end = std::min(pos + 8, n); pos < end; ++pos) {
            const std::uint32_t index = p.step_list[pos];
            switch (p.after_tick[pos]) {
            case ParallelState::kStaysAwake: break;
            case ParallelState::kApplyDecides: schedule_after_step(index); break;
            case ParallelState::kSleepsWithTimer:
                push_timer(p.timer_entries[pos]);
                clear_awake(index);
                break;
            default: clear_awake(index); break;  // kSleeps
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
    p.merged.clear();
    std::size_t value_bytes = 0;
    for (const detail::ParallelBuffer& buffer : p.buffers) {
        p.merged.insert(p.merged.end(), buffer.writes.begin(), buffer.writes.end());
        value_bytes += buffer.bytes.size();
    }
    // Work stealing gives each thread another share of the agents every frame: every thread gets room
    // for the whole frame's writes, so that once a frame's workload was seen no later frame of that
    // size allocates, however the agents are shared out.
    for (detail::ParallelBuffer& buffer : p.buffers) {
        buffer.writes.reserve(p.merged.size());
        buffer.bytes.reserve(value_bytes);
    }
    // A tick's writes all come from one thread, numbered in call order: sorted, they are in slot
    // order, then call order, as with one thread (where the last write of a frame wins).
    std::sort(p.merged.begin(), p.merged.end(), [](const detail::DeferredSharedWrite& a, const detail::DeferredSharedWrite& b) {
        return a.position != b.position ? a.position < b.position : a.sequence < b.sequence;
    });
    for (const detail::DeferredSharedWrite& w : p.merged) {
        const void* value = w.boxed ? w.buffer->boxed[w.index].data() : static_cast<const void*>(w.buffer->bytes.data() + w.index);
        w.blackboard->set_raw(w.key, value);
    }
}

}  // namespace ebt
