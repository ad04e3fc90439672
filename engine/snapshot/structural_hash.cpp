// structural_hash (<ebt/snapshot.hpp>): what identifies a tree definition in a snapshot. Everything
// that decides how an agent's state block is laid out and read goes in, in a fixed order, as fixed-size
// integers (never a struct's bytes, which hold padding), so that the same definition hashes alike in
// every process of the same program.
#include "tree/tree_data.hpp"

#include <ebt/detail/engine_access.hpp>
#include <ebt/detail/hash.hpp>
#include <ebt/snapshot.hpp>

#include <cstring>

namespace ebt {

namespace {

struct Hasher {
    detail::Fnv1a h;
    void u(std::uint64_t v) { h(v); }
    void s(const std::string& text) {
        u(text.size());
        h.bytes(text.data(), text.size());
    }
    void d(double v) {
        std::uint64_t bits;
        std::memcpy(&bits, &v, sizeof bits);
        u(bits);
    }
    void range(const detail::PredRange& r) {
        u(r.first);
        u(r.count);
    }
};

}  // namespace

std::uint64_t structural_hash(const Tree& tree) {
    if (!tree) throw UsageError("structural_hash(): the tree is empty");
    const detail::TreeData& t = detail::EngineAccess::tree_data(tree);
    Hasher x;
    x.s("ebt tree structure 1");
    x.u(t.nodes.size());
    for (const detail::NodeDef& n : t.nodes) {
        x.u(static_cast<std::uint64_t>(n.kind));
        x.u(n.parent);
        x.u(n.first_child);
        x.u(n.next_sibling);
        x.u(n.end);
        x.u(n.child_count);
        x.u(n.guard);
        x.u(n.memory_offset);
        x.u(static_cast<std::uint64_t>(static_cast<std::int64_t>(n.count)));
        x.u(static_cast<std::uint64_t>(static_cast<std::int64_t>(n.count2)));
        x.u(static_cast<std::uint64_t>(n.duration));
        x.u(n.action);
        x.u(n.first_binding);
        x.u(n.binding_count);
        x.range(n.predicate);
        x.u(n.first_body_child);
        x.u(n.first_weight);
        x.u(n.has_reactive_conditions);
        x.s(n.label);
    }
    x.u(t.guards.size());
    for (const detail::GuardDef& g : t.guards) {
        x.range(g.precondition);
        x.u(g.first_condition_node);
        x.u(g.condition_node_count);
        x.u(g.cooldown);
        x.u(static_cast<std::uint64_t>(g.mode));
    }
    x.u(t.guard_condition_nodes.size());
    for (const NodeIndex n : t.guard_condition_nodes) x.u(n);
    x.u(t.predicates.size());
    for (const detail::PredInstr& p : t.predicates) {
        x.u(static_cast<std::uint64_t>(p.op));
        x.u(p.expected);
        x.u(p.arg);
    }
    x.u(t.condition_uses.size());
    for (const detail::ConditionUse& c : t.condition_uses) {
        x.u(c.spec);
        x.u(c.first_binding);
        x.u(c.binding_count);
    }
    x.u(t.comparisons.size());
    for (const detail::CompareDef& c : t.comparisons) {
        x.u(static_cast<std::uint64_t>(c.op));
        x.s(c.type ? c.type->name : "");
        x.u(c.left);
        x.u(c.right);
        x.u(c.by_equality);
        if (c.by_equality && !c.equal_to.empty()) {
            const TypeInfo* type = c.equal_to.type();
            if (type->ops) {
                x.u(type->ops->hash(c.equal_to.data()));
            } else {
                x.h.bytes(c.equal_to.data(), type->size);
            }
        } else if (c.type) {
            x.h.bytes(c.literal, c.type->size <= sizeof c.literal ? c.type->size : sizeof c.literal);
        }
    }
    x.u(t.bindings.size());
    for (const KeyId k : t.bindings) x.u(k);
    x.u(t.actions.size());
    for (const auto& a : t.actions) x.u(a ? a->memory_bytes : 0);
    x.u(t.conditions.size());
    for (const auto& c : t.conditions) x.u(c && c->recheck_interval ? static_cast<std::uint64_t>(c->recheck_interval->count()) + 1 : 0);
    x.u(t.weights.size());
    for (const double w : t.weights) x.d(w);
    x.u(t.schema.size());
    for (KeyId k = 0; k < t.schema.size(); ++k) {
        const KeyInfo& info = t.schema.info(k);
        x.s(info.name);
        x.s(info.type->name);
        x.u(info.type->size);
        x.u(info.offset);
        x.u(info.scope);
        x.s(info.shared_name);
    }
    x.u(t.schema.scopes().size());
    for (const std::string& scope : t.schema.scopes()) x.s(scope);
    x.u(static_cast<std::uint64_t>(t.recheck_interval));
    const detail::AgentLayout& L = t.layout;
    for (const std::uint32_t v : {L.status_offset, L.flags_offset, L.queue_offset, L.queue_capacity, L.recheck_offset,
                                  L.shared_offset, L.engine_bytes, L.blackboard_offset, L.block_bytes})
        x.u(v);
    return x.h.value();
}

}  // namespace ebt
