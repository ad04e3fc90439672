// The World's storage records (a slot's hot and cold parts, its trace forwarder, a shared blackboard entry), defined here
// rather than in world.cpp so that engine/snapshot/world_snapshot.cpp (World's friend
// WorldSnapshotAccess) can save and restore them. Private to the engine; only world.cpp and the
// world snapshot include it.
#pragma once

#include "runtime/runtime.hpp"  // Runtime::prefetch_block_head

#include <ebt/signals.hpp>
#include <ebt/world.hpp>

#include <bit>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace ebt {

namespace detail {
/// Asks the cache for what the tick of the agent in slot `s` reads: the slot's lines (the time of its
/// last tick and the Agent) and its agent's state block's first two lines. Changes nothing. For the
/// loops that tick agents (the serial loop, the parallel tasks), one awake agent ahead in a sparse
/// frame, for a slot they found through their World::SlotCursor. The slot's agent pointer is read (a
/// load that may miss): it is the slot the loop reads next anyway. (A template so that it can take the
/// World's private Slot type from the World's own members, which name it.)
/// Always inline: a call of it that is not inlined is dropped by GCC (12, -O3) as a call without
/// effects (its only effects are prefetches, which GCC's pure/const discovery does not count), so
/// that the loops did not prefetch at all (docs/benchmarks.md, "A move through a World, seventh pass").
template <class WorldSlot>
[[gnu::always_inline]] inline void prefetch_slot(const WorldSlot& s) noexcept {
    const auto* bytes = reinterpret_cast<const char*>(&s);
    for (std::size_t at = 0; at < sizeof(WorldSlot); at += 64) __builtin_prefetch(bytes + at);
    if (s.agent) Runtime::prefetch_block_head(*s.agent);
}
}  // namespace detail


/// While the world has a listener, each agent's trace listener is its slot's forwarder: it passes an
/// event to the agent's own listener, then to the world's with the agent's handle.
struct World::Forwarder final : TraceListener {
    World* world = nullptr;
    TraceListener* own = nullptr;  // SpawnOptions::listener / set_listener(handle, ...)
    std::uint32_t index = 0;
    void on_event(const TraceEvent& event) override;
};

/// One place in the world's storage, the part a frame's step reads and writes for every agent it
/// ticks: the agent and the time of its last tick, side by side in one dense array (the hot part),
/// and the slot's handle generation. Everything else about the slot (its trace forwarder, timer,
/// whether it is retired) is its SlotRecord, in a parallel array (World::record), so that a frame
/// streams only these bytes. A slot is reused after its agent is freed; its generation then has
/// changed, which makes old handles stale. Slots never move (see World::slot). Its state and tick
/// interval are kept apart, in World::schedule(index).
/// A slot is three cache lines, aligned to them: last_time and the Agent's first 56 bytes, then the
/// Agent's next 64 (the members a quiet tick reads, see the order of Agent's members, end in the
/// second line: a quiet tick reads two lines of every slot), then the Agent's last 40 bytes (the
/// serial, the host's slot), the optional's flag and the generation, which a resume's check and
/// handle_of read with the serial, in the line a move's ticks read anyway (docs/benchmarks.md, "A
/// move through a World, sixth pass").
struct alignas(64) World::Slot {
    TimePoint last_time = 0;  // world time of the agent's last tick (or of its joining)
    std::optional<Agent> agent;
    std::uint32_t generation = 1;  // of the handles to this slot (AgentHandle::generation)
};


/// World::slot(index) for a loop that goes through the slots in ascending order (one call of
/// World::step_serial, one task of a parallel phase: ParallelState::tick_slots): the chunk of the
/// last slot found is kept, so that a slot of the same chunk costs a compare, a multiply and an add
/// instead of the chunk look-up. As the indices only grow, an index below the kept chunk's end is in
/// it. Chunks never move, and a chunk added meanwhile (an agent spawned by a tick) is another chunk: a
/// kept chunk stays right.
class World::SlotCursor {
public:
    explicit SlotCursor(const World& world) : world_(world) {}
    Slot& operator[](std::uint32_t index) {
        if (index >= end_) [[unlikely]] enter_chunk(index);
        return *reinterpret_cast<Slot*>(origin_ + std::uintptr_t{index} * sizeof(Slot));
    }

    /// A slot after the one operator[] gave last (so `index` is at or past the kept chunk's first
    /// slot), without moving the cursor: for the serial loop's prefetch of the next awake slot, which
    /// may be visited after other slots woken meanwhile. In the kept chunk, its address; past it,
    /// World::slot's.
    const Slot& later(std::uint32_t index) const {
        if (index >= end_) [[unlikely]] return world_.slot(index);
        return *reinterpret_cast<const Slot*>(origin_ + std::uintptr_t{index} * sizeof(Slot));
    }

private:
    /// Keeps the chunk of `index`, found as World::slot finds it.
    void enter_chunk(std::uint32_t index) {
        const std::uint64_t v = std::uint64_t{index} + kFirstChunk;
        const auto c = static_cast<std::uint32_t>(std::bit_width(v)) - 1 - kChunkShift;
        const std::uint32_t first = (kFirstChunk << c) - kFirstChunk;
        end_ = first + (kFirstChunk << c);  // (the last chunk's end is 2^32, 0 here: its slots enter it each time)
        origin_ = reinterpret_cast<std::uintptr_t>(world_.chunks_[c].get()) - std::uintptr_t{first} * sizeof(Slot);
    }
    const World& world_;
    std::uint32_t end_ = 0;      // the kept chunk's slots end here
    // The kept chunk's address less its first slot's index times a slot's size: slot `index` of the
    // chunk is at origin_ + index * sizeof(Slot). (An integer: the address itself may be outside any
    // allocation.)
    std::uintptr_t origin_ = 0;
};


/// The rest of a slot (the cold part): read when a handle is checked, a listener hears an event, or
/// the agent goes to sleep or wakes by a timer; not on a quiet frame. Same index as its Slot.
struct World::SlotRecord {
    Forwarder forwarder;
    TimePoint timer_due = 0;        // when timer_armed: the due time of its live timer-heap entry
    std::uint32_t timer_stamp = 0;  // the stamp of its live timer-heap entry
    bool timer_armed = false;       // has a live entry in the timer heap
    bool retired = false;           // its generations (Slot::generation) are used up: never reused
};

/// A shared blackboard the world owns, the agents whose trees read each of its keys, and the one
/// connection (of the world's router) through which its published changes reach them.
struct World::SharedEntry {
    std::unique_ptr<SharedBlackboard> blackboard;
    std::vector<std::vector<Subscriber>> subscribers;  // per shared key
    boost::signals2::scoped_connection router;
};

}  // namespace ebt
