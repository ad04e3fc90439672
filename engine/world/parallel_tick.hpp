// What a thread of a World's parallel phase is doing, for the engine code that must act differently
// then (World::set_threads > 1; docs/world.md, "Threads").
//
// Engine-internal, without oneTBB: SharedBlackboard::set_raw asks parallel_tick() whether its caller
// is an agent's tick in a parallel phase and, if so, leaves the write to defer_shared_write, which
// buffers it for the World to apply after the phase in slot order. The World sets the thread's tick
// around each agent it ticks in that phase (engine/world/parallel_phase.cpp) and clears it after.
#pragma once

#include <ebt/blackboard.hpp>

#include <cstdint>

namespace ebt {
class World;
class SharedBlackboard;
}  // namespace ebt

namespace ebt::detail {

struct ParallelBuffer;  // one thread's buffers (engine/world/parallel_state.hpp)

/// The agent the current thread is ticking in a parallel phase: its world, its slot and the thread's
/// buffers (where the writes of the block being ticked go, in the order they are made).
struct ParallelTick {
    const World* world = nullptr;
    std::uint32_t slot = 0;
    ParallelBuffer* buffer = nullptr;
    /// While the thread routes a published shared key into agent `slot`'s mirror (not a tick):
    /// set when that agent asks to be woken (World::on_agent_wake), so that its task ticks it.
    bool* routed_wake = nullptr;
};

/// The current thread's tick in a parallel phase, or nullptr (any other time, any other thread).
ParallelTick* parallel_tick() noexcept;

/// Buffers a write of `value` (of key `key`'s type) to `blackboard`'s pending values, made by the
/// current thread's tick; World applies it after the phase. Only while parallel_tick() is set.
void defer_shared_write(SharedBlackboard& blackboard, KeyId key, const void* value);

}  // namespace ebt::detail
