// The monster of the seeds' FSM article (003_...), as a small 2D game: a player wanders on a
// deterministic random walk; monsters patrol around their home, follow the player when they see it,
// attack it in reach, flee when hurt and come back to patrol. Shared by the ebt_monster sample, its
// test and docs/fsm_patterns.md.
//
// The same world runs either of two brains, so that they can be compared frame by frame:
//   - FsmBrain: the state machine as the article writes it first, an enum and a switch over states;
//   - TreeBrain: an ebt tree written with the FSM-to-tree patterns of docs/fsm_patterns.md, one agent
//     per monster on an ebt::World, in polling or event mode.
// A frame: the player moves; every monster's inputs are measured (MonsterInputs); the brain turns
// them into outputs (MonsterOutputs: the state, and what its entry and exit actions did); then the
// physics moves and hurts the monsters from those outputs alone. Both brains see the same inputs, so
// two runs agree as long as the brains decide alike.
//
// The states and their transitions (the article's diagram, with the thresholds of MonsterTuning):
//
//   Patrol --sees the player (dist < 8)--> Follow (Attack if already in reach)
//   Follow --in reach (dist <= 1.5)--> Attack
//   Attack --out of reach (dist > 2)--> Follow
//   Follow, Attack --lost it (dist >= 12)--> Return (far from home: home dist > 8), else Patrol
//   Follow, Attack, Return, Patrol --hurt (health < 30)--> Flee
//   Flee --recovered (health >= 60)--> Follow or Attack (sees the player), Return (far from home),
//        else Patrol
//   Return --home (home dist <= 1)--> Patrol;  Return --sees the player--> Follow or Attack
//   Patrol --strayed (home dist > 8)--> Return
//
// Each pair of thresholds is the hysteresis that keeps a monster from flip-flopping at a boundary:
// it starts fleeing below 30 health and stops at 60, sees the player at 8 and loses it at 12, starts
// an attack at 1.5 and breaks it off beyond 2, heads home beyond 8 and stops within 1.
//
// Sources: monster_world.cpp (set-up, a frame, physics, hash), monster_fsm.cpp (FsmBrain),
// monster_tree.cpp (TreeBrain and the tree).
#pragma once

#include <ebt/ebt.hpp>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace ebt::scenarios {

enum class MonsterState : std::uint8_t { Patrol, Follow, Attack, Flee, Return };
inline constexpr int kMonsterStates = 5;
const char* to_string(MonsterState state) noexcept;

/// The thresholds both brains decide by (the game designer's numbers).
struct MonsterTuning {
    static constexpr float kSee = 8.0f;          // sees the player closer than this ...
    static constexpr float kLoseSight = 12.0f;   // ... and loses it at this distance
    static constexpr float kAttackReach = 1.5f;  // starts an attack within this ...
    static constexpr float kAttackBreak = 2.0f;  // ... and breaks it off beyond this
    static constexpr float kHurt = 30.0f;        // flees below this health ...
    static constexpr float kRecovered = 60.0f;   // ... until it has regenerated this much
    static constexpr float kStrayed = 8.0f;      // heads home beyond this distance from home ...
    static constexpr float kHome = 1.0f;         // ... until it is this close
};

/// What a brain knows of one monster this frame, measured by the world before the brain runs.
struct MonsterInputs {
    float health = 100.0f;
    float player_dist = 0.0f;
    float home_dist = 0.0f;
};

/// What a brain tells the world about one monster: the state it is in this frame and what the
/// state's entry and exit actions did. Owned by the world (one per monster); written by the brain
/// during MonsterBrain::think, read and partly consumed by the physics afterwards.
struct MonsterOutputs {
    MonsterState state = MonsterState::Patrol;
    bool claws_out = false;         // Attack's entry action draws them, its exit action sheathes them
    bool restart_patrol = false;    // Patrol's entry action: resume at the nearest waypoint (consumed)
    std::uint32_t entries[kMonsterStates] = {};  // runs of each state started (entry actions)
};

/// A brain for all the monsters of one MonsterWorld. Created by the world's owner and given to it;
/// think() is called by MonsterWorld::step once per frame, never re-entered.
class MonsterBrain {
public:
    virtual ~MonsterBrain() = default;
    /// Decides this frame's state of every monster from its inputs (inputs[i] and outputs[i] are
    /// monster i), `dt` after the previous frame.
    virtual void think(Duration dt, std::span<const MonsterInputs> inputs, std::span<MonsterOutputs> outputs) = 0;
    virtual const char* name() const noexcept = 0;
};

/// The plain state machine: one MonsterState per monster and a switch over it (monster_fsm.cpp).
class FsmBrain final : public MonsterBrain {
public:
    void think(Duration dt, std::span<const MonsterInputs> inputs, std::span<MonsterOutputs> outputs) override;
    const char* name() const noexcept override { return "fsm"; }

    /// The state after `state`, given `in`: the whole transition table, one case per state.
    static MonsterState next_state(MonsterState state, const MonsterInputs& in);

private:
    std::vector<std::uint8_t> started_;  // per monster: has it run its first frame yet
};

/// The blackboard keys the world writes for the tree (the inputs, by name).
inline constexpr const char* kMonsterHealth = "health";
inline constexpr const char* kMonsterPlayerDist = "player_dist";
inline constexpr const char* kMonsterHomeDist = "home_dist";

/// Registers the tree's actions (Patrol, Follow, Attack, Flee, Return): each reports its state in its
/// monster's MonsterOutputs (reached through the agent's user pointer, a TreeBrain::Seat); the
/// states' entry and exit actions are their onInitialize and onTerminate.
void register_monster_actions(Registry& registry);
/// The monster's tree built in code (the same nodes as samples/monster.xml):
///
///   0 ActiveSelector
///     1 Sequence 'flee'                 guard: health < 30 (LowerPriority)
///       2 Condition health < 30
///       3 Action Flee                   guard: health < 60 (Self)
///     4 Sequence 'engage'               guard: player_dist < 8 (LowerPriority)
///       5 Condition player_dist < 8
///       6 ActiveSelector 'fight'        guard: player_dist < 12 (Self)
///         7 Sequence 'attack'           guard: player_dist <= 1.5 (LowerPriority)
///           8 Condition player_dist <= 1.5
///           9 Action Attack             guard: player_dist <= 2 (Self)
///         10 Action Follow
///     11 Sequence 'return'              guard: home_dist > 8 (LowerPriority)
///       12 Condition home_dist > 8
///       13 Action Return                guard: home_dist > 1 (Self)
///     14 Action Patrol
Tree monster_tree(const Registry& registry);

/// The tree brain: one agent of `tree` per monster on its own World, in `mode`. The tree must declare
/// the three input keys as float (else UsageError from the constructor) and use the monster actions
/// of register_monster_actions.
class TreeBrain final : public MonsterBrain {
public:
    TreeBrain(Tree tree, Mode mode);
    ~TreeBrain() override;
    void think(Duration dt, std::span<const MonsterInputs> inputs, std::span<MonsterOutputs> outputs) override;
    const char* name() const noexcept override { return "tree"; }

    /// The world of the monsters' agents (monster i is the agent spawned i-th, on the first think()).
    World& world() noexcept { return *world_; }
    const Tree& tree() const noexcept { return tree_; }

    /// What an agent's actions reach through its user pointer: its monster's outputs while the brain
    /// thinks, nullptr otherwise (an agent destroyed with the brain still runs its onTerminate, when
    /// the world that owned the outputs may be gone).
    struct Seat {
        MonsterOutputs* out = nullptr;
    };

private:
    Tree tree_;
    Mode mode_;
    std::vector<Seat> seats_;        // before world_: the agents' onTerminate reads them when world_ goes
    std::unique_ptr<World> world_;
    Key<float> health_, player_dist_, home_dist_;
    std::vector<AgentHandle> agents_;
};

struct MonsterConfig {
    int monsters = 1;
    double hz = 20.0;
    std::uint64_t seed = 1;
};

/// The game world: the player, the monsters, their physics; drives one brain (not owned, must
/// outlive the world). Deterministic: the same config and a brain deciding alike give the same
/// frames and the same hash().
class MonsterWorld {
public:
    struct Vec2 {
        double x = 0, y = 0;
    };
    struct Monster {
        Vec2 pos, home;
        double health = 100.0;
        int waypoint = 0;  // next corner of its patrol square around home
    };

    MonsterWorld(MonsterConfig config, MonsterBrain& brain);

    /// One frame: the player moves, the inputs are measured, the brain thinks, the physics acts.
    void step();

    std::uint64_t frame() const noexcept { return frame_; }
    const MonsterConfig& config() const noexcept { return config_; }
    const std::vector<Monster>& monsters() const noexcept { return monsters_; }
    const std::vector<MonsterOutputs>& outputs() const noexcept { return outputs_; }
    const std::vector<MonsterInputs>& inputs() const noexcept { return inputs_; }
    MonsterState state(std::size_t monster) const { return outputs_.at(monster).state; }
    Vec2 player() const noexcept { return player_; }
    /// Damage the monsters have dealt the player since the start.
    double player_damage() const noexcept { return player_damage_; }
    /// Monsters per state now.
    std::vector<int> counts() const;
    /// A hash of the simulation: player, monsters (position, health, waypoint), outputs, RNG. The
    /// same for both brains when they decided alike on every frame.
    std::uint64_t hash() const;

    static constexpr double kWidth = 100.0, kHeight = 100.0;

private:
    void move_player(double dt);
    void measure();
    void act(double dt);

    MonsterConfig config_;
    MonsterBrain* brain_;
    Duration frame_dt_{0};
    std::uint64_t rng_ = 0;
    std::uint64_t frame_ = 0;
    Vec2 player_, player_velocity_;
    double player_damage_ = 0;
    std::vector<Monster> monsters_;
    std::vector<MonsterInputs> inputs_;
    std::vector<MonsterOutputs> outputs_;
};

}  // namespace ebt::scenarios
