// The benchmark scenarios (issue 4): trees and stand-in game systems shared by bench/sweep_bench.cpp
// and tests/scenarios_test.cpp, so that what is measured is also what is tested.
//
//   guard tree (a)    scenarios::guard_tree with Patrol returning Running every frame (the engine's
//                     cost per frame, not an action's)
//   guard tree (b)    the same tree with Patrol a latent move: it suspends itself on entry and a
//                     MovementSystem resumes it (Success) 30-50 frames later, as game actions that
//                     wait on other systems do; the root then succeeds and the agent starts afresh
//   wide tree (K)     ActiveSelector( K x Sequence(threat_i, Attack) , guard tree ): the guard tree
//                     under K extra guarded higher-priority branches (1 + 3K + 11 nodes); threat_i
//                     stay false, so the K guards are live and never fire while the guard tree runs
//   deep tree (D)     D nested Sequences, each guarded by its own key ok_i (precondition, abort
//                     Self), around the guard tree (D + 11 nodes); ok_i stay true
//   waiting tree      Selector( Sequence(is_sleeper, Wait 1000 h) , Nap ): an agent either waits on a
//                     timer or sits in a suspended action (Nap) that nothing resumes
//
// Writes ("change rate"): ChurnWriter toggles an agent between patrolling and attacking with two
// writes that every tree above (except the waiting tree) reacts to in the same way; see its comment.
#pragma once

#include "guard_scenario.hpp"

#include <ebt/ebt.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace ebt::scenarios {

/// A stand-in movement system for latent moves of the agents of a World: a move requested in frame f
/// finishes (the system resumes the action with Success, through World::resume_all) in frame f + 30..50,
/// the length drawn from the agent's seed (SpawnOptions::seed) and the number of moves requested so
/// far, so that the moves of a population spread over the frames, identically in both modes. It keeps
/// only ResumeHandles (which name the agent and the action's run), never an Agent*: a move whose agent
/// was despawned or whose Patrol was aborted meanwhile is stale, and its resume does nothing. Owned by
/// the game code that steps the world; call step() once per frame, before World::step.
class MovementSystem {
public:
    static constexpr std::uint32_t kShortestMove = 30;
    static constexpr std::uint32_t kLongestMove = 50;

    /// Registers a pending move of a suspended action (of an agent with seed `seed`); called from the
    /// latent action's start.
    void request(const ResumeHandle& handle, std::uint64_t seed);
    /// Advances one frame and resumes the moves that end in it through `world`. Returns how many were
    /// resumed (the others were stale).
    std::size_t step(World& world);
    std::uint64_t frame() const noexcept { return frame_; }
    std::size_t pending() const noexcept { return pending_; }

private:
    static constexpr std::size_t kBuckets = 64;  // > kLongestMove: one bucket per frame of the window
    std::vector<ResumeHandle> due_[kBuckets];
    std::uint64_t frame_ = 0;
    std::uint64_t requests_ = 0;
    std::size_t pending_ = 0;
};

/// Registers the guard actions with Patrol as a latent move handled by `movement` (which must
/// outlive the registry's trees' agents). Attack and Runaway are those of register_guard_actions.
void register_latent_guard_actions(Registry& registry, MovementSystem& movement);

/// The wide tree: `k` guarded higher-priority branches above the guard tree. Keys threat_0..k-1.
Tree wide_guard_tree(const Registry& registry, int k);
/// The deep tree: the guard tree inside `d` nested guarded Sequences. Keys ok_0..d-1 (true).
Tree deep_guard_tree(const Registry& registry, int d);

/// Registers Nap (suspends itself, never resumed here).
void register_waiting_actions(Registry& registry);
/// The waiting tree; key is_sleeper (bool) picks the Wait branch (true) or the suspended Nap.
Tree waiting_tree(const Registry& registry);
inline constexpr const char* kIsSleeper = "is_sleeper";
/// Long enough that no Wait falls due during a benchmark run (1000 h = 72 million 50 ms frames).
inline constexpr Duration kLongWait = std::chrono::hours(1000);

/// The blackboard writes of a benchmark's change rate. Each frame it changes the blackboards of
/// `share` x agents agents (fractions carry over to later frames, so 0.1 % of 100 agents is one agent
/// every 10 frames), taking the agents in turn, and toggles each between patrolling and attacking:
///   patrolling -> enemy_dead=false, enemy_seen=true   (the enemy_seen guard fires: Attack)
///   attacking  -> enemy_seen=false, enemy_dead=true   (the Monitor's guard fails: back to Patrol)
/// (Toggling enemy_seen alone would not do: once an agent attacks, enemy_seen=false changes nothing;
/// guards act on edges, docs/semantics.md.)
/// Every toggle changes two values, but not every toggle switches the behaviour: an agent written in
/// two frames running (shares above 50 %) is back on Patrol with enemy_seen=true before its
/// enemy_seen guard, live again since Patrol restarted, was evaluated false, so there is no edge and
/// it keeps patrolling until its next toggle (at 100 %: attack, patrol, patrol, patrol, attack...,
/// the same in both modes).
class ChurnWriter {
public:
    /// `share` in [0, 1]: the fraction of `agents` whose blackboard changes each frame.
    ChurnWriter(const Tree& tree, std::size_t agents, double share);
    /// One frame's writes; `agent_at(i)` returns agent i (an Agent&). Returns the number of writes.
    template <class AgentAt> std::size_t write_frame(AgentAt&& agent_at) {
        credit_ += share_ * static_cast<double>(agents_);
        // The small bias keeps sums like 10 x 0.1 (0.9999999999999999) from losing a write.
        const auto count = static_cast<std::size_t>(credit_ + 1e-9);
        credit_ -= static_cast<double>(count);
        for (std::size_t j = 0; j < count; ++j) {
            toggle(agent_at(next_).blackboard());
            next_ = next_ + 1 == agents_ ? 0 : next_ + 1;
        }
        return count * 2;
    }

private:
    void toggle(Blackboard& bb) const;

    Key<bool> enemy_seen_, enemy_dead_;
    std::size_t agents_;
    double share_;
    double credit_ = 0;     // agents owed a write (the fraction left over from earlier frames)
    std::size_t next_ = 0;  // the next agent to write
};

}  // namespace ebt::scenarios
