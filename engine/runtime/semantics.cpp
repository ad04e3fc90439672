// Node semantics shared by both modes: what entering a node does, how a parent reacts when a child
// ends (the completion observers), guards and their edges, aborts, switches, timers and resumes.
// Scheduling (which node gets attention when) lives in polling_walker.cpp and event_scheduler.cpp.
#include "runtime/runtime.hpp"
#include "registry/latent_start.hpp"
#include "runtime/move_ticks.hpp"  // end_resumed_run_in

#include <ebt/detail/hash.hpp>

#include <algorithm>
#include <cstring>

namespace ebt::detail {

namespace {
Status to_status(Outcome o) {
    switch (o) {
    case Outcome::Running: return Status::Running;
    case Outcome::Success: return Status::Success;
    default: return Status::Failure;
    }
}
Outcome to_outcome(Status s) {
    return s == Status::Success ? Outcome::Success : s == Status::Running ? Outcome::Running : Outcome::Failure;
}
bool has_lower(AbortMode m) { return (static_cast<int>(m) & static_cast<int>(AbortMode::LowerPriority)) != 0; }
bool has_self(AbortMode m) { return (static_cast<int>(m) & static_cast<int>(AbortMode::Self)) != 0; }
// The composites whose children may carry LowerPriority guards (the builder refuses them elsewhere).
bool has_priority_order(NodeKind k) {
    return k == NodeKind::Selector || k == NodeKind::ActiveSelector || k == NodeKind::PrioritySelector ||
           k == NodeKind::NonPrioritySelector;
}

std::uint64_t splitmix(std::uint64_t x) { return detail::splitmix64(x); }
}  // namespace

// ---- tracing and contexts --------------------------------------------------------------------------

void Runtime::emit_to_listener(TraceKind kind, NodeIndex n, Status s, bool result, std::string_view msg) {
    TraceListener* listener = a.listener_;
    TraceEvent e;
    e.tick = a.ticks_;
    e.node = n;
    e.kind = kind;
    e.status = s;
    e.result = result;
    e.message = msg;
    // A listener is observation only: an exception from it (including a UsageError from calling
    // tick()) is swallowed and counted, so that it cannot break the tick.
    try {
        listener->on_event(e);
    } catch (...) {
        ++a.stats_.listener_errors;
    }
    // An abort requested while a node is being initialized waits for its onInitialize to have run,
    // and one requested while a node terminates waits for its onTerminate: every started action ends
    // exactly once, with its onTerminate (enter() and terminate() check after the user call).
    if (kind != TraceKind::Initialize && kind != TraceKind::Terminate) stop_requested();
}

NodeIndex Runtime::nth_child(NodeIndex p, std::size_t i) const {
    NodeIndex c = def(p).first_child;
    while (i-- > 0) c = def(c).next_sibling;
    return c;
}

// ---- predicates and guards ---------------------------------------------------------------------------

namespace {

template <class T> bool compare_as(Comparison op, const std::byte* left, const std::byte* right) {
    T l, r;
    std::memcpy(&l, left, sizeof l);
    std::memcpy(&r, right, sizeof r);
    switch (op) {
    case Comparison::Less: return l < r;
    case Comparison::LessEqual: return l <= r;
    case Comparison::Greater: return l > r;
    case Comparison::GreaterEqual: return l >= r;
    case Comparison::Equal: return l == r;
    case Comparison::NotEqual: return l != r;
    }
    return false;
}

// Comparison `c` of tree `t` over the blackboard values `values`.
bool compare(const detail::TreeData& t, const detail::CompareDef& c, const std::byte* values) {
    const std::byte* left = values + t.schema.info(c.left).offset;
    if (c.by_equality) {  // == or != on a string, an enum, a bool, ...
        const void* right = c.right == kNoKey ? c.equal_to.data() : values + t.schema.info(c.right).offset;
        const bool equal = detail::values_equal(c.type, left, right);
        return c.op == Comparison::Equal ? equal : !equal;
    }
    const std::byte* right = c.right == kNoKey ? c.literal : values + t.schema.info(c.right).offset;
    if (c.type == type_of<int>()) return compare_as<int>(c.op, left, right);
    if (c.type == type_of<unsigned>()) return compare_as<unsigned>(c.op, left, right);
    if (c.type == type_of<long>()) return compare_as<long>(c.op, left, right);
    if (c.type == type_of<long long>()) return compare_as<long long>(c.op, left, right);
    if (c.type == type_of<float>()) return compare_as<float>(c.op, left, right);
    return compare_as<double>(c.op, left, right);
}

}  // namespace

bool Runtime::eval_predicate_stack(PredRange range, NodeIndex owner) {
    bool stack[64];
    int top = 0;
    for (std::uint32_t i = range.first; i < range.first + range.count; ++i) {
        const PredInstr& in = t.predicates[i];
        switch (in.op) {
        case PredOp::True: stack[top++] = true; break;
        case PredOp::False: stack[top++] = false; break;
        case PredOp::KeyIs: {
            const auto& info = t.schema.info(static_cast<KeyId>(in.arg));
            const bool v = *reinterpret_cast<const bool*>(EngineAccess::raw_values(a.blackboard_) + info.offset);
            stack[top++] = (v == in.expected);
            break;
        }
        case PredOp::Condition: {
            const ConditionUse& use = t.condition_uses[in.arg];
            ConditionContext ctx;
            ctx.agent_ = &a;
            ctx.blackboard_ = &a.blackboard_;
            ctx.now_ = a.clock_;
            bool v = false;
            const auto& spec = *t.conditions[use.spec];
            ctx.ports_ = {t.bindings.data() + use.first_binding, spec.ports.data(), use.binding_count};
            // A throwing condition counts as false; the error is reported at the node being evaluated.
            try {
                v = spec.evaluate(ctx);
            } catch (const std::exception& e) {
                emit(TraceKind::Error, owner, Status::Failure, false, e.what());
            } catch (...) {
                emit(TraceKind::Error, owner, Status::Failure, false, "unknown exception");
            }
            if (stop_requested()) return false;
            stack[top++] = v;
            break;
        }
        case PredOp::Compare: stack[top++] = compare(t, t.comparisons[in.arg], EngineAccess::raw_values(a.blackboard_)); break;
        case PredOp::Not: stack[top - 1] = !stack[top - 1]; break;
        case PredOp::And: --top; stack[top - 1] = stack[top - 1] && stack[top]; break;
        case PredOp::Or: --top; stack[top - 1] = stack[top - 1] || stack[top]; break;
        case PredOp::Xor: --top; stack[top - 1] = stack[top - 1] != stack[top]; break;
        }
    }
    return stack[0];
}

bool Runtime::cooling(NodeIndex n) { return has(n, kCooldownArmed) && a.clock_ < deadline(n); }

bool Runtime::eval_guard(NodeIndex g) {
    if (stopping) return false;
    const GuardDef& guard = *t.guard_of(g);
    bool v = true;
    if (guard.cooldown && cooling(g)) v = false;
    if (v) v = eval_predicate(guard.precondition, g);
    for (std::uint32_t i = 0; v && i < guard.condition_node_count; ++i)
        v = eval_predicate(def(t.guard_condition_nodes[guard.first_condition_node + i]).predicate, g);
    if (stopping) return false;  // a condition asked for an abort: the evaluation does not count
    count_guard();
    if (v) set(g, kGuardPrev);
    else clear(g, kGuardPrev);
    clear(g, kGuardDirty);
    emit(TraceKind::GuardEvaluated, g, Status::Invalid, v);
    return v;
}

bool Runtime::eval_condition_node(NodeIndex c, bool as_step) {
    const bool v = eval_predicate(def(c).predicate, c);
    if (stopping) return false;
    count_guard();
    emit(as_step ? TraceKind::ConditionEvaluated : TraceKind::GuardEvaluated, c, Status::Invalid, v);
    return v;
}

// ---- starting nodes ------------------------------------------------------------------------------------

Outcome Runtime::restart_child(NodeIndex p, NodeIndex c) {
    if (passed(c)) {
        // The walk has already passed this node this tick: the restarted subtree begins next tick.
        set(c, kStartPending);
        if (event_mode()) enqueue(c);
        return Outcome::Running;
    }
    return start_child(p, c);
}

Outcome Runtime::start_child(NodeIndex p, NodeIndex c) {
    (void)p;
    if (stopping) return Outcome::Running;
    advance(c);
    if (def(c).kind == NodeKind::Condition) {
        const bool v = eval_condition_node(c, true);
        if (stopping) return Outcome::Running;
        return v ? Outcome::Success : Outcome::Failure;
    }
    if (def(c).guard != 0xFFFF && !eval_guard(c)) return stopping ? Outcome::Running : Outcome::Skipped;
    return enter(c);
}

void Runtime::begin_pending(NodeIndex n) {
    clear(n, kStartPending);
    advance(n);
    Outcome r;
    if (def(n).kind == NodeKind::Condition) r = eval_condition_node(n, true) ? Outcome::Success : Outcome::Failure;
    else if (def(n).guard != 0xFFFF && !eval_guard(n)) r = Outcome::Skipped;
    else r = enter(n);
    if (r == Outcome::Running || stopping) return;
    const Status s = to_status(r);
    if (parent(n) == kNoNode) root_done(s);
    else child_done(parent(n), n, s, false);
}

Outcome Runtime::enter(NodeIndex n) {
    if (stopping) return Outcome::Running;
    const NodeDef& d = def(n);
    advance(n);
    st(n) = Status::Running;
    // A node's own guard state (last value, pending re-check) outlives its runs.
    fl(n) = static_cast<std::uint16_t>(fl(n) & (kGuardPrev | kGuardDirty | kCooldownArmed | kQueued));
    // Its Self guard is live from now on. It was just evaluated, unless a write came in between (a
    // listener on that evaluation): then it is re-checked at this position, as polling would.
    if (event_mode() && has(n, kGuardDirty) && live_guard_position(n) == n) schedule_checks(n);
    emit(TraceKind::Initialize, n);

    Outcome r = Outcome::Running;
    switch (d.kind) {
    case NodeKind::Action: {
        const std::uint64_t run = next_run_id(n);  // makes older resume handles stale
        const ActionCall& call = t.action_calls[n];
        if (call.memory_size) std::memset(b + call.memory_offset, 0, call.memory_size);
        if (call.latent && a.in_tick_) {
            // A latent action (Registry::add_latent_action): what its onInitialize, LatentStart, does
            // (ctx.suspend(), then start with the handle), with the suspension made here and start
            // called directly: one std::function call instead of two, and no Runtime of suspend's own.
            // (suspend's checks hold: the agent is in a tick and n is running, set above.)
            set(n, kSuspended);
            const ResumeHandle handle = suspension_handle(n, run);
            ActionContext ctx = action_context(n);
            const bool ok = contained(n, [&] { call.latent->start(ctx, handle); });
            return after_latent_start(n, ok);  // (an abort() due, a start that threw, a run resumed)
        }
        if (call.spec->on_initialize) {
            ActionContext ctx = action_context(n);
            const bool ok = contained(n, [&] { call.spec->on_initialize(ctx); });
            return after_latent_start(n, ok);
        }
        // No onInitialize: nothing ran that could ask for an abort, throw or suspend the run (the mask
        // above cleared kSuspended), so the action is updated.
        return update_leaf(n);
    }
    case NodeKind::AlwaysSuccess:
    case NodeKind::AlwaysFailure: {
        const Status s = d.kind == NodeKind::AlwaysSuccess ? Status::Success : Status::Failure;
        count_update();
        emit(TraceKind::Update, n, s);
        if (stopping) return Outcome::Running;
        terminate(n, s);
        return to_outcome(s);
    }
    case NodeKind::Wait:
        if (d.duration <= 0) {
            terminate(n, Status::Success);
            return Outcome::Success;
        }
        arm_timer(n, after(d.duration));
        return Outcome::Running;
    case NodeKind::Sequence:
    case NodeKind::Filter:
    case NodeKind::ReactiveSequence: r = sequence_advance(n, d.first_body_child); break;
    case NodeKind::Selector:
    case NodeKind::ActiveSelector: r = selector_advance(n, d.first_child); break;
    case NodeKind::PrioritySelector:
    case NodeKind::NonPrioritySelector: r = priority_select(n); break;
    case NodeKind::RandomSelector:
    case NodeKind::WeightedSelector: {
        auto& entries = mem<std::uint32_t>(n, 4);
        ++entries;
        std::uint64_t rng = splitmix(a.seed_ ^ (static_cast<std::uint64_t>(n) << 40) ^ (static_cast<std::uint64_t>(entries) << 8));
        auto* order = &mem<std::uint8_t>(n, 8);
        const std::uint16_t count = d.child_count;
        for (std::uint16_t i = 0; i < count; ++i) order[i] = static_cast<std::uint8_t>(i);
        if (d.kind == NodeKind::RandomSelector) {
            for (std::uint16_t i = count; i > 1; --i) {  // Fisher-Yates
                rng = splitmix(rng);
                const auto j = static_cast<std::uint16_t>(rng % i);
                std::swap(order[i - 1], order[j]);
            }
        } else {
            // weighted draw without replacement
            for (std::uint16_t i = 0; i < count; ++i) {
                double total = 0;
                for (std::uint16_t k = i; k < count; ++k) total += t.weights[d.first_weight + order[k]];
                rng = splitmix(rng);
                double pick = static_cast<double>(rng >> 11) * (1.0 / 9007199254740992.0) * total;
                std::uint16_t chosen = static_cast<std::uint16_t>(count - 1);
                for (std::uint16_t k = i; k < count; ++k) {
                    pick -= t.weights[d.first_weight + order[k]];
                    if (pick < 0) {
                        chosen = k;
                        break;
                    }
                }
                std::swap(order[i], order[chosen]);
            }
        }
        r = random_advance(n, 0);
        break;
    }
    case NodeKind::Parallel:
    case NodeKind::Monitor: {
        mem<std::uint16_t>(n, 0) = 0;  // successes
        mem<std::uint16_t>(n, 2) = 0;  // failures
        for (NodeIndex c = d.first_child; c != kNoNode; c = def(c).next_sibling) {
            if (!is_body_child(n, c)) continue;
            const Outcome o = start_child(n, c);
            if (o == Outcome::Running) continue;
            if (o == Outcome::Success) ++mem<std::uint16_t>(n, 0);
            else ++mem<std::uint16_t>(n, 2);
            r = parallel_react(n, false);
            if (r != Outcome::Running) break;
        }
        if (r == Outcome::Running) r = parallel_react(n, true);
        break;
    }
    case NodeKind::Inverter:
    case NodeKind::ForceSuccess:
    case NodeKind::ForceFailure:
    case NodeKind::Repeat:
    case NodeKind::Retry:
    case NodeKind::Loop:
    case NodeKind::Cooldown: {
        if (d.kind == NodeKind::Repeat || d.kind == NodeKind::Retry || d.kind == NodeKind::Loop) mem<std::uint32_t>(n) = 0;
        const Outcome o = start_child(n, d.first_child);
        if (o != Outcome::Running) r = decorator_react(n, d.first_child, to_status(o));
        break;
    }
    case NodeKind::Timeout: {
        arm_timer(n, after(d.duration));
        const Outcome o = start_child(n, d.first_child);
        if (o != Outcome::Running) r = to_outcome(to_status(o));
        break;
    }
    case NodeKind::Delay:
        if (d.duration <= 0) {
            const Outcome o = start_child(n, d.first_child);
            if (o != Outcome::Running) r = to_outcome(to_status(o));
        } else {
            arm_timer(n, after(d.duration));
        }
        break;
    case NodeKind::Condition: break;  // never entered: evaluated by start_child
    }
    if (stopping) return Outcome::Running;
    if (r != Outcome::Running) {
        terminate(n, to_status(r));
        return r == Outcome::Skipped ? Outcome::Failure : r;
    }
    return Outcome::Running;
}

// ---- composites ---------------------------------------------------------------------------------------

Outcome Runtime::sequence_advance(NodeIndex p, NodeIndex from) {
    for (NodeIndex c = from; c != kNoNode; c = def(c).next_sibling) {
        cursor(p) = c;
        const Outcome o = start_child(p, c);
        if (o == Outcome::Running) return o;
        if (o != Outcome::Success) return Outcome::Failure;
    }
    return Outcome::Success;
}

Outcome Runtime::selector_advance(NodeIndex p, NodeIndex from) {
    for (NodeIndex c = from; c != kNoNode; c = def(c).next_sibling) {
        cursor(p) = c;
        const Outcome o = start_child(p, c);
        if (o == Outcome::Running) {
            mark_lower_guards_live(p, c);
            return o;
        }
        if (o == Outcome::Success) return o;
    }
    return Outcome::Failure;
}

Outcome Runtime::priority_select(NodeIndex p) {
    for (NodeIndex c = def(p).first_child; c != kNoNode; c = def(c).next_sibling) {
        cursor(p) = c;
        const Outcome o = start_child(p, c);
        if (o == Outcome::Skipped) continue;
        if (o == Outcome::Running) mark_lower_guards_live(p, c);
        return o;  // ends with the status of the child it ran
    }
    return Outcome::Failure;
}

Outcome Runtime::random_advance(NodeIndex p, std::uint16_t from_rank) {
    const auto* order = &mem<std::uint8_t>(p, 8);
    for (std::uint16_t rank = from_rank; rank < def(p).child_count; ++rank) {
        mem<std::uint16_t>(p, 0) = rank;
        const NodeIndex c = nth_child(p, order[rank]);
        const Outcome o = start_child(p, c);
        if (o == Outcome::Running || o == Outcome::Success) return o;
    }
    return Outcome::Failure;
}

Outcome Runtime::parallel_react(NodeIndex p, bool all_started) {
    if (stopping) return Outcome::Running;
    const NodeDef& d = def(p);
    const auto successes = mem<std::uint16_t>(p, 0);
    const auto failures = mem<std::uint16_t>(p, 2);
    Outcome r = Outcome::Running;
    if (successes >= d.count) r = Outcome::Success;
    else if (failures >= d.count2) r = Outcome::Failure;
    else if (all_started) {
        bool any_active = false;
        for (NodeIndex c = d.first_child; c != kNoNode; c = def(c).next_sibling)
            if (is_body_child(p, c) && (running(c) || has(c, kStartPending))) any_active = true;
        if (!any_active) r = Outcome::Failure;  // every child ended without meeting a policy
    }
    if (r != Outcome::Running) abort_range(static_cast<NodeIndex>(p + 1), d.end);  // finishing early aborts the rest
    return r;
}

Outcome Runtime::decorator_react(NodeIndex p, NodeIndex c, Status s) {
    const NodeDef& d = def(p);
    // Repeat, Retry and Loop count their child's runs in their node memory (the others have none).
    const auto count_run = [&] { return ++mem<std::uint32_t>(p); };
    switch (d.kind) {
    case NodeKind::Inverter: return s == Status::Success ? Outcome::Failure : Outcome::Success;
    case NodeKind::ForceSuccess: return Outcome::Success;
    case NodeKind::ForceFailure: return Outcome::Failure;
    case NodeKind::Repeat:
        if (s != Status::Success) return Outcome::Failure;
        if (const std::uint32_t runs = count_run(); d.count != kForever && runs >= static_cast<std::uint32_t>(d.count))
            return Outcome::Success;
        break;
    case NodeKind::Retry:
        if (s == Status::Success) return Outcome::Success;
        if (count_run() >= static_cast<std::uint32_t>(d.count)) return Outcome::Failure;
        break;
    case NodeKind::Loop:
        if (const std::uint32_t runs = count_run(); d.count != kForever && runs >= static_cast<std::uint32_t>(d.count))
            return to_outcome(s);
        break;
    default: return to_outcome(s);  // Cooldown, Timeout, Delay pass the child's status through
    }
    // Restart the child. A child the walk has passed begins next tick.
    const Outcome o = restart_child(p, c);
    if (o == Outcome::Running) return o;
    return decorator_react(p, c, to_status(o));
}

// ---- ending nodes -------------------------------------------------------------------------------------

void Runtime::terminate(NodeIndex n, Status s) {
    if (stopping) return;
    const NodeDef& d = def(n);
    if (d.kind == NodeKind::Cooldown) {
        set(n, kCooldownArmed);
        if (event_mode()) set(n, kGuardDirty);  // cooling changes the value of its guard
        deadline(n) = after(d.duration);
        if (event_mode() && deadline(n) < a.next_deadline_) a.next_deadline_ = deadline(n);
    }
    if (event_mode() && has(n, kQueued)) dequeue(n);
    fl(n) = static_cast<std::uint16_t>(fl(n) & (kGuardPrev | kGuardDirty | kCooldownArmed));
    st(n) = s;
    emit(TraceKind::Terminate, n, s);
    if (d.kind == NodeKind::Action) {
        const auto& spec = *t.actions[d.action];
        if (spec.on_terminate) {
            ActionContext ctx = action_context(n);
            contained(n, [&] { spec.on_terminate(ctx, s); });
        }
    }
    stop_requested();
}

void Runtime::complete(NodeIndex n, Status s) {
    terminate(n, s);
    if (stopping) return;
    if (parent(n) == kNoNode) root_done(s);
    else child_done(parent(n), n, s, false);
}

void Runtime::root_done(Status) {
    if (stopping) return;
    if (a.restart_on_end_) {
        // The walk has passed the root: the new run begins next tick.
        set(0, kStartPending);
        if (event_mode()) enqueue(0);
    } else {
        a.stopped_ = true;
    }
}

void Runtime::child_done(NodeIndex p, NodeIndex c, Status s, bool cut) {
    if (stopping || !running(p)) return;
    const NodeDef& d = def(p);
    Outcome r = Outcome::Running;
    switch (d.kind) {
    case NodeKind::Sequence:
    case NodeKind::Filter:
    case NodeKind::ReactiveSequence:
        r = s == Status::Success ? sequence_advance(p, def(c).next_sibling) : Outcome::Failure;
        break;
    case NodeKind::Selector:
    case NodeKind::ActiveSelector:
        r = s == Status::Success ? Outcome::Success : selector_advance(p, def(c).next_sibling);
        break;
    case NodeKind::PrioritySelector:
    case NodeKind::NonPrioritySelector:
        r = cut ? priority_select(p) : to_outcome(s);
        break;
    case NodeKind::RandomSelector:
    case NodeKind::WeightedSelector:
        r = s == Status::Success ? Outcome::Success : random_advance(p, static_cast<std::uint16_t>(mem<std::uint16_t>(p, 0) + 1));
        break;
    case NodeKind::Parallel:
    case NodeKind::Monitor:
        if (s == Status::Success) ++mem<std::uint16_t>(p, 0);
        else ++mem<std::uint16_t>(p, 2);
        r = parallel_react(p, true);
        break;
    case NodeKind::Timeout:
        clear(p, kTimerArmed | kTimerDue);
        r = to_outcome(s);
        break;
    default: r = decorator_react(p, c, s); break;
    }
    if (r != Outcome::Running) complete(p, to_status(r));
}

void Runtime::abort_range(NodeIndex first, NodeIndex end) {
    for (NodeIndex i = end; i-- > first;) {
        if (running(i)) {
            terminate(i, Status::Aborted);
            if (stopping) return;
        } else if (has(i, kStartPending)) {
            clear(i, kStartPending);
            if (event_mode() && has(i, kQueued)) dequeue(i);
        }
    }
}

void Runtime::abort_all() {
    stopping = false;
    aborting = true;
    abort_range(0, static_cast<NodeIndex>(t.nodes.size()));
    if (event_mode()) queue_reset();
    for (NodeIndex i = 0; i < t.nodes.size(); ++i) fl(i) = static_cast<std::uint16_t>(fl(i) & (kGuardPrev | kCooldownArmed));
    aborting = false;
    a.abort_requested_ = false;
    a.stopped_ = false;
    root_done(Status::Aborted);
}

// ---- leaves, timers, resumes ----------------------------------------------------------------------------

Status Runtime::run_update(NodeIndex n) {
    if (stopping) return Status::Running;
    advance(n);
    const ActionSpec& spec = *t.action_calls[n].spec;
    ActionContext ctx = action_context(n);
    Status s = Status::Failure;
    const bool ok = contained(n, [&] { s = spec.update(ctx); });
    return finish_update(n, ok, s);
}

Status Runtime::finish_update(NodeIndex n, bool ok, Status s) {
    if (stopping) return Status::Running;  // a listener on its Error event asked for an abort
    count_update();
    if (ok && s != Status::Running && s != Status::Success && s != Status::Failure) {
        emit(TraceKind::Error, n, Status::Failure, false, "update returned an invalid status");
        if (stopping) return Status::Running;
        s = Status::Failure;
    }
    if (!ok) s = Status::Failure;
    emit(TraceKind::Update, n, s);
    if (stop_requested()) return Status::Running;  // the leaf ends Aborted with the rest
    return s;
}

Outcome Runtime::leaf_outcome(NodeIndex n, Status s) {
    if (stopping) return Outcome::Running;
    if (s == Status::Running) {
        if (!has(n, kSuspended) && event_mode()) enqueue(n);  // updated again next frame (the walk has passed it)
        return Outcome::Running;
    }
    clear(n, kSuspended);
    terminate(n, s);
    return to_outcome(s);
}

Outcome Runtime::update_leaf(NodeIndex n) { return leaf_outcome(n, run_update(n)); }

void Runtime::step_leaf(NodeIndex n) { notify_parent(n, update_leaf(n)); }

void Runtime::notify_parent(NodeIndex n, Outcome o) {
    if (o == Outcome::Running) return;
    if (parent(n) == kNoNode) root_done(to_status(o));
    else child_done(parent(n), n, to_status(o), false);
}

void Runtime::arm_timer(NodeIndex n, TimePoint when) {
    deadline(n) = when;
    set(n, kTimerArmed);
    if (event_mode() && when < a.next_deadline_) a.next_deadline_ = when;
}

void Runtime::fire_timer(NodeIndex n) {
    if (stopping) return;
    const NodeDef& d = def(n);
    clear(n, kTimerArmed | kTimerDue);
    count_timer();
    switch (d.kind) {
    case NodeKind::Wait: complete(n, Status::Success); break;
    case NodeKind::Timeout:
        abort_range(static_cast<NodeIndex>(n + 1), d.end);
        complete(n, Status::Failure);
        break;
    case NodeKind::Delay: {
        const Outcome o = start_child(n, d.first_child);
        if (o != Outcome::Running) complete(n, to_status(o));
        break;
    }
    default: break;
    }
}

void Runtime::finish_resume(NodeIndex n) {
    if (stopping) return;
    const Status s = has(n, kResumeSuccess) ? Status::Success : Status::Failure;
    clear(n, kResumePending | kResumeSuccess | kSuspended);
    complete(n, s);
}

// A completed move's short paths (single_entry_tick calls them; docs/semantics.md, "A completed
// move"). Each does what the general functions named in its comments do in that case, with no trace
// listener to report to and no user code of the engine's own to run.

void Runtime::end_resumed_run(NodeIndex n) {
    end_resumed_run_in(a, t, node_flags, statuses, queue_entries, n);  // (runtime/move_ticks.hpp)
}

inline Runtime::PlanRestart Runtime::restart_on_plan(Agent& a, const TreeData& t, Duration dt, FrameMetrics* frame,
                                                     AgentHandle in_world) {
    const RootRestart& plan = t.root_restart;
    const std::byte* values = EngineAccess::raw_values(a.blackboard_);
    const RootRestart::Skipped* const first_skipped = plan.skipped.data();
    const RootRestart::Skipped* const end_skipped = first_skipped + plan.skipped_count;
    for (const RootRestart::Skipped* g = first_skipped; g != end_skipped; ++g)
        if (*reinterpret_cast<const bool*>(values + g->value_offset) == g->expected) return PlanRestart::GuardHolds;
#if defined(EBT_VALIDATE)
    {
        // (an EBT_VALIDATE build's checks of the places written below, as cursor(0) and mem() make them)
        Runtime checks(a);
        checks.check_memory_access(0, 0, sizeof(NodeIndex));
        if (plan.leaf_latent) checks.check_memory_access(plan.leaf, 0, 6);
    }
#endif
    std::byte* const b = reinterpret_cast<std::byte*>(a.block_.get());
    auto* const flags = reinterpret_cast<std::uint16_t*>(b + t.layout.flags_offset);
    auto* const statuses = reinterpret_cast<Status*>(b + t.layout.status_offset);
    // begin_pending(0), enter(0): the root runs (no guard of its own, nothing to report). enter's mask
    // clears the kStartPending that begin_pending clears; the root's mask here leaves out kQueued too,
    // which the pop cleared (restart_root_plainly) or leaves to this (restart_tick_checked).
    constexpr auto kKeptOnEntry = static_cast<std::uint16_t>(kGuardPrev | kGuardDirty | kCooldownArmed | kQueued);
    statuses[0] = Status::Running;
    flags[0] = static_cast<std::uint16_t>(flags[0] & kKeptOnEntry & ~kQueued);
    // selector_advance -> start_child -> eval_guard of each skipped child: false, counted.
    for (const RootRestart::Skipped* g = first_skipped; g != end_skipped; ++g)
        flags[g->node] = static_cast<std::uint16_t>(flags[g->node] & ~(kGuardPrev | kGuardDirty));
    a.stats_.guards_evaluated += plan.skipped_count;
    if (frame) frame->guards_evaluated += plan.skipped_count;
    // selector_advance's cursor(0) = leaf and start_child's advance(leaf): the walk is at the root
    // (0, the node just popped), and the leaf, a child of the root, comes after it.
    const NodeIndex leaf = plan.leaf;
    a.walk_pos_ = leaf;
    *reinterpret_cast<NodeIndex*>(b + plan.root_cursor_offset) = leaf;
    // From here on as selector_advance, enter(0) and begin_pending(0) go on. (selector_advance's
    // mark_lower_guards_live(0, leaf) after a leaf that runs has nothing to do here: the children
    // before the leaf are the skipped ones, whose kGuardDirty was cleared above, and a write during
    // the leaf's start that dirties one of their guards has already scheduled the check at the root
    // that mark_lower_guards_live would schedule: the guard is live then, wake_guard.)
    if (!plan.leaf_latent) return PlanRestart::EnterLeaf;
    // enter(leaf) of an unguarded latent action with no user memory, with no listener (so nothing to
    // report), in event mode, inside a tick and not stopping: its status and flags and the next run
    // id, then what its onInitialize (LatentStart) does: the run suspended and the start called with
    // the handle.
    std::uint16_t& leaf_flags = flags[leaf];
    statuses[leaf] = Status::Running;
    leaf_flags = static_cast<std::uint16_t>((leaf_flags & kKeptOnEntry) | kSuspended);
    // next_run_id(leaf): the 48-bit count of its runs, kept as three 16-bit words, moved on. The
    // upper word changes only when the lower 32 bits wrap.
    std::byte* const run_words = b + plan.leaf_run_id_offset;
    std::uint32_t low;
    std::uint16_t high;
    std::memcpy(&low, run_words, sizeof low);
    std::memcpy(&high, run_words + sizeof low, sizeof high);
    ++low;
    std::memcpy(run_words, &low, sizeof low);
    if (low == 0) [[unlikely]] {
        ++high;
        std::memcpy(run_words + sizeof low, &high, sizeof high);
    }
    const std::uint64_t run = std::uint64_t{high} << 32 | low;
    const ResumeHandle handle{in_world, a.serial_, leaf, run};  // suspension_handle(leaf, run)
    ActionContext ctx;  // make_action_context(a, t.action_calls[leaf], leaf, dt)
    ctx.agent_ = &a;
    ctx.ports_ = plan.leaf_ports;
    ctx.dt_ = dt;
    ctx.node_ = leaf;
    // contained(leaf, start), with the try here, so that the common path has no call of its own.
    try {
        plan.leaf_latent->start(ctx, handle);
    } catch (...) {
        report_start_error(a, leaf);
        return PlanRestart::Threw;
    }
    // The common end: no abort() is due and the run is still suspended (enter: Running). (The caller's
    // `stopping`, if it has a Runtime, is false until stop_requested sets it: the start has no way to it.)
    if (!a.abort_requested_ && (leaf_flags & kSuspended) != 0) [[likely]]
        return PlanRestart::Suspended;
    return PlanRestart::Started;
}

void Runtime::report_start_error(Agent& agent, NodeIndex n) {
    Runtime rt(agent);
    rt.contain_current_error(n);
}

bool Runtime::contain_current_error(NodeIndex n) {
    return contained(n, [] { throw; });  // the exception being handled, rethrown into contained's catches
}

Outcome Runtime::after_latent_start(NodeIndex n, bool ok) {
    // As enter goes on after the onInitialize.
    if (stop_requested()) return Outcome::Running;  // the node ends Aborted with the rest
    if (!ok) {
        terminate(n, Status::Failure);
        return Outcome::Failure;
    }
    if (has(n, kSuspended)) return Outcome::Running;
    return update_leaf(n);
}

bool Runtime::restart_root_plainly() {
    // The agent's handle in its host, for the leaf's start (suspension_handle's look-up, which changes nothing).
    const AgentHandle in_world = a.host_ && t.root_restart.leaf_latent ? a.host_->handle_of(a.host_slot_) : AgentHandle{};
    const PlanRestart r = restart_on_plan(a, t, dt, frame, in_world);
    if (r == PlanRestart::GuardHolds) return false;
    if (r != PlanRestart::Suspended) restart_after_plan(r);
    return true;
}

void Runtime::restart_after_plan(PlanRestart r) {
    const NodeIndex leaf = t.root_restart.leaf;
    const Outcome o = r == PlanRestart::EnterLeaf ? enter(leaf) : after_latent_start(leaf, r == PlanRestart::Started);
    if (o == Outcome::Running) return;  // (the next move suspended, or an abort is due)
    const Outcome root = o == Outcome::Success ? o : selector_advance(0, def(leaf).next_sibling);
    if (stopping) return;
    if (root != Outcome::Running) {
        terminate(0, to_status(root));
        if (!stopping) root_done(to_status(root));
    }
}

// A World's restart tick (world_restart_tick, runtime/move_ticks.hpp, has made world_tick's checks and
// found the root's start pending as the queue's one entry): single_work_tick's pop, entry_work's
// restart case and finish_tick, with restart_on_plan inline and no Runtime while the restart stays on
// its common path. Here, next to restart_on_plan, so that it can be inline.
[[gnu::noinline]] void Runtime::restart_tick_checked(Agent& a, std::uint64_t tick, TimePoint clock_after, Duration dt,
                                                     FrameMetrics& frame, AgentHandle in_world) {
    const TreeData& t = EngineAccess::tree_data(a.tree_);
    // A tree whose plan does not start its leaf itself (or that has no plan): the general path, which
    // enters the leaf through enter (or restarts the root through begin_pending).
    if (!t.root_restart.leaf_latent) return single_work_tick(a, tick, dt, frame);
#if defined(EBT_VALIDATE)
    if (a.host_ && a.host_->handle_of(a.host_slot_) != in_world)
        Runtime(a).report_broken("a World's restart tick", "the handle the World gave is not the agent's handle_of");
    Runtime(a).check_walk_order(0);
#endif
    TickScope scope(a.in_tick_);
    a.ticks_ = tick;
    a.clock_ = clock_after;
    std::byte* const b = reinterpret_cast<std::byte*>(a.block_.get());
    auto* const q = reinterpret_cast<std::uint16_t*>(b + t.layout.queue_offset);
    const std::uint32_t capacity = t.layout.queue_capacity;
    // single_entry_tick's pop of the queue's one node, the root, counted as visited. Its other two
    // writes are restart_on_plan's: its mask of the root's flags clears kQueued, and it moves the walk
    // from -1 to the leaf (past the root's 0); where it returns GuardHolds, having changed nothing,
    // restart_tick_went_on makes them.
    const std::uint32_t marker_at = a.queue_head_ + 1u;
    a.queue_head_ = static_cast<std::uint16_t>(marker_at == capacity ? 0u : marker_at);
    a.queue_size_ = 1;
    ++a.stats_.nodes_visited;
    ++frame.events_handled;
    const PlanRestart r = restart_on_plan(a, t, dt, &frame, in_world);
    if (r == PlanRestart::Suspended && a.queue_size_ == 1) [[likely]] {
        // entry_work's end (end_plain_restart_tick): nothing is queued for this tick, so the loop would
        // pop the marker and put it back at the end. Then finish_tick (no abort is due).
        const std::uint32_t after_marker = a.queue_head_ + 1u;
        a.queue_head_ = static_cast<std::uint16_t>(after_marker == capacity ? 0u : after_marker);
        q[a.queue_head_] = kQueueMarker;
        a.walk_pos_ = -1;
        ++a.ticks_;
#if defined(EBT_VALIDATE)
        Runtime(a).check_invariants("a tick");
#endif
        return;
    }
    restart_tick_went_on(a, dt, frame, r);
}

void Runtime::restart_tick_went_on(Agent& agent, Duration dt, FrameMetrics& frame, PlanRestart r) {
    Runtime rt(agent);
    rt.dt = dt;
    rt.frame = &frame;
    // entry_work's restart case from restart_root_plainly's return on.
    bool done = false;
    if (r == PlanRestart::GuardHolds) {
        rt.clear(0, kQueued);  // (the pop's, as above)
        agent.walk_pos_ = 0;
        rt.begin_pending(0);
    } else {
        if (r != PlanRestart::Suspended) rt.restart_after_plan(r);
        done = rt.end_plain_restart_tick();
    }
    if (!done) rt.event_loop();
    rt.finish_tick();
}

// ---- guard checks, aborts and switches -------------------------------------------------------------------

void Runtime::mark_lower_guards_live(NodeIndex p, NodeIndex current) {
    // Guards of higher-priority children become live for LowerPriority aborts now. A guard whose
    // last value is still current (nothing it reads changed since) is not re-evaluated; a dirty one
    // is re-checked when the walk next reaches the parent, where polling would find the change.
    if (!event_mode()) return;
    bool any = false;
    for (NodeIndex c = def(p).first_child; c != current; c = def(c).next_sibling) {
        const GuardDef* g = t.guard_of(c);
        if (g && has_lower(g->mode) && has(c, kGuardDirty)) any = true;
    }
    if (any) schedule_checks(p);
}

NodeIndex Runtime::live_guard_position(NodeIndex g) {
    const GuardDef* guard = t.guard_of(g);
    if (!guard) return kNoNode;
    // Self: live while the node runs, checked at the node's own position.
    if (has_self(guard->mode) && running(g)) return g;
    // LowerPriority: live while the parent runs a lower-priority child, checked at the parent's position.
    if (has_lower(guard->mode)) {
        const NodeIndex p = parent(g);
        if (p != kNoNode && running(p) && g < cursor(p)) return p;
    }
    return kNoNode;
}

void Runtime::self_cut(NodeIndex g) {
    abort_range(static_cast<NodeIndex>(g + 1), def(g).end);
    terminate(g, Status::Failure);
    if (parent(g) == kNoNode) root_done(Status::Failure);
    else child_done(parent(g), g, Status::Failure, true);
}

void Runtime::lower_priority_switch(NodeIndex p, NodeIndex h) {
    const NodeIndex current = cursor(p);
    abort_range(current, def(current).end);
    cursor(p) = h;
    // The guard just evaluated true stands for the branch: it is entered without re-evaluation.
    const Outcome o = enter(h);
    if (o == Outcome::Running) return;
    const NodeKind k = def(p).kind;
    Outcome r;
    if (k == NodeKind::PrioritySelector || k == NodeKind::NonPrioritySelector) r = o;
    else r = o == Outcome::Success ? Outcome::Success : selector_advance(p, def(h).next_sibling);
    if (r != Outcome::Running) complete(p, to_status(r));
}

// The guard checks at node n's position, in the order of docs/semantics.md ("The walk"). With
// only_dirty (event mode), a guard is evaluated only when something it reads changed since.
void Runtime::check_guards_at(NodeIndex n, bool only_dirty) {
    if (stopping || !running(n)) return;
    const NodeDef& d = def(n);
    // 1. The node's own Self guard: true -> false cuts the node.
    if (const GuardDef* g = t.guard_of(n); g && has_self(g->mode) && (!only_dirty || has(n, kGuardDirty))) {
        const bool prev = has(n, kGuardPrev);
        const bool now = eval_guard(n);
        if (stopping) return;
        if (!now && prev) {
            self_cut(n);
            return;
        }
    }
    // 2. A selector running a lower child: the LowerPriority guards of its higher children, in child
    //    order; the first false -> true edge switches.
    if (has_priority_order(d.kind)) {
        const NodeIndex current = cursor(n);
        for (NodeIndex c = d.first_child; c != kNoNode && c < current; c = def(c).next_sibling) {
            const GuardDef* g = t.guard_of(c);
            if (!g || !has_lower(g->mode) || (only_dirty && !has(c, kGuardDirty))) continue;
            const bool prev = has(c, kGuardPrev);
            const bool now = eval_guard(c);
            if (stopping) return;
            if (now && !prev) {
                lower_priority_switch(n, c);
                return;
            }
        }
    }
    // 3. A ReactiveSequence re-checks the conditions it has passed.
    if (d.kind == NodeKind::ReactiveSequence && d.has_reactive_conditions && (!only_dirty || has(n, kReactiveDirty))) {
        clear(n, kReactiveDirty);
        const NodeIndex current = cursor(n);
        for (NodeIndex c = d.first_body_child; c != kNoNode && c < current; c = def(c).next_sibling) {
            if (def(c).kind != NodeKind::Condition) continue;
            const bool holds = eval_condition_node(c, false);
            if (stopping) return;
            if (!holds) {
                abort_range(static_cast<NodeIndex>(n + 1), d.end);
                terminate(n, Status::Failure);
                if (parent(n) == kNoNode) root_done(Status::Failure);
                else child_done(parent(n), n, Status::Failure, true);
                return;
            }
        }
    }
}

}  // namespace ebt::detail
