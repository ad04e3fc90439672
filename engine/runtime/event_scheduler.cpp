// The event scheduler: each agent's queue of nodes with work, kept in tree (pre-order) order.
//
// The queue is a ring buffer of node indices holding BTSK's end-of-frame marker. Entries before the
// marker are this frame's work, entries after it the next frame's. A tick pops entries until it pops
// the marker, which it pushes back at the end: the next frame's entries become the current ones.
// A node is queued at most once. New work is inserted in order: in front of the marker when the
// tick's walk has not yet passed the node (it happens this tick), behind it otherwise.
// Work for a node: a deferred start, dirty guard checks at its position (its own Self guard, its
// children's LowerPriority guards, its reactive conditions), a due timer, a resume, or (for a running
// leaf that is not waiting) its per-frame update; waiting nodes are not queued at all.
#include "runtime/resume_run.hpp"  // place_in_queue, enqueue's insertion

#include <string>

namespace ebt::detail {

void Runtime::queue_reset() {
    for (NodeIndex i = 0; i < t.nodes.size(); ++i) clear(i, kQueued);
    a.queue_head_ = 0;
    a.queue_size_ = 1;
    queue()[0] = kQueueMarker;
}

void Runtime::queue_insert(std::uint16_t logical, std::uint16_t value) {
    EBT_ASSERT(a.queue_size_ < queue_capacity && logical <= a.queue_size_,
               "scheduler queue overflow: inserting at " + std::to_string(logical) + " into a queue of " +
                   std::to_string(a.queue_size_) + " entries (capacity " + std::to_string(t.layout.queue_capacity) + ")");
    std::uint16_t* q = queue();
    if (logical == 0) {
        // In front of everything (a wake-up from outside the tick, before the marker): the ring's
        // head steps back one slot instead of every entry stepping forward.
        a.queue_head_ = static_cast<std::uint16_t>(a.queue_head_ == 0 ? queue_capacity - 1u : a.queue_head_ - 1u);
        q[a.queue_head_] = value;
        ++a.queue_size_;
        return;
    }
    for (std::uint16_t i = a.queue_size_; i > logical; --i) q[queue_slot(i)] = q[queue_slot(i - 1u)];
    q[queue_slot(logical)] = value;
    ++a.queue_size_;
}

void Runtime::queue_remove_at(std::uint16_t logical) {
    EBT_ASSERT(logical < a.queue_size_, "scheduler queue: removing entry " + std::to_string(logical) + " of " +
                                            std::to_string(a.queue_size_));
    if (logical == 0) {  // the front entry: the head steps forward instead of every entry back
        a.queue_head_ = static_cast<std::uint16_t>(queue_slot(1));
        --a.queue_size_;
        return;
    }
    std::uint16_t* q = queue();
    for (std::uint16_t i = logical; i + 1 < a.queue_size_; ++i) q[queue_slot(i)] = q[queue_slot(i + 1u)];
    --a.queue_size_;
}

void Runtime::place_in_order(Agent& agent, NodeIndex n) {
    Runtime rt(agent);
    std::uint16_t i = 0;
    if (!rt.passed(n)) {
        while (rt.queue_at(i) != kQueueMarker && rt.queue_at(i) < n) ++i;
    } else {
        while (rt.queue_at(i) != kQueueMarker) ++i;
        ++i;
        while (i < agent.queue_size_ && rt.queue_at(i) < n) ++i;
    }
    rt.queue_insert(i, n);
}

Runtime::ResumeOutcome Runtime::place_resumed(Agent& agent, NodeIndex n) {
    Runtime(agent).place_in_queue(n);
    return agent.in_tick_ ? ResumeOutcome::Accepted : ResumeOutcome::AcceptedWake;
}

void Runtime::enqueue(NodeIndex n) {
    if (has(n, kQueued)) return;
    set(n, kQueued);
    // Work arriving from outside the agent's own tick: tell the host, which may have it marked idle.
    if (!a.in_tick_ && a.host_) a.host_->on_agent_wake(a.host_slot_);
    place_in_queue(n);
}

void Runtime::dequeue(NodeIndex n) {
    clear(n, kQueued);
    for (std::uint16_t i = 0; i < a.queue_size_; ++i)
        if (queue_at(i) == n) {
            queue_remove_at(i);
            return;
        }
}

void Runtime::collect_due_timers() {
    if (a.clock_ < a.next_deadline_) return;
    TimePoint next = kNever;
    if (t.recheck_interval) {
        // Guards that read the world are re-checked on a fixed period while live.
        TimePoint& recheck = *reinterpret_cast<TimePoint*>(b + t.layout.recheck_offset);
        if (recheck <= a.clock_) {
            for (const KeyWatcher& w : t.recheck_watchers) {
                if (w.reactive) wake_reactive(w.node);
                else wake_guard(w.node);
            }
            recheck = after(t.recheck_interval);
        }
        next = recheck;
    }
    for (NodeIndex n : t.timer_nodes) {
        if (def(n).kind == NodeKind::Cooldown) {
            if (!has(n, kCooldownArmed)) continue;
            if (deadline(n) <= a.clock_) {
                clear(n, kCooldownArmed);  // cooling is over: a false -> true edge of its guard
                count_timer();
                wake_guard(n);
            } else if (deadline(n) < next) {
                next = deadline(n);
            }
        } else if (has(n, kTimerArmed)) {
            if (deadline(n) <= a.clock_) {
                if (!has(n, kTimerDue)) {
                    set(n, kTimerDue);
                    enqueue(n);
                }
            } else if (deadline(n) < next) {
                next = deadline(n);
            }
        }
    }
    a.next_deadline_ = next;
}

void Runtime::event_tick() {
    if (a.clock_ >= a.next_deadline_) collect_due_timers();
    if (a.queue_size_ == 2 && single_entry_tick()) return;
    event_loop();
}

// Most ticks of an event agent find one node queued in front of the marker: a running action's
// per-frame update (Patrol, every frame), a resumed action that ends (a completed move), or the
// root's restart on the tick after its run ended. That node is popped and its work done here, as the
// general loop would, with its flags and definition read once:
//   - a running action with nothing pending is updated; if the update leaves it running and changes
//     nothing else (not suspended, nothing queued), the general path would re-queue it behind the
//     marker and move the marker behind it, which gives back the same queue: so the queue is put
//     back as it was instead, and the tick is done (returns true);
//   - a resumed action that ends Success, and with it the whole run (NodeDef::success_ends_root), is
//     ended by end_resumed_run, which also leaves the queue as the loop would: the tick is done;
//   - the root's pending restart is begun by restart_root_plainly when the tree allows it
//     (TreeData::root_restart) and its skipped guards are false, by begin_pending otherwise;
//   - anything else (a resume, a pending start, dirty checks, a due timer) is dispatched as process()
//     does, and the general loop then pops what that work queued for this tick, up to the marker.
// The two short paths need an agent without a trace listener (they report nothing) and leave the
// state, counts and queue exactly as the general path would (docs/semantics.md, "A completed move").
// They repeat the general path's bookkeeping for those cases: a change to what ending or starting a
// node sets or counts must be made in end_resumed_run_in and restart_on_plan too (and in the World's
// restart tick, restart_tick_checked, which pops the root itself)
// (tests/move_paths_test.cpp, tests/world_move_ticks_test.cpp and the differential test compare both
// after every tick).
// Returns true when the tick is done.
bool Runtime::single_entry_tick() {
    std::uint16_t* q = queue();
    const std::uint16_t head = a.queue_head_;
    const NodeIndex n = q[head];  // the other entry is the marker
    if (n == kQueueMarker) return false;
    a.queue_head_ = static_cast<std::uint16_t>(queue_slot(1));
    a.queue_size_ = 1;
    std::uint16_t& flags = fl(n);
    flags = static_cast<std::uint16_t>(flags & ~kQueued);
    check_walk_order(n);
    advance(n);
    count_visit();
    const auto work = static_cast<std::uint16_t>(flags & kPendingWork);
    // A queued action with no work pending but its update is running (the scheduler's invariants: a
    // queued node is entitled to be, validation.cpp), so its status is not read: a quiet tick reads the
    // leaf's flags and the queue, side by side in the block (docs/benchmarks.md, "The wide tree's hot line").
    if (work != 0 || def(n).kind != NodeKind::Action) return single_entry_work(n, work);
#if defined(EBT_VALIDATE)
    if (!running(n)) report_broken("the agent's last operation", "node " + std::to_string(n) + " is queued with no work pending but is not running");
#endif
    return single_update_done(n, head, run_update(n));
}

bool Runtime::single_update_done(NodeIndex n, std::uint16_t head, Status s) {
    if (s == Status::Running && !has(n, kSuspended | kQueued) && a.queue_size_ == 1) {
        a.queue_head_ = head;  // [n, marker], as before
        a.queue_size_ = 2;
        set(n, kQueued);
        return true;
    }
    notify_parent(n, leaf_outcome(n, s));
    return false;
}

// single_entry_tick's node when its work is not a plain update (a resume, a pending start, dirty
// checks, a due timer), and a World's move tick's (single_work_tick). Returns true when the tick is done.
inline bool Runtime::entry_work(NodeIndex n, std::uint16_t work) {
    if (work == kStartPending) {  // the root's restart after its run ended (or another pending start)
        if (n == 0 && t.root_restart.usable && !a.listener_ && restart_root_plainly()) return end_plain_restart_tick();
        begin_pending(n);
    } else if (work == (kResumePending | kSuspended) && def(n).kind == NodeKind::Action && running(n)) {
        // A resumed action ends (a completed move): in the common case with its ancestors, and
        // the tick is done.
        if (has(n, kResumeSuccess) && def(n).success_ends_root && !a.listener_ && !a.abort_requested_ &&
            !t.action_calls[n].spec->on_terminate) {
            end_resumed_run(n);
            return true;
        }
        finish_resume(n);
    } else {
        dispatch(n);
    }
    return false;
}

// single_entry_tick's node when its work is not a plain update (a resume, a pending start, dirty
// checks, a due timer). Out of line, so that the plain update's path, taken on every quiet frame,
// stays as short as without it. Returns true when the tick is done.
[[gnu::noinline]] bool Runtime::single_entry_work(NodeIndex n, std::uint16_t work) { return entry_work(n, work); }

// A World's tick of an agent whose queue is [n, marker] with n's work other than a plain update: in
// a latent move, the tick that ends the resumed action (and the run) and the tick that restarts the
// root. world_tick (runtime/world_tick.hpp) has checked and read what checked_tick, event_tick and
// single_entry_tick would check again (tick_numbered's checks passed; event mode, no listener, not
// stopped, no deadline due, the queue [n, marker]): this is checked_tick with those tests left out and
// single_entry_tick's pop done here, then the same node's work (entry_work, inline here: one call for
// the whole tick), event_loop and finish_tick. Here, next to entry_work, so that it can be inline.
// tests/differential_test.cpp's World case and tests/move_paths_test.cpp hold it to the general path.
[[gnu::noinline]] void Runtime::single_work_tick(Agent& agent, std::uint64_t tick, Duration dt, FrameMetrics& frame) {
    TickScope scope(agent.in_tick_);
    agent.ticks_ = tick;
    agent.clock_ += dt.count();
    Runtime rt(agent);
    rt.dt = dt;
    rt.frame = &frame;
    // single_entry_tick's pop of the queue's one node (walk_pos_ goes from -1 to n, as advance(n) sets it).
    const NodeIndex n = rt.queue_entries[agent.queue_head_];
    agent.queue_head_ = static_cast<std::uint16_t>(rt.queue_slot(1));
    agent.queue_size_ = 1;
    std::uint16_t& flags = rt.fl(n);
    flags = static_cast<std::uint16_t>(flags & ~kQueued);
    rt.check_walk_order(n);
    agent.walk_pos_ = n;
    rt.count_visit();
    if (!rt.entry_work(n, static_cast<std::uint16_t>(flags & kPendingWork))) rt.event_loop();
    rt.finish_tick();
}

void Runtime::process(NodeIndex n) {
    clear(n, kQueued);
    check_walk_order(n);
    advance(n);
    count_visit();
    // The common case first: a running action with nothing pending is updated (Patrol every frame).
    if ((fl(n) & kPendingWork) == 0 && def(n).kind == NodeKind::Action && running(n)) {
        step_leaf(n);
        return;
    }
    dispatch(n);
}

void Runtime::dispatch(NodeIndex n) {
    if (has(n, kStartPending)) {
        begin_pending(n);
        return;
    }
    if (has(n, kChecksDirty)) {
        clear(n, kChecksDirty);
        check_guards_at(n, /*only_dirty=*/true);
    }
    if (stopping || !running(n)) return;
    if (has(n, kTimerDue)) {
        fire_timer(n);
        return;
    }
    if (def(n).kind == NodeKind::Action) {
        if (has(n, kResumePending)) finish_resume(n);
        else if (!has(n, kSuspended)) step_leaf(n);
    }
}

// ---- blackboard wake-ups -----------------------------------------------------------------------------

void Runtime::wake_guard(NodeIndex g) {
    if (!t.guard_of(g)) return;
    // Its last value may be stale now. A live guard is re-evaluated when the walk reaches its
    // position; one that is not live is scheduled when it becomes live (enter(),
    // mark_lower_guards_live()), and otherwise evaluated afresh on its next entry.
    set(g, kGuardDirty);
    const NodeIndex position = live_guard_position(g);
    if (position != kNoNode) schedule_checks(position);
}

void Runtime::schedule_checks(NodeIndex position) {
    set(position, kChecksDirty);
    enqueue(position);
}

void Runtime::wake_reactive(NodeIndex rs) {
    if (!running(rs)) return;
    set(rs, kReactiveDirty);
    schedule_checks(rs);
}

void Runtime::on_key_changed(KeyId key) {
    for (std::uint32_t i = t.watch_first[key]; i < t.watch_first[key + 1]; ++i) {
        const KeyWatcher& w = t.watchers[i];
        if (w.reactive) wake_reactive(w.node);
        else wake_guard(w.node);
    }
}

}  // namespace ebt::detail
