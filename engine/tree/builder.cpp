// TreeBuilder: collects the source form of a tree, then compiles it into the flat TreeData.
#include "tree/tree_data.hpp"

#include <ebt/limits.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

namespace ebt {

using detail::NodeDef;
using detail::PredInstr;
using detail::PredOp;
using detail::SourceNode;
using detail::TreeData;

namespace {

bool is_composite(NodeKind k) { return k >= NodeKind::Sequence; }
bool is_decorator(NodeKind k) { return k >= NodeKind::Inverter && k <= NodeKind::Delay; }
bool is_leaf(NodeKind k) { return k <= NodeKind::Wait; }
bool is_selector_family(NodeKind k) {
    return k == NodeKind::Selector || k == NodeKind::ActiveSelector || k == NodeKind::PrioritySelector ||
           k == NodeKind::NonPrioritySelector;
}
bool has_leading_guard(NodeKind k) {
    return k == NodeKind::Sequence || k == NodeKind::Filter || k == NodeKind::ReactiveSequence;
}

std::shared_ptr<Predicate::Node> make_pred(PredOp op) {
    auto n = std::make_shared<Predicate::Node>();
    n->op = op;
    return n;
}

// How tightly an operator binds when a predicate is written as an expression (docs/xml.md):
// || 1, && 2, ^ 3, ! (and a negated key check "!k") 4, operands 5.
int strength(const Predicate::Node& n) {
    switch (n.op) {
    case PredOp::Or: return 1;
    case PredOp::And: return 2;
    case PredOp::Xor: return 3;
    case PredOp::Not: return 4;
    case PredOp::KeyIs: return n.expected ? 5 : 4;
    default: return 5;
    }
}

// Sets `n.depth` and `n.operands` from its operands (see Predicate::Node). The depth is the nesting
// of '!' and of the parentheses that writing the predicate as an expression needs: what the XML
// expression grammar limits, so that a predicate fits in C++ exactly when it fits in a file. Binary
// operators are left-associative: (a && b) && c and a || b && c need no parentheses, a && (b && c)
// and (a || b) && c one pair.
void measure(Predicate::Node& n) {
    auto written = [](const std::shared_ptr<const Predicate::Node>& child, int min_strength) {
        if (!child) return std::uint32_t{0};
        return child->depth + (strength(*child) < min_strength ? 1u : 0u);
    };
    auto count = [](const std::shared_ptr<const Predicate::Node>& child) { return child ? child->operands : 0u; };
    if (n.op == PredOp::Not) {
        n.depth = 1 + written(n.a, 4);
    } else {
        const int s = strength(n);
        n.depth = std::max(written(n.a, s), written(n.b, s + 1));
    }
    n.operands = count(n.a) + count(n.b);
}

// What makes the measured predicate `n` break the limits (limits.hpp), or "" when it fits. `what`
// names the operation that made it ("'&&'", "its preconditions").
std::string predicate_limit_problem(const Predicate::Node& n, const std::string& what) {
    if (n.depth > limits::kMaxPredicateDepth)
        return "predicate nested too deeply: " + what + " would nest it " + std::to_string(n.depth) + " levels deep (at most " +
               std::to_string(limits::kMaxPredicateDepth) + ")";
    if (n.operands > limits::kMaxPredicateOperands)
        return "predicate has too many operands: " + what + " would give it " + std::to_string(n.operands) + " (at most " +
               std::to_string(limits::kMaxPredicateOperands) + ")";
    return {};
}

// An operator node over `a` (and `b`), refused with BuildError when it breaks the limits: the limits
// hold while a predicate is composed, so no pass over one (resolving, compiling, copying for a
// subtree, saving, destroying) recurses deeper than they allow.
Predicate compose(PredOp op, const char* symbol, const Predicate& a, const Predicate* b) {
    auto n = make_pred(op);
    n->a = a.node();
    if (b) n->b = b->node();
    measure(*n);
    if (std::string problem = predicate_limit_problem(*n, std::string("'") + symbol + "'"); !problem.empty())
        throw BuildError(problem);
    return Predicate(std::move(n));
}

std::string describe_source(const SourceNode& n) {
    std::string s = to_string(n.kind);
    if (!n.label.empty()) s += " '" + n.label + "'";
    else if (!n.name.empty()) s += " '" + n.name + "'";
    return s;
}

}  // namespace

// ---- Predicate ---------------------------------------------------------------------------------

Predicate Predicate::condition(std::string name, Bindings bindings) {
    auto n = make_pred(PredOp::Condition);
    n->name = std::move(name);
    n->bindings = std::move(bindings);
    return Predicate(std::move(n));
}
Predicate Predicate::is(std::string key, bool expected) {
    auto n = make_pred(PredOp::KeyIs);
    n->name = std::move(key);
    n->expected = expected;
    return Predicate(std::move(n));
}
Predicate Predicate::constant(bool value) { return Predicate(make_pred(value ? PredOp::True : PredOp::False)); }
Predicate operator!(const Predicate& p) { return compose(PredOp::Not, "!", p, nullptr); }
Predicate operator&&(const Predicate& a, const Predicate& b) { return compose(PredOp::And, "&&", a, &b); }
Predicate operator||(const Predicate& a, const Predicate& b) { return compose(PredOp::Or, "||", a, &b); }
Predicate operator^(const Predicate& a, const Predicate& b) { return compose(PredOp::Xor, "^", a, &b); }

// ---- Builder state -----------------------------------------------------------------------------

struct TreeBuilder::Impl {
    std::string name;
    const Registry* registry = nullptr;
    BlackboardSchema schema;
    std::vector<SourceNode> nodes;
    std::vector<std::int32_t> parents;
    std::vector<std::uint32_t> open;
    std::int32_t last_added = -1;
    bool ended = false;
    std::uint32_t subtree_uses = 0;
    std::uint32_t default_constants = 0;  // private keys declared for value defaults (their "#N")
    mutable TreeBuilder::ErrorDetail error;  // the last error thrown (see TreeBuilder::last_error)

    std::string path(std::int32_t index) const {
        if (index < 0) return "/";
        std::vector<std::string> parts;
        for (std::int32_t i = index; i >= 0; i = parents[i]) {
            std::string part = describe_source(nodes[i]);
            if (parents[i] >= 0) {
                const auto& siblings = nodes[parents[i]].children;
                const auto pos = std::find(siblings.begin(), siblings.end(), static_cast<std::uint32_t>(i)) - siblings.begin();
                part += '[';
                part += std::to_string(pos);
                part += ']';
            }
            parts.push_back(std::move(part));
        }
        // A deep path keeps its first 3 and last 4 levels: enough to find the node, short enough to read.
        constexpr std::size_t kHead = 3, kTail = 4;
        std::string out;
        for (std::size_t level = 0; level < parts.size(); ++level) {
            if (parts.size() > kHead + kTail + 3 && level == kHead) {
                const std::size_t skipped = parts.size() - kHead - kTail;
                out += "/... " + std::to_string(skipped) + " levels ...";
                level += skipped - 1;
                continue;
            }
            out += '/';
            out += parts[parts.size() - 1 - level];
        }
        return out;
    }

    [[noreturn]] void fail(std::int32_t index, const std::string& what) const {
        error = {index, what};
        throw BuildError("tree '" + name + "', node " + path(index) + ": " + what);
    }
    [[noreturn]] void fail_here(const std::string& what) const {
        error = {open.empty() ? -1 : static_cast<std::int32_t>(open.back()), what};
        throw BuildError("tree '" + name + "', at " + (open.empty() ? std::string("/") : path(open.back())) + ": " + what);
    }

    std::uint32_t add(SourceNode node) {
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

    /// The problem for a node or subtree that would go past limits::kMaxDepth (`what` says which, where).
    static std::string depth_problem(const std::string& what) {
        return "nodes nested too deeply: " + what + " (at most " + std::to_string(limits::kMaxDepth) + " levels)";
    }

    SourceNode& last(const char* modifier) {
        if (last_added < 0) fail_here(std::string(modifier) + "() needs a node to apply to; add one first");
        return nodes[last_added];
    }

    // Every port's key: the one given, else the port's default (a key, or a private constant declared
    // here and recorded in `literals` as the port's literal), else the key named like the port.
    Bindings resolve_bindings(const std::vector<PortSpec>& ports, const Bindings& given, const std::string& what,
                              std::vector<std::pair<std::string, std::string>>* literals) {
        for (const auto& binding : given) {
            const std::string& port_name = binding.first;  // (clang 14 cannot capture a structured binding)
            const bool known = std::any_of(ports.begin(), ports.end(), [&](const PortSpec& p) { return p.name == port_name; });
            if (!known) fail_here(what + " has no port '" + port_name + "'");
        }
        Bindings out;
        for (const auto& p : ports) {
            auto it = std::find_if(given.begin(), given.end(), [&](const auto& b) { return b.first == p.name; });
            if (it != given.end()) out.emplace_back(p.name, it->second);
            else if (p.fallback.kind == PortDefault::Kind::Key) out.emplace_back(p.name, p.fallback.key);
            else if (p.fallback.kind == PortDefault::Kind::Value) out.emplace_back(p.name, default_constant(p, literals));
            else out.emplace_back(p.name, p.name);
        }
        return out;
    }

    // Declares the private constant key for a port left to its value default, named like the XML
    // loader's literal keys ("=port#N", a name no file can refer to).
    std::string default_constant(const PortSpec& p, std::vector<std::pair<std::string, std::string>>* literals) {
        std::string key;
        do key = "=" + p.name + "#" + std::to_string(default_constants++);
        while (schema.find(key) != kNoKey);
        schema.declare_raw(key, p.type, p.fallback.value.data());
        if (literals) literals->emplace_back(p.name, p.fallback.text);
        return key;
    }

    std::shared_ptr<const Predicate::Node> resolve(const std::shared_ptr<const Predicate::Node>& n,
                                                   std::vector<std::pair<std::string, std::string>>* literals = nullptr) {
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

    std::string known_conditions() const {
        if (!registry) return " (no registry was given to the builder)";
        auto names = registry->condition_names();
        if (names.empty()) return " (the registry has no conditions)";
        std::string s = " (registered:";
        for (auto& n : names) s += " " + n;
        return s + ")";
    }
    std::string known_actions() const {
        if (!registry) return " (no registry was given to the builder)";
        auto names = registry->action_names();
        if (names.empty()) return " (the registry has no actions)";
        std::string s = " (registered:";
        for (auto& n : names) s += " " + n;
        return s + ")";
    }

    Tree compile();
};

// ---- Compilation -------------------------------------------------------------------------------

namespace {

struct Compiler {
    explicit Compiler(const TreeBuilder::Impl& source) : src(source) {}
    const TreeBuilder::Impl& src;
    std::shared_ptr<TreeData> out = std::make_shared<TreeData>();
    std::vector<std::int32_t> source_of;  // compiled node -> source index (for error paths)
    std::vector<std::set<KeyId>> guard_keys;      // per compiled node
    std::vector<std::set<KeyId>> reactive_keys;   // per compiled node
    std::vector<std::int64_t> world_interval;     // per compiled node: re-check interval of world-reading conditions (0: none)
    std::int64_t pred_world = 0;                  // set by emit_predicate: smallest re-check interval seen

    static void merge_interval(std::int64_t& into, std::int64_t v) {
        if (v > 0 && (into == 0 || v < into)) into = v;
    }

    [[noreturn]] void fail(NodeIndex compiled, const std::string& what) const { src.fail(source_of[compiled], what); }

    KeyId key_for(NodeIndex at, const std::string& name, const TypeInfo* type, const std::string& user) const {
        const KeyId id = out->schema.find(name);
        if (id == kNoKey) fail(at, user + " uses undeclared blackboard key '" + name + "' (declare it with key<T>(\"" + name + "\"))");
        if (type && out->schema.info(id).type != type)
            fail(at, user + " expects key '" + name + "' of type " + type->name + ", but it is declared as " +
                         out->schema.info(id).type->name);
        return id;
    }

    // Emits a predicate program; returns its range. Collects the keys it reads into `keys`.
    detail::PredRange emit_predicate(NodeIndex at, const Predicate::Node& p, std::set<KeyId>& keys) {
        detail::PredRange range;
        range.first = static_cast<std::uint32_t>(out->predicates.size());
        emit_predicate_rec(at, p, keys);
        range.count = static_cast<std::uint32_t>(out->predicates.size()) - range.first;
        // The evaluator uses a fixed stack of 64 values (no allocation on the tick path).
        int depth = 0, deepest = 0;
        for (std::uint32_t i = range.first; i < range.first + range.count; ++i) {
            const PredOp op = out->predicates[i].op;
            if (op == PredOp::And || op == PredOp::Or || op == PredOp::Xor) --depth;
            else if (op != PredOp::Not) deepest = std::max(deepest, ++depth);
        }
        if (deepest > 64) fail(at, "predicate is nested too deeply (more than 64 pending operands)");
        return range;
    }
    void emit_predicate_rec(NodeIndex at, const Predicate::Node& p, std::set<KeyId>& keys) {
        switch (p.op) {
        case PredOp::KeyIs: {
            const KeyId id = key_for(at, p.name, type_of<bool>(), "check");
            keys.insert(id);
            out->predicates.push_back(PredInstr{PredOp::KeyIs, p.expected, id});
            break;
        }
        case PredOp::Condition: {
            detail::ConditionUse use;
            use.spec = static_cast<std::uint32_t>(out->conditions.size());
            out->conditions.push_back(p.spec);
            use.first_binding = static_cast<std::uint32_t>(out->bindings.size());
            for (std::size_t i = 0; i < p.spec->ports.size(); ++i) {
                const KeyId id = key_for(at, p.bindings[i].second, p.spec->ports[i].type,
                                         "condition '" + p.name + "' port '" + p.spec->ports[i].name + "'");
                keys.insert(id);
                out->bindings.push_back(id);
            }
            use.binding_count = static_cast<std::uint16_t>(p.spec->ports.size());
            if (p.spec->recheck_interval) {
                if (p.spec->recheck_interval->count() <= 0)
                    fail(at, "condition '" + p.name + "' has a re-check interval that is not positive");
                merge_interval(pred_world, p.spec->recheck_interval->count());
            }
            out->predicates.push_back(PredInstr{PredOp::Condition, true, static_cast<std::uint32_t>(out->condition_uses.size())});
            out->condition_uses.push_back(use);
            break;
        }
        case PredOp::True:
        case PredOp::False: out->predicates.push_back(PredInstr{p.op, true, 0}); break;
        case PredOp::Not:
            emit_predicate_rec(at, *p.a, keys);
            out->predicates.push_back(PredInstr{PredOp::Not, true, 0});
            break;
        case PredOp::And:
        case PredOp::Or:
        case PredOp::Xor: {
            // A run of one operator, however it is nested (a && (b && c) or (a && b) && c), is emitted
            // as its operands left to right, each combined as soon as it is pushed: the evaluator's
            // stack then holds at most one value per level (limits::kMaxPredicateDepth), and the
            // operands are evaluated in the same order.
            std::vector<const Predicate::Node*> operands, pending{&p};
            while (!pending.empty()) {
                const Predicate::Node* n = pending.back();
                pending.pop_back();
                if (n->op == p.op) {
                    pending.push_back(n->b.get());
                    pending.push_back(n->a.get());
                } else {
                    operands.push_back(n);
                }
            }
            for (std::size_t i = 0; i < operands.size(); ++i) {
                emit_predicate_rec(at, *operands[i], keys);
                if (i > 0) out->predicates.push_back(PredInstr{p.op, true, 0});
            }
            break;
        }
        }
    }

    // If source node `s` is (after folding) a condition, returns its predicate.
    std::shared_ptr<const Predicate::Node> folded_condition(std::uint32_t s) const {
        const SourceNode& n = src.nodes[s];
        std::shared_ptr<const Predicate::Node> inner;
        if (n.kind == NodeKind::Condition) {
            inner = n.predicate;
        } else if ((n.kind == NodeKind::Inverter || n.kind == NodeKind::ForceSuccess || n.kind == NodeKind::ForceFailure) &&
                   n.children.size() == 1 && !n.has_abort) {
            auto child = folded_condition(n.children[0]);
            if (!child) return nullptr;
            auto wrapped = make_pred(n.kind == NodeKind::Inverter ? PredOp::Not : PredOp::Or);
            wrapped->a = child;
            if (n.kind == NodeKind::ForceSuccess) wrapped->b = make_pred(PredOp::True);
            if (n.kind == NodeKind::ForceFailure) {
                wrapped->op = PredOp::And;
                wrapped->b = make_pred(PredOp::False);
            }
            inner = wrapped;
        } else {
            return nullptr;
        }
        if (n.precondition) {
            auto both = make_pred(PredOp::And);
            both->a = n.precondition;
            both->b = inner;
            inner = both;
        }
        return inner;
    }

    std::string folded_label(std::uint32_t s) const {
        const SourceNode& n = src.nodes[s];
        if (n.kind == NodeKind::Condition) return n.label;
        const std::string inner = folded_label(n.children[0]);
        if (n.kind == NodeKind::Inverter) return "!" + inner;
        if (n.kind == NodeKind::ForceSuccess) return "ForceSuccess(" + inner + ")";
        return "ForceFailure(" + inner + ")";
    }

    NodeIndex emit(std::uint32_t s, NodeIndex parent) {
        if (out->nodes.size() >= limits::kMaxNodes)
            src.fail(static_cast<std::int32_t>(s), "tree has more than " + std::to_string(limits::kMaxNodes) + " nodes");
        const auto index = static_cast<NodeIndex>(out->nodes.size());
        out->nodes.emplace_back();
        source_of.push_back(static_cast<std::int32_t>(s));
        guard_keys.emplace_back();
        reactive_keys.emplace_back();
        world_interval.push_back(0);
        const SourceNode& n = src.nodes[s];
        {
            NodeDef& d = out->nodes[index];
            d.parent = parent;
            d.label = n.label.empty() ? n.name : n.label;
        }

        if (auto cond = folded_condition(s)) {
            NodeDef& d = out->nodes[index];
            d.kind = NodeKind::Condition;
            d.label = folded_label(s);
            if (n.has_abort) fail(index, "an abort mode on a condition node has no effect; set it on the node the condition guards");
            std::set<KeyId> keys;
            pred_world = 0;
            out->nodes[index].predicate = emit_predicate(index, *cond, keys);
            world_interval[index] = pred_world;
            guard_keys[index] = keys;  // read by whichever guard includes this condition
            out->nodes[index].end = static_cast<NodeIndex>(index + 1);
            return index;
        }

        out->nodes[index].kind = n.kind;
        out->nodes[index].count = n.count;
        out->nodes[index].count2 = n.count2;
        out->nodes[index].duration = n.duration;

        if (n.kind == NodeKind::Action) {
            NodeDef& d = out->nodes[index];
            d.action = static_cast<std::uint32_t>(out->actions.size());
            out->actions.push_back(n.action_spec);
            d.first_binding = static_cast<std::uint32_t>(out->bindings.size());
            d.binding_count = static_cast<std::uint16_t>(n.action_spec->ports.size());
            for (std::size_t i = 0; i < n.action_spec->ports.size(); ++i) {
                const KeyId id = key_for(index, n.bindings[i].second, n.action_spec->ports[i].type,
                                         "action '" + n.name + "' port '" + n.action_spec->ports[i].name + "'");
                out->bindings.push_back(id);
            }
        }
        if (n.kind == NodeKind::WeightedSelector) {
            out->nodes[index].first_weight = static_cast<std::uint32_t>(out->weights.size());
            out->weights.insert(out->weights.end(), n.weights.begin(), n.weights.end());
        }

        // children
        NodeIndex previous = kNoNode;
        std::uint16_t position = 0;
        for (std::uint32_t c : n.children) {
            const NodeIndex child = emit(c, index);
            out->nodes[child].child_position = position++;
            if (previous == kNoNode) out->nodes[index].first_child = child;
            else out->nodes[previous].next_sibling = child;
            previous = child;
        }
        out->nodes[index].child_count = position;
        out->nodes[index].end = static_cast<NodeIndex>(out->nodes.size());
        return index;
    }

    std::vector<NodeIndex> children(NodeIndex i) const {
        std::vector<NodeIndex> v;
        for (NodeIndex c = out->nodes[i].first_child; c != kNoNode; c = out->nodes[c].next_sibling) v.push_back(c);
        return v;
    }

    void build_guards() {
        auto& nodes = out->nodes;
        for (NodeIndex i = 0; i < nodes.size(); ++i) {
            NodeDef& d = nodes[i];
            const SourceNode& s = src.nodes[source_of[i]];
            if (d.kind == NodeKind::Condition) continue;
            detail::GuardDef g;
            bool any = false;
            std::set<KeyId> keys;
            std::int64_t world = 0;
            if (s.precondition) {
                pred_world = 0;
                g.precondition = emit_predicate(i, *s.precondition, keys);
                merge_interval(world, pred_world);
                any = true;
            }
            const auto kids = children(i);
            g.first_condition_node = static_cast<std::uint32_t>(out->guard_condition_nodes.size());
            d.first_body_child = d.first_child;
            if (has_leading_guard(d.kind)) {
                std::size_t k = 0;
                while (k < kids.size() && nodes[kids[k]].kind == NodeKind::Condition) {
                    merge_interval(world, world_interval[kids[k]]);
                    out->guard_condition_nodes.push_back(kids[k]);
                    keys.insert(guard_keys[kids[k]].begin(), guard_keys[kids[k]].end());
                    ++k;
                }
                d.first_body_child = k < kids.size() ? kids[k] : kNoNode;
                if (d.kind == NodeKind::ReactiveSequence) {
                    for (std::size_t j = k; j < kids.size(); ++j)
                        if (nodes[kids[j]].kind == NodeKind::Condition) {
                            d.has_reactive_conditions = true;
                            if (world_interval[kids[j]]) {
                                out->recheck_watchers.push_back({i, true});
                                merge_interval(out->recheck_interval, world_interval[kids[j]]);
                            }
                            reactive_keys[i].insert(guard_keys[kids[j]].begin(), guard_keys[kids[j]].end());
                        }
                }
            }
            if (d.kind == NodeKind::Monitor) {
                std::size_t bodies = 0;
                for (NodeIndex c : kids) {
                    if (nodes[c].kind == NodeKind::Condition) {
                        merge_interval(world, world_interval[c]);
                        out->guard_condition_nodes.push_back(c);
                        keys.insert(guard_keys[c].begin(), guard_keys[c].end());
                    } else {
                        ++bodies;
                    }
                }
                if (bodies == 0) fail(i, "Monitor needs at least one child that is not a condition");
            }
            g.condition_node_count = static_cast<std::uint16_t>(out->guard_condition_nodes.size() - g.first_condition_node);
            if (g.condition_node_count) any = true;
            if (d.kind == NodeKind::Cooldown) {
                g.cooldown = true;
                any = true;
            }

            // abort mode
            const NodeKind parent_kind = d.parent == kNoNode ? NodeKind::Action : nodes[d.parent].kind;
            const bool parent_has_lower = d.parent != kNoNode && is_selector_family(parent_kind);
            if (s.has_abort) {
                if (!any && s.abort != AbortMode::None)
                    fail(i, std::string("abort mode ") + to_string(s.abort) + " on a node without a guard (give it a precondition or leading conditions)");
                if ((static_cast<int>(s.abort) & static_cast<int>(AbortMode::LowerPriority)) && !parent_has_lower)
                    fail(i, std::string("abort mode ") + to_string(s.abort) + " needs lower-priority siblings, but the parent is " +
                                (d.parent == kNoNode ? std::string("none (this is the root)") : std::string(to_string(parent_kind))));
                g.mode = s.abort;
            } else {
                int mode = 0;
                if (d.parent != kNoNode) {
                    if (parent_kind == NodeKind::ActiveSelector) mode |= static_cast<int>(AbortMode::LowerPriority);
                    if (parent_kind == NodeKind::PrioritySelector) mode |= static_cast<int>(AbortMode::Both);
                    if (parent_kind == NodeKind::NonPrioritySelector) mode |= static_cast<int>(AbortMode::Self);
                }
                if (d.kind == NodeKind::Monitor || d.kind == NodeKind::ReactiveSequence) mode |= static_cast<int>(AbortMode::Self);
                g.mode = static_cast<AbortMode>(mode);
            }
            if (any) {
                if (world) {
                    out->recheck_watchers.push_back({i, false});
                    merge_interval(out->recheck_interval, world);
                }
                d.guard = static_cast<std::uint16_t>(out->guards.size());
                out->guards.push_back(g);
                guard_keys[i] = keys;
            } else {
                guard_keys[i].clear();
            }
        }
    }

    void validate() {
        const auto& nodes = out->nodes;
        for (NodeIndex i = 0; i < nodes.size(); ++i) {
            const NodeDef& d = nodes[i];
            const std::size_t kids = d.child_count;
            switch (d.kind) {
            case NodeKind::Repeat:
            case NodeKind::Loop:
                if (d.count != kForever && d.count < 1) fail(i, std::string(to_string(d.kind)) + " count must be >= 1 or kForever, got " + std::to_string(d.count));
                break;
            case NodeKind::Retry:
                if (d.count < 1) fail(i, "Retry attempts must be >= 1, got " + std::to_string(d.count));
                break;
            case NodeKind::Wait:
            case NodeKind::Cooldown:
            case NodeKind::Timeout:
            case NodeKind::Delay:
                if (d.duration < 0) fail(i, std::string(to_string(d.kind)) + " duration must not be negative");
                break;
            case NodeKind::RandomSelector:
            case NodeKind::WeightedSelector:
                if (kids > 255) fail(i, std::string(to_string(d.kind)) + " supports at most 255 children");
                break;
            default: break;
            }
            if (d.kind == NodeKind::Parallel || d.kind == NodeKind::Monitor) {
                std::int32_t bodies = 0;
                for (NodeIndex c = d.first_child; c != kNoNode; c = nodes[c].next_sibling)
                    if (d.kind == NodeKind::Parallel || nodes[c].kind != NodeKind::Condition) ++bodies;
                NodeDef& m = out->nodes[i];
                // negative thresholds encode policies: -1 RequireOne, -2 RequireAll
                auto resolve = [&](std::int32_t t, const char* which) {
                    if (t == -1) return std::int32_t{1};
                    if (t == -2) return bodies;
                    if (t < 1 || t > bodies)
                        fail(i, std::string(to_string(d.kind)) + " " + which + " threshold " + std::to_string(t) +
                                    " is outside 1.." + std::to_string(bodies) + " (its number of children)");
                    return t;
                };
                m.count = resolve(d.count, "success");
                m.count2 = resolve(d.count2, "failure");
            }
        }
    }

    void build_watchers() {
        const std::size_t key_count = out->schema.size();
        std::vector<std::vector<detail::KeyWatcher>> per_key(key_count);
        for (NodeIndex i = 0; i < out->nodes.size(); ++i) {
            if (out->nodes[i].guard != 0xFFFF)
                for (KeyId k : guard_keys[i]) per_key[k].push_back({i, false});
            for (KeyId k : reactive_keys[i]) per_key[k].push_back({i, true});
        }
        out->watch_first.assign(key_count + 1, 0);
        for (std::size_t k = 0; k < key_count; ++k) {
            out->watch_first[k] = static_cast<std::uint32_t>(out->watchers.size());
            out->watchers.insert(out->watchers.end(), per_key[k].begin(), per_key[k].end());
        }
        out->watch_first[key_count] = static_cast<std::uint32_t>(out->watchers.size());
    }

    static std::uint32_t align_up(std::uint32_t v, std::uint32_t a) { return (v + a - 1) / a * a; }

    void build_layout() {
        auto& L = out->layout;
        const auto n = static_cast<std::uint32_t>(out->nodes.size());
        L.status_offset = 0;
        L.flags_offset = align_up(n, 2);
        L.queue_offset = L.flags_offset + 2 * n;
        L.queue_capacity = n + 1;
        std::uint32_t at = L.queue_offset + 2 * L.queue_capacity;
        for (NodeIndex i = 0; i < n; ++i) {
            NodeDef& d = out->nodes[i];
            std::uint32_t size = 0, align = 1;
            switch (d.kind) {
            case NodeKind::Sequence:
            case NodeKind::Filter:
            case NodeKind::ReactiveSequence:
            case NodeKind::Selector:
            case NodeKind::ActiveSelector:
            case NodeKind::PrioritySelector:
            case NodeKind::NonPrioritySelector: size = 2; align = 2; break;
            case NodeKind::RandomSelector:
            case NodeKind::WeightedSelector: size = 8 + d.child_count; align = 4; break;
            case NodeKind::Parallel:
            case NodeKind::Monitor:
            case NodeKind::Repeat:
            case NodeKind::Retry:
            case NodeKind::Loop: size = 4; align = 4; break;
            case NodeKind::Wait:
            case NodeKind::Timeout:
            case NodeKind::Delay:
            case NodeKind::Cooldown: size = 8; align = 8; break;
            case NodeKind::Action: {
                // run id (6 bytes, Runtime::run_id); user memory, when declared, starts at offset 8
                const std::size_t user = out->actions[d.action]->memory_bytes;
                size = user ? 8 + align_up(static_cast<std::uint32_t>(user), 8) : 6;
                align = user ? 16 : 2;
                break;
            }
            default: break;
            }
            if (size == 0) continue;
            at = align_up(at, align);
            d.memory_offset = at;
            at += size;
        }
        if (out->recheck_interval) {
            at = align_up(at, 8);
            L.recheck_offset = at;
            at += 8;
        }
        if (!out->schema.scopes().empty()) {
            at = align_up(at, 8);
            L.shared_offset = at;
            at += static_cast<std::uint32_t>(8 * out->schema.scopes().size() + 2 * out->schema.size());
        }
        L.engine_bytes = at;
        L.blackboard_offset = align_up(at, static_cast<std::uint32_t>(out->schema.max_align()));
        L.block_bytes = align_up(L.blackboard_offset + static_cast<std::uint32_t>(out->schema.storage_size()), 16);
        for (NodeIndex i = 0; i < n; ++i) {
            const NodeKind k = out->nodes[i].kind;
            if (k == NodeKind::Wait || k == NodeKind::Timeout || k == NodeKind::Delay || k == NodeKind::Cooldown)
                out->timer_nodes.push_back(i);
        }
    }
};

}  // namespace

Tree TreeBuilder::Impl::compile() {
    Compiler c(*this);
    c.out->name = name;
    c.out->schema = schema;
    c.out->schema.seal(name);  // keys obtained from this tree carry its tag
    c.emit(0, kNoNode);
    c.build_guards();
    c.validate();
    c.build_watchers();
    c.build_layout();
    c.out->source = nodes;
    return Tree(std::move(c.out));
}

// ---- TreeBuilder -------------------------------------------------------------------------------

TreeBuilder::TreeBuilder(std::string tree_name, const Registry* registry) : impl_(std::make_unique<Impl>()) {
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

static SourceNode plain(NodeKind kind) {
    SourceNode n;
    n.kind = kind;
    return n;
}

TreeBuilder& TreeBuilder::sequence() { impl_->add(plain(NodeKind::Sequence)); return *this; }
TreeBuilder& TreeBuilder::filter() { impl_->add(plain(NodeKind::Filter)); return *this; }
TreeBuilder& TreeBuilder::reactive_sequence() { impl_->add(plain(NodeKind::ReactiveSequence)); return *this; }
TreeBuilder& TreeBuilder::selector() { impl_->add(plain(NodeKind::Selector)); return *this; }
TreeBuilder& TreeBuilder::active_selector() { impl_->add(plain(NodeKind::ActiveSelector)); return *this; }
TreeBuilder& TreeBuilder::priority_selector() { impl_->add(plain(NodeKind::PrioritySelector)); return *this; }
TreeBuilder& TreeBuilder::non_priority_selector() { impl_->add(plain(NodeKind::NonPrioritySelector)); return *this; }
TreeBuilder& TreeBuilder::random_selector() { impl_->add(plain(NodeKind::RandomSelector)); return *this; }
TreeBuilder& TreeBuilder::weighted_selector(std::vector<double> weights) {
    for (double w : weights)
        if (!(w > 0)) impl_->fail_here("WeightedSelector weights must be > 0");
    SourceNode n = plain(NodeKind::WeightedSelector);
    n.weights = std::move(weights);
    impl_->add(std::move(n));
    return *this;
}
TreeBuilder& TreeBuilder::parallel(int success_threshold, int failure_threshold) {
    if (success_threshold < 1 || failure_threshold < 1) impl_->fail_here("Parallel thresholds must be >= 1");
    SourceNode n = plain(NodeKind::Parallel);
    n.count = success_threshold;
    n.count2 = failure_threshold;
    impl_->add(std::move(n));
    return *this;
}
static std::int32_t encode(Policy p) { return p == Policy::RequireOne ? -1 : -2; }
TreeBuilder& TreeBuilder::parallel(Policy success, Policy failure) {
    SourceNode n = plain(NodeKind::Parallel);
    n.count = encode(success);
    n.count2 = encode(failure);
    impl_->add(std::move(n));
    return *this;
}
static std::int32_t encode(const Threshold& t) { return t.is_one() ? -1 : t.is_all() ? -2 : t.n(); }
static bool valid(const Threshold& t) { return t.is_one() || t.is_all() || t.n() >= 1; }
TreeBuilder& TreeBuilder::parallel(Threshold success, Threshold failure) {
    if (!valid(success) || !valid(failure)) impl_->fail_here("Parallel thresholds must be >= 1");
    SourceNode n = plain(NodeKind::Parallel);
    n.count = encode(success);
    n.count2 = encode(failure);
    impl_->add(std::move(n));
    return *this;
}
TreeBuilder& TreeBuilder::monitor(Threshold success, Threshold failure) {
    if (!valid(success) || !valid(failure)) impl_->fail_here("Monitor thresholds must be >= 1");
    SourceNode n = plain(NodeKind::Monitor);
    n.count = encode(success);
    n.count2 = encode(failure);
    impl_->add(std::move(n));
    return *this;
}
TreeBuilder& TreeBuilder::monitor(Policy success, Policy failure) {
    SourceNode n = plain(NodeKind::Monitor);
    n.count = encode(success);
    n.count2 = encode(failure);
    impl_->add(std::move(n));
    return *this;
}

TreeBuilder& TreeBuilder::inverter() { impl_->add(plain(NodeKind::Inverter)); return *this; }
TreeBuilder& TreeBuilder::force_success() { impl_->add(plain(NodeKind::ForceSuccess)); return *this; }
TreeBuilder& TreeBuilder::force_failure() { impl_->add(plain(NodeKind::ForceFailure)); return *this; }
static SourceNode counted(NodeKind kind, int count) {
    SourceNode n = plain(kind);
    n.count = count;
    return n;
}
TreeBuilder& TreeBuilder::repeat(int times) { impl_->add(counted(NodeKind::Repeat, times)); return *this; }
TreeBuilder& TreeBuilder::retry(int attempts) { impl_->add(counted(NodeKind::Retry, attempts)); return *this; }
TreeBuilder& TreeBuilder::loop(int times) { impl_->add(counted(NodeKind::Loop, times)); return *this; }
static SourceNode timed(NodeKind kind, Duration d) {
    SourceNode n = plain(kind);
    n.duration = d.count();
    return n;
}
TreeBuilder& TreeBuilder::cooldown(Duration d) { impl_->add(timed(NodeKind::Cooldown, d)); return *this; }
TreeBuilder& TreeBuilder::timeout(Duration d) { impl_->add(timed(NodeKind::Timeout, d)); return *this; }
TreeBuilder& TreeBuilder::delay(Duration d) { impl_->add(timed(NodeKind::Delay, d)); return *this; }
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
    n.label = "predicate";
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
        measure(*both);
        if (std::string problem = predicate_limit_problem(*both, "its preconditions"); !problem.empty())
            impl_->fail(impl_->last_added, problem);
        n.precondition = both;
    } else {
        n.precondition = resolved;
    }
    return *this;
}
TreeBuilder& TreeBuilder::abort(AbortMode mode) {
    SourceNode& n = impl_->last("abort");
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
    n.literals.emplace_back(std::move(port), std::move(text));
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
    impl_->ended = true;
    return impl_->compile();
}

// ---- Subtrees -----------------------------------------------------------------------------------

namespace {
std::shared_ptr<const Predicate::Node> remap_predicate(const std::shared_ptr<const Predicate::Node>& p,
                                                       const std::map<std::string, std::string>& names) {
    if (!p) return p;
    auto copy = std::make_shared<Predicate::Node>(*p);
    if (p->op == PredOp::KeyIs) copy->name = names.at(p->name);
    for (auto& b : copy->bindings) b.second = names.at(b.second);
    copy->a = remap_predicate(p->a, names);
    copy->b = remap_predicate(p->b, names);
    return copy;
}
}  // namespace

TreeBuilder& TreeBuilder::subtree(const Tree& tree, std::vector<std::pair<std::string, std::string>> remap) {
    if (!tree) impl_->fail_here("subtree() with an empty Tree");
    const TreeData& inner = tree.data();
    {
        // The subtree's own depth (its source is in pre-order: a parent comes before its children).
        std::vector<std::uint32_t> depth(inner.source.size(), 1);
        std::uint32_t deepest = 1;
        for (std::uint32_t j = 0; j < inner.source.size(); ++j)
            for (std::uint32_t c : inner.source[j].children) {
                depth[c] = depth[j] + 1;
                deepest = std::max(deepest, depth[c]);
            }
        if (impl_->open.size() + deepest > limits::kMaxDepth)
            impl_->fail_here(Impl::depth_problem("subtree '" + inner.name + "' (" + std::to_string(deepest) +
                                                 " levels) would reach depth " + std::to_string(impl_->open.size() + deepest)));
    }
    const std::uint32_t use = impl_->subtree_uses++;
    std::map<std::string, std::string> names;
    for (const auto& [from, to] : remap) {
        const KeyId inner_id = inner.schema.find(from);
        if (inner_id == kNoKey) impl_->fail_here("subtree '" + inner.name + "' has no key '" + from + "' to remap");
        const KeyId outer_id = impl_->schema.find(to);
        if (outer_id == kNoKey)
            impl_->fail_here("subtree '" + inner.name + "': key '" + from + "' is remapped to undeclared key '" + to + "'");
        if (impl_->schema.info(outer_id).type != inner.schema.info(inner_id).type)
            impl_->fail_here("subtree '" + inner.name + "': key '" + from + "' (" + inner.schema.info(inner_id).type->name +
                             ") is remapped to '" + to + "' of type " + impl_->schema.info(outer_id).type->name);
        names[from] = to;
    }
    for (const auto& k : inner.schema.keys()) {
        if (names.count(k.name)) continue;
        if (k.scope != kLocalScope) {
            // Shared keys are not private to the subtree: they name the same shared value everywhere.
            const KeyId outer = impl_->schema.find(k.name);
            if (outer == kNoKey) {
                impl_->schema.declare_shared_raw(inner.schema.scopes()[k.scope], k.shared_name, k.type,
                                                 inner.schema.defaults() + k.offset);
            } else if (impl_->schema.info(outer).type != k.type || impl_->schema.info(outer).scope == kLocalScope) {
                impl_->fail_here("subtree '" + inner.name + "': shared key '" + k.name + "' clashes with this tree's key of the same name");
            }
            names[k.name] = k.name;
            continue;
        }
        std::string private_name = inner.name + "#" + std::to_string(use) + "." + k.name;
        impl_->schema.declare_raw(private_name, k.type, inner.schema.defaults() + k.offset);
        names[k.name] = private_name;
    }
    // Copy the source nodes (pre-order, children as indices) under the open node.
    std::vector<std::uint32_t> mapped(inner.source.size());
    std::vector<std::uint32_t> inner_parent(inner.source.size(), 0);  // each inner node's parent (one pass)
    for (std::uint32_t j = 0; j < inner.source.size(); ++j)
        for (std::uint32_t c : inner.source[j].children) inner_parent[c] = j;
    for (std::uint32_t i = 0; i < inner.source.size(); ++i) {
        SourceNode copy = inner.source[i];
        copy.children.clear();
        for (auto& b : copy.bindings) b.second = names.at(b.second);
        copy.predicate = remap_predicate(copy.predicate, names);
        if (copy.kind == NodeKind::Condition && copy.predicate && copy.predicate->op == PredOp::KeyIs)
            copy.label = (copy.predicate->expected ? "" : "!") + copy.predicate->name;  // label the key it now reads
        copy.precondition = remap_predicate(copy.precondition, names);
        if (i == 0) {
            if (copy.label.empty()) copy.label = inner.name;
            mapped[0] = impl_->add(std::move(copy));
        } else {
            const std::uint32_t parent = inner_parent[i];
            const auto new_index = static_cast<std::uint32_t>(impl_->nodes.size());
            impl_->nodes.push_back(std::move(copy));
            impl_->parents.push_back(static_cast<std::int32_t>(mapped[parent]));
            impl_->nodes[mapped[parent]].children.push_back(new_index);
            mapped[i] = new_index;
        }
    }
    // The subtree arrives complete: its root is not left open.
    if (!is_leaf(inner.source[0].kind)) impl_->open.pop_back();
    impl_->last_added = static_cast<std::int32_t>(mapped[0]);
    return *this;
}

}  // namespace ebt
