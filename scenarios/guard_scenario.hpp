// The seeds' guard scenario: a guard patrols; on seeing an enemy it attacks, or runs away when its
// health is low; it breaks off an attack to flee as soon as health gets low, and stops attacking
// when the enemy is dead.
//
//   0 ActiveSelector
//     1 Sequence                       guard: enemy_seen (LowerPriority, as an ActiveSelector child)
//       2 Condition enemy_seen
//       3 ActiveSelector
//         4 Sequence                   guard: health_low (LowerPriority)
//           5 Condition health_low
//           6 Action Runaway           Running while health is low, Success once it is not
//         7 Monitor(RequireAll, RequireOne)   guard: !enemy_dead (Self, plus LowerPriority)
//           8 Condition !enemy_dead
//           9 Action Attack            Running (the fight is game code's business)
//     10 Action Patrol                 Running forever
#pragma once

#include <ebt/ebt.hpp>

namespace ebt::scenarios {

/// The blackboard keys of the guard tree.
inline constexpr const char* kEnemySeen = "enemy_seen";
inline constexpr const char* kHealthLow = "health_low";
inline constexpr const char* kEnemyDead = "enemy_dead";

/// Registers Patrol, Attack and Runaway (each counts its updates in a per-agent "updates" port when
/// the tree declares one; see guard_tree()).
void register_guard_actions(Registry& registry);
/// Registers Attack and Runaway only (for variants that bring their own Patrol).
void register_fight_actions(Registry& registry);

/// The seeds' guard tree (11 nodes) built from `registry` (which must hold the guard actions).
Tree guard_tree(const Registry& registry);

/// Adds the guard tree's fight branch (nodes 1..9 above: the enemy_seen sequence with Runaway and
/// the Monitor over Attack) as the next child of `builder`'s open composite. For trees that extend
/// or repeat the branch; the builder must declare the three keys and its registry the fight actions.
TreeBuilder& add_fight_branch(TreeBuilder& builder);

}  // namespace ebt::scenarios
