// What a tool shows of a tree definition and of an agent's live state, node by node: the pieces
// behind Tree::describe() and the tree views (<ebt/debug/views.hpp>), kept here so that every tool
// that draws a tree (the text and DOT views, the browser inspector) says the same thing the same way.
//
// Everything here reads; nothing changes a tree or an agent. Private to the engine and its tools.
// The functions take the compiled definition (EngineAccess::tree_data) and may be called at any
// time, the agent ones between ticks (not from inside one of the agent's own ticks).
#pragma once

#include "tree/tree_data.hpp"

#include <ebt/agent.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ebt::debug::walk {

/// The compiled definition behind `tree`; UsageError starting with `who` for an empty Tree.
const detail::TreeData& definition(const Tree& tree, const char* who);

/// How deep node `n` is: 0 for the root.
int depth(const detail::TreeData& t, NodeIndex n);

/// The node as Tree::describe() lists it, without the indentation: its pre-order index, kind and
/// label, "[guard, abort M]" on a guarded node and "[children abort M]" on a selector whose guarded
/// children get M when given no abort mode. "1 Sequence [guard, abort LowerPriority]".
std::string heading(const detail::TreeData& t, NodeIndex n);

/// A predicate program written as an expression in the syntax of docs/xml.md, with no more
/// parentheses than it needs: "enemy_seen && !health_low", "dist < 5 || alarm". A registered
/// condition is written by name, followed by its ports when one of them is not bound to the key
/// named like it: "InRange(range=2.5, target={enemy})".
std::string predicate_text(const detail::TreeData& t, detail::PredRange range);

/// The guard of node `n` as one expression (its precondition and its leading or monitor conditions
/// and-ed, "!cooling" for a Cooldown), or "" when the node has no guard.
std::string guard_text(const detail::TreeData& t, NodeIndex n);

/// The text of a Condition node's predicate when it says more than the node's label ("" otherwise).
std::string condition_text(const detail::TreeData& t, NodeIndex n);

/// One port of an action: its name and what it is bound to, "{key}" or a literal value ("2.5").
struct PortText {
    std::string port;
    std::string binding;
};
std::vector<PortText> ports(const detail::TreeData& t, NodeIndex n);

/// The node's parameters, e.g. "2 s" (Wait, Timeout, Delay, Cooldown), "3 times" (Repeat, Loop),
/// "3 attempts" (Retry), "success needs 2, failure needs 1" (Parallel, Monitor: children), "weights 1, 3" ("" when none).
std::string parameters(const detail::TreeData& t, NodeIndex n);

/// A blackboard key as the views list it: "enemy_dist: float = 10" (the tree's initial value) or,
/// for a shared key, "squad.alarm: bool = false (shared scope 'squad')". The value is formatted by
/// value_text.
std::string key_text(const BlackboardSchema& schema, KeyId key, const std::byte* values);

/// A value of `type` as text (xml::format_value), or "<TypeName>" for a type it cannot format.
std::string value_text(const TypeInfo* type, const void* value);

/// Whether `key` is one of the tree's private constants (the keys holding literal port values,
/// named "=port#N"): the views show them at their ports, not in the blackboard.
bool is_private_constant(const BlackboardSchema& schema, KeyId key);

/// A duration in the largest unit that writes it exactly: "2 s", "250 ms", "1500 us".
std::string duration_text(std::int64_t microseconds);

/// Node `n`'s live state in an agent (between its ticks).
struct NodeState {
    Status status = Status::Invalid;       // Invalid: the node has not run since the agent began
    bool start_pending = false;            // a (re)start waits for the walk to reach it (next tick)
    bool suspended = false;                // an action that suspended itself
    std::optional<Status> resumed;         // a suspended action resumed with this, ending when the walk reaches it
    std::optional<std::int64_t> timer_left;  // Wait, Timeout, Delay: armed, this many microseconds left
    std::optional<std::int64_t> cooling_left;  // Cooldown: cooling, this many microseconds left
    std::optional<std::uint32_t> runs_done;    // Repeat, Retry, Loop while running: child runs ended so far
};
NodeState state(const Agent& agent, NodeIndex n);

/// The status as the views write it: "idle" for Invalid, else to_string(status).
const char* status_text(Status s);

/// The details of a live state after the status: "1.5 s left", "suspended", "run 2 of 3" ... joined
/// by ", " ("" when there are none).
std::string state_details(const detail::TreeData& t, NodeIndex n, const NodeState& s);

}  // namespace ebt::debug::walk
