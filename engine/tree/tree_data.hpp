// The compiled, flat form of a tree definition (private to the engine).
//
// Built once by TreeBuilder::end(), then immutable and shared by every agent of the tree. Nodes are
// in pre-order; a node's children are the contiguous range [first_child, end) walked by `next`
// sibling links, and its whole subtree is [index, end). The layout of the per-agent state block is
// computed here too (see AgentLayout).
#pragma once

#include <ebt/builder.hpp>
#include <ebt/registry.hpp>
#include <ebt/tree.hpp>

#include <memory>
#include <string>
#include <vector>

namespace ebt::detail {

struct LatentStart;  // registry/latent_start.hpp

/// Postfix predicate program: conditions and constants push a bool, operators combine.
enum class PredOp : std::uint8_t { Condition, KeyIs, True, False, Not, And, Or, Xor, Compare };
struct PredInstr {
    PredOp op;
    bool expected = true;   // KeyIs: the value the bool key must have
    std::uint32_t arg = 0;  // Condition: index into TreeData::condition_uses; KeyIs: key id; Compare: into TreeData::comparisons
};

/// A compiled comparison: number key `left` against key `right` or the literal, both of the key's
/// type (the compiler checked and converted them).
struct CompareDef {
    Comparison op = Comparison::Less;
    const TypeInfo* type = nullptr;  // a number type (any comparison), or any other type (== and != only)
    KeyId left = 0;
    KeyId right = kNoKey;            // kNoKey: compare against `literal`
    alignas(8) std::byte literal[8] = {};  // a number literal, converted to `type`
    bool by_equality = false;              // `type` is not a number: == and != through its equality
    Value equal_to;                        // by_equality: the literal, of exactly `type`
};
struct PredRange {
    std::uint32_t first = 0;
    std::uint32_t count = 0;  // 0 = no predicate (true)
};

/// One use of a registered condition inside a predicate: which spec, and its port bindings.
struct ConditionUse {
    std::uint32_t spec = 0;           // index into TreeData::conditions
    std::uint32_t first_binding = 0;  // into TreeData::bindings
    std::uint16_t binding_count = 0;
};

/// A node's guard: whether the branch may be entered, and when it aborts work (docs/semantics.md).
struct GuardDef {
    PredRange precondition;                 // the node's attached precondition
    std::uint32_t first_condition_node = 0;  // into TreeData::guard_condition_nodes: leading / monitor conditions
    std::uint16_t condition_node_count = 0;
    bool cooldown = false;                   // the node is a Cooldown: false while cooling
    AbortMode mode = AbortMode::None;
};

// Per-node flags kept in the agent's state block (16 bits per node).
enum NodeFlag : std::uint16_t {
    kQueued = 1 << 0,             // event mode: in the scheduler queue
    kStartPending = 1 << 1,       // a (re)start waits for the walk to reach the node (next tick)
    kTimerArmed = 1 << 2,         // Wait / Timeout / Delay deadline armed
    kTimerDue = 1 << 3,           // event mode: deadline reached, fire when the walk reaches the node
    kSuspended = 1 << 4,          // action suspended itself
    kResumePending = 1 << 5,      // resume() received; ends when the walk reaches the node
    kResumeSuccess = 1 << 6,      // the status given to resume()
    kGuardPrev = 1 << 7,          // this node's guard: last evaluated value
    kGuardDirty = 1 << 8,         // event mode: something this node's guard reads changed since its last evaluation
    kChecksDirty = 1 << 9,        // event mode: a guard checked at this position (its own Self guard, a child's
                                  // LowerPriority guard, its reactive conditions) is dirty and live
    kReactiveDirty = 1 << 10,     // event mode: ReactiveSequence's passed conditions must be re-checked
    kCooldownArmed = 1 << 11,     // Cooldown: cooling timer armed (survives restarts)
    kCutByGuard = 1 << 12,        // transient: the node's run was ended by its own Self guard
};

struct NodeDef {
    NodeKind kind = NodeKind::Action;
    NodeIndex parent = kNoNode;
    NodeIndex first_child = kNoNode;
    NodeIndex next_sibling = kNoNode;
    NodeIndex end = 0;                 // one past the last node of the subtree
    std::uint16_t child_count = 0;
    std::uint16_t child_position = 0;  // index among its parent's children
    std::uint16_t guard = 0xFFFF;      // index into TreeData::guards, or 0xFFFF
    std::uint32_t memory_offset = 0;   // node memory in the agent block (when memory_bytes > 0)
    std::uint32_t memory_bytes = 0;    // its size: 0 for a node that keeps no memory
    std::int32_t count = 0;            // Repeat/Retry/Loop times; Parallel success threshold
    std::int32_t count2 = 0;           // Parallel failure threshold
    std::int64_t duration = 0;         // microseconds
    std::uint32_t action = 0;          // Action: index into TreeData::actions
    std::uint32_t first_binding = 0;   // Action: port bindings
    std::uint16_t binding_count = 0;
    PredRange predicate;               // Condition: what it evaluates
    NodeIndex first_body_child = kNoNode;  // first child that is not part of the node's guard
    std::uint32_t first_weight = 0;    // WeightedSelector: into TreeData::weights
    bool has_reactive_conditions = false;  // ReactiveSequence with condition children after its guard
    /// Action: its Success ends every ancestor up to the root with Success and nothing else (each parent
    /// is a selector, or a sequence of which it is the last child): the event scheduler's short path
    /// for a resumed action (Runtime::end_resumed_run, "A completed move" in docs/semantics.md).
    bool success_ends_root = false;
    /// success_ends_root, and the action has no onTerminate: its resumed Success ends the run with
    /// nothing but flags, statuses and the queue changed. World::step's lean end of a move
    /// (Runtime::world_end_move_tick) tests this one flag for the three (compiler.cpp, build_move_paths).
    bool success_ends_run_plainly = false;
    std::string label;                 // action/condition name or user label
};

/// Offsets of the per-agent state block. All offsets in bytes from the block start. The node arrays
/// are in the order statuses, flags, queue (the flags end where the queue begins), with the memory of
/// some nodes possibly in front of them (compiler.cpp, build_layout: a quiet tick's bytes on one cache
/// line); node memory otherwise follows the queue.
struct AgentLayout {
    std::uint32_t flags_offset = 0;   // std::uint16_t[n]
    std::uint32_t status_offset = 0;  // std::uint8_t[n]
    std::uint32_t queue_offset = 0;   // std::uint16_t[n + 1]: event-mode ring buffer incl. end-of-frame marker
    std::uint32_t queue_capacity = 0;
    std::uint32_t recheck_offset = 0; // TimePoint: next re-check of world-reading guards (when the tree has any)
    std::uint32_t shared_offset = 0;  // SharedBlackboard*[scopes], then KeyId[keys]: bindings of shared scopes
    std::uint32_t engine_bytes = 0;   // end of engine state (node memory included)
    std::uint32_t blackboard_offset = 0;
    std::uint32_t block_bytes = 0;    // total, a multiple of 16
};

/// The builder's source form of one node, kept so that a tree can be inlined as a subtree of
/// another (with keys remapped) and, later, saved back to a file.
struct SourceNode {
    NodeKind kind = NodeKind::Action;
    std::string name;                     // action / condition name (empty for built-ins)
    std::string label;
    std::shared_ptr<const ActionSpec> action_spec;
    std::shared_ptr<const ConditionSpec> condition_spec;
    Bindings bindings;                    // port -> key name, resolved (every port listed)
    std::shared_ptr<const Predicate::Node> predicate;     // Condition nodes
    std::shared_ptr<const Predicate::Node> precondition;  // any node
    bool has_abort = false;
    AbortMode abort = AbortMode::None;
    std::int32_t count = 0;
    std::int32_t count2 = 0;
    std::int64_t duration = 0;
    std::vector<double> weights;
    std::vector<std::uint32_t> children;  // indices into the source vector
    /// Free-form attributes kept for tools (e.g. XML attributes ebt does not interpret), in order.
    std::vector<std::pair<std::string, std::string>> attributes;
    /// Ports that a file bound to a literal: port -> the literal's text. The port's key (in
    /// `bindings` or the condition's bindings) is a private constant holding the parsed value.
    std::vector<std::pair<std::string, std::string>> literals;
};

/// A predicate tree node (build-time form of Predicate).
}  // namespace ebt::detail

namespace ebt {
struct Predicate::Node {
    detail::PredOp op = detail::PredOp::True;
    std::string name;       // Condition: registered name; KeyIs, Compare: key name (the left side)
    bool expected = true;   // KeyIs
    Comparison comparison = Comparison::Less;  // Compare
    std::string other_key;                      // Compare: the right side's key ("": the literal)
    const TypeInfo* literal_type = nullptr;     // Compare against a literal: its type and value
    Value literal;
    Bindings bindings;      // Condition (resolved to every port when compiled)
    std::shared_ptr<const ConditionSpec> spec;  // Condition: resolved spec (set when added to a builder)
    std::shared_ptr<const Node> a, b;
    // Set when the node is composed (Predicate's operators), checked against limits.hpp there:
    std::uint32_t depth = 0;     // nesting of '!' and of the parentheses writing it needs (builder.cpp, measure)
    std::uint32_t operands = 1;  // conditions, keys and constants, a shared operand counted at each use
};
}  // namespace ebt

namespace ebt::detail {

/// Who must re-evaluate when a key changes: the guard of `node`, or (reactive) the passed conditions
/// of the ReactiveSequence `node`.
struct KeyWatcher {
    NodeIndex node;
    bool reactive;
};

/// The event scheduler's short path for the root's restart (Runtime::restart_root_plainly), decided
/// when the tree is compiled: the root is a Selector or ActiveSelector without a guard of its own, and
/// its first children are each guarded by one bool key (`check(key)` as a leading condition, or a
/// precondition `is(key)`), up to the first child without a guard, an action: the leaf a restart
/// starts while every one of those guards is false. Read-only, shared by every agent of the tree.
struct RootRestart {
    /// One guarded child the restart passes over when its key does not hold its expected value.
    struct Skipped {
        NodeIndex node;
        std::uint32_t value_offset;  // the bool key's offset among the blackboard's values
        bool expected;
    };
    bool usable = false;
    NodeIndex leaf = kNoNode;
    std::vector<Skipped> skipped;  // in child order
    std::uint32_t skipped_count = 0;  // skipped.size(): the guard evaluations a plain restart counts
    /// Where the root's cursor lies in the state block (Runtime::cursor(0)'s place).
    std::uint32_t root_cursor_offset = 0;
    /// The leaf's start when it is a latent action whose start the engine calls directly
    /// (ActionCall::latent) and that has no user memory: Runtime::restart_root_plainly then enters
    /// the leaf itself (Runtime::restart_on_plan), with the leaf's records below read from here
    /// rather than through its NodeDef and ActionCall. Null for any other leaf, which
    /// Runtime::enter enters. Set by Compiler::build_action_calls.
    const LatentStart* leaf_latent = nullptr;
    const NodePorts* leaf_ports = nullptr;  // its ActionCall's ports
    std::uint32_t leaf_run_id_offset = 0;   // its run id in the block (Runtime::run_id's place)
};

/// What every call of an action node's functions is given besides the agent and the tick's dt
/// (Runtime::make_action_context): the spec, the node's ports and the place and size of its user
/// memory. Built once per node when the tree is compiled (Compiler::build_action_calls, after the
/// bindings and the layout are final), in one array indexed by node, so that a tick reads one record
/// instead of going from the NodeDef to the spec, the bindings and the layout. `spec` is null for a
/// node that is not an action. The pointers are into this TreeData and its specs, which never change
/// once compiled.
struct ActionCall {
    const ActionSpec* spec = nullptr;
    NodePorts ports;                   // TreeData::bindings from the node's first binding; the spec's ports
    std::uint32_t memory_offset = 0;   // the user memory in the block: the node memory after its run id
    std::uint32_t memory_size = 0;     // ActionSpec::memory_bytes
    /// A latent action's start (the spec's on_initialize is Registry::add_latent_action's
    /// LatentStart, registry/latent_start.hpp), which Runtime::enter calls directly; null otherwise.
    const LatentStart* latent = nullptr;
};

struct TreeData {
    std::string name;
    std::vector<NodeDef> nodes;
    std::vector<GuardDef> guards;
    std::vector<NodeIndex> guard_condition_nodes;
    std::vector<PredInstr> predicates;
    std::vector<ConditionUse> condition_uses;
    std::vector<CompareDef> comparisons;
    std::vector<KeyId> bindings;
    std::vector<std::shared_ptr<const ActionSpec>> actions;
    std::vector<ActionCall> action_calls;    // per node (see ActionCall)
    std::vector<std::shared_ptr<const ConditionSpec>> conditions;
    std::vector<double> weights;
    BlackboardSchema schema;
    std::vector<std::uint32_t> watch_first;  // per key: range into `watchers` (size = keys + 1)
    std::vector<KeyWatcher> watchers;
    std::vector<NodeIndex> timer_nodes;      // Wait, Timeout, Delay, Cooldown
    std::vector<KeyWatcher> recheck_watchers;   // guards / reactive sequences reading the world
    std::int64_t recheck_interval = 0;          // smallest re-check interval among them (0: none)
    RootRestart root_restart;                   // the root restart's short path, when the tree allows it
    AgentLayout layout;
    std::vector<SourceNode> source;          // source[0] is the root
    std::vector<std::string> source_key_order;  // declared keys (names), for subtree inlining

    const NodeDef& node(NodeIndex i) const { return nodes[i]; }
    const GuardDef* guard_of(NodeIndex i) const {
        return nodes[i].guard == 0xFFFF ? nullptr : &guards[nodes[i].guard];
    }
};

/// Whether `t` is one of the number types a comparison or a converted value takes (int, unsigned,
/// long, long long, float, double; builder.cpp).
bool is_number(const TypeInfo* t);

/// A comparison predicate as written in messages, describe() and XML: "enemy_dist < 5",
/// "ammo >= clip_size" (builder.cpp).
std::string comparison_text(const Predicate::Node& n);

}  // namespace ebt::detail
