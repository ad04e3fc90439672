// What the builder's parts share (private to engine/tree/): node kind families, predicate helpers,
// and detail::BuilderState, the builder's state.
//
//   predicate.cpp  Predicate and its operators, with the predicate limits (limits.hpp)
//   builder.cpp    TreeBuilder: keys, nodes, modifiers, back()/end(); the BuilderState helpers
//   subtree.cpp    TreeBuilder::subtree: inlining another tree with its keys remapped
//   compiler.cpp   BuilderState::compile: source nodes -> TreeData (guards, watchers, layout)
#pragma once

#include "tree/tree_data.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ebt::detail {

inline bool is_composite(NodeKind k) { return k >= NodeKind::Sequence; }
inline bool is_decorator(NodeKind k) { return k >= NodeKind::Inverter && k <= NodeKind::Delay; }
inline bool is_leaf(NodeKind k) { return k <= NodeKind::Wait; }
inline bool is_selector_family(NodeKind k) {
    return k == NodeKind::Selector || k == NodeKind::ActiveSelector || k == NodeKind::PrioritySelector ||
           k == NodeKind::NonPrioritySelector;
}
/// Composites whose leading condition children are their guard (docs/semantics.md).
inline bool has_leading_guard(NodeKind k) {
    return k == NodeKind::Sequence || k == NodeKind::Filter || k == NodeKind::ReactiveSequence;
}

/// The abort mode a guarded child of a `parent` composite gets when it was given none
/// (docs/builder.md, "Default abort modes"); None for every kind but the three reactive selectors.
inline AbortMode default_child_abort(NodeKind parent) {
    switch (parent) {
    case NodeKind::ActiveSelector: return AbortMode::LowerPriority;
    case NodeKind::PrioritySelector: return AbortMode::Both;
    case NodeKind::NonPrioritySelector: return AbortMode::Self;
    default: return AbortMode::None;
    }
}

/// `value` (of type `from`) as a `to`, when both are number types and the value converts exactly.
std::optional<std::vector<std::byte>> convert_number(const TypeInfo* from, const void* value, const TypeInfo* to);

/// A fresh predicate node of operator `op`.
std::shared_ptr<Predicate::Node> make_pred(PredOp op);

/// Sets `n.depth` and `n.operands` from its operands (see Predicate::Node).
void measure(Predicate::Node& n);

/// What makes the measured predicate `n` break the limits (limits.hpp), or "" when it fits. `what`
/// names the operation that made it ("'&&'", "its preconditions").
std::string predicate_limit_problem(const Predicate::Node& n, const std::string& what);

/// A source node as it appears in a path or a message: "Kind" or "Kind 'label or name'".
std::string describe_source(const SourceNode& n);

/// " (ports: a b)" or " (it has no ports)", the end of an unknown-port message.
std::string port_names_text(const std::vector<PortSpec>& ports);

/// "action 'Look' port 'range' (float) is required: ..." for a required port a node left unset;
/// `what` is "action 'Look'".
std::string required_port_problem(const std::string& what, const PortSpec& p);

/// The builder's state: the source nodes added so far (in the order they were added: pre-order),
/// each one's parent, the nodes still open, and the declared keys. Owned by its TreeBuilder; compiled
/// once by end().
struct BuilderState {
    std::string name;
    const Registry* registry = nullptr;
    BlackboardSchema schema;
    std::vector<detail::SourceNode> nodes;
    std::vector<std::int32_t> parents;
    std::vector<std::uint32_t> open;
    std::int32_t last_added = -1;
    bool ended = false;
    std::uint32_t subtree_uses = 0;
    std::uint32_t default_constants = 0;  // private keys declared for value defaults (their "#N")
    mutable TreeBuilder::ErrorDetail error;  // the last error thrown (see TreeBuilder::last_error)
    /// Required ports (PortSpec::required) a node has not given yet: port_value() may still give
    /// them; end() refuses the first one left.
    struct UnsetRequired {
        std::int32_t node;
        std::string port;
        std::string problem;
    };
    std::vector<UnsetRequired> unset_required;

    /// The path of source node `index` ("/" for -1), shortened when deep (node_path.hpp).
    std::string path(std::int32_t index) const;

    /// Throws BuildError about source node `index`.
    [[noreturn]] void fail(std::int32_t index, const std::string& what) const;
    /// Throws BuildError about the place where the next node would go (the innermost open node).
    [[noreturn]] void fail_here(const std::string& what) const;

    /// Adds `node` under the innermost open node (opening it when it is not a leaf); its index.
    std::uint32_t add(detail::SourceNode node);

    /// The problem for a node or subtree that would go past limits::kMaxDepth (`what` says which, where).
    static std::string depth_problem(const std::string& what);

    /// The node modifier `modifier` applies to (BuildError when there is none yet).
    detail::SourceNode& last(const char* modifier);

    /// Every port's key: the one given, else the port's default (a key, or a private constant declared
    /// here and recorded in `literals` as the port's literal), else the key named like the port.
    Bindings resolve_bindings(const std::vector<PortSpec>& ports, const Bindings& given, const std::string& what,
                              std::vector<std::pair<std::string, std::string>>* literals);

    /// Declares the private constant key for a port left to its value default, named like the XML
    /// loader's literal keys ("=port#N", a name no file can refer to).
    std::string default_constant(const PortSpec& p, std::vector<std::pair<std::string, std::string>>* literals);

    /// A copy of predicate `n` with its conditions resolved against the registry and their ports bound.
    std::shared_ptr<const Predicate::Node> resolve(const std::shared_ptr<const Predicate::Node>& n,
                                                   std::vector<std::pair<std::string, std::string>>* literals = nullptr);

    /// Node `node`'s port `port` was given a value (port_value, port_literal): no longer unset.
    void given_value(std::int32_t node, const std::string& port);

    /// " (registered: a b c)" and the like, for unknown-name messages.
    std::string known_conditions() const;
    std::string known_actions() const;

    /// The immutable tree (compiler.cpp).
    Tree compile();
};

}  // namespace ebt::detail
