// The polling walker: the reference engine. Every tick it walks the running part of the tree from
// the root in pre-order, re-checking every live guard and every armed timer on the way and updating
// every running leaf. It shares node semantics with the event scheduler but no scheduling code.
#include "runtime/runtime.hpp"

namespace ebt::detail {

void Runtime::poll_tick() {
    if (has(0, kStartPending) || running(0)) walk(0);
}

void Runtime::walk(NodeIndex n) {
    if (stopping) return;
    advance(n);
    count_visit();
    if (has(n, kStartPending)) {
        begin_pending(n);
        return;
    }
    check_guards_at(n, /*only_dirty=*/false);
    if (stopping || !running(n)) return;

    const NodeDef& d = def(n);
    if (has(n, kTimerArmed)) {
        if (a.clock_ >= deadline(n)) {
            fire_timer(n);
            return;
        }
        if (d.kind == NodeKind::Wait || d.kind == NodeKind::Delay) return;  // waiting: nothing to walk
    }
    if (d.kind == NodeKind::Action) {
        if (has(n, kResumePending)) finish_resume(n);
        else if (!has(n, kSuspended)) step_leaf(n);
        return;
    }
    // Children the walk has not passed yet; anything entered during this tick lies at or before
    // walk_pos, so it is not walked a second time.
    for (NodeIndex c = d.first_child; c != kNoNode; c = def(c).next_sibling) {
        if (passed(c)) continue;
        if (running(c) || has(c, kStartPending)) {
            walk(c);
            if (stopping || !running(n)) return;
        }
    }
}

}  // namespace ebt::detail
