// TreeBuilder: collects the source form of a tree (keys, nodes, modifiers) and hands it to the
// compiler (compiler.cpp) at end(). The BuilderState helpers it shares with subtree.cpp and compiler.cpp
// are defined here (builder_internal.hpp).
#include "tree/builder_internal.hpp"
#include "tree/node_path.hpp"

#include <ebt/limits.hpp>
#include <ebt/xml.hpp>

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>

namespace ebt {

using detail::is_composite;
using detail::is_decorator;
using detail::is_leaf;
using detail::make_pred;
using detail::PredOp;
using detail::SourceNode;

namespace detail {

std::string describe_source(const SourceNode& n) {
    std::string s = to_string(n.kind);
    if (!n.label.empty()) s += " '" + n.label + "'";
    else if (!n.name.empty()) s += " '" + n.name + "'";
    return s;
}

}  // namespace detail

using detail::describe_source;

// ---- Builder state -----------------------------------------------------------------------------

std::string detail::BuilderState::path(std::int32_t index) const {
    std::vector<detail::PathLevel> levels;
    for (std::int32_t i = index; i >= 0; i = parents[i]) {
        const SourceNode& n = nodes[i];
        detail::PathLevel level{n.kind, n.label.empty() ? std::string_view(n.name) : std::string_view(n.label), -1};
        if (parents[i] >= 0) {
            const auto& siblings = nodes[parents[i]].children;
            level.position = static_cast<std::int32_t>(
                std::find(siblings.begin(), siblings.end(), static_cast<std::uint32_t>(i)) - siblings.begin());
        }
        levels.push_back(level);
    }
    return detail::format_node_path(levels, detail::PathLength::Short);
}

void detail::BuilderState::fail(std::int32_t index, const std::string& what) const {
    error = {index, what};
    throw BuildError("tree '" + name + "', node " + path(index) + ": " + what);
}

void detail::BuilderState::fail_here(const std::string& what) const {
    error = {open.empty() ? -1 : static_cast<std::int32_t>(open.back()), what};
    throw BuildError("tree '" + name + "', at " + (open.empty() ? std::string("/") : path(open.back())) + ": " + what);
}

std::uint32_t detail::BuilderState::add(SourceNode node) {
    if (ended) fail_here("the builder was already ended");
    std::int32_t parent = -1;
    if (open.empty()) {
        if (!nodes.empty()) fail_here("the tree already has a root; " + describe_source(node) + " has no parent (too many back() calls?)");
    } else {
        parent = static_cast<std::int32_t>(open.back());
        SourceNode& p = nodes[parent];
        if (is_decorator(p.kind) && !p.children.empty())
            fail(parent, std::string(to_string(p.kind)) + " takes exactly one child; a second one (" +
                             describe_source(node) + ") was added (missing back()?)");
    }
    // The open nodes are the new node's ancestors: it goes at depth open.size() + 1. Refused here,
    // before the tree grows deeper than every pass over it (compiler, runtime, saver) allows.
    if (open.size() + 1 > limits::kMaxDepth)
        fail_here(depth_problem(describe_source(node) + " would be at depth " + std::to_string(open.size() + 1)));
    const auto index = static_cast<std::uint32_t>(nodes.size());
    const NodeKind kind = node.kind;
    nodes.push_back(std::move(node));
    parents.push_back(parent);
    if (parent >= 0) nodes[parent].children.push_back(index);
    if (!is_leaf(kind)) open.push_back(index);
    last_added = static_cast<std::int32_t>(index);
    return index;
}

std::string detail::BuilderState::depth_problem(const std::string& what) {
    return "nodes nested too deeply: " + what + " (at most " + std::to_string(limits::kMaxDepth) + " levels)";
}

SourceNode& detail::BuilderState::last(const char* modifier) {
    if (last_added < 0) fail_here(std::string(modifier) + "() needs a node to apply to; add one first");
    return nodes[last_added];
}

// " (ports: range mode)" or " (it has no ports)": the end of an unknown-port message, as the XML
// loader writes it.
std::string detail::port_names_text(const std::vector<PortSpec>& ports) {
    if (ports.empty()) return " (it has no ports)";
    std::string list;
    for (const auto& p : ports) list += " " + p.name;
    return " (ports:" + list + ")";
}

// The message for a required port that a node leaves without a value (see PortSpec::required).
std::string detail::required_port_problem(const std::string& what, const PortSpec& p) {
    const std::string allowed = port_allowed_text(p);
    return what + " port '" + p.name + "' (" + p.type->name + ") is required: give it a literal with port_value(\"" + p.name +
           "\", ...) or a key in the node's bindings" + (allowed.empty() ? std::string() : " (allowed: " + allowed + ")");
}

// Every port's key: the one given, else the port's default (a key, or a private constant declared
// here and recorded in `literals` as the port's literal), else the key named like the port. A
// required port not given is an error at once where no port_value() can follow (`literals` null: a
// condition inside a predicate), else it is remembered until port_value() gives it or end() refuses it.
Bindings detail::BuilderState::resolve_bindings(const std::vector<PortSpec>& ports, const Bindings& given,
                                              const std::string& what, std::vector<std::pair<std::string, std::string>>* literals) {
    for (const auto& binding : given) {
        const std::string& port_name = binding.first;  // (clang 14 cannot capture a structured binding)
        const bool known = std::any_of(ports.begin(), ports.end(), [&](const PortSpec& p) { return p.name == port_name; });
        if (!known) fail_here(what + " has no port '" + port_name + "'" + port_names_text(ports));
    }
    Bindings out;
    for (const auto& p : ports) {
        auto it = std::find_if(given.begin(), given.end(), [&](const auto& b) { return b.first == p.name; });
        if (it == given.end() && p.must_be_given) {
            if (!literals) fail_here(required_port_problem(what, p));
            unset_required.push_back({static_cast<std::int32_t>(nodes.size()), p.name, required_port_problem(what, p)});
        }
        if (it != given.end()) out.emplace_back(p.name, it->second);
        else if (p.fallback.kind == PortDefault::Kind::Key) out.emplace_back(p.name, p.fallback.key);
        else if (p.fallback.kind == PortDefault::Kind::Value) out.emplace_back(p.name, default_constant(p, literals));
        else out.emplace_back(p.name, p.name);
    }
    return out;
}

// Declares the private constant key for a port left to its value default, named like the XML
// loader's literal keys ("=port#N", a name no file can refer to).
std::string detail::BuilderState::default_constant(const PortSpec& p,
                                                   std::vector<std::pair<std::string, std::string>>* literals) {
    std::string key;
    do key = "=" + p.name + "#" + std::to_string(default_constants++);
    while (schema.find(key) != kNoKey);
    schema.declare_raw(key, p.type, p.fallback.value.data());
    if (literals) literals->emplace_back(p.name, p.fallback.text);
    return key;
}

std::shared_ptr<const Predicate::Node> detail::BuilderState::resolve(const std::shared_ptr<const Predicate::Node>& n,
                                                                  std::vector<std::pair<std::string, std::string>>* literals) {
    if (!n) fail_here("empty predicate");
    auto copy = std::make_shared<Predicate::Node>(*n);
    switch (n->op) {
    case PredOp::Condition: {
        if (!copy->spec) {
            const ConditionSpec* spec = registry ? registry->find_condition(n->name) : nullptr;
            if (!spec) fail_here("unknown condition '" + n->name + "'" + known_conditions());
            copy->spec = std::make_shared<const ConditionSpec>(*spec);
        }
        copy->bindings = resolve_bindings(copy->spec->ports, n->bindings, "condition '" + n->name + "'", literals);
        break;
    }
    case PredOp::Not: copy->a = resolve(n->a); break;
    case PredOp::And:
    case PredOp::Or:
    case PredOp::Xor:
        copy->a = resolve(n->a);
        copy->b = resolve(n->b);
        break;
    default: break;
    }
    return copy;
}

void detail::BuilderState::given_value(std::int32_t node, const std::string& port) {
    std::erase_if(unset_required, [&](const UnsetRequired& u) { return u.node == node && u.port == port; });
}

std::string detail::BuilderState::known_conditions() const {
    if (!registry) return " (no registry was given to the builder)";
    auto names = registry->condition_names();
    if (names.empty()) return " (the registry has no conditions)";
    std::string s = " (registered:";
    for (auto& n : names) s += " " + n;
    return s + ")";
}
std::string detail::BuilderState::known_actions() const {
    if (!registry) return " (no registry was given to the builder)";
    auto names = registry->action_names();
    if (names.empty()) return " (the registry has no actions)";
    std::string s = " (registered:";
    for (auto& n : names) s += " " + n;
    return s + ")";
}

// ---- TreeBuilder -------------------------------------------------------------------------------

TreeBuilder::TreeBuilder(std::string tree_name, const Registry* registry) : impl_(std::make_unique<detail::BuilderState>()) {
    impl_->name = std::move(tree_name);
    impl_->registry = registry;
}
TreeBuilder::~TreeBuilder() = default;
TreeBuilder::TreeBuilder(TreeBuilder&&) noexcept = default;
TreeBuilder& TreeBuilder::operator=(TreeBuilder&&) noexcept = default;

TreeBuilder& TreeBuilder::declare_key(std::string name, const TypeInfo* type, const void* initial) {
    if (impl_->schema.find(name) != kNoKey) impl_->fail_here("blackboard key '" + name + "' is declared twice");
    impl_->schema.declare_raw(std::move(name), type, initial);
    return *this;
}

TreeBuilder& TreeBuilder::declare_shared_key(std::string scope, std::string key, const TypeInfo* type, const void* initial) {
    const std::string name = scope + "." + key;
    if (impl_->schema.find(name) != kNoKey) impl_->fail_here("blackboard key '" + name + "' is declared twice");
    if (scope.find('.') != std::string::npos) impl_->fail_here("shared scope name '" + scope + "' must not contain '.'");
    impl_->schema.declare_shared_raw(scope, key, type, initial);
    return *this;
}

// The modifiers given when a node was opened, applied to it (it is the node added last).
static TreeBuilder& apply(TreeBuilder& b, const NodeOptions& options) {
    if (!options.label.empty()) b.label(options.label);
    if (options.precondition) b.precondition(*options.precondition);
    if (options.abort) b.abort(*options.abort);
    return b;
}

static SourceNode plain(NodeKind kind) {
    SourceNode n;
    n.kind = kind;
    return n;
}

TreeBuilder& TreeBuilder::sequence(const NodeOptions& options) {
    impl_->add(plain(NodeKind::Sequence));
    return apply(*this, options);
}
TreeBuilder& TreeBuilder::filter(const NodeOptions& options) {
    impl_->add(plain(NodeKind::Filter));
    return apply(*this, options);
}
TreeBuilder& TreeBuilder::reactive_sequence(const NodeOptions& options) {
    impl_->add(plain(NodeKind::ReactiveSequence));
    return apply(*this, options);
}
TreeBuilder& TreeBuilder::selector(const NodeOptions& options) {
    impl_->add(plain(NodeKind::Selector));
    return apply(*this, options);
}
TreeBuilder& TreeBuilder::active_selector(const NodeOptions& options) {
    impl_->add(plain(NodeKind::ActiveSelector));
    return apply(*this, options);
}
TreeBuilder& TreeBuilder::priority_selector(const NodeOptions& options) {
    impl_->add(plain(NodeKind::PrioritySelector));
    return apply(*this, options);
}
TreeBuilder& TreeBuilder::non_priority_selector(const NodeOptions& options) {
    impl_->add(plain(NodeKind::NonPrioritySelector));
    return apply(*this, options);
}
TreeBuilder& TreeBuilder::random_selector(const NodeOptions& options) {
    impl_->add(plain(NodeKind::RandomSelector));
    return apply(*this, options);
}
TreeBuilder& TreeBuilder::weighted_selector(std::vector<double> weights, const NodeOptions& options) {
    for (double w : weights)
        if (!(w > 0)) impl_->fail_here("WeightedSelector weights must be > 0");
    SourceNode n = plain(NodeKind::WeightedSelector);
    n.weights = std::move(weights);
    impl_->add(std::move(n));
    return apply(*this, options);
}
TreeBuilder& TreeBuilder::parallel(int success_threshold, int failure_threshold, const NodeOptions& options) {
    if (success_threshold < 1 || failure_threshold < 1) impl_->fail_here("Parallel thresholds must be >= 1");
    SourceNode n = plain(NodeKind::Parallel);
    n.count = success_threshold;
    n.count2 = failure_threshold;
    impl_->add(std::move(n));
    return apply(*this, options);
}
static std::int32_t encode(Policy p) { return p == Policy::RequireOne ? -1 : -2; }
TreeBuilder& TreeBuilder::parallel(Policy success, Policy failure, const NodeOptions& options) {
    SourceNode n = plain(NodeKind::Parallel);
    n.count = encode(success);
    n.count2 = encode(failure);
    impl_->add(std::move(n));
    return apply(*this, options);
}
static std::int32_t encode(const Threshold& t) { return t.is_one() ? -1 : t.is_all() ? -2 : t.n(); }
static bool valid(const Threshold& t) { return t.is_one() || t.is_all() || t.n() >= 1; }
TreeBuilder& TreeBuilder::parallel(Threshold success, Threshold failure, const NodeOptions& options) {
    if (!valid(success) || !valid(failure)) impl_->fail_here("Parallel thresholds must be >= 1");
    SourceNode n = plain(NodeKind::Parallel);
    n.count = encode(success);
    n.count2 = encode(failure);
    impl_->add(std::move(n));
    return apply(*this, options);
}
TreeBuilder& TreeBuilder::monitor(Threshold success, Threshold failure, const NodeOptions& options) {
    if (!valid(success) || !valid(failure)) impl_->fail_here("Monitor thresholds must be >= 1");
    SourceNode n = plain(NodeKind::Monitor);
    n.count = encode(success);
    n.count2 = encode(failure);
    impl_->add(std::move(n));
    return apply(*this, options);
}
TreeBuilder& TreeBuilder::monitor(Policy success, Policy failure, const NodeOptions& options) {
    SourceNode n = plain(NodeKind::Monitor);
    n.count = encode(success);
    n.count2 = encode(failure);
    impl_->add(std::move(n));
    return apply(*this, options);
}

TreeBuilder& TreeBuilder::inverter(const NodeOptions& options) {
    impl_->add(plain(NodeKind::Inverter));
    return apply(*this, options);
}
TreeBuilder& TreeBuilder::force_success(const NodeOptions& options) {
    impl_->add(plain(NodeKind::ForceSuccess));
    return apply(*this, options);
}
TreeBuilder& TreeBuilder::force_failure(const NodeOptions& options) {
    impl_->add(plain(NodeKind::ForceFailure));
    return apply(*this, options);
}
static SourceNode counted(NodeKind kind, int count) {
    SourceNode n = plain(kind);
    n.count = count;
    return n;
}
TreeBuilder& TreeBuilder::repeat(int times, const NodeOptions& options) {
    impl_->add(counted(NodeKind::Repeat, times));
    return apply(*this, options);
}
TreeBuilder& TreeBuilder::retry(int attempts, const NodeOptions& options) {
    impl_->add(counted(NodeKind::Retry, attempts));
    return apply(*this, options);
}
TreeBuilder& TreeBuilder::loop(int times, const NodeOptions& options) {
    impl_->add(counted(NodeKind::Loop, times));
    return apply(*this, options);
}
static SourceNode timed(NodeKind kind, Duration d) {
    SourceNode n = plain(kind);
    n.duration = d.count();
    return n;
}
TreeBuilder& TreeBuilder::cooldown(Duration d, const NodeOptions& options) {
    impl_->add(timed(NodeKind::Cooldown, d));
    return apply(*this, options);
}
TreeBuilder& TreeBuilder::timeout(Duration d, const NodeOptions& options) {
    impl_->add(timed(NodeKind::Timeout, d));
    return apply(*this, options);
}
TreeBuilder& TreeBuilder::delay(Duration d, const NodeOptions& options) {
    impl_->add(timed(NodeKind::Delay, d));
    return apply(*this, options);
}
TreeBuilder& TreeBuilder::wait(Duration d) { impl_->add(timed(NodeKind::Wait, d)); return *this; }

TreeBuilder& TreeBuilder::action(std::string name, Bindings bindings) {
    const ActionSpec* spec = impl_->registry ? impl_->registry->find_action(name) : nullptr;
    if (!spec) impl_->fail_here("unknown action '" + name + "'" + impl_->known_actions());
    return action(std::move(name), *spec, std::move(bindings));
}
TreeBuilder& TreeBuilder::action(std::string name, ActionSpec spec, Bindings bindings) {
    if (!spec.update) impl_->fail_here("action '" + name + "' has no update function");
    if (spec.ports.size() > limits::kMaxPorts)  // (as Registry::add_action refuses it)
        impl_->fail_here("action '" + name + "' has " + std::to_string(spec.ports.size()) + " ports (at most " +
                         std::to_string(limits::kMaxPorts) + ")");
    if (spec.memory_bytes > 64) impl_->fail_here("action '" + name + "' asks for more than 64 bytes of memory");
    try {
        detail::check_port_defaults("action '" + name + "'", spec.ports, false);  // (a registered spec already is)
    } catch (const BuildError& e) {
        impl_->fail_here(e.what());
    }
    SourceNode n = plain(NodeKind::Action);
    n.bindings = impl_->resolve_bindings(spec.ports, bindings, "action '" + name + "'", &n.literals);
    n.action_spec = std::make_shared<const ActionSpec>(std::move(spec));
    n.name = std::move(name);
    impl_->add(std::move(n));
    return *this;
}
TreeBuilder& TreeBuilder::condition(std::string name, Bindings bindings) {
    Predicate p = Predicate::condition(name, std::move(bindings));
    condition(p);
    impl_->nodes[impl_->last_added].name = std::move(name);
    impl_->nodes[impl_->last_added].label = impl_->nodes[impl_->last_added].name;
    return *this;
}
TreeBuilder& TreeBuilder::condition(const Predicate& predicate) {
    SourceNode n = plain(NodeKind::Condition);
    const bool one_condition = predicate.node() && predicate.node()->op == PredOp::Condition;
    n.predicate = impl_->resolve(predicate.node(), one_condition ? &n.literals : nullptr);
    n.label = n.predicate->op == PredOp::Compare ? detail::comparison_text(*n.predicate) : "predicate";
    impl_->add(std::move(n));
    return *this;
}
TreeBuilder& TreeBuilder::check(std::string key, bool expected) {
    SourceNode n = plain(NodeKind::Condition);
    n.label = (expected ? "" : "!") + key;
    n.predicate = impl_->resolve(Predicate::is(std::move(key), expected).node());
    impl_->add(std::move(n));
    return *this;
}
TreeBuilder& TreeBuilder::always_success() { impl_->add(plain(NodeKind::AlwaysSuccess)); return *this; }
TreeBuilder& TreeBuilder::always_failure() { impl_->add(plain(NodeKind::AlwaysFailure)); return *this; }

TreeBuilder& TreeBuilder::precondition(const Predicate& predicate) {
    SourceNode& n = impl_->last("precondition");
    auto resolved = impl_->resolve(predicate.node());
    if (n.precondition) {
        auto both = make_pred(PredOp::And);
        both->a = n.precondition;
        both->b = resolved;
        detail::measure(*both);
        if (std::string problem = detail::predicate_limit_problem(*both, "its preconditions"); !problem.empty())
            impl_->fail(impl_->last_added, problem);
        n.precondition = both;
    } else {
        n.precondition = resolved;
    }
    return *this;
}
TreeBuilder& TreeBuilder::abort(AbortMode mode) {
    SourceNode& n = impl_->last("abort");
    // What no later call can make meaningful is refused now (the compiler checks the same again for
    // subtrees' nodes): a condition has no guard of its own to abort with, and a LowerPriority abort
    // needs lower-priority siblings, which only the selectors' children have.
    const std::int32_t at = impl_->last_added;
    if (n.kind == NodeKind::Condition)
        impl_->fail(at, "an abort mode on a condition node has no effect; set it on the node the condition guards");
    const std::int32_t parent = impl_->parents[static_cast<std::size_t>(at)];
    if ((static_cast<int>(mode) & static_cast<int>(AbortMode::LowerPriority)) &&
        (parent < 0 || !detail::is_selector_family(impl_->nodes[static_cast<std::size_t>(parent)].kind)))
        impl_->fail(at, std::string("abort mode ") + to_string(mode) + " needs lower-priority siblings, but the parent is " +
                            (parent < 0 ? std::string("none (this is the root)")
                                        : std::string(to_string(impl_->nodes[static_cast<std::size_t>(parent)].kind))));
    n.has_abort = true;
    n.abort = mode;
    return *this;
}
TreeBuilder& TreeBuilder::label(std::string text) {
    impl_->last("label").label = std::move(text);
    return *this;
}
TreeBuilder& TreeBuilder::attribute(std::string name, std::string value) {
    impl_->last("attribute").attributes.emplace_back(std::move(name), std::move(value));
    return *this;
}
TreeBuilder& TreeBuilder::port_literal(std::string port, std::string text) {
    SourceNode& n = impl_->last("port_literal");
    const Bindings* bindings = n.kind == NodeKind::Action ? &n.bindings
                               : (n.kind == NodeKind::Condition && n.predicate && n.predicate->op == PredOp::Condition)
                                   ? &n.predicate->bindings
                                   : nullptr;
    if (!bindings) impl_->fail_here("port_literal() applies to an action or a registered condition node");
    const bool known = std::any_of(bindings->begin(), bindings->end(), [&](const auto& b) { return b.first == port; });
    if (!known) impl_->fail_here(describe_source(n) + " has no port '" + port + "'");
    impl_->given_value(impl_->last_added, port);
    n.literals.emplace_back(std::move(port), std::move(text));
    return *this;
}
namespace detail {

bool is_number(const TypeInfo* t) {
    return t == type_of<int>() || t == type_of<unsigned>() || t == type_of<long>() || t == type_of<long long>() ||
           t == type_of<float>() || t == type_of<double>();
}

/// `value` (of type `from`) as a `to`, when both are number types and the value converts exactly.
std::optional<std::vector<std::byte>> convert_number(const TypeInfo* from, const void* value, const TypeInfo* to) {
    long double v = 0;
    if (from == type_of<int>()) v = *static_cast<const int*>(value);
    else if (from == type_of<unsigned>()) v = *static_cast<const unsigned*>(value);
    else if (from == type_of<long>()) v = static_cast<long double>(*static_cast<const long*>(value));
    else if (from == type_of<long long>()) v = static_cast<long double>(*static_cast<const long long*>(value));
    else if (from == type_of<float>()) v = *static_cast<const float*>(value);
    else if (from == type_of<double>()) v = *static_cast<const double*>(value);
    else return std::nullopt;
    auto exactly = [&](auto target) -> std::optional<std::vector<std::byte>> {
        using T = decltype(target);
        if constexpr (std::is_integral_v<T>) {
            if (!(v >= static_cast<long double>(std::numeric_limits<T>::min()) &&
                  v <= static_cast<long double>(std::numeric_limits<T>::max())))
                return std::nullopt;
        } else {
            if (!(v >= -static_cast<long double>(std::numeric_limits<T>::max()) &&
                  v <= static_cast<long double>(std::numeric_limits<T>::max())))
                return std::nullopt;
        }
        const T converted = static_cast<T>(v);
        if (static_cast<long double>(converted) != v) return std::nullopt;
        std::vector<std::byte> bytes(sizeof(T));
        std::memcpy(bytes.data(), &converted, sizeof(T));
        return bytes;
    };
    if (to == type_of<int>()) return exactly(int{});
    if (to == type_of<unsigned>()) return exactly(unsigned{});
    if (to == type_of<long>()) return exactly(long{});
    if (to == type_of<long long>()) return exactly(static_cast<long long>(0));
    if (to == type_of<float>()) return exactly(float{});
    if (to == type_of<double>()) return exactly(double{});
    return std::nullopt;
}

std::string comparison_text(const Predicate::Node& n) {
    std::string right = n.other_key;
    if (n.literal_type) {
        const std::optional<std::string> text = xml::format_value(n.literal_type, n.literal.data());
        right = text ? *text : std::string("a ") + n.literal_type->name;
    }
    return n.name + " " + to_string(n.comparison) + " " + right;
}

}  // namespace detail

namespace {

/// `schema` without key `name` (a private constant nothing binds any more). Keys are bound by name
/// until the tree is compiled, so the others' ids may change.
void drop_key(BlackboardSchema& schema, const std::string& name) {
    BlackboardSchema rebuilt;
    for (const auto& k : schema.keys()) {
        if (k.name == name) continue;
        const void* initial = schema.initial(k);
        if (k.scope == kLocalScope) rebuilt.declare_raw(k.name, k.type, initial);
        else rebuilt.declare_shared_raw(schema.scopes()[k.scope], k.shared_name, k.type, initial);
    }
    schema = std::move(rebuilt);
}

}  // namespace

TreeBuilder& TreeBuilder::port_value_raw(std::string port, const TypeInfo* type, const void* value) {
    SourceNode& n = impl_->last("port_value");
    const std::int32_t at = impl_->last_added;
    const bool registered_condition = n.kind == NodeKind::Condition && n.predicate && n.predicate->op == PredOp::Condition;
    if (n.kind != NodeKind::Action && !registered_condition)
        impl_->fail(at, "port_value() applies to an action or a registered condition node");
    const std::vector<PortSpec>& ports = n.kind == NodeKind::Action ? n.action_spec->ports : n.predicate->spec->ports;
    const auto spec = std::find_if(ports.begin(), ports.end(), [&](const PortSpec& p) { return p.name == port; });
    if (spec == ports.end()) impl_->fail(at, describe_source(n) + " has no port '" + port + "'" + detail::port_names_text(ports));
    const std::string allowed = detail::port_allowed_text(*spec);

    std::vector<std::byte> bytes;
    if (type == spec->type) {
        bytes.assign(static_cast<const std::byte*>(value), static_cast<const std::byte*>(value) + type->size);
    } else if (auto converted = detail::convert_number(type, value, spec->type)) {
        bytes = std::move(*converted);
    } else {
        const std::optional<std::string> text = xml::format_value(type, value);
        const bool numbers = detail::is_number(type) && detail::is_number(spec->type);
        impl_->fail(at, "port '" + port + "' of " + describe_source(n) + " is " + spec->type->name + "; the value given" +
                            (text ? " (" + *text + ")" : std::string()) + " is " + type->name +
                            (numbers ? " and does not convert to it exactly" : std::string()) +
                            (allowed.empty() ? std::string() : " (allowed: " + allowed + ")"));
    }
    // The parameter's rules (PortSpec::range / one_of), checked once, here, rather than per tick.
    if (const std::string problem = detail::port_value_problem(*spec, bytes.data()); !problem.empty())
        impl_->fail(at, std::string(n.kind == NodeKind::Action ? "action '" + n.name : "condition '" + n.predicate->name) +
                            "' port '" + port + "': " + problem);
    impl_->given_value(at, port);
    // A private constant key ("=port#N", as the XML loader names literal keys), recorded as the port's
    // literal so that savers write the value back.
    std::string key;
    do key = "=" + port + "#" + std::to_string(impl_->default_constants++);
    while (impl_->schema.find(key) != kNoKey);
    impl_->schema.declare_raw(key, spec->type, bytes.data());
    std::string replaced;
    if (n.kind == NodeKind::Action) {
        for (auto& b : n.bindings)
            if (b.first == port) replaced = std::exchange(b.second, key);
    } else {
        auto copy = std::make_shared<Predicate::Node>(*n.predicate);
        for (auto& b : copy->bindings)
            if (b.first == port) replaced = std::exchange(b.second, key);
        n.predicate = std::move(copy);
    }
    // The constant made for the port's value default (or an earlier port_value) is bound nowhere else.
    if (replaced.starts_with('=')) drop_key(impl_->schema, replaced);
    std::erase_if(n.literals, [&](const auto& l) { return l.first == port; });
    if (std::optional<std::string> text = xml::format_value(spec->type, bytes.data())) n.literals.emplace_back(port, *text);
    return *this;
}

const TreeBuilder::ErrorDetail& TreeBuilder::last_error() const noexcept { return impl_->error; }

TreeBuilder& TreeBuilder::back() {
    if (impl_->open.empty()) impl_->fail_here("back() with no open composite or decorator");
    const auto index = static_cast<std::int32_t>(impl_->open.back());
    const SourceNode& n = impl_->nodes[index];
    if (is_decorator(n.kind) && n.children.size() != 1)
        impl_->fail(index, std::string(to_string(n.kind)) + " takes exactly one child, got " + std::to_string(n.children.size()));
    if (is_composite(n.kind) && n.children.empty()) impl_->fail(index, std::string(to_string(n.kind)) + " has no children");
    if (n.kind == NodeKind::WeightedSelector && n.weights.size() != n.children.size())
        impl_->fail(index, "WeightedSelector has " + std::to_string(n.weights.size()) + " weight(s) for " +
                               std::to_string(n.children.size()) + " children");
    impl_->open.pop_back();
    impl_->last_added = index;
    return *this;
}

Tree TreeBuilder::end() {
    if (impl_->ended) impl_->fail_here("end() called twice");
    if (impl_->nodes.empty()) impl_->fail_here("end() on an empty tree");
    if (!impl_->open.empty()) {
        // Each open node is inside the one before: past 4, the innermost one's path says where they are.
        std::string list;
        const std::size_t count = impl_->open.size();
        for (std::size_t k = count > 4 ? count - 1 : 0; k < count; ++k)
            list += (list.empty() ? "" : ", ") + impl_->path(static_cast<std::int32_t>(impl_->open[k]));
        if (count > 4) list = "the innermost at " + list;
        impl_->error = {static_cast<std::int32_t>(impl_->open.back()),
                        "end() with " + std::to_string(impl_->open.size()) + " open node(s): " + list + " (close each with back())"};
        throw BuildError("tree '" + impl_->name + "': " + impl_->error.problem);
    }
    // A required port that neither a binding nor port_value() gave (see resolve_bindings).
    if (!impl_->unset_required.empty()) {
        const auto& first = impl_->unset_required.front();
        impl_->fail(first.node, first.problem);
    }
    impl_->ended = true;
    return impl_->compile();
}

}  // namespace ebt
