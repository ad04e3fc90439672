// What Tree::describe() prints for the seeds' guard tree (scenarios/guard_scenario.hpp), for the
// tests that pin its structure: the guard tree itself and the trees built around its fight branch.
#pragma once

#include <string>

namespace ebt::test {

/// The root and the fight branch (nodes 0..9), as describe() prints them.
inline const std::string kGuardRootAndFightDescribed =
    "0 ActiveSelector [children abort LowerPriority]\n"
    "  1 Sequence [guard, abort LowerPriority]\n"
    "    2 Condition enemy_seen\n"
    "    3 ActiveSelector [children abort LowerPriority]\n"
    "      4 Sequence [guard, abort LowerPriority]\n"
    "        5 Condition health_low\n"
    "        6 Action Runaway\n"
    "      7 Monitor [guard, abort Both]\n"
    "        8 Condition !enemy_dead\n"
    "        9 Action Attack\n";

/// The whole guard tree (11 nodes), as describe() prints it.
inline const std::string kGuardTreeDescribed = kGuardRootAndFightDescribed + "  10 Action Patrol\n";

}  // namespace ebt::test
