// TreeBrain: the monster as an ebt tree, one agent per monster on a World. The tree is written with
// the FSM-to-tree patterns of docs/fsm_patterns.md: each state a guarded branch of an ActiveSelector
// in priority order, each way into a state its branch's guard (LowerPriority), each reason to stay
// the Self guard of its action (the second threshold of a hysteresis), the entry and exit actions
// the actions' onInitialize and onTerminate.
#include "monster_scenario.hpp"

#include <stdexcept>

namespace ebt::scenarios {

namespace {

using T = MonsterTuning;

using MonsterSeat = TreeBrain::Seat;

/// An action that reports `state` on every update; `on_enter` and `on_exit` are the state's entry
/// and exit actions beyond counting the entry.
ActionSpec state_action(MonsterState state, void (*on_enter)(MonsterOutputs&), void (*on_exit)(MonsterOutputs&)) {
    ActionSpec spec;
    spec.on_initialize = [state, on_enter](ActionContext& ctx) {
        if (MonsterOutputs* out = ctx.user<MonsterSeat>().out) {
            ++out->entries[static_cast<int>(state)];
            if (on_enter) on_enter(*out);
        }
    };
    spec.update = [state](ActionContext& ctx) {
        if (MonsterOutputs* out = ctx.user<MonsterSeat>().out) out->state = state;
        return Status::Running;  // a state never ends by itself: its guards end it
    };
    if (on_exit) {
        spec.on_terminate = [on_exit](ActionContext& ctx, Status) {
            if (MonsterOutputs* out = ctx.user<MonsterSeat>().out) on_exit(*out);
        };
    }
    return spec;
}

}  // namespace

void register_monster_actions(Registry& registry) {
    registry.add_action("Patrol", state_action(MonsterState::Patrol, [](MonsterOutputs& out) { out.restart_patrol = true; }, nullptr));
    registry.add_action("Follow", state_action(MonsterState::Follow, nullptr, nullptr));
    registry.add_action("Attack", state_action(MonsterState::Attack, [](MonsterOutputs& out) { out.claws_out = true; },
                                               [](MonsterOutputs& out) { out.claws_out = false; }));
    registry.add_action("Flee", state_action(MonsterState::Flee, nullptr, nullptr));
    registry.add_action("Return", state_action(MonsterState::Return, nullptr, nullptr));
}

Tree monster_tree(const Registry& registry) {
    return TreeBuilder("monster", registry)
        .key<float>(kMonsterHealth, 100.0f)
        .key<float>(kMonsterPlayerDist)
        .key<float>(kMonsterHomeDist)
        .active_selector()
            // Flee from any state when hurt (a global transition: the first branch); stay until recovered.
            .sequence({.label = "flee"})
                .condition(lt(kMonsterHealth, T::kHurt))
                .action("Flee").precondition(lt(kMonsterHealth, T::kRecovered)).abort(AbortMode::Self)
            .back()
            // Follow and Attack: a super-state entered on sight and left when the player is lost.
            .sequence({.label = "engage"})
                .condition(lt(kMonsterPlayerDist, T::kSee))
                .active_selector({.label = "fight", .precondition = lt(kMonsterPlayerDist, T::kLoseSight), .abort = AbortMode::Self})
                    .sequence({.label = "attack"})
                        .condition(le(kMonsterPlayerDist, T::kAttackReach))
                        .action("Attack").precondition(le(kMonsterPlayerDist, T::kAttackBreak)).abort(AbortMode::Self)
                    .back()
                    .action("Follow")
                .back()
            .back()
            // Home when strayed; stay until there.
            .sequence({.label = "return"})
                .condition(gt(kMonsterHomeDist, T::kStrayed))
                .action("Return").precondition(gt(kMonsterHomeDist, T::kHome)).abort(AbortMode::Self)
            .back()
            .action("Patrol")
        .back()
        .end();
}

TreeBrain::TreeBrain(Tree tree, Mode mode) : tree_(std::move(tree)), mode_(mode), world_(std::make_unique<World>()) {
    health_ = tree_.key<float>(kMonsterHealth);
    player_dist_ = tree_.key<float>(kMonsterPlayerDist);
    home_dist_ = tree_.key<float>(kMonsterHomeDist);
}

TreeBrain::~TreeBrain() = default;

void TreeBrain::think(Duration dt, std::span<const MonsterInputs> inputs, std::span<MonsterOutputs> outputs) {
    if (agents_.empty()) {
        seats_.resize(inputs.size());
        agents_.reserve(inputs.size());
        for (std::size_t i = 0; i < inputs.size(); ++i) {
            SpawnOptions options;
            options.mode = mode_;
            options.seed = i;
            options.user = &seats_[i];
            agents_.push_back(world_->spawn(tree_, std::move(options)));
        }
    }
    if (inputs.size() != agents_.size() || outputs.size() != agents_.size())
        throw std::invalid_argument("TreeBrain::think: the number of monsters changed");
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        Blackboard& bb = world_->at(agents_[i]).blackboard();
        bb.set(health_, inputs[i].health);
        bb.set(player_dist_, inputs[i].player_dist);
        bb.set(home_dist_, inputs[i].home_dist);
        seats_[i].out = &outputs[i];
    }
    world_->step(dt);
    for (Seat& seat : seats_) seat.out = nullptr;
}

}  // namespace ebt::scenarios
