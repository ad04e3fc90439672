// Engine assertions: checks of ebt's own internal invariants, and the hook a game uses to hear of one
// that fails.
//
// EBT_ASSERT(condition, message) is for engine bugs only: a state the engine itself should never
// reach (a scheduler queue out of order, a state-block access out of bounds). Misuse of the API by a
// game is never an assertion: it stays a UsageError (or BuildError / LoadError) with a message.
//
// A failed check calls the assert handler. The default one prints the message with its file and line
// to stderr and calls std::abort(). A game may install its own (set_assert_handler) to log to its own
// system, break into the debugger or, in tests, throw. When the handler returns, the engine carries on
// as if the check had passed; what follows is then undefined, since an invariant is broken.
//
// When checks are compiled in (decided per translation unit, so by how the ebt library was built):
//   - EBT_ASSERTS defined to 0 or 1 by the build wins;
//   - otherwise they are on when NDEBUG is not defined (Debug builds) or when EBT_VALIDATE is
//     (the CMake option EBT_VALIDATE=ON builds the library with the scheduler's validation, which
//     reports through this hook: see docs/architecture.md, "Errors");
//   - off (the condition and the message are not even evaluated) in a plain Release build.
// The message is evaluated only when the check fails, so it may build a string with details.
//
// Thread-safety: the handler is a process-wide function pointer, set and read atomically.
#pragma once

#include <string_view>

#if !defined(EBT_ASSERTS)
#if !defined(NDEBUG) || defined(EBT_VALIDATE)
#define EBT_ASSERTS 1
#else
#define EBT_ASSERTS 0
#endif
#endif

namespace ebt {

/// What a failed check reports. The views are valid only during the handler call.
struct AssertionFailure {
    std::string_view condition;  // the checked expression, as written
    std::string_view message;    // what is wrong, in words
    const char* file = "";
    int line = 0;
};

/// Called when an engine check fails. May return (the engine carries on), throw, or end the program.
using AssertHandler = void (*)(const AssertionFailure&);

/// Installs `handler` for every later failed check (nullptr: the default). Returns the previous one
/// (the default's address when none was installed).
AssertHandler set_assert_handler(AssertHandler handler) noexcept;
/// The handler in use now.
AssertHandler assert_handler() noexcept;
/// The default handler: prints "ebt: assertion failed: <message> (<condition>) at <file>:<line>" to
/// stderr and calls std::abort().
void default_assert_handler(const AssertionFailure& failure);

/// Whether the library was built with EBT_VALIDATE=ON (the scheduler's invariants are checked after
/// every tick and scheduler operation).
bool validation_enabled() noexcept;

namespace detail {
/// Calls the installed handler. Kept out of line so that a check costs one test where it passes.
void assertion_failed(std::string_view condition, std::string_view message, const char* file, int line);
}  // namespace detail

}  // namespace ebt

#if EBT_ASSERTS
/// Checks an internal invariant of the engine; on failure calls the assert handler with `message`
/// (anything convertible to std::string_view, evaluated only on failure).
#define EBT_ASSERT(condition, message)                                                          \
    do {                                                                                        \
        if (!(condition)) [[unlikely]]                                                          \
            ::ebt::detail::assertion_failed(#condition, (message), __FILE__, __LINE__);         \
    } while (false)
#else
#define EBT_ASSERT(condition, message) \
    do {                               \
    } while (false)
#endif
