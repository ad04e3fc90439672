// Tree views: a tree definition, or one agent's live state, as indented text or as a Graphviz DOT
// graph, for logs, bug reports and pictures (docs/debugging.md, "Tree views").
//
//   std::puts(ebt::debug::definition_text(tree).c_str());    // the tree: guards, ports, parameters, keys
//   std::puts(ebt::debug::agent_text(agent).c_str());        // the same with every node's status, timers, values
//   std::ofstream("guard.dot") << ebt::debug::agent_dot(agent);   // then: dot -Tpng guard.dot -o guard.png
//
// Each call builds a new string and changes nothing: a view of an agent may be taken at any time
// from the thread that uses the agent, between ticks (inside one of its own ticks, from a listener
// or an action, it shows the state reached so far). The live views show the same text for an agent
// in Polling and in Event mode at the same tick (tests/debug_views_test.cpp).
#pragma once

#include <ebt/agent.hpp>
#include <ebt/tree.hpp>

#include <string>

namespace ebt::debug {

/// The definition as indented text: the blackboard's keys with their types, initial values and
/// shared scopes, then one line per node in pre-order (Tree::describe()'s line, then the node's
/// parameters, its guard as an expression, its ports with their keys or literal values).
/// UsageError for an empty (default-constructed) Tree.
std::string definition_text(const Tree& tree);

/// The agent's live state as indented text: its tick count and clock, every blackboard value, then
/// definition_text's node lines, each after the node's status ("idle" when it has not run) and
/// followed by what it waits for: timers with the time left, a suspended or resumed action, the
/// runs of a Repeat.
std::string agent_text(const Agent& agent);

/// The definition as a Graphviz DOT digraph: one box per node shaped by its kind (composites
/// rounded boxes, decorators hexagons, actions boxes, conditions ellipses, other leaves octagons),
/// guards on the edges into the guarded nodes, and a note listing the blackboard keys.
/// UsageError for an empty Tree.
std::string definition_dot(const Tree& tree);

/// The agent's live state as a DOT digraph: definition_dot's graph with every node filled in its
/// status's colour (a legend says which), the live details in its box, and the blackboard's values.
std::string agent_dot(const Agent& agent);

}  // namespace ebt::debug
