// Tracing: a listener that receives every lifecycle event and every guard evaluation of an agent.
//
// Attach one with AgentOptions::listener (or Agent::set_listener). The engine calls it synchronously,
// on the ticking thread, in the exact order things happen; tests use it to assert exact traces.
// A listener must not call back into the agent's tick; it may read the agent and its blackboard.
#pragma once

#include <ebt/status.hpp>

#include <string>
#include <string_view>

namespace ebt {

enum class TraceKind : std::uint8_t {
    Initialize,          // a node's run starts (onInitialize)
    Update,              // a leaf was updated; `status` is what update returned
    Terminate,           // a node's run ended; `status` is Success, Failure or Aborted
    GuardEvaluated,      // a guard was evaluated (on selection, entry or re-check); `result` holds it
    ConditionEvaluated,  // a condition node was evaluated as a step of its parent; `result` holds it
    Error,               // user code threw; `message` says what; the node then fails
};

const char* to_string(TraceKind kind) noexcept;

struct TraceEvent {
    std::uint64_t tick = 0;   // the agent's tick count (the first tick is 0)
    NodeIndex node = kNoNode;
    TraceKind kind = TraceKind::Initialize;
    Status status = Status::Invalid;  // Update / Terminate
    bool result = false;              // GuardEvaluated / ConditionEvaluated
    std::string_view message;         // Error (valid during the call only)

    /// True for the events that make up the equivalence trace (Initialize, Update, Terminate).
    bool is_lifecycle() const noexcept {
        return kind == TraceKind::Initialize || kind == TraceKind::Update || kind == TraceKind::Terminate;
    }
};

/// Formats an event compactly, e.g. "3 4:T(Aborted)" or "0 2:G=false".
std::string format(const TraceEvent& event);

class TraceListener {
public:
    virtual ~TraceListener() = default;
    virtual void on_event(const TraceEvent& event) = 0;
};

}  // namespace ebt
