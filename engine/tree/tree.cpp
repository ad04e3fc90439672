// Tree accessors, names of the vocabulary types, and the tree listing.
#include "debug/tree_walk.hpp"
#include "tree/node_path.hpp"
#include "tree/tree_data.hpp"

#include <ebt/agent.hpp>
#include <ebt/ebt.hpp>
#include <ebt/trace.hpp>

namespace ebt {

const char* version_string() noexcept { return "0.1.0"; }

const char* to_string(Status s) noexcept {
    switch (s) {
    case Status::Invalid: return "Invalid";
    case Status::Running: return "Running";
    case Status::Success: return "Success";
    case Status::Failure: return "Failure";
    case Status::Aborted: return "Aborted";
    }
    return "?";
}

const char* to_string(NodeKind k) noexcept {
    switch (k) {
    case NodeKind::Action: return "Action";
    case NodeKind::Condition: return "Condition";
    case NodeKind::AlwaysSuccess: return "AlwaysSuccess";
    case NodeKind::AlwaysFailure: return "AlwaysFailure";
    case NodeKind::Wait: return "Wait";
    case NodeKind::Inverter: return "Inverter";
    case NodeKind::ForceSuccess: return "ForceSuccess";
    case NodeKind::ForceFailure: return "ForceFailure";
    case NodeKind::Repeat: return "Repeat";
    case NodeKind::Retry: return "Retry";
    case NodeKind::Loop: return "Loop";
    case NodeKind::Cooldown: return "Cooldown";
    case NodeKind::Timeout: return "Timeout";
    case NodeKind::Delay: return "Delay";
    case NodeKind::Sequence: return "Sequence";
    case NodeKind::Filter: return "Filter";
    case NodeKind::ReactiveSequence: return "ReactiveSequence";
    case NodeKind::Selector: return "Selector";
    case NodeKind::ActiveSelector: return "ActiveSelector";
    case NodeKind::PrioritySelector: return "PrioritySelector";
    case NodeKind::NonPrioritySelector: return "NonPrioritySelector";
    case NodeKind::RandomSelector: return "RandomSelector";
    case NodeKind::WeightedSelector: return "WeightedSelector";
    case NodeKind::Parallel: return "Parallel";
    case NodeKind::Monitor: return "Monitor";
    }
    return "?";
}

const char* to_string(AbortMode m) noexcept {
    switch (m) {
    case AbortMode::None: return "None";
    case AbortMode::Self: return "Self";
    case AbortMode::LowerPriority: return "LowerPriority";
    case AbortMode::Both: return "Both";
    }
    return "?";
}

const char* to_string(TraceKind k) noexcept {
    switch (k) {
    case TraceKind::Initialize: return "Initialize";
    case TraceKind::Update: return "Update";
    case TraceKind::Terminate: return "Terminate";
    case TraceKind::GuardEvaluated: return "GuardEvaluated";
    case TraceKind::ConditionEvaluated: return "ConditionEvaluated";
    case TraceKind::Error: return "Error";
    }
    return "?";
}

const char* to_string(Mode m) noexcept { return m == Mode::Polling ? "poll" : "event"; }

std::string format(const TraceEvent& e) {
    std::string s = std::to_string(e.tick) + " " + std::to_string(e.node) + ":";
    switch (e.kind) {
    case TraceKind::Initialize: return s + "I";
    case TraceKind::Update: return s + "U(" + to_string(e.status) + ")";
    case TraceKind::Terminate: return s + "T(" + to_string(e.status) + ")";
    case TraceKind::GuardEvaluated: return s + "G=" + (e.result ? "true" : "false");
    case TraceKind::ConditionEvaluated: return s + "C=" + (e.result ? "true" : "false");
    case TraceKind::Error: return s + "E(" + std::string(e.message) + ")";
    }
    return s;
}

const std::string& Tree::name() const { return data_->name; }
std::size_t Tree::size() const { return data_->nodes.size(); }
NodeKind Tree::kind(NodeIndex n) const { return data_->nodes.at(n).kind; }
NodeIndex Tree::parent(NodeIndex n) const { return data_->nodes.at(n).parent; }
std::size_t Tree::child_count(NodeIndex n) const { return data_->nodes.at(n).child_count; }
NodeIndex Tree::child(NodeIndex n, std::size_t i) const {
    NodeIndex c = data_->nodes.at(n).first_child;
    for (std::size_t k = 0; k < i && c != kNoNode; ++k) c = data_->nodes[c].next_sibling;
    if (c == kNoNode) throw UsageError("node " + std::to_string(n) + " has no child " + std::to_string(i));
    return c;
}
std::string Tree::label(NodeIndex n) const {
    const auto& d = data_->nodes.at(n);
    return d.label.empty() ? std::string(to_string(d.kind)) : d.label;
}
std::string Tree::path(NodeIndex n) const {
    std::vector<detail::PathLevel> levels;
    for (NodeIndex i = n; i != kNoNode; i = data_->nodes.at(i).parent) {
        const auto& d = data_->nodes[i];
        levels.push_back({d.kind, d.label, d.parent == kNoNode ? -1 : static_cast<std::int32_t>(d.child_position)});
    }
    return detail::format_node_path(levels, detail::PathLength::Full);
}
bool Tree::has_guard(NodeIndex n) const { return data_->nodes.at(n).guard != 0xFFFF; }
AbortMode Tree::abort_mode(NodeIndex n) const {
    const auto* g = data_->guard_of(n);
    return g ? g->mode : AbortMode::None;
}
const BlackboardSchema& Tree::schema() const { return data_->schema; }
std::size_t Tree::state_bytes() const { return data_->layout.engine_bytes; }

std::string Tree::describe() const {
    // The short form of debug::definition_text (engine/debug/views.cpp): each node's heading, indented.
    std::string out;
    for (NodeIndex i = 0; i < data_->nodes.size(); ++i)
        out += std::string(static_cast<std::size_t>(debug::walk::depth(*data_, i)) * 2, ' ') + debug::walk::heading(*data_, i) + "\n";
    return out;
}

}  // namespace ebt
