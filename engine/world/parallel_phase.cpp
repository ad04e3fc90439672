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
    // Read here, on the ticking thread, so that the apply need not touch the blackboard for a write
    // that changes nothing (the common case: an agent keeping up a value, like the arena's attackers
    // their squad's alarm). No one writes a pending value during the phase.
    const bool same_as_pending = detail::values_equal(type, blackboard.pending_value(key), value);
    if (buffer.writes.size() > buffer.block_first_write) {
        // The block's last write was to the same key (an agent writing it twice, or the next agent
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
      arena(static_cast<int>(threads)), buffers(threads), grain(kGrain), inline_below(kInlineBelow) {}

void World::ParallelState::tick_block(World& world, std::size_t begin, std::size_t end) {
    static_cast<void>(phase.load(std::memory_order_acquire));  // (for TSan: see `phase`)
    const int thread = tbb::this_task_arena::current_thread_index();
    detail::ParallelBuffer& buffer = buffers[thread < 0 ? 0 : static_cast<std::size_t>(thread)];
    buffer.block_first_write = buffer.writes.size();
    // The block's writes are kept as one run even when a tick throws out of it.
    struct RunScope {
        detail::ParallelBuffer& buffer;
        std::size_t begin;
        ~RunScope() {
            if (buffer.writes.size() > buffer.block_first_write)
                buffer.runs.push_back(detail::WriteRun{static_cast<std::uint32_t>(begin), &buffer,
                                                       static_cast<std::uint32_t>(buffer.block_first_write),
                                                       static_cast<std::uint32_t>(buffer.writes.size())});
            buffer.block_first_write = buffer.writes.size();
        }
    };
    {
        RunScope run{buffer, begin};  // (kept before the release below, which publishes it)
        for (std::size_t pos = begin; pos < end; ++pos) {
            detail::ParallelTick tick{&world, step_list[pos], &buffer};
            TickScope scope(tick);
            world.tick_slot(tick.slot, buffer.metrics);
            after_tick[pos] = settle_after_tick(world, pos, buffer);
        }
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
        for (detail::ParallelBuffer& buffer : parallel_->buffers) buffer.publish_queue = &shared_written_;
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
    p.runs.clear();
    std::size_t writes = 0, value_bytes = 0;
    for (const detail::ParallelBuffer& buffer : p.buffers) {
        p.runs.insert(p.runs.end(), buffer.runs.begin(), buffer.runs.end());
        writes += buffer.writes.size();
        value_bytes += buffer.bytes.size();
    }
    if (p.runs.empty()) return;
    // Work stealing gives each thread another share of the agents every frame: every thread gets room
    // for the whole frame's writes, so that once a frame's workload was seen no later frame of that
    // size allocates, however the agents are shared out.
    for (detail::ParallelBuffer& buffer : p.buffers) {
        buffer.writes.reserve(writes);
        buffer.runs.reserve(p.runs.size());
        buffer.bytes.reserve(value_bytes);
    }
    // Blocks are runs of places, each ticked by one thread in order: sorted by their first place, the
    // runs give the writes in slot order, then call order, as with one thread (the last write of a
    // frame wins). A few hundred runs a frame, where sorting the writes themselves was thousands.
    std::sort(p.runs.begin(), p.runs.end(), [](const detail::WriteRun& a, const detail::WriteRun& b) { return a.position < b.position; });
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
    for (const detail::WriteRun& run : p.runs) {
        for (std::uint32_t i = run.first; i < run.end; ++i) {
            const detail::DeferredSharedWrite& w = run.buffer->writes[i];
            if (w.owner_index != detail::DeferredSharedWrite::kNotOwned) {
                std::uint8_t& written = p.shared_written_in_apply[w.owner_index];
                if (w.same_as_pending && !written) continue;
                if (!written) {
                    written = 1;
                    p.shared_written_list.push_back(w.owner_index);
                }
            }
            const void* value = w.boxed ? run.buffer->boxed[w.index].data() : static_cast<const void*>(run.buffer->bytes.data() + w.index);
            w.blackboard->set_raw(w.key, value);
        }
    }
}

}  // namespace ebt
