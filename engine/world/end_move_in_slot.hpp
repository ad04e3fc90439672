// World::end_move_in_slot: the lean end of a latent move for a slot whose move hint is EndsMove,
// shared by the World's serial loop (World::step_hinted_slot, engine/world/world.cpp) and a parallel
// task's tick (World::ParallelState::tick_move_in_task, engine/world/parallel_phase.cpp). Inline, in
// the body of both loops; each settles the agent's sleep its own way afterwards.
#pragma once

#include <ebt/world.hpp>

#include "runtime/move_ticks.hpp"
#include "world/world_slot.hpp"

namespace ebt {

inline World::MoveEnd World::end_move_in_slot(std::uint32_t index, Slot& s, FrameMetrics& m) {
    using Tick = detail::Runtime::MoveEndTick;
    // tick_agent's time keeping: the tick's dt, and the slot's time of its last tick set before the
    // tick (put back when the entry declines).
    const TimePoint last_time = s.last_time;
    s.last_time = now_;
    const Tick tick = detail::Runtime::world_end_move_tick(*s.agent, frame_, Duration(now_ - last_time), m);
    // No user code ran: the agent is still live. With the root's restart queued it stays awake (it has
    // work pending), and that restart is its next tick.
    schedule(index).move_hint = tick == Tick::RestartQueued ? MoveHint::RestartsRoot : MoveHint::None;
    if (tick == Tick::Declined) {
        s.last_time = last_time;
        return MoveEnd::Declined;
    }
    ++m.agents_stepped;
    return tick == Tick::RestartQueued ? MoveEnd::RestartQueued : MoveEnd::RunEnded;
}

}  // namespace ebt
