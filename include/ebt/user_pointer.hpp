// UserPointer: the game object an agent acts for (its NPC), given at spawn and read by its actions.
//
//   world.spawn(tree, {.user = &guards[i]});                    // a game::Guard*
//   ... in an action:  game::Guard& g = ctx.user<game::Guard>();
//
// It keeps the pointer and a small id of the pointed-to type, so that reading it as another type is a
// UsageError naming both types instead of undefined behaviour. The agent does not own the object: it
// must outlive the agent (or the agent must not run its actions after the object is gone).
#pragma once

#include <ebt/blackboard.hpp>

#include <cstdint>
#include <type_traits>

namespace ebt {

namespace detail {
/// A new id (1, 2, ...) for a user pointer type named `name`; thread-safe. Throws UsageError past
/// 65,535 types.
std::uint16_t register_user_type(const char* name);
/// The name registered for `id` ("game::Guard"), or "nothing" for 0.
const char* user_type_name(std::uint16_t id) noexcept;
/// The id of T (without const/volatile), registered on first use.
template <class T> std::uint16_t user_type_id() {
    static const std::uint16_t id = register_user_type(pretty_type_name<std::remove_cv_t<T>>());
    return id;
}
}  // namespace detail

/// A typed, non-owning pointer to a game object. The default (or a null pointer) holds nothing.
class UserPointer {
public:
    UserPointer() = default;
    UserPointer(std::nullptr_t) noexcept {}  // NOLINT(google-explicit-constructor)
    template <class T> UserPointer(T* object)  // NOLINT(google-explicit-constructor)
        : object_(object), type_(object ? detail::user_type_id<T>() : 0) {
        static_assert(!std::is_const_v<T>, "UserPointer holds a non-const object (actions may change their NPC)");
    }

    void* get() const noexcept { return object_; }
    /// The id of the pointed-to type (0 when empty).
    std::uint16_t type() const noexcept { return type_; }
    explicit operator bool() const noexcept { return object_ != nullptr; }

private:
    void* object_ = nullptr;
    std::uint16_t type_ = 0;
};

}  // namespace ebt
