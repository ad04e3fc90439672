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

#include <atomic>
#include <cstddef>
#include <memory>
#include <vector>

namespace ebt::detail {

/// A write to a shared blackboard made during the parallel phase, kept for the apply after it.
/// Consecutive writes of one block (a run of places in the step list) to the same key are kept as
/// one, the last: applying the earlier ones first would change nothing it leaves.
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

/// The writes one block of the step list made: writes[first, end) of the buffer of the thread that
/// ticked it, in the order the block's agents made them (slot order, then call order).
struct WriteRun {
    std::uint32_t position;  // the block's first place in the step list
    const struct ParallelBuffer* buffer;
    std::uint32_t first;
    std::uint32_t end;
};

/// One thread's buffers for one frame, reused frame to frame (cleared, capacity kept). Padded to a
/// cache line so that two threads' counters never share one.
struct alignas(64) ParallelBuffer {
    FrameMetrics metrics;                      // counters of the agents this thread ticked
    std::vector<DeferredSharedWrite> writes;
    std::vector<WriteRun> runs;                // the writes of each block this thread ticked (that wrote)
    std::size_t block_first_write = 0;         // writes[block_first_write...] are the current block's
    const std::vector<std::uint32_t>* publish_queue = nullptr;  // the World's: tells its own blackboards
    std::vector<std::byte> bytes;              // values of trivially copyable types
    std::vector<Value> boxed;                  // other values (std::string, user types): allocate
    std::vector<std::uint32_t> wakes;          // other agents woken (only a world breaking the rule)
    std::int64_t timers_live_change = 0;       // armed timers gained (+) and lost (-) by this thread's agents
    void clear() {
        metrics = FrameMetrics{};
        timers_live_change = 0;
        writes.clear();
        runs.clear();
        block_first_write = 0;
        bytes.clear();
        boxed.clear();
        wakes.clear();
    }
};

}  // namespace ebt::detail

namespace ebt {

struct World::ParallelState {
    explicit ParallelState(std::uint32_t threads);
    /// A task of the parallel phase: ticks step_list[begin, end) of `world` on the calling thread,
    /// into that thread's buffer.
    void tick_block(World& world, std::size_t begin, std::size_t end);
    /// What the apply still has to do for the agent at a place of step_list after its tick (its
    /// byte in after_tick).
    enum AfterTick : std::uint8_t {
        kStaysAwake = 0,       // live with work pending: nothing
        kApplyDecides = 1,     // not settled in the phase (its tick threw, or it is not live): schedule_after_step
        kSleeps = 2,           // its timer record is settled: clear its awake bit
        kSleepsWithTimer = 3,  // also push its new timer entry, timer_entries[place], into the heap
    };
    /// Right after the tick of step_list[pos] (on the ticking thread): for an agent going to sleep,
    /// does the part of schedule_after_step that touches only its own slot (its timer record, a new
    /// stamp) and leaves the rest (its awake bit, the timer heap) to the apply.
    AfterTick settle_after_tick(World& world, std::size_t pos, detail::ParallelBuffer& buffer);
    /// The body of the phase's tbb::parallel_for: forwards each block to tick_block. (Named, not a
    /// lambda, so that .ci/tsan_tbb.supp can name it: TBB copies it between threads inside its task
    /// objects, out of ThreadSanitizer's sight.)
    struct TickTask {
        ParallelState* state;
        World* world;
        template <class Range> void operator()(const Range& range) const { state->tick_block(*world, range.begin(), range.end()); }
    };
    // oneTBB runs at most one thread per core unless told otherwise: asking for more threads than
    // cores raises that limit while this world has them (a process-wide setting: with several
    // such worlds, the smallest of their counts holds; docs/world.md, "Threads").
    std::unique_ptr<tbb::global_control> allow_threads;
    tbb::task_arena arena;
    std::vector<detail::ParallelBuffer> buffers;  // one per thread of the arena
    std::size_t grain;                            // agents per task
    std::size_t inline_below;                     // frames stepping fewer agents tick on the calling thread
    std::vector<std::uint32_t> step_list;         // this frame's agents, in slot order
    /// Per place in step_list, what the apply still does for that agent (an AfterTick): mostly
    /// kStaysAwake (skipped without touching its memory again) or kSleeps (one bit cleared); set
    /// before the phase to kApplyDecides, then by the thread that ticks the agent.
    std::vector<std::uint8_t> after_tick;
    /// Per place in step_list with kSleepsWithTimer: the agent's new timer-heap entry (other places:
    /// not written this frame). Pushed in slot order by the apply.
    std::vector<World::TimerEntry> timer_entries;
    std::vector<detail::WriteRun> runs;               // every thread's write runs, sorted by position for applying
    std::vector<std::uint8_t> shared_written_in_apply;  // per World shared blackboard: the apply wrote it (then 0 again)
    std::vector<std::uint32_t> shared_written_list;     // the ones set in shared_written_in_apply
    // ThreadSanitizer cannot see the synchronization inside a oneTBB built without it: the phase
    // publishes its inputs with a release store that each block acquires, and each block publishes
    // its buffers with a release increment that the calling thread acquires after the phase.
    std::atomic<std::uint64_t> phase{0};          // phases started
    std::atomic<std::uint64_t> blocks_done{0};
};

}  // namespace ebt
