// The tree compiler: turns the builder's source nodes into the flat TreeData an agent runs: the
// nodes in pre-order (conditions folded), each node's guard as a predicate program with its abort
// mode, the watchers of each blackboard key, and the layout of the per-agent state block.
#include "registry/latent_start.hpp"
#include "tree/builder_internal.hpp"

#include <ebt/limits.hpp>

#include <algorithm>
#include <set>

namespace ebt {

using detail::AgentLayout;
using detail::has_leading_guard;
using detail::is_selector_family;
using detail::make_pred;
using detail::NodeDef;
using detail::PredInstr;
using detail::PredOp;
using detail::SourceNode;
using detail::TreeData;

namespace {

/// Compiles one builder's source (detail::BuilderState::compile); used once, then dropped.
struct Compiler {
    explicit Compiler(const detail::BuilderState& source) : src(source) {}
    const detail::BuilderState& src;
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
        case PredOp::Compare: {
            out->predicates.push_back(PredInstr{PredOp::Compare, true, static_cast<std::uint32_t>(out->comparisons.size())});
            out->comparisons.push_back(compile_comparison(at, p, keys));
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

    // Comparison `p`, type-checked: number keys, two keys of one type, a literal that converts to
    // the key's type exactly. Adds the keys it reads to `keys` (its guard watches them).
    detail::CompareDef compile_comparison(NodeIndex at, const Predicate::Node& p, std::set<KeyId>& keys) {
        const std::string what = "comparison '" + detail::comparison_text(p) + "'";
        detail::CompareDef c;
        c.op = p.comparison;
        c.left = key_for(at, p.name, nullptr, what);
        c.type = out->schema.info(c.left).type;
        const bool number = detail::is_number(c.type);
        c.by_equality = !number;
        if (!number && c.op != Comparison::Equal && c.op != Comparison::NotEqual)
            fail(at, what + " orders values, which only number keys (int, unsigned, long, long long, float or double) "
                         "have; '" + p.name + "' is declared as " + c.type->name + ": compare it with == or !=");
        keys.insert(c.left);
        if (p.literal_type && !number) {
            if (p.literal_type != c.type)
                fail(at, what + ": the value is " + p.literal_type->name + ", but key '" + p.name + "' is declared as " +
                             c.type->name + " (compare it with a value of its type)");
            c.equal_to = p.literal;
        } else if (p.literal_type) {
            auto converted = detail::convert_number(p.literal_type, p.literal.data(), c.type);
            if (!converted)
                fail(at, what + ": the value is " + p.literal_type->name + " and does not convert exactly to " + c.type->name +
                             ", the type of key '" + p.name + "'");
            std::copy(converted->begin(), converted->end(), c.literal);
        } else {
            c.right = key_for(at, p.other_key, nullptr, what);
            const TypeInfo* right = out->schema.info(c.right).type;
            if (right != c.type)
                fail(at, what + " compares keys of different types: '" + p.name + "' is " + c.type->name + ", '" + p.other_key +
                             "' is " + right->name + " (compare keys of one type)");
            keys.insert(c.right);
        }
        return c;
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
                if (d.parent != kNoNode) mode |= static_cast<int>(detail::default_child_abort(parent_kind));
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

    /// One node's memory in the state block, as build_layout places it.
    struct NodeMemory {
        NodeIndex node;
        std::uint32_t size;
        std::uint32_t align;
    };

    /// The memory each node keeps in the agent's state block (size 0: none), in pre-order.
    std::vector<NodeMemory> node_memory() const {
        std::vector<NodeMemory> memory;
        for (NodeIndex i = 0; i < out->nodes.size(); ++i) {
            const NodeDef& d = out->nodes[i];
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
            if (size != 0) memory.push_back({i, size, align});
        }
        return memory;
    }

    /// The block's layout when the memory of the first `before` entries of `memory` is placed in front
    /// of the node arrays and the rest behind the queue. Sets each node's memory_offset.
    AgentLayout lay_out(const std::vector<NodeMemory>& memory, std::size_t before) {
        AgentLayout L;
        const auto n = static_cast<std::uint32_t>(out->nodes.size());
        std::uint32_t at = 0;
        const auto place = [&](const NodeMemory& m) {
            at = align_up(at, m.align);
            out->nodes[m.node].memory_offset = at;
            out->nodes[m.node].memory_bytes = m.size;
            at += m.size;
        };
        for (std::size_t k = 0; k < before; ++k) place(memory[k]);
        // The node arrays: statuses, then flags, then the queue, so that the last node's flags end where
        // the queue begins (see hot_bytes).
        L.status_offset = at;
        L.flags_offset = align_up(L.status_offset + n, 2);
        L.queue_offset = L.flags_offset + 2 * n;
        L.queue_capacity = n + 1;
        at = L.queue_offset + 2 * L.queue_capacity;
        for (std::size_t k = before; k < memory.size(); ++k) place(memory[k]);
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
        return L;
    }

    /// The bytes [first, end) of the block that a quiet event-mode tick of a typical agent reads: the
    /// flags of the tree's last node and the queue's first three entries, 8 bytes in a row (the flags
    /// array ends where the queue begins). The last node in pre-order is the last child of the root's
    /// selector when it is a leaf: the fallback a priority tree runs when nothing else applies (Patrol
    /// in the guard trees), so the leaf a quiet agent runs; an agent whose first tick started it keeps
    /// its queue head at entry 1, the end-of-frame marker at entry 2 (Runtime::world_tick reads the head
    /// entry, then the leaf's flags; not its status, which the scheduler's invariants make Running).
    static std::pair<std::uint32_t, std::uint32_t> hot_bytes(const AgentLayout& L, std::uint32_t nodes) {
        const std::uint32_t first = L.flags_offset + 2 * (nodes - 1);
        const std::uint32_t end = L.queue_offset + 2 * std::min<std::uint32_t>(3, L.queue_capacity);
        return {first, end};
    }

    /// The aligned part of the block that build_layout keeps a quiet tick's bytes (hot_bytes) in. Every
    /// block is a multiple of 16 bytes and starts on 16 bytes at least (a World's pool pages start on a
    /// cache line; an agent's own block comes from operator new), so bytes within one 16-byte part of the
    /// block are on one cache line, whatever the block's size and place.
    static constexpr std::uint32_t kHotPartBytes = 16;

    /// The layout of the per-agent state block (AgentLayout): node arrays (statuses, flags, the
    /// scheduler queue), node memory, re-check time, shared-scope table, blackboard. The hot bytes of a
    /// quiet tick (hot_bytes) are kept within one 16-byte-aligned part of the block (kHotPartBytes), so
    /// that they are on one cache line for every tree: when they would cross a 16-byte boundary, the
    /// memory of the first nodes (in pre-order, as few as needed) goes in front of the arrays to move
    /// them, provided the block grows no larger. docs/snapshots.md ("Version 3") and docs/benchmarks.md
    /// ("The state block's hot line", "The wide tree's hot line").
    void build_layout() {
        const auto n = static_cast<std::uint32_t>(out->nodes.size());
        const std::vector<NodeMemory> memory = node_memory();
        const AgentLayout plain = lay_out(memory, 0);
        std::size_t chosen = 0;
        for (std::size_t before = 0; before <= memory.size(); ++before) {
            const AgentLayout L = lay_out(memory, before);
            const auto [first, end] = hot_bytes(L, n);
            if (end - first > kHotPartBytes) break;           // never within one part, wherever placed
            if (L.block_bytes > plain.block_bytes) continue;  // the block would grow
            if (first / kHotPartBytes == (end - 1) / kHotPartBytes) {
                chosen = before;
                break;
            }
        }
        out->layout = lay_out(memory, chosen);
        for (NodeIndex i = 0; i < n; ++i) {
            const NodeKind k = out->nodes[i].kind;
            if (k == NodeKind::Wait || k == NodeKind::Timeout || k == NodeKind::Delay || k == NodeKind::Cooldown)
                out->timer_nodes.push_back(i);
        }
    }

    /// The two short paths of a completed latent move (docs/semantics.md, "A completed move"): which
    /// actions end the whole tree by succeeding (NodeDef::success_ends_root), and whether the root's
    /// restart can pass over its guarded first children by reading one bool key each
    /// (TreeData::root_restart). Anything these do not model keeps the general path.
    void build_move_paths() {
        auto& nodes = out->nodes;
        for (NodeIndex i = 0; i < nodes.size(); ++i) {
            if (nodes[i].kind != NodeKind::Action) continue;
            bool ends = true;
            for (NodeIndex c = i, p = nodes[i].parent; p != kNoNode && ends; c = p, p = nodes[p].parent) {
                switch (nodes[p].kind) {
                case NodeKind::Selector:
                case NodeKind::ActiveSelector:
                case NodeKind::PrioritySelector:
                case NodeKind::NonPrioritySelector: break;  // a child's Success is the selector's
                case NodeKind::Sequence:
                case NodeKind::Filter:
                case NodeKind::ReactiveSequence: ends = nodes[c].next_sibling == kNoNode; break;  // its last child
                default: ends = false; break;
                }
            }
            nodes[i].success_ends_root = ends;
            nodes[i].success_ends_run_plainly = ends && !out->actions[nodes[i].action]->on_terminate;
        }
        detail::RootRestart& plan = out->root_restart;
        const NodeDef& root = nodes[0];
        if ((root.kind != NodeKind::Selector && root.kind != NodeKind::ActiveSelector) || root.guard != 0xFFFF) return;
        // One bool key against its expected value, and nothing else.
        const auto single_key = [&](detail::PredRange r, detail::RootRestart::Skipped& into) {
            if (r.count != 1 || out->predicates[r.first].op != PredOp::KeyIs) return false;
            const PredInstr& in = out->predicates[r.first];
            into.value_offset = static_cast<std::uint32_t>(out->schema.info(static_cast<KeyId>(in.arg)).offset);
            into.expected = in.expected;
            return true;
        };
        for (NodeIndex c = root.first_child; c != kNoNode; c = nodes[c].next_sibling) {
            const NodeDef& d = nodes[c];
            if (d.kind == NodeKind::Condition) return;  // evaluated as a step, not as a guard
            if (d.guard == 0xFFFF) {
                if (d.kind != NodeKind::Action) return;
                plan.leaf = c;
                plan.usable = true;
                return;
            }
            const detail::GuardDef& g = out->guards[d.guard];
            if (g.cooldown) return;
            detail::RootRestart::Skipped skip{c, 0, true};
            if (g.precondition.count != 0) {
                if (g.condition_node_count != 0 || !single_key(g.precondition, skip)) return;
            } else if (g.condition_node_count != 1 ||
                       !single_key(nodes[out->guard_condition_nodes[g.first_condition_node]].predicate, skip)) {
                return;
            }
            plan.skipped.push_back(skip);
        }
    }

    /// TreeData::action_calls: each action node's spec, ports, user memory (and a latent action's start), as every call of its
    /// functions receives them (Runtime::make_action_context); then what the root restart's plan
    /// (TreeData::root_restart, build_move_paths) reads of its leaf. Last, once the bindings and the
    /// layout are final: the records point into them.
    void build_action_calls() {
        out->action_calls.resize(out->nodes.size());
        for (std::size_t i = 0; i < out->nodes.size(); ++i) {
            const NodeDef& d = out->nodes[i];
            if (d.kind != NodeKind::Action) continue;
            const ActionSpec& spec = *out->actions[d.action];
            detail::ActionCall& call = out->action_calls[i];
            call.spec = &spec;
            call.ports = {out->bindings.data() + d.first_binding, spec.ports.data(), d.binding_count};
            call.memory_offset = d.memory_offset + 8;  // after the run id (Runtime::run_id)
            call.memory_size = static_cast<std::uint32_t>(spec.memory_bytes);
            call.latent = spec.on_initialize.target<detail::LatentStart>();  // null for any other onInitialize
        }
        // The root restart's latent leaf (TreeData::root_restart), which restart_root_plainly enters itself.
        detail::RootRestart& plan = out->root_restart;
        if (!plan.usable) return;
        plan.skipped_count = static_cast<std::uint32_t>(plan.skipped.size());
        plan.root_cursor_offset = out->nodes[0].memory_offset;
        const detail::ActionCall& leaf = out->action_calls[plan.leaf];
        if (leaf.latent && leaf.memory_size == 0) {
            plan.leaf_latent = leaf.latent;
            plan.leaf_ports = &leaf.ports;
            plan.leaf_run_id_offset = out->nodes[plan.leaf].memory_offset;
        }
    }
};

}  // namespace

Tree detail::BuilderState::compile() {
    Compiler c(*this);
    c.out->name = name;
    c.out->schema = schema;
    c.out->schema.seal(name);  // keys obtained from this tree carry its tag
    c.emit(0, kNoNode);
    c.build_guards();
    c.validate();
    c.build_watchers();
    c.build_layout();
    c.build_move_paths();
    c.build_action_calls();
    c.out->source = nodes;
    return Tree(std::move(c.out));
}

}  // namespace ebt
