// The assert handler behind EBT_ASSERT (include/ebt/assert.hpp): one process-wide function pointer.
#include <ebt/assert.hpp>

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace ebt {

namespace {
std::atomic<AssertHandler> installed_handler{&default_assert_handler};
}  // namespace

void default_assert_handler(const AssertionFailure& failure) {
    std::fprintf(stderr, "ebt: assertion failed: %.*s (%.*s) at %s:%d\n", static_cast<int>(failure.message.size()),
                 failure.message.data(), static_cast<int>(failure.condition.size()), failure.condition.data(),
                 failure.file, failure.line);
    std::fflush(stderr);
    std::abort();
}

AssertHandler set_assert_handler(AssertHandler handler) noexcept {
    return installed_handler.exchange(handler ? handler : &default_assert_handler);
}

AssertHandler assert_handler() noexcept { return installed_handler.load(); }

bool validation_enabled() noexcept {
#if defined(EBT_VALIDATE)
    return true;
#else
    return false;
#endif
}

namespace detail {
void assertion_failed(std::string_view condition, std::string_view message, const char* file, int line) {
    assert_handler()(AssertionFailure{condition, message, file, line});
}
}  // namespace detail

}  // namespace ebt
