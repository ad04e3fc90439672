// The scheduler's invariants, checked by Runtime::validate() (every build) and, in a build with the
// CMake option EBT_VALIDATE=ON, after every tick and every scheduler operation from outside a tick
// (Runtime::check_invariants), together with bounds checks of the state-block accesses.
// A broken invariant is an engine bug: it is reported through the assert hook (include/ebt/assert.hpp)
// with a message naming the tree, the operation it followed and what is wrong.
#include "runtime/runtime.hpp"

#include <ebt/assert.hpp>

#include <string>

namespace ebt::detail {

namespace {
/// "node 7 (Patrol)" or "node 3 (Sequence)".
std::string describe(const TreeData& t, NodeIndex n) {
    std::string s = "node " + std::to_string(n);
    if (n < t.nodes.size()) {
        const std::string& label = t.nodes[n].label;
        s += " (" + (label.empty() ? std::string(to_string(t.nodes[n].kind)) : label) + ")";
    }
    return s;
}
}  // namespace

void Runtime::report_broken(std::string_view after, const std::string& what) {
    if (broken_invariant) {  // a caller that checks state it did not make (a restored snapshot)
        if (broken_invariant->empty()) *broken_invariant = what;
        return;
    }
    const std::string message = "scheduler invariant broken after " + std::string(after) + " (tree '" + t.name +
                                "', agent " + std::to_string(a.serial_) + "): " + what;
    assertion_failed("scheduler invariant", message, __FILE__, __LINE__);
}

// Checked between operations: after a tick has ended (walk_pos_ is back at -1) or after an operation
// from outside a tick (a write, a resume, an abort, a restart, the agent's creation). Stops at the first
// broken invariant: what follows from it would only repeat it.
void Runtime::validate(std::string_view after) {
    const auto broken = [&](const std::string& what) {
        report_broken(after, what);
        return;
    };
    const std::size_t node_count = t.nodes.size();
    if (!a.in_tick_ && a.walk_pos_ != -1)
        return broken("walk position is " + std::to_string(a.walk_pos_) + " between ticks (must be -1)");
    if (a.walk_pos_ >= static_cast<std::int32_t>(node_count))
        return broken("walk position " + std::to_string(a.walk_pos_) + " is past the tree's " +
                      std::to_string(node_count) + " nodes");

    if (!event_mode()) {
        for (NodeIndex n = 0; n < node_count; ++n)
            if (has(n, kQueued)) return broken(describe(t, n) + " is marked queued in polling mode");
        return;
    }

    // The queue: within its bounds, one end-of-frame marker, node indices in tree order on either side of
    // it, and each node at most once (strictly increasing).
    const std::uint32_t capacity = t.layout.queue_capacity;
    if (a.queue_head_ >= capacity)
        return broken("queue head " + std::to_string(a.queue_head_) + " is outside the queue (capacity " +
                      std::to_string(capacity) + ")");
    if (a.queue_size_ < 1 || a.queue_size_ > capacity)
        return broken("queue size " + std::to_string(a.queue_size_) + " is outside [1, " + std::to_string(capacity) +
                      "] (the end-of-frame marker and at most one entry per node)");
    std::uint32_t markers = 0;
    std::uint32_t queued_entries = 0;
    std::int32_t previous = -1;  // the last node index seen on this side of the marker
    for (std::uint16_t i = 0; i < a.queue_size_; ++i) {
        const std::uint16_t entry = queue_at(i);
        if (entry == kQueueMarker) {
            ++markers;
            previous = -1;
            continue;
        }
        if (entry >= node_count)
            return broken("queue entry " + std::to_string(i) + " is " + std::to_string(entry) + ", not a node of the tree's " +
                          std::to_string(node_count));
        if (static_cast<std::int32_t>(entry) <= previous)
            return broken("queue out of tree order: entry " + std::to_string(i) + " is " + describe(t, entry) +
                          ", after node " + std::to_string(previous));
        previous = entry;
        ++queued_entries;
        if (!has(entry, kQueued)) return broken(describe(t, entry) + " is in the queue but not marked queued");
        // Entitled to be queued: a node is queued only for work (event_scheduler.cpp).
        const bool entitled = has(entry, kStartPending) || has(entry, kTimerDue) || has(entry, kResumePending) ||
                              (running(entry) && has(entry, kChecksDirty)) ||
                              (running(entry) && def(entry).kind == NodeKind::Action && !has(entry, kSuspended));
        if (!entitled)
            return broken(describe(t, entry) + " is queued without work (status " + to_string(st(entry)) + ", flags 0x" +
                          [](std::uint16_t f) {
                              static const char digits[] = "0123456789abcdef";
                              std::string h;
                              for (int shift = 12; shift >= 0; shift -= 4) h += digits[(f >> shift) & 0xF];
                              return h;
                          }(fl(entry)) + ")");
    }
    if (markers != 1) return broken("the queue holds " + std::to_string(markers) + " end-of-frame markers (must be 1)");
    if (queue_at(static_cast<std::uint16_t>(a.queue_size_ - 1u)) != kQueueMarker && !a.in_tick_)
        return broken("the end-of-frame marker is not the last queue entry between ticks");

    // Every node marked queued is in the queue; every running action that is not suspended is queued (it
    // is updated every frame); checks marked due are queued; every armed deadline is seen by next_deadline.
    std::uint32_t marked = 0;
    for (NodeIndex n = 0; n < node_count; ++n) {
        if (has(n, kQueued)) ++marked;
        if (running(n) && def(n).kind == NodeKind::Action && !has(n, kSuspended) && !has(n, kQueued))
            return broken(describe(t, n) + " is a running action, not suspended, but not queued: it would get no update");
        if (has(n, kChecksDirty) && !has(n, kQueued))
            return broken(describe(t, n) + " has guard checks due but is not queued");
        if (has(n, kTimerDue) && !has(n, kQueued)) return broken(describe(t, n) + " has a due timer but is not queued");
    }
    if (marked != queued_entries)
        return broken(std::to_string(marked) + " nodes are marked queued, but the queue holds " +
                      std::to_string(queued_entries));
    for (NodeIndex n : t.timer_nodes) {
        const bool armed = def(n).kind == NodeKind::Cooldown ? has(n, kCooldownArmed)
                                                             : has(n, kTimerArmed) && !has(n, kTimerDue);
        if (armed && deadline(n) < a.next_deadline_)
            return broken(describe(t, n) + " has a deadline at " + std::to_string(deadline(n)) +
                          " us before the agent's next deadline " + std::to_string(a.next_deadline_) + " us: it would be missed");
    }
}

void Runtime::bad_node_access(NodeIndex n) const {
    assertion_failed("n < t.nodes.size()",
                     "state-block access out of bounds: node " + std::to_string(n) + " of tree '" + t.name + "' with " +
                         std::to_string(t.nodes.size()) + " nodes",
                     __FILE__, __LINE__);
}

void Runtime::bad_memory_access(NodeIndex n, std::uint32_t offset, std::size_t size) const {
    const NodeDef& d = t.nodes[n];
    std::string what = "state-block access out of bounds: " + std::to_string(size) + " bytes at offset " +
                       std::to_string(offset) + " of " + describe(t, n) + "'s memory in tree '" + t.name + "'";
    what += d.memory_bytes == 0 ? " (the node has no memory)"
                                : " (its memory is " + std::to_string(d.memory_bytes) + " bytes from byte " +
                                      std::to_string(d.memory_offset) + ")";
    assertion_failed("node memory access within bounds", what, __FILE__, __LINE__);
}

void Runtime::walked_backwards(NodeIndex n) const {
    assertion_failed("n > walk_pos",
                     "walk position: tree '" + t.name + "' processes " + describe(t, n) +
                         " after the tick's walk reached node " + std::to_string(a.walk_pos_),
                     __FILE__, __LINE__);
}

}  // namespace ebt::detail
