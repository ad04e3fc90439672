// Tree definitions: immutable, shareable, stored flat in pre-order.
//
// A Tree is built once (TreeBuilder) and then shared, read-only, by any number of agents, on any
// number of threads. Nodes are identified by their pre-order index (the root is 0); each node's
// children form a contiguous index range. The definition also computes the layout of the per-agent
// state block, so creating an agent is one allocation whatever the tree's size.
// Copying a Tree is cheap (it shares the definition).
#pragma once

#include <ebt/blackboard.hpp>
#include <ebt/status.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ebt {

namespace detail {
struct TreeData;
}

enum class NodeKind : std::uint8_t {
    // leaves
    Action,
    Condition,
    AlwaysSuccess,
    AlwaysFailure,
    Wait,
    // decorators
    Inverter,
    ForceSuccess,
    ForceFailure,
    Repeat,
    Retry,
    Loop,
    Cooldown,
    Timeout,
    Delay,
    // composites
    Sequence,
    Filter,
    ReactiveSequence,
    Selector,
    ActiveSelector,
    PrioritySelector,
    NonPrioritySelector,
    RandomSelector,
    WeightedSelector,
    Parallel,
    Monitor,
};

const char* to_string(NodeKind kind) noexcept;

/// When a guard aborts running work (Unreal's "observer aborts").
enum class AbortMode : std::uint8_t {
    None = 0,
    Self = 1,           // the guarded branch, while running, is aborted when the guard turns false
    LowerPriority = 2,  // a running lower-priority sibling is aborted when the guard turns true
    Both = 3,
};
const char* to_string(AbortMode mode) noexcept;

/// Parallel policies: the named thresholds of the seeds.
enum class Policy : std::uint8_t { RequireOne, RequireAll };

/// Repeat/Loop count meaning "forever".
inline constexpr int kForever = -1;

class Tree {
public:
    Tree() = default;

    const std::string& name() const;
    std::size_t size() const;  // number of nodes
    NodeKind kind(NodeIndex node) const;
    NodeIndex parent(NodeIndex node) const;  // kNoNode for the root
    std::size_t child_count(NodeIndex node) const;
    NodeIndex child(NodeIndex node, std::size_t i) const;
    /// The node's label: the action/condition name, a user label, or the kind's name.
    std::string label(NodeIndex node) const;
    /// The node's path from the root, e.g. "/ActiveSelector/Sequence[0]/Action 'Patrol'[1]".
    std::string path(NodeIndex node) const;
    /// True when the node has a guard (precondition, leading conditions, monitor conditions, cooldown).
    bool has_guard(NodeIndex node) const;
    AbortMode abort_mode(NodeIndex node) const;

    const BlackboardSchema& schema() const;
    /// The key `name` of type T, for the blackboards of this tree's agents (UsageError on others).
    template <class T> Key<T> key(std::string_view name) const {
        return Key<T>{schema().require(name, type_of<T>()), schema().tag()};
    }

    /// Bytes of per-agent engine state (node statuses and memory, scheduler queue), excluding
    /// blackboard values and the Agent object itself.
    std::size_t state_bytes() const;

    /// A multi-line, indented listing of the tree with pre-order indices (for docs and debugging).
    std::string describe() const;

    const detail::TreeData& data() const { return *data_; }
    explicit operator bool() const noexcept { return data_ != nullptr; }

private:
    friend class TreeBuilder;
    explicit Tree(std::shared_ptr<const detail::TreeData> data) : data_(std::move(data)) {}
    std::shared_ptr<const detail::TreeData> data_;
};

}  // namespace ebt
