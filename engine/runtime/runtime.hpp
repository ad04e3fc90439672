// Runtime: the engine's view of one agent while it runs (private to the engine).
//
// A Runtime is a short-lived object built on the stack for one tick or one API call. It holds
// references to the agent, its tree definition and its state block, and implements:
//   - the node semantics shared by both modes (semantics.cpp): entering nodes, reacting to a child's
//     end (the completion observers), guards, aborts, switches, timers and resumes;
//   - the polling walker (polling_walker.cpp): the reference, a top-down walk of the running nodes;
//   - the event scheduler (event_scheduler.cpp): the per-agent queue in tree order with its
//     end-of-frame marker, due timers and blackboard wake-ups.
// The walker and the scheduler share no scheduling code; both order work by `walk_pos`, the
// pre-order position the tick has reached (docs/semantics.md, "The walk").
#pragma once

#include "tree/tree_data.hpp"

#include <ebt/detail/agent_host.hpp>     // the host an agent tells of wakes (a World)
#include <ebt/detail/engine_access.hpp>  // Blackboard::raw_values for guards
#include <ebt/agent.hpp>
#include <ebt/assert.hpp>
#include <ebt/world.hpp>  // FrameMetrics: the frame counters a World's tick also counts into

#include <cstring>
#include <exception>
#include <limits>

namespace ebt::detail {

/// What happened when a parent tried to start a child.
enum class Outcome : std::uint8_t { Running, Success, Failure, Skipped };

inline constexpr std::uint16_t kQueueMarker = 0xFFFF;
inline constexpr TimePoint kNever = std::numeric_limits<TimePoint>::max();

/// Marks an agent as inside a tick for the duration of a scope (even when something throws): every
/// tick's entry (checked_tick, single_work_tick, world_tick) and the engine's other calls into user code.
struct TickScope {
    bool& flag;
    explicit TickScope(bool& f) : flag(f) { flag = true; }
    ~TickScope() { flag = false; }
};

struct Runtime {
    Agent& a;
    const TreeData& t;
    std::byte* b;
    // The state block's per-node arrays and scheduler queue, found from the layout once per Runtime
    // rather than at every access (null for a moved-from agent, whose block is gone).
    Status* const statuses;
    std::uint16_t* const node_flags;
    std::uint16_t* const queue_entries;
    const std::uint32_t queue_capacity;

    explicit Runtime(Agent& agent)
        : a(agent),
          t(EngineAccess::tree_data(agent.tree_)),
          b(reinterpret_cast<std::byte*>(agent.block_.get())),
          statuses(b ? reinterpret_cast<Status*>(b + t.layout.status_offset) : nullptr),
          node_flags(b ? reinterpret_cast<std::uint16_t*>(b + t.layout.flags_offset) : nullptr),
          queue_entries(b ? reinterpret_cast<std::uint16_t*>(b + t.layout.queue_offset) : nullptr),
          queue_capacity(t.layout.queue_capacity) {}

    // ---- state access --------------------------------------------------------------------------
    // In an EBT_VALIDATE build every access is checked against the block's bounds (validation.cpp).
    Status& st(NodeIndex n) {
        check_node_access(n);
        return statuses[n];
    }
    std::uint16_t& fl(NodeIndex n) {
        check_node_access(n);
        return node_flags[n];
    }
    bool has(NodeIndex n, std::uint16_t f) { return (fl(n) & f) != 0; }
    void set(NodeIndex n, std::uint16_t f) { fl(n) = static_cast<std::uint16_t>(fl(n) | f); }
    void clear(NodeIndex n, std::uint16_t f) { fl(n) = static_cast<std::uint16_t>(fl(n) & ~f); }
    template <class T> T& mem(NodeIndex n, std::uint32_t offset = 0) {
        check_memory_access(n, offset, sizeof(T));
        return *reinterpret_cast<T*>(b + t.nodes[n].memory_offset + offset);
    }
    NodeIndex& cursor(NodeIndex n) { return mem<NodeIndex>(n); }
    /// An action's run id, counting its runs: 48 bits kept as three 16-bit words at the start of its
    /// node memory (2-byte aligned, so that an action without user memory costs 6 bytes). A
    /// ResumeHandle carries it; a handle of an earlier run never matches (2^48 runs of one action
    /// in one agent, at one a frame at 60 Hz, take 148,000 years).
    std::uint64_t run_id(NodeIndex n) {
        const std::uint16_t* w = &mem<std::uint16_t>(n);
        return std::uint64_t{w[0]} | std::uint64_t{w[1]} << 16 | std::uint64_t{w[2]} << 32;
    }
    /// Moves action n's run id on (a new run begins) and returns the new id.
    std::uint64_t next_run_id(NodeIndex n) {
        const std::uint64_t id = run_id(n) + 1;
        std::uint16_t* w = &mem<std::uint16_t>(n);
        w[0] = static_cast<std::uint16_t>(id);
        w[1] = static_cast<std::uint16_t>(id >> 16);
        w[2] = static_cast<std::uint16_t>(id >> 32);
        return id & 0xFFFF'FFFF'FFFF;  // (what run_id(n) reads back: 48 bits)
    }
    TimePoint& deadline(NodeIndex n) { return mem<TimePoint>(n); }
    std::uint16_t* queue() { return queue_entries; }
    bool event_mode() const { return a.mode_ == Mode::Event; }
    const NodeDef& def(NodeIndex n) const { return t.nodes[n]; }
    NodeIndex parent(NodeIndex n) const { return t.nodes[n].parent; }
    bool running(NodeIndex n) { return st(n) == Status::Running; }
    void advance(NodeIndex n) {
        if (a.walk_pos_ < static_cast<std::int32_t>(n)) a.walk_pos_ = n;
    }
    bool passed(NodeIndex n) const { return static_cast<std::int32_t>(n) <= a.walk_pos_; }
    /// The deadline `d` after the agent's clock, saturated: a deadline past the clock's range never comes.
    TimePoint after(std::int64_t d) const { return d > kNever - a.clock_ ? kNever : a.clock_ + d; }

    // ---- counting ------------------------------------------------------------------------------------
    // Every count goes to the agent's stats (totals since creation) and, during a tick a World runs, to
    // that World's frame metrics too (`frame`), so that the World need not read the counters before
    // and after each tick.
    void count_update() {
        ++a.stats_.updates;
        if (frame) ++frame->behaviors_updated;
    }
    void count_guard() {
        ++a.stats_.guards_evaluated;
        if (frame) ++frame->guards_evaluated;
    }
    void count_visit() {
        ++a.stats_.nodes_visited;
        if (frame) ++frame->events_handled;
    }
    void count_timer() {
        ++a.stats_.timers_fired;
        if (frame) ++frame->timers_fired;
    }

    // ---- tracing and user calls ------------------------------------------------------------------
    /// Reports to the agent's trace listener; costs one test when there is none.
    void emit(TraceKind kind, NodeIndex n, Status s = Status::Invalid, bool result = false, std::string_view msg = {}) {
        if (a.listener_ && !stopping) emit_to_listener(kind, n, s, result, msg);
    }
    void emit_to_listener(TraceKind kind, NodeIndex n, Status s, bool result, std::string_view msg);
    /// Asked where user code returns into the engine during a tick: whether an Agent::abort() called
    /// during the tick is to be carried out now. It sets `stopping`, and the tick then does nothing more
    /// (see `stopping`).
    bool stop_requested() {
        if (a.abort_requested_ && a.in_tick_ && !aborting) stopping = true;
        return stopping;
    }
    template <class F> bool contained(NodeIndex n, F&& f);
    ActionContext action_context(NodeIndex n) { return make_action_context(a, t.action_calls[n], n, dt); }
    /// The context of action node `n` of `agent` (`call`: the node's record in its tree's
    /// TreeData::action_calls) for a tick of `tick_dt`: what every call of an action's functions
    /// receives. Static so that world_tick's lean path, which builds no Runtime, makes the same one.
    /// (The user memory is found when the action asks for it: ActionContext::user_memory.)
    static ActionContext make_action_context(Agent& agent, const ActionCall& call, NodeIndex n, Duration tick_dt) {
        ActionContext ctx;
        ctx.agent_ = &agent;
        ctx.ports_ = &call.ports;
        ctx.dt_ = tick_dt;
        ctx.node_ = n;
        return ctx;
    }

    // ---- shared node semantics (semantics.cpp) ------------------------------------------------------
    Outcome start_child(NodeIndex parent, NodeIndex child);    // evaluates the child's guard, enters it
    Outcome restart_child(NodeIndex parent, NodeIndex child);  // Repeat/Retry/Loop: next tick if passed
    Outcome enter(NodeIndex n);
    void begin_pending(NodeIndex n);
    void terminate(NodeIndex n, Status s);
    void complete(NodeIndex n, Status s);
    void child_done(NodeIndex p, NodeIndex c, Status s, bool cut);
    void root_done(Status s);
    void abort_range(NodeIndex first, NodeIndex end);
    void abort_all();
    Outcome sequence_advance(NodeIndex p, NodeIndex from);
    Outcome selector_advance(NodeIndex p, NodeIndex from);
    Outcome priority_select(NodeIndex p);
    Outcome random_advance(NodeIndex p, std::uint16_t from_rank);
    Outcome parallel_react(NodeIndex p, bool all_started);
    bool is_body_child(NodeIndex p, NodeIndex c) const {
        return def(p).kind != NodeKind::Monitor || def(c).kind != NodeKind::Condition;
    }
    Outcome decorator_react(NodeIndex p, NodeIndex c, Status s);
    Outcome update_leaf(NodeIndex n);  // returns the outcome; the caller reacts
    void step_leaf(NodeIndex n);       // updates a running leaf and notifies its parent when it ends
    Status run_update(NodeIndex n);    // update_leaf's first half: the user's update, counted and traced
    /// run_update's part after the user's update returned `s` (ok) or threw (not ok, its Error event
    /// already emitted): counted, checked and traced. world_tick's lean path goes on here.
    Status finish_update(NodeIndex n, bool ok, Status s);
    Outcome leaf_outcome(NodeIndex n, Status s);  // its second half: re-queue, or end the leaf
    void notify_parent(NodeIndex n, Outcome o);   // step_leaf's reaction to an ended leaf
    /// The handle of action n's current run, suspended: ActionContext::suspend's result, and what
    /// enter gives a latent action's start (its agent's handle in its host, if it has one).
    /// (`run`: run_id(n), when the caller has it.)
    ResumeHandle suspension_handle(NodeIndex n) { return suspension_handle(n, run_id(n)); }
    ResumeHandle suspension_handle(NodeIndex n, std::uint64_t run) {
        const AgentHandle in_world = a.host_ ? a.host_->handle_of(a.host_slot_) : AgentHandle{};
        return ResumeHandle{in_world, a.serial_, n, run};
    }
    void fire_timer(NodeIndex n);
    void finish_resume(NodeIndex n);
    /// A completed move's two short paths (docs/semantics.md, "A completed move"), for an event agent
    /// without a trace listener; each leaves exactly the state, counts and queue of the general path.
    /// end_resumed_run: the resumed action `n` (popped by single_entry_tick, the queue's one entry;
    /// NodeDef::success_ends_root, no onTerminate) ends Success, its ancestors and the root with it.
    void end_resumed_run(NodeIndex n);
    /// The root's pending restart (popped by single_entry_tick) through TreeData::root_restart: false,
    /// with nothing changed, when one of the skipped guards holds (the general path runs then).
    /// restart_on_plan, then restart_after_plan unless the common end was reached.
    bool restart_root_plainly();
    /// What restart_on_plan did, and so what is left of the restart for its caller.
    enum class PlanRestart : std::uint8_t {
        GuardHolds,  // a skipped guard holds: nothing was changed (begin_pending restarts the root)
        Suspended,   // the common end: the latent leaf's start returned, no abort() is due, the run is
                     // still suspended (enter's Running: nothing is left)
        Started,     // the start returned otherwise (an abort() due, the run resumed): after_latent_start(leaf, true)
        Threw,       // the start threw, reported (an Error event): after_latent_start(leaf, false)
        EnterLeaf,   // the leaf is not one whose start the plan calls itself: enter(leaf)
    };
    /// The root's restart through the plan, given the agent (no Runtime needed): the skipped guards
    /// read (GuardHolds, nothing changed, when one holds); else begin_pending(0), enter(0) and
    /// selector_advance's evaluation of the skipped guards (false, counted in the agent's stats and in
    /// `frame` when there is one), then, for a latent leaf with no user memory (RootRestart::leaf_latent),
    /// enter(leaf) up to its start's return: the run id moved on, the run suspended, the start called
    /// with the handle {in_world, serial, leaf, run}. For an event agent without a trace listener,
    /// inside a tick, not stopping, whose root was just popped (walk position 0). `in_world`: the
    /// agent's handle in its host (AgentHost::handle_of), or AgentHandle{} without one. Always inline:
    /// the body of restart_root_plainly (the general path's pop) and of restart_tick_checked (a World's
    /// restart tick, which builds no Runtime unless the restart leaves the common path).
    [[gnu::always_inline]] static inline PlanRestart restart_on_plan(Agent& agent, const TreeData& tree, Duration dt,
                                                                     FrameMetrics* frame, AgentHandle in_world);
    /// The rest of the restart when restart_on_plan returned `r` (not GuardHolds or Suspended): enter's
    /// end (enter(leaf), or after_latent_start), and when the leaf did not stay running,
    /// selector_advance to the next child and the root's end if the selector ends. Out of line: the
    /// common path does not need it.
    [[gnu::noinline]] void restart_after_plan(PlanRestart r);
    /// entry_work's end of a tick whose first pop restarted the root through the plan: when nothing
    /// is queued for this tick and no abort() is due, the loop's last step (the marker popped and put
    /// back at the end) done here, and true (the tick is done); false when the loop must run.
    bool end_plain_restart_tick() {
        if (stopping || a.queue_size_ != 1) return false;
        a.queue_head_ = static_cast<std::uint16_t>(queue_slot(1));
        queue()[a.queue_head_] = kQueueMarker;
        return true;
    }
    /// enter's end after the onInitialize (or the latent start) of action `n` returned (`ok`) or threw:
    /// an abort() due is carried out, a start that threw ends the action Failure, a run no longer
    /// suspended is updated. Out of line, so that restart_on_plan's callers keep few values across
    /// the start: enter and restart_after_plan.
    [[gnu::noinline]] Outcome after_latent_start(NodeIndex n, bool ok);
    /// Called from a catch block: reports the exception being handled as contained(n, ...) reports
    /// what its function threw (an Error event), and returns false, as contained does.
    [[gnu::noinline]] bool contain_current_error(NodeIndex n);
    void arm_timer(NodeIndex n, TimePoint when);
    /// A predicate's value (owner: where errors are reported). The common guard, one bool key
    /// against its expected value (`check(key)`, a leading condition), is read here straight from the
    /// blackboard; anything else runs the evaluation stack (eval_predicate_stack).
    bool eval_predicate(PredRange range, NodeIndex owner) {
        if (stopping) return false;
        if (range.count == 0) return true;
        const PredInstr& only = t.predicates[range.first];
        if (range.count == 1 && only.op == PredOp::KeyIs)
            return *reinterpret_cast<const bool*>(EngineAccess::raw_values(a.blackboard_) +
                                                  t.schema.info(static_cast<KeyId>(only.arg)).offset) == only.expected;
        return eval_predicate_stack(range, owner);
    }
    bool eval_predicate_stack(PredRange range, NodeIndex owner);
    bool eval_guard(NodeIndex g);
    bool eval_condition_node(NodeIndex c, bool as_step);
    bool cooling(NodeIndex n);
    void check_guards_at(NodeIndex n, bool only_dirty);
    NodeIndex live_guard_position(NodeIndex g);  // where g's guard is live now, or kNoNode
    void self_cut(NodeIndex g);
    void lower_priority_switch(NodeIndex p, NodeIndex h);
    void mark_lower_guards_live(NodeIndex p, NodeIndex current);
    NodeIndex nth_child(NodeIndex p, std::size_t i) const;

    // ---- polling walker (polling_walker.cpp) ---------------------------------------------------------
    void poll_tick();
    void walk(NodeIndex n);

    // ---- event scheduler (event_scheduler.cpp) --------------------------------------------------------
    void event_tick();
    bool single_entry_tick();  // the tick of a queue holding one node: true when the tick is done
    bool single_entry_work(NodeIndex n, std::uint16_t work);  // its node's work other than a plain update
    /// single_entry_work's body: always inline, so that a World's move tick (single_work_tick) has it
    /// in its own body, without a second call and its saved registers (single_entry_tick calls it
    /// through single_entry_work, out of line, to keep the quiet tick's path short).
    [[gnu::always_inline]] inline bool entry_work(NodeIndex n, std::uint16_t work);
    /// single_entry_tick's end after the update of its running action `n` returned `s` (`head`: where
    /// the queue's head was before `n` was popped). True when the tick is done; otherwise event_loop()
    /// pops what is left of this tick's queue.
    bool single_update_done(NodeIndex n, std::uint16_t head, Status s);
    /// Pops and processes this tick's entries up to the end-of-frame marker. Defined here so that
    /// event_tick keeps it inline; the lean World tick's continuation (agent.cpp) calls it too.
    void event_loop() {
        std::uint16_t* q = queue();
        // An abort() due during the tick (stopping) ends the loop; Agent::tick carries it out and puts
        // the marker back.
        while (!stopping) {
            const std::uint16_t n = q[a.queue_head_];
            a.queue_head_ = static_cast<std::uint16_t>(queue_slot(1));
            --a.queue_size_;
            if (n == kQueueMarker) {
                q[queue_slot(a.queue_size_)] = kQueueMarker;  // the marker goes back at the end
                ++a.queue_size_;
                return;
            }
            process(n);
        }
    }
    /// The end of every tick: an abort() asked for during it carried out, the walk position and tick
    /// count moved on. Returns the root's status. Inline (every tick's entry ends with it); the abort's
    /// part is out of line.
    Status finish_tick() {
        if (stopping) [[unlikely]] finish_stopped_tick();
        a.walk_pos_ = -1;
        ++a.ticks_;
        check_invariants("a tick");
        return st(0);  // the root's status (the block is known to be there: no checks needed)
    }
    /// finish_tick's part when an abort() called during the tick is due (stopping): carried out where
    /// user code returned, and the end-of-frame marker put back at the end of the queue.
    void finish_stopped_tick();
    /// A tick of `agent` once tick_numbered's checks have passed: the clock and tick number moved on,
    /// the mode's tick run, finish_tick(). tick_numbered and the lean World tick's fallback call it.
    static Status checked_tick(Agent& agent, std::uint64_t tick, Duration dt, FrameMetrics* frame);
    /// checked_tick of a World's agent in event mode, without a listener, not stopped, with no deadline
    /// due and its queue [n, marker] (world_tick has checked all that): n's work other than a plain
    /// update, through single_entry_work (a move's two ticks), without those checks made again.
    static void single_work_tick(Agent& agent, std::uint64_t tick, Duration dt, FrameMetrics& frame);
    /// A World's tick of `agent` (World::tick_agent, for the single-threaded loop and the parallel
    /// tasks): the same as agent.tick_numbered(tick, dt, &frame) in every effect and error, with a lean
    /// path for the quiet event-mode tick whose only work is updating its running action again.
    /// Returns true when it was that quiet tick: the agent then has its action queued for its next
    /// tick (has_pending_work() is true), so the World need not ask; and the tick is not counted in
    /// `frame` (the World counts it: an agent stepped, an event handled, a behavior updated). Defined in runtime/world_tick.hpp,
    /// inline, so that the World's loops have it in their own body.
    static bool world_tick(Agent& agent, std::uint64_t tick, Duration dt, FrameMetrics& frame);
    /// A World's two move ticks, entered from its loops when the slot's hint (World::SlotSchedule::
    /// move_hint) names one (docs/benchmarks.md, "A move through a World", sixth and seventh passes).
    /// Each first checks that the tick is exactly the one world_tick would hand to single_work_tick
    /// with that node and work, and declines with nothing changed when it is not (the caller then
    /// ticks through world_tick); otherwise it does what single_work_tick would, counts included
    /// (agents_stepped is the caller's, as for every tick that is not quiet). Defined in
    /// runtime/move_ticks.hpp.
    /// What world_end_move_tick did: declined (nothing changed), or ended the run with the root's
    /// restart queued (the agent has work pending: the restart is its next tick) or without (an agent
    /// that does not restart is stopped).
    enum class MoveEndTick : std::uint8_t { Declined, RestartQueued, RunEnded };
    /// world_end_move_tick: the queue's one node is a suspended action resumed with Success that ends
    /// the run (entry_work's end_resumed_run case): the tick ends it, and the root's restart is queued.
    static MoveEndTick world_end_move_tick(Agent& agent, std::uint64_t tick, Duration dt, FrameMetrics& frame);
    /// world_restart_tick: the queue's one node is the root with its start pending (entry_work's
    /// restart_root_plainly case, or begin_pending's when the tree has no plan); the tick goes on out of
    /// line (restart_tick_checked). `in_world`: the agent's handle in the World (handle_of(slot): the
    /// World's loops have the slot's generation at hand, and the agent is live).
    static bool world_restart_tick(Agent& agent, std::uint64_t tick, Duration dt, FrameMetrics& frame, AgentHandle in_world);
    /// The checks both move entries share, world_tick's up to its queue's head: the node that is the
    /// queue's one entry when the tick is one world_tick hands to single_work_tick (or would, for its
    /// node's work), else kQueueMarker. `clock_after` is the agent's clock after the tick. Changes nothing.
    static NodeIndex move_tick_node(const Agent& agent, std::uint64_t tick, Duration dt, TimePoint& clock_after);
    /// move_tick_node's findings: the node (kQueueMarker when the tick is not a move tick), the
    /// queue's head (where that node is) and the agent's clock after the tick.
    struct MoveTickStart {
        NodeIndex node = kQueueMarker;
        std::uint16_t head = 0;
        TimePoint clock_after = 0;
    };
    /// move_tick_node, with the head: for world_end_move_tick, which pops the node without reading
    /// the head again.
    static MoveTickStart move_tick_start(const Agent& agent, std::uint64_t tick, Duration dt);
    /// world_restart_tick's tick once its checks passed (`clock_after`: the agent's clock after it):
    /// what single_work_tick does with the root's pending start, without a Runtime on its common path
    /// (restart_on_plan inline: the root restarted, the next move started and suspended, nothing else
    /// queued). A Runtime is built only where the restart leaves that path (restart_tick_went_on), and
    /// a tree whose plan does not start the leaf itself goes through single_work_tick. Out of line in
    /// semantics.cpp, next to restart_on_plan.
    static void restart_tick_checked(Agent& agent, std::uint64_t tick, TimePoint clock_after, Duration dt,
                                     FrameMetrics& frame, AgentHandle in_world);
    /// restart_tick_checked's continuation where the restart left the common path (`r`, not
    /// Suspended; or Suspended with work queued for this tick): a Runtime built for the rest of
    /// entry_work's restart case, event_loop and finish_tick. Out of line.
    [[gnu::noinline]] static void restart_tick_went_on(Agent& agent, Duration dt, FrameMetrics& frame, PlanRestart r);
    /// restart_on_plan's catch: reports the exception being handled for action `n` through a Runtime
    /// of the agent (contain_current_error). Its `stopping` is not kept: after_latent_start, which
    /// comes next, asks stop_requested() again and finds the same answer.
    [[gnu::noinline]] static void report_start_error(Agent& agent, NodeIndex n);
    /// end_resumed_run's body, given the block's arrays: shared by the member (the general path) and
    /// world_end_move_tick, which builds no Runtime.
    static void end_resumed_run_in(Agent& a, const TreeData& t, std::uint16_t* flags, Status* statuses,
                                   std::uint16_t* queue, NodeIndex n);
    /// end_resumed_run_in with the marker's place given (world_end_move_tick has it from the head it
    /// read): the queue holds the marker alone, at `marker_at`. Returns true when the root's restart
    /// was queued (Agent::restart_on_end_), false when the agent stopped.
    static bool end_resumed_run_at(Agent& a, const TreeData& t, std::uint16_t* flags, Status* statuses,
                                   std::uint16_t* queue, NodeIndex n, std::uint32_t marker_at);
    /// world_end_move_tick's common end of the run, end_resumed_run_at's work when the agent restarts
    /// on the end, the action `n` is a child of the root and the queue's places head + 1 to head + 3
    /// do not wrap (the queue holds n at `head` and the marker behind it): the same bytes written with
    /// fewer stores and no walk up the tree.
    static void end_run_of_root_child(Agent& a, std::uint16_t* flags, Status* statuses, std::uint16_t* queue,
                                      NodeIndex n, std::uint32_t head);
    /// The end of a lean tick (world_tick's quiet tick and world_end_move_tick, which build no
    /// Runtime), as finish_tick ends a tick in which no abort is due: the walk's position back to
    /// "between ticks", the tick counted, the invariants checked in an EBT_VALIDATE build.
    static void finish_lean_tick(Agent& a) {
        a.walk_pos_ = -1;
        ++a.ticks_;
#if defined(EBT_VALIDATE)
        Runtime(a).check_invariants("a tick");
#endif
    }
    /// Asks the cache for the line of the agent's state block that its quiet tick reads first (the
    /// queue, where the leaf's flags end: docs/benchmarks.md, "The wide tree's hot line"). Changes
    /// nothing. For the World's loops, a few awake agents ahead of the one they tick, in worlds whose
    /// blocks are large enough that the hardware does not fetch them ahead by itself
    /// (World::prefetch_blocks_).
    /// Asks the cache for the first two lines of the agent's state block (the guard tree's 96-byte
    /// block lies in two lines wherever it starts): for the World's loops, the next awake agent of a
    /// sparse frame (detail::prefetch_slot). Changes nothing.
    static void prefetch_block_head(const Agent& agent) noexcept {
        if (const auto* block = reinterpret_cast<const char*>(agent.block_.get())) {
            __builtin_prefetch(block);
            __builtin_prefetch(block + 64);
        }
    }
    static void prefetch_quiet_line(const Agent& agent) noexcept {
        if (const auto* block = reinterpret_cast<const char*>(agent.block_.get()))
            __builtin_prefetch(block + EngineAccess::tree_data(agent.tree_).layout.queue_offset);
    }
    /// world_tick's continuation when the update of the quiet tick it began did anything but return
    /// Running with nothing else changed: on through the general path from the update's return
    /// (finish_update, single_update_done, event_loop, finish_tick). What the update threw, if it
    /// threw, is what keep_world_update_error kept (this call takes it).
    static void finish_world_update(Agent& agent, NodeIndex n, std::uint16_t head, Status s, Duration dt,
                                    FrameMetrics& frame);
    /// world_tick's catch of the update: keeps the exception being handled for finish_world_update, in
    /// a per-thread place (null at all other times), so that the lean path holds no exception_ptr of
    /// its own (its construction and destruction were on every quiet tick).
    static void keep_world_update_error() noexcept;
    /// Work flags that keep a queued node from being a plain per-frame update.
    static constexpr std::uint16_t kPendingWork = kStartPending | kChecksDirty | kTimerDue | kResumePending | kSuspended;
    void process(NodeIndex n);   // pops' bookkeeping (walk position, counts), then the node's work
    void dispatch(NodeIndex n);  // a popped node's work other than a plain update: start, checks, timer, resume
    void collect_due_timers();
    void enqueue(NodeIndex n);           // this frame if the walk has not passed n, else next frame
    /// enqueue's insertion in tree order (n marked queued, the host told). Always inline (defined in
    /// runtime/resume_run.hpp): it is the body of enqueue (a write's wake-up) and of resume_run, and a
    /// call would cost both.
    [[gnu::always_inline]] inline void place_in_queue(NodeIndex n);
    /// place_in_queue's insertion when n goes neither behind the last entry nor in front of the first:
    /// the scan for its place, then queue_insert. Out of line, and given the agent rather than a
    /// Runtime, so that the inline callers need not keep theirs in memory for it.
    static void place_in_order(Agent& agent, NodeIndex n);
    /// Agent::resume's work once the handle's serial is known to be this agent's and the status is
    /// Success or Failure: false, with nothing changed, unless the handle names a suspended run of an
    /// action that was not resumed yet; otherwise the resume is marked and (event mode) the action
    /// queued as enqueue() queues it, except that the host is not told: `wake` is set instead when
    /// the work comes from outside the agent's tick (enqueue would tell the host, if the agent has
    /// one), and the caller tells its host.
    /// Inline (runtime/resume_run.hpp): Agent::resume and World::resume_all have it in their bodies.
    inline bool resume_run(const ResumeHandle& handle, Status status, bool& wake);
    /// What resume_suspended did: refused the handle (nothing changed), or accepted it, with or without
    /// a wake that the agent's host is to be told of (enqueue would tell it, if the agent has one).
    enum class ResumeOutcome : std::uint8_t { Refused, Accepted, AcceptedWake };
    /// The node flags a resume with `status` (Success or Failure) sets: resume_suspended's argument,
    /// computed once per call by World::resume_all for all its handles.
    static constexpr std::uint16_t resume_flags(Status status) noexcept {
        return static_cast<std::uint16_t>(status == Status::Success ? kResumePending | kResumeSuccess : kResumePending);
    }
    /// resume_run's work given the agent (no Runtime built): called by resume_run (Agent::resume,
    /// World::resume) and by World::resume_all for each handle whose checks the World has made (the
    /// agent live in it, the handle's serial this agent's); `resume_flags` is resume_flags(status).
    /// Inline (runtime/resume_run.hpp), in the World's loop.
    static inline ResumeOutcome resume_suspended(Agent& agent, const ResumeHandle& handle, std::uint16_t resume_flags);
    /// resume_suspended's queue placement when the action does not go in front of everything queued
    /// (the agent has other work queued, or the walk has passed the node): place_in_queue, and the
    /// outcome. Out of line (event_scheduler.cpp), so that the inline callers keep nothing across it.
    static ResumeOutcome place_resumed(Agent& agent, NodeIndex n);
    /// World::resume_all's prefetch for an agent it resumes a few handles later, once its slot's lines
    /// are there (the World fetches those itself, world.cpp): the first lines of its state block,
    /// which resume_suspended reads. Changes nothing.
    static inline void prefetch_block_for_resume(const Agent& agent) noexcept;
    void dequeue(NodeIndex n);
    void queue_reset();
    void queue_insert(std::uint16_t logical, std::uint16_t value);
    void queue_remove_at(std::uint16_t logical);
    /// Physical index of the `logical`-th queue entry (logical < capacity, so one wrap at most).
    std::uint32_t queue_slot(std::uint32_t logical) const {
        const std::uint32_t i = a.queue_head_ + logical;
        return i >= queue_capacity ? i - queue_capacity : i;
    }
    std::uint16_t queue_at(std::uint16_t logical) { return queue()[queue_slot(logical)]; }
    void on_key_changed(KeyId key);
    void wake_guard(NodeIndex g);
    void schedule_checks(NodeIndex position);  // guard checks at `position` are due: queue it
    void wake_reactive(NodeIndex rs);

    // ---- validation (validation.cpp) -------------------------------------------------------------------
    /// Checks the scheduler's invariants (queue bounds, one end-of-frame marker, tree order, every queued
    /// node entitled to be, every running action queued, deadlines, walk position) and reports the first
    /// broken one through the assert hook, saying it was found after `after`. Every build has it.
    void validate(std::string_view after);
    /// validate() in an EBT_VALIDATE build (after each tick and scheduler operation); nothing otherwise.
    void check_invariants([[maybe_unused]] std::string_view after) {
#if defined(EBT_VALIDATE)
        validate(after);
#endif
    }
    void check_node_access([[maybe_unused]] NodeIndex n) const {
#if defined(EBT_VALIDATE)
        if (n >= t.nodes.size()) [[unlikely]]
            bad_node_access(n);
#endif
    }
    void check_memory_access([[maybe_unused]] NodeIndex n, [[maybe_unused]] std::uint32_t offset,
                             [[maybe_unused]] std::size_t size) const {
#if defined(EBT_VALIDATE)
        // An access within the node's own memory (NodeDef::memory_bytes; none for a node without any).
        if (n >= t.nodes.size()) [[unlikely]]
            return bad_node_access(n);
        if (offset + size > t.nodes[n].memory_bytes) [[unlikely]]
            bad_memory_access(n, offset, size);
#endif
    }
    /// The event scheduler pops nodes in tree order: a node the walk has passed is not processed again.
    void check_walk_order([[maybe_unused]] NodeIndex n) const {
#if defined(EBT_VALIDATE)
        if (static_cast<std::int32_t>(n) <= a.walk_pos_) [[unlikely]]
            walked_backwards(n);
#endif
    }
    void report_broken(std::string_view after, const std::string& what);
    void bad_node_access(NodeIndex n) const;
    void bad_memory_access(NodeIndex n, std::uint32_t offset, std::size_t size) const;
    void walked_backwards(NodeIndex n) const;

    bool aborting = false;  // abort_all() is running: an abort() from its onTerminate calls is not repeated
    /// An abort() requested during this tick is due (stop_requested()). From then on every function that
    /// enters, updates, evaluates, terminates or reports something returns at once with a neutral result
    /// (Outcome::Running: "nothing more now"), and every scheduling loop ends, so that the tick returns
    /// to Agent::tick without anything observable happening; Agent::tick then calls abort_all().
    bool stopping = false;
    Duration dt{0};  // the tick's dt (ActionContext::dt); 0 for calls outside a tick
    /// The frame metrics of the World running this tick (its thread's, when it has several), which
    /// the count_* functions add to; nullptr outside a World's tick. Only the tick's own Runtime has
    /// it: every count of a tick is made through that one (other Runtimes built during a tick, for a
    /// blackboard write or a resume, count nothing).
    FrameMetrics* frame = nullptr;
    /// When set, validate() stores the first broken invariant here instead of reporting it through the
    /// assert hook: for state the engine did not make itself (a restored snapshot, engine/snapshot).
    std::string* broken_invariant = nullptr;
};

template <class F> bool Runtime::contained(NodeIndex n, F&& f) {
    try {
        f();
        return true;
    } catch (const std::exception& e) {
        emit(TraceKind::Error, n, Status::Failure, false, e.what());
    } catch (...) {
        emit(TraceKind::Error, n, Status::Failure, false, "unknown exception");
    }
    return false;
}

}  // namespace ebt::detail
