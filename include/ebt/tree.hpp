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
struct EngineAccess;
struct BuilderState;
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

/// One node of one tree: what Tree::find returns. Small and copyable; it names the node by its
/// pre-order index and remembers which tree it came from, so that Agent::status(NodeRef) on an agent
/// of another tree throws UsageError instead of reading some other node. A default NodeRef refers to
/// no node.
class NodeRef {
public:
    NodeRef() = default;
    NodeIndex index() const noexcept { return index_; }
    /// The tag of the tree it was found in (BlackboardSchema::tag() of that tree).
    std::uint32_t tree_tag() const noexcept { return tree_tag_; }
    explicit operator bool() const noexcept { return index_ != kNoNode; }
    friend bool operator==(const NodeRef&, const NodeRef&) = default;

private:
    friend class Tree;
    NodeRef(NodeIndex index, std::uint32_t tree_tag) : index_(index), tree_tag_(tree_tag) {}
    NodeIndex index_ = kNoNode;
    std::uint32_t tree_tag_ = 0;
};

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
    /// Finds a node by names, so that game code and tests need not count pre-order indices:
    ///
    ///   tree.find("Attack")                  the one node named Attack, anywhere
    ///   tree.find("engage/Attack")           the node named Attack somewhere under the node named engage
    ///   tree.find("/ActiveSelector/engage")  from the root down, one level per name
    ///   tree.find("engage/Wait[2]")          the node named Wait that is its parent's child 2
    ///
    /// A node's name is its label (Tree::label): the user label set with TreeBuilder::label(), else
    /// the action or condition name, the key a check reads ("enemy_seen", "!enemy_seen"), the name
    /// of an inlined subtree's tree, else the node kind ("Sequence"). The form Tree::path prints
    /// ("Action 'Attack'") names it too, so find(path(i)) is node i. Without a leading '/', each name
    /// after the first is looked for anywhere below the node matched by the one before; with it, the
    /// first name is the root and each next one a child. A trailing "[i]" requires the node to be its
    /// parent's child i. Names cannot contain '/'.
    ///
    /// Throws UsageError when no node matches (naming the nodes whose names are closest, or the
    /// children where the match stopped) or when more than one does (naming each one's path).
    NodeRef find(std::string_view path) const;
    /// The reference to node `index` (UsageError when the tree has no such node).
    NodeRef node(NodeIndex index) const;
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

    /// A multi-line, indented listing of the tree with pre-order indices (for docs and debugging):
    /// each node's kind and label, "[guard, abort M]" on a guarded node (the mode it ended up with) and
    /// "[children abort M]" on a selector whose guarded children get M when given no abort mode.
    std::string describe() const;

    explicit operator bool() const noexcept { return data_ != nullptr; }

private:
    friend class TreeBuilder;
    friend struct detail::BuilderState;  // compiles a builder's source into a Tree
    friend struct detail::EngineAccess;  // the compiled definition, for the engine and its tools
    const detail::TreeData& data() const { return *data_; }
    explicit Tree(std::shared_ptr<const detail::TreeData> data) : data_(std::move(data)) {}
    std::shared_ptr<const detail::TreeData> data_;
};

}  // namespace ebt
