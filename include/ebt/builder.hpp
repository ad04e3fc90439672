// TreeBuilder: the seeds' fluent pre-order builder.
//
//   ebt::Tree tree = ebt::TreeBuilder("guard", registry)
//       .key<bool>("enemy_seen").key<bool>("health_low").key<bool>("enemy_dead")
//       .active_selector()
//           .sequence()
//               .check("enemy_seen")
//               ...
//           .back()
//           .action("Patrol")
//       .end();
//
// Composites and decorators open a node that collects children until back() closes it; leaves are
// added to the open node. Modifiers (label, precondition, abort, port_value) apply to
// the node added last or, right after back(), to the node back() closed:
//
//     .sequence().check("enemy_seen").action("Attack").back().abort(ebt::AbortMode::Both)  // the Sequence
//     .sequence().check("enemy_seen").action("Attack").abort(ebt::AbortMode::Both)         // Attack: BuildError
//
// A composite's or decorator's modifiers can also be given when it is opened, where they cannot land
// on another node: .sequence({.label = "engage", .abort = ebt::AbortMode::Both}). A modifier that
// cannot mean anything on its node (an abort mode on a condition, LowerPriority or Both under a parent
// that is not a selector) is refused at once; an abort mode on a node that ends up without a guard is
// refused by end(). docs/builder.md has the rules and each composite's default abort modes.
// end() closes the root and returns the immutable Tree. The limits of include/ebt/limits.hpp hold as
// nodes are added: a node deeper than limits::kMaxDepth, an action with more than limits::kMaxPorts
// ports, too deep or too big a predicate are refused at once. Any misuse (a decorator given two children,
// end() with open nodes, an unknown action, condition or key, a port of the wrong type, a
// LowerPriority abort where no lower-priority sibling can exist, ...) throws ebt::BuildError naming
// the tree, the node path and the problem.
//
// An Inverter, ForceSuccess or ForceFailure directly over a condition is folded into the condition.
#pragma once

#include <ebt/registry.hpp>
#include <ebt/tree.hpp>

#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ebt {

namespace detail {
struct BuilderState;   // engine/tree/builder_internal.hpp
struct BuilderAccess;  // <ebt/detail/builder_access.hpp>
}  // namespace detail

/// Port-to-key bindings of one node use: {{"port", "key"}, ...}. Unlisted ports bind to the key of
/// the same name.
using Bindings = std::vector<std::pair<std::string, std::string>>;

/// How a comparison predicate compares its key with the other side (<, <=, >, >=, ==, !=).
enum class Comparison : std::uint8_t { Less, LessEqual, Greater, GreaterEqual, Equal, NotEqual };
/// The comparison's operator as written in C++ and in XML expressions ("<", ">=", ...).
const char* to_string(Comparison c) noexcept;

/// The right side of a comparison when it is another blackboard key, not a value:
/// `ebt::lt("enemy_dist", ebt::KeyRef{"attack_range"})`.
struct KeyRef {
    std::string name;
};

/// A composable precondition (the seeds' True/False/Not/And/Or/Xor over conditions, bool keys and
/// comparisons), attachable to any node.
/// The operators throw BuildError for a predicate nested deeper than limits::kMaxPredicateDepth (the
/// '!' and parentheses writing it as an expression needs: `a || b && c` is 0, `(a || b) && c` and
/// `!a` are 1) or with more than limits::kMaxPredicateOperands operands (one used twice counts twice).
class Predicate {
public:
    struct Node;
    /// A registered condition, with its port bindings.
    static Predicate condition(std::string name, Bindings bindings = {});
    /// A bool blackboard key equals `expected`.
    static Predicate is(std::string key, bool expected = true);
    static Predicate constant(bool value);
    /// Number key `key` compared with the value `value` points to (of type `type`; copied). Checked
    /// when the tree is built: the key must be declared with a number type (int, unsigned, long,
    /// long long, float, double) and the value must convert to that type exactly. The typed helpers
    /// lt/le/gt/ge/eq/ne below are the usual way to write one.
    static Predicate compare(std::string key, Comparison op, const TypeInfo* type, const void* value);
    /// Number key `key` compared with key `other`, declared with the same type.
    static Predicate compare(std::string key, Comparison op, KeyRef other);

    friend Predicate operator!(const Predicate& p);
    friend Predicate operator&&(const Predicate& a, const Predicate& b);
    friend Predicate operator||(const Predicate& a, const Predicate& b);
    friend Predicate operator^(const Predicate& a, const Predicate& b);

    const std::shared_ptr<const Node>& node() const noexcept { return node_; }
    /// Wraps a predicate tree node (used by the engine and loaders).
    explicit Predicate(std::shared_ptr<const Node> node) : node_(std::move(node)) {}

private:
    std::shared_ptr<const Node> node_;
};

inline Predicate True() { return Predicate::constant(true); }
inline Predicate False() { return Predicate::constant(false); }
inline Predicate Not(const Predicate& p) { return !p; }
inline Predicate And(const Predicate& a, const Predicate& b) { return a && b; }
inline Predicate Or(const Predicate& a, const Predicate& b) { return a || b; }
inline Predicate Xor(const Predicate& a, const Predicate& b) { return a ^ b; }

/// Comparisons of a number key with a value or another key, composing with !, &&, ||, ^:
///
///     .precondition(ebt::lt("enemy_dist", 5.0f) && !ebt::Predicate::is("stunned"))
///     .condition(ebt::ge("ammo", ebt::KeyRef{"clip_size"}))
///
/// The guard re-evaluates when a key it compares is written (event mode). The value converts to the
/// key's type when it does so exactly (5 for a float key; not 0.1, a double that no float equals:
/// write 0.1f); two keys must have the same type. Otherwise end() throws BuildError naming the node.
template <class T> Predicate lt(std::string key, const T& value) { return Predicate::compare(std::move(key), Comparison::Less, type_of<T>(), &value); }
template <class T> Predicate le(std::string key, const T& value) { return Predicate::compare(std::move(key), Comparison::LessEqual, type_of<T>(), &value); }
template <class T> Predicate gt(std::string key, const T& value) { return Predicate::compare(std::move(key), Comparison::Greater, type_of<T>(), &value); }
template <class T> Predicate ge(std::string key, const T& value) { return Predicate::compare(std::move(key), Comparison::GreaterEqual, type_of<T>(), &value); }
template <class T> Predicate eq(std::string key, const T& value) { return Predicate::compare(std::move(key), Comparison::Equal, type_of<T>(), &value); }
template <class T> Predicate ne(std::string key, const T& value) { return Predicate::compare(std::move(key), Comparison::NotEqual, type_of<T>(), &value); }
inline Predicate lt(std::string key, KeyRef other) { return Predicate::compare(std::move(key), Comparison::Less, std::move(other)); }
inline Predicate le(std::string key, KeyRef other) { return Predicate::compare(std::move(key), Comparison::LessEqual, std::move(other)); }
inline Predicate gt(std::string key, KeyRef other) { return Predicate::compare(std::move(key), Comparison::Greater, std::move(other)); }
inline Predicate ge(std::string key, KeyRef other) { return Predicate::compare(std::move(key), Comparison::GreaterEqual, std::move(other)); }
inline Predicate eq(std::string key, KeyRef other) { return Predicate::compare(std::move(key), Comparison::Equal, std::move(other)); }
inline Predicate ne(std::string key, KeyRef other) { return Predicate::compare(std::move(key), Comparison::NotEqual, std::move(other)); }

/// A Parallel or Monitor threshold: a number of (counted) children, or all of them. The int and
/// Policy overloads of parallel()/monitor() cover the common cases; this one also mixes them
/// (e.g. "all must succeed, 2 failures fail it"), as file formats need.
class Threshold {
public:
    static Threshold count(int n) { return Threshold(Kind::Count, n); }
    static Threshold all() { return Threshold(Kind::All, 0); }
    static Threshold one() { return Threshold(Kind::One, 0); }
    Threshold(Policy p) : kind_(p == Policy::RequireOne ? Kind::One : Kind::All) {}  // NOLINT(google-explicit-constructor)
    bool is_all() const noexcept { return kind_ == Kind::All; }
    bool is_one() const noexcept { return kind_ == Kind::One; }
    /// The number of children for count(n) (0 for all() and one()).
    int n() const noexcept { return n_; }

private:
    enum class Kind : std::uint8_t { Count, All, One };
    Threshold(Kind k, int n) : kind_(k), n_(n) {}
    Kind kind_;
    int n_ = 0;
};

/// Modifiers given when a composite or decorator is opened: `.sequence({.label = "engage",
/// .abort = AbortMode::Self})` is `.sequence().label("engage").abort(AbortMode::Self)`, written where
/// it cannot be mistaken for a modifier of the last child.
struct NodeOptions {
    std::string label{};                     // empty: none
    std::optional<Predicate> precondition{}; // none: no precondition
    std::optional<AbortMode> abort{};        // none: the default for the node's place (docs/builder.md)
};

class TreeBuilder {
public:
    /// `registry` resolves action and condition names; it must outlive the builder (not the tree).
    explicit TreeBuilder(std::string tree_name = "tree", const Registry* registry = nullptr);
    TreeBuilder(std::string tree_name, const Registry& registry) : TreeBuilder(std::move(tree_name), &registry) {}
    ~TreeBuilder();
    TreeBuilder(TreeBuilder&&) noexcept;
    TreeBuilder& operator=(TreeBuilder&&) noexcept;

    // ---- blackboard declarations ------------------------------------------------------------
    template <class T> TreeBuilder& key(std::string name, const T& initial = T{}) {
        T copy = initial;
        return declare_key(std::move(name), type_of<T>(), &copy);
    }

    /// Declares key `key` of the shared scope `scope` (a squad's or the world's blackboard), named
    /// "scope.key" in this tree. Agents read the value published at the start of each frame; their
    /// writes reach the shared blackboard bound to the scope when they are spawned (World).
    template <class T> TreeBuilder& shared_key(std::string scope, std::string key, const T& initial = T{}) {
        T copy = initial;
        return declare_shared_key(std::move(scope), std::move(key), type_of<T>(), &copy);
    }

    // ---- composites (close with back()) -----------------------------------------------------
    TreeBuilder& sequence(const NodeOptions& options = {});
    TreeBuilder& filter(const NodeOptions& options = {});
    TreeBuilder& reactive_sequence(const NodeOptions& options = {});
    TreeBuilder& selector(const NodeOptions& options = {});
    TreeBuilder& active_selector(const NodeOptions& options = {});
    TreeBuilder& priority_selector(const NodeOptions& options = {});
    TreeBuilder& non_priority_selector(const NodeOptions& options = {});
    TreeBuilder& random_selector(const NodeOptions& options = {});
    /// One weight per child (> 0), checked when the node is closed.
    TreeBuilder& weighted_selector(std::vector<double> weights, const NodeOptions& options = {});
    /// Succeeds when `success_threshold` children succeeded, fails when `failure_threshold` failed.
    TreeBuilder& parallel(int success_threshold, int failure_threshold, const NodeOptions& options = {});
    TreeBuilder& parallel(Policy success, Policy failure, const NodeOptions& options = {});
    TreeBuilder& parallel(Threshold success, Threshold failure, const NodeOptions& options = {});
    /// A parallel whose condition children are a Self guard (re-checked while the others run).
    TreeBuilder& monitor(Policy success, Policy failure, const NodeOptions& options = {});
    /// Thresholds count the Monitor's non-condition children.
    TreeBuilder& monitor(Threshold success, Threshold failure, const NodeOptions& options = {});

    // ---- decorators (exactly one child; close with back()) ----------------------------------
    TreeBuilder& inverter(const NodeOptions& options = {});
    TreeBuilder& force_success(const NodeOptions& options = {});
    TreeBuilder& force_failure(const NodeOptions& options = {});
    TreeBuilder& repeat(int times = kForever, const NodeOptions& options = {});
    TreeBuilder& retry(int attempts, const NodeOptions& options = {});
    TreeBuilder& loop(int times = kForever, const NodeOptions& options = {});
    TreeBuilder& cooldown(Duration duration, const NodeOptions& options = {});
    TreeBuilder& timeout(Duration duration, const NodeOptions& options = {});
    TreeBuilder& delay(Duration duration, const NodeOptions& options = {});

    // ---- leaves --------------------------------------------------------------------------------
    TreeBuilder& action(std::string name, Bindings bindings = {});
    /// An action defined in place (registered in this tree under `name`).
    TreeBuilder& action(std::string name, ActionSpec spec, Bindings bindings = {});
    TreeBuilder& condition(std::string name, Bindings bindings = {});
    /// A condition node over a composed predicate.
    TreeBuilder& condition(const Predicate& predicate);
    /// Shorthand: condition node "bool key equals expected".
    TreeBuilder& check(std::string key, bool expected = true);
    TreeBuilder& always_success();
    TreeBuilder& always_failure();
    TreeBuilder& wait(Duration duration);

    /// Inlines another tree as a subtree. `remap` maps the subtree's key names to this tree's keys
    /// ({"inner", "outer"}); unmapped keys stay private to this use of the subtree.
    TreeBuilder& subtree(const Tree& tree, std::vector<std::pair<std::string, std::string>> remap = {});

    // ---- modifiers: on the node added last, or the node back() just closed --------------------
    /// A precondition (ANDed with any given before): the node is entered only while it holds.
    TreeBuilder& precondition(const Predicate& predicate);
    /// When the node's guard aborts running work (docs/semantics.md). BuildError at once on a
    /// condition node, and for LowerPriority or Both when the parent is not a selector (no
    /// lower-priority sibling can exist); at end() when the node has no guard.
    TreeBuilder& abort(AbortMode mode);
    /// The node's name in paths, Tree::find and describe().
    TreeBuilder& label(std::string text);
    /// Gives port `port` of the node (an action or a registered condition) the constant `value`
    /// instead of a blackboard key, as a literal does in a file (`speed="3.5"`):
    ///
    ///     .action("MoveTo").port_value("speed", 3.5f)
    ///
    /// The port reads a private constant key, and xml::save writes the value back as the literal.
    /// A number converts to the port's number type when it converts exactly (5 for a float port;
    /// not 3.5 for an int port); any other value must be of the port's type. BuildError, naming the
    /// node, for an unknown port or a value of another type.
    template <class T> TreeBuilder& port_value(std::string port, const T& value) {
        return port_value_raw(std::move(port), type_of<T>(), &value);
    }

    // ---- structure -----------------------------------------------------------------------------
    TreeBuilder& back();
    Tree end();

    // BehaviorTree.CPP names (aliases)
    TreeBuilder& fallback(const NodeOptions& options = {}) { return selector(options); }
    TreeBuilder& reactive_fallback(const NodeOptions& options = {}) { return active_selector(options); }
    TreeBuilder& retry_until_successful(int attempts) { return retry(attempts); }
    TreeBuilder& sleep(Duration duration) { return wait(duration); }

    /// After this builder threw a BuildError: the node the error is about (its index in the order
    /// nodes were added, subtree nodes included; -1 when none) and the problem without the tree name
    /// and node path (read through detail::BuilderAccess::last_error).
    struct ErrorDetail {
        std::int32_t node = -1;
        std::string problem;
    };

private:
    // The hooks of loaders and tools (the XML loader; a game's own file format), reached through
    // detail::BuilderAccess (<ebt/detail/builder_access.hpp>): declarations and values whose type is
    // known only at run time, kept attributes and literal texts, the last error's node.
    friend struct detail::BuilderAccess;
    TreeBuilder& declare_key(std::string name, const TypeInfo* type, const void* initial = nullptr);
    TreeBuilder& declare_shared_key(std::string scope, std::string key, const TypeInfo* type,
                                    const void* initial = nullptr);
    TreeBuilder& port_value_raw(std::string port, const TypeInfo* type, const void* value);
    TreeBuilder& attribute(std::string name, std::string value);
    TreeBuilder& port_literal(std::string port, std::string text);
    const ErrorDetail& last_error() const noexcept;

    std::unique_ptr<detail::BuilderState> impl_;
};

}  // namespace ebt
