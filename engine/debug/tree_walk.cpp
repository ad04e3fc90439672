// The node-by-node pieces of the tree views and of Tree::describe() (see tree_walk.hpp).
#include "debug/tree_walk.hpp"

#include "runtime/runtime.hpp"
#include "tree/builder_internal.hpp"

#include <ebt/xml.hpp>

namespace ebt::debug::walk {

using detail::PredOp;
using detail::TreeData;

const TreeData& definition(const Tree& tree, const char* who) {
    if (!tree) throw UsageError(std::string(who) + ": the tree is empty (a default-constructed Tree)");
    return detail::EngineAccess::tree_data(tree);
}

int depth(const TreeData& t, NodeIndex n) {
    int d = 0;
    for (NodeIndex p = t.nodes[n].parent; p != kNoNode; p = t.nodes[p].parent) ++d;
    return d;
}

std::string heading(const TreeData& t, NodeIndex n) {
    const detail::NodeDef& d = t.nodes[n];
    std::string out = std::to_string(n) + " " + to_string(d.kind);
    if (!d.label.empty()) out += " " + d.label;
    if (d.guard != 0xFFFF) out += std::string(" [guard, abort ") + to_string(t.guards[d.guard].mode) + "]";
    if (const AbortMode children = detail::default_child_abort(d.kind); children != AbortMode::None)
        out += std::string(" [children abort ") + to_string(children) + "]";
    return out;
}

std::string duration_text(std::int64_t us) {
    if (us != 0 && us % 1'000'000 == 0) return std::to_string(us / 1'000'000) + " s";
    if (us != 0 && us % 1'000 == 0) return std::to_string(us / 1'000) + " ms";
    return std::to_string(us) + " us";
}

std::string value_text(const TypeInfo* type, const void* value) {
    if (std::optional<std::string> text = xml::format_value(type, value)) return *text;
    return std::string("<") + type->name + ">";
}

bool is_private_constant(const BlackboardSchema& schema, KeyId key) {
    const std::string& name = schema.info(key).name;
    return !name.empty() && name.front() == '=';
}

std::string key_text(const BlackboardSchema& schema, KeyId key, const std::byte* values) {
    const KeyInfo& k = schema.info(key);
    std::string out = k.name + ": " + k.type->name + " = " + value_text(k.type, values + k.offset);
    if (k.scope != kLocalScope) out += " (shared scope '" + schema.scopes()[k.scope] + "')";
    return out;
}

namespace {

/// What a port bound to `key` shows: the literal value of a private constant, else "{key}".
std::string binding_text(const TreeData& t, KeyId key) {
    if (is_private_constant(t.schema, key)) {
        const KeyInfo& k = t.schema.info(key);
        return value_text(k.type, t.schema.defaults() + k.offset);
    }
    return "{" + t.schema.info(key).name + "}";
}

/// The registered name of a condition: the compiled definition keeps only its spec, so it is found
/// in the source predicates that hold the same spec.
const Predicate::Node* find_condition(const Predicate::Node* p, const ConditionSpec* spec) {
    if (!p) return nullptr;
    if (p->op == PredOp::Condition && p->spec.get() == spec) return p;
    if (const Predicate::Node* found = find_condition(p->a.get(), spec)) return found;
    return find_condition(p->b.get(), spec);
}
std::string condition_name(const TreeData& t, const ConditionSpec* spec) {
    for (const detail::SourceNode& s : t.source) {
        if (const Predicate::Node* p = find_condition(s.predicate.get(), spec)) return p->name;
        if (const Predicate::Node* p = find_condition(s.precondition.get(), spec)) return p->name;
    }
    return "<condition>";
}

/// A registered condition as an operand: "Name", or "Name(port={key}, other=2)" when a port is not
/// bound to the key named like it.
std::string condition_call(const TreeData& t, const detail::ConditionUse& use) {
    const ConditionSpec& spec = *t.conditions[use.spec];
    std::string args;
    bool plain = true;
    for (std::uint16_t i = 0; i < use.binding_count; ++i) {
        const KeyId key = t.bindings[use.first_binding + i];
        if (t.schema.info(key).name != spec.ports[i].name) plain = false;
        if (i > 0) args += ", ";
        args += spec.ports[i].name + "=" + binding_text(t, key);
    }
    const std::string name = condition_name(t, &spec);
    return plain ? name : name + "(" + args + ")";
}

/// An operand or an operation written so far, with how tightly it binds (docs/xml.md): || 1, && 2,
/// ^ 3, ! 4, operands 5.
struct Written {
    std::string text;
    int strength = 5;
};

/// `w` as an operand of an operator of strength `needed`: in parentheses when it binds more loosely.
std::string operand(const Written& w, int needed) { return w.strength < needed ? "(" + w.text + ")" : w.text; }

Written write_predicate(const TreeData& t, detail::PredRange range) {
    if (range.count == 0) return {"true", 5};
    std::vector<Written> stack;
    for (std::uint32_t i = range.first; i < range.first + range.count; ++i) {
        const detail::PredInstr& in = t.predicates[i];
        switch (in.op) {
        case PredOp::Condition: stack.push_back({condition_call(t, t.condition_uses[in.arg]), 5}); break;
        case PredOp::KeyIs: {
            const std::string& key = t.schema.info(static_cast<KeyId>(in.arg)).name;
            stack.push_back(in.expected ? Written{key, 5} : Written{"!" + key, 4});
            break;
        }
        case PredOp::Compare: {
            const detail::CompareDef& c = t.comparisons[in.arg];
            const std::string right = c.right == kNoKey ? value_text(c.type, c.literal) : t.schema.info(c.right).name;
            stack.push_back({t.schema.info(c.left).name + " " + to_string(c.op) + " " + right, 5});
            break;
        }
        case PredOp::True: stack.push_back({"true", 5}); break;
        case PredOp::False: stack.push_back({"false", 5}); break;
        case PredOp::Not: stack.back() = {"!" + operand(stack.back(), 4), 4}; break;
        case PredOp::And:
        case PredOp::Or:
        case PredOp::Xor: {
            const int s = in.op == PredOp::Or ? 1 : in.op == PredOp::And ? 2 : 3;
            const char* op = in.op == PredOp::Or ? " || " : in.op == PredOp::And ? " && " : " ^ ";
            Written right = std::move(stack.back());
            stack.pop_back();
            // Left-associative: a left operand of the same operator needs no parentheses, a right one does.
            stack.back() = {operand(stack.back(), s) + op + operand(right, s + 1), s};
            break;
        }
        }
    }
    return stack.back();
}

}  // namespace

std::string predicate_text(const TreeData& t, detail::PredRange range) { return write_predicate(t, range).text; }

std::string guard_text(const TreeData& t, NodeIndex n) {
    const detail::GuardDef* g = t.guard_of(n);
    if (!g) return "";
    std::vector<Written> parts;
    if (g->precondition.count) parts.push_back(write_predicate(t, g->precondition));
    for (std::uint16_t i = 0; i < g->condition_node_count; ++i)
        parts.push_back(write_predicate(t, t.nodes[t.guard_condition_nodes[g->first_condition_node + i]].predicate));
    if (g->cooldown) parts.push_back({"!cooling", 4});
    if (parts.size() == 1) return parts[0].text;
    std::string out;
    for (const Written& w : parts) out += (out.empty() ? "" : " && ") + operand(w, 2);
    return out;
}

std::string condition_text(const TreeData& t, NodeIndex n) {
    const detail::NodeDef& d = t.nodes[n];
    if (d.kind != NodeKind::Condition) return "";
    std::string text = predicate_text(t, d.predicate);
    return text == d.label ? "" : text;
}

std::vector<PortText> ports(const TreeData& t, NodeIndex n) {
    std::vector<PortText> out;
    const detail::NodeDef& d = t.nodes[n];
    if (d.kind != NodeKind::Action) return out;
    const ActionSpec& spec = *t.actions[d.action];
    for (std::uint16_t i = 0; i < d.binding_count; ++i)
        out.push_back({spec.ports[i].name, binding_text(t, t.bindings[d.first_binding + i])});
    return out;
}

std::string parameters(const TreeData& t, NodeIndex n) {
    const detail::NodeDef& d = t.nodes[n];
    switch (d.kind) {
    case NodeKind::Wait:
    case NodeKind::Timeout:
    case NodeKind::Delay:
    case NodeKind::Cooldown: return duration_text(d.duration);
    case NodeKind::Repeat:
    case NodeKind::Loop: return d.count == kForever ? "forever" : std::to_string(d.count) + (d.count == 1 ? " time" : " times");
    case NodeKind::Retry: return std::to_string(d.count) + (d.count == 1 ? " attempt" : " attempts");
    case NodeKind::Parallel:
    case NodeKind::Monitor:  // thresholds in children (the compiler turned RequireAll/RequireOne into counts)
        return "success needs " + std::to_string(d.count) + ", failure needs " + std::to_string(d.count2);
    case NodeKind::WeightedSelector: {
        std::string out = "weights ";
        for (std::uint16_t i = 0; i < d.child_count; ++i)
            out += (i ? ", " : "") + value_text(type_of<double>(), &t.weights[d.first_weight + i]);
        return out;
    }
    default: return "";
    }
}

NodeState state(const Agent& agent, NodeIndex n) {
    // The runtime's accessors are the one place that knows the state block's layout. A Runtime is
    // made for calls that change the agent, hence the const_cast; this function only reads.
    detail::Runtime rt(const_cast<Agent&>(agent));
    NodeState s;
    s.status = rt.st(n);
    s.start_pending = rt.has(n, detail::kStartPending);
    s.suspended = rt.has(n, detail::kSuspended);
    if (rt.has(n, detail::kResumePending)) s.resumed = rt.has(n, detail::kResumeSuccess) ? Status::Success : Status::Failure;
    const NodeKind kind = rt.def(n).kind;
    const TimePoint now = agent.now();
    if ((kind == NodeKind::Wait || kind == NodeKind::Timeout || kind == NodeKind::Delay) && rt.has(n, detail::kTimerArmed))
        s.timer_left = rt.deadline(n) - now;
    if (kind == NodeKind::Cooldown && rt.has(n, detail::kCooldownArmed) && rt.deadline(n) > now)
        s.cooling_left = rt.deadline(n) - now;
    if ((kind == NodeKind::Repeat || kind == NodeKind::Retry || kind == NodeKind::Loop) && s.status == Status::Running)
        s.runs_done = rt.mem<std::uint32_t>(n);
    return s;
}

const char* status_text(Status s) { return s == Status::Invalid ? "idle" : to_string(s); }

std::string state_details(const TreeData& t, NodeIndex n, const NodeState& s) {
    std::vector<std::string> parts;
    if (s.start_pending) parts.emplace_back("starts when the walk reaches it");
    if (s.resumed) parts.push_back(std::string("resumed with ") + to_string(*s.resumed) + ", ends when the walk reaches it");
    else if (s.suspended) parts.emplace_back("suspended");
    if (s.timer_left) parts.push_back(duration_text(*s.timer_left) + " left");
    if (s.cooling_left) parts.push_back("cooling, " + duration_text(*s.cooling_left) + " left");
    if (s.runs_done) {
        const detail::NodeDef& d = t.nodes[n];
        const std::string of = d.count == kForever ? "" : " of " + std::to_string(d.count);
        parts.push_back(d.kind == NodeKind::Retry ? "failed attempts " + std::to_string(*s.runs_done) + of
                                                  : "runs done " + std::to_string(*s.runs_done) + of);
    }
    std::string out;
    for (const std::string& p : parts) out += (out.empty() ? "" : ", ") + p;
    return out;
}

}  // namespace ebt::debug::walk
