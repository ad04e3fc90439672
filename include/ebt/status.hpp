// Basic vocabulary shared by every part of ebt: statuses, node indices, time and errors.
#pragma once

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ebt {

/// The state of one node's run, as in the seeds' behavior contract.
/// `Invalid` means "not started since the agent was created or since its last run ended and was reset".
enum class Status : std::uint8_t { Invalid, Running, Success, Failure, Aborted };

const char* to_string(Status status) noexcept;

/// A node is identified by its pre-order index in the tree definition (the root is 0).
using NodeIndex = std::uint16_t;
inline constexpr NodeIndex kNoNode = 0xFFFF;

/// Agent time: an integer count of microseconds, advanced once per tick by its `dt`.
using Duration = std::chrono::microseconds;
using TimePoint = std::int64_t;  // microseconds since the agent was created

/// Thrown while building or loading a tree: the message names the node path (or file:line) and the problem.
class BuildError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// Thrown when the public API is misused outside a tick (unknown key, wrong type, stale handle, ...).
/// Inside a tick user code that throws is contained by the engine instead (see Agent).
class UsageError : public std::logic_error {
public:
    using std::logic_error::logic_error;
};

}  // namespace ebt
