// FsmBrain: the monster as the article's first version writes it, an enum state and a switch over
// it. Each frame every monster takes at most one transition; leaving a state runs its exit action and
// entering one its entry action (the same actions the tree runs as onTerminate and onInitialize).
#include "monster_scenario.hpp"

namespace ebt::scenarios {

namespace {

using T = MonsterTuning;

bool hurt(const MonsterInputs& in) { return in.health < T::kHurt; }
bool sees_player(const MonsterInputs& in) { return in.player_dist < T::kSee; }
bool in_reach(const MonsterInputs& in) { return in.player_dist <= T::kAttackReach; }
bool strayed(const MonsterInputs& in) { return in.home_dist > T::kStrayed; }

/// Where a monster that is not fleeing goes when it has no reason to stay where it is: at the player
/// if it sees it, home if it has strayed, else on patrol.
MonsterState calm_choice(const MonsterInputs& in) {
    if (sees_player(in)) return in_reach(in) ? MonsterState::Attack : MonsterState::Follow;
    if (strayed(in)) return MonsterState::Return;
    return MonsterState::Patrol;
}

void enter(MonsterState state, MonsterOutputs& out) {
    ++out.entries[static_cast<int>(state)];
    if (state == MonsterState::Attack) out.claws_out = true;
    if (state == MonsterState::Patrol) out.restart_patrol = true;
}

void exit(MonsterState state, MonsterOutputs& out) {
    if (state == MonsterState::Attack) out.claws_out = false;
}

}  // namespace

MonsterState FsmBrain::next_state(MonsterState state, const MonsterInputs& in) {
    switch (state) {
        case MonsterState::Patrol:
            if (hurt(in)) return MonsterState::Flee;
            return calm_choice(in);  // sees the player, strayed, or stays on patrol
        case MonsterState::Follow:
            if (hurt(in)) return MonsterState::Flee;
            if (in.player_dist >= T::kLoseSight) return strayed(in) ? MonsterState::Return : MonsterState::Patrol;
            if (in_reach(in)) return MonsterState::Attack;
            return MonsterState::Follow;
        case MonsterState::Attack:
            if (hurt(in)) return MonsterState::Flee;
            if (in.player_dist >= T::kLoseSight) return strayed(in) ? MonsterState::Return : MonsterState::Patrol;
            if (in.player_dist > T::kAttackBreak) return MonsterState::Follow;
            return MonsterState::Attack;
        case MonsterState::Flee:
            if (in.health >= T::kRecovered) return calm_choice(in);
            return MonsterState::Flee;
        case MonsterState::Return:
            if (hurt(in)) return MonsterState::Flee;
            if (sees_player(in)) return in_reach(in) ? MonsterState::Attack : MonsterState::Follow;
            if (in.home_dist <= T::kHome) return MonsterState::Patrol;
            return MonsterState::Return;
    }
    return state;
}

void FsmBrain::think(Duration, std::span<const MonsterInputs> inputs, std::span<MonsterOutputs> outputs) {
    started_.resize(inputs.size(), 0);
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        MonsterOutputs& out = outputs[i];
        if (!started_[i]) {
            // The first frame: as if coming from Patrol, whose transitions list every way in.
            started_[i] = 1;
            out.state = next_state(MonsterState::Patrol, inputs[i]);
            enter(out.state, out);
            continue;
        }
        const MonsterState next = next_state(out.state, inputs[i]);
        if (next == out.state) continue;
        exit(out.state, out);
        out.state = next;
        enter(next, out);
    }
}

}  // namespace ebt::scenarios
