// The blackboard: typed, declared per-agent data that conditions read and actions write.
//
// A tree definition declares its keys (name, type, initial value) in a BlackboardSchema. Every agent
// gets its own Blackboard whose values live in the agent's state block, laid out by the schema.
// Keys are interned: a Key<T> is a small id checked against the schema's declared type, tagged with
// the tree it was obtained from. Reading or writing a missing or mistyped key, or a key of another
// tree, throws ebt::UsageError; there is never a silent default.
//
// Writing a value equal to the current one is not a change. A change
//   1. wakes the owning agent's guards that read the key (the engine's own wake path, a direct call),
//   2. is then emitted on the agent's ChangeBus (Boost.Signals2), where game code and tools subscribe
//      (the bus and the signals are in <ebt/signals.hpp>: this header does not include Boost).
// See docs/architecture.md, "Blackboard changes", for why the engine does not use one signal per key.
//
// Thread-safety: none. A blackboard belongs to its agent and is used on the thread that ticks it.
#pragma once

#include <ebt/status.hpp>
#include <ebt/value_type.hpp>

#include <cstddef>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <vector>

namespace ebt {

class Agent;
class Blackboard;
class ChangeBus;  // <ebt/signals.hpp>
class SharedBlackboard;
namespace detail {
struct EngineAccess;
class Fnv1a;  // <ebt/detail/hash.hpp>
}

using KeyId = std::uint16_t;
inline constexpr KeyId kNoKey = 0xFFFF;
/// KeyInfo::scope of a key that belongs to the agent itself.
inline constexpr std::uint8_t kLocalScope = 0xFF;

namespace detail {
/// The number types a blackboard converts between when a key is written or read by name with another
/// number type (Blackboard::set / get): the integers of up to 64 bits, float and double. Not bool, the
/// character types or long double.
template <class T>
inline constexpr bool is_convertible_number_v =
    std::is_arithmetic_v<T> && !std::is_same_v<T, bool> && !std::is_same_v<T, char> && !std::is_same_v<T, wchar_t> &&
    !std::is_same_v<T, char8_t> && !std::is_same_v<T, char16_t> && !std::is_same_v<T, char32_t> &&
    !std::is_same_v<T, long double>;
/// A number on its way to a conversion: its value, exactly, and its declared type (for messages).
struct Number {
    enum class Kind : std::uint8_t { Signed, Unsigned, Floating };
    Kind kind = Kind::Signed;
    long long i = 0;           // Signed
    unsigned long long u = 0;  // Unsigned
    double f = 0;              // Floating (a float is widened exactly)
    const TypeInfo* type = nullptr;
};
}  // namespace detail

/// A typed, interned blackboard key. Obtain one from Tree::key<T>() or Blackboard::key<T>(); it works
/// on the blackboards of every agent of that tree, and throws UsageError on an agent of another tree
/// (where its id would name some other key).
template <class T> struct Key {
    KeyId id = kNoKey;
    /// The tag of the tree it was obtained from (BlackboardSchema::tag()). 0 for a key made from a
    /// raw id (`Key<int>{change.key}` in a ChangeBus slot), which is checked by id and type only.
    std::uint32_t tag = 0;
    friend bool operator==(Key, Key) = default;
};

/// One declared entry of a schema.
struct KeyInfo {
    std::string name;
    const TypeInfo* type = nullptr;
    std::uint32_t offset = 0;  // byte offset of the value in the agent's blackboard storage
    /// kLocalScope, or the index of the shared scope (BlackboardSchema::scopes()) the key belongs to.
    /// A shared key's value in the agent is a mirror of the published value of the shared blackboard
    /// bound to the scope; writing it writes the shared blackboard (seen after its next publish).
    std::uint8_t scope = kLocalScope;
    std::string shared_name;  // the key's name in the shared blackboard (name is "scope.shared_name")
};

/// The declared keys of a tree: names, types, layout and initial values. Immutable once the tree is
/// built; shared by every agent of the tree.
class BlackboardSchema {
public:
    /// Declares a key (used by the builder). Throws BuildError on a duplicate name.
    template <class T> KeyId declare(std::string name, const T& initial) {
        return declare_raw(std::move(name), type_of<T>(), &initial);
    }
    /// `initial` points to a value of `type` (copied), or is null for the type's value-initialized T{}.
    KeyId declare_raw(std::string name, const TypeInfo* type, const void* initial = nullptr);
    /// Declares key `key` of shared scope `scope`; the schema names it "scope.key".
    KeyId declare_shared_raw(const std::string& scope, const std::string& key, const TypeInfo* type,
                             const void* initial = nullptr);
    const std::vector<std::string>& scopes() const noexcept { return scopes_; }
    std::size_t shared_key_count() const noexcept { return shared_keys_; }

    /// The id of `name`, or kNoKey.
    KeyId find(std::string_view name) const noexcept;
    std::size_t size() const noexcept { return keys_.size(); }
    const KeyInfo& info(KeyId id) const { return keys_.at(id); }
    const std::vector<KeyInfo>& keys() const noexcept { return keys_; }
    /// Bytes of value storage each agent needs (the end of the last value, no tail padding).
    std::size_t storage_size() const noexcept { return defaults_.size(); }
    /// The largest alignment among the key types (1 when there are none): where the storage may start.
    std::size_t max_align() const noexcept { return max_align_; }
    /// The initial values of the trivially copyable keys, laid out like an agent's values (storage_size()
    /// bytes); a non-trivial key's bytes here are zero: read its initial value with initial().
    const std::byte* defaults() const noexcept { return defaults_.data(); }
    /// The initial value of key `id` (a value of its type).
    const void* initial(KeyId id) const {
        const KeyInfo& k = keys_.at(id);
        return k.type->ops ? boxed_defaults_[id].data() : static_cast<const void*>(defaults_.data() + k.offset);
    }
    /// The initial value of key `k`, one of keys().
    const void* initial(const KeyInfo& k) const { return initial(static_cast<KeyId>(&k - keys_.data())); }
    /// Whether key `k`'s initial value is its type's value-initialized T{} (zero bytes for a trivially
    /// copyable type, an empty string for std::string).
    bool initial_is_default(const KeyInfo& k) const;
    /// The keys whose types are not trivially copyable, in id order: the values an agent constructs,
    /// copies and destroys one by one. Empty for most trees (their blocks are copied with memcpy).
    const std::vector<KeyId>& nontrivial_keys() const noexcept { return nontrivial_; }

    /// Constructs the initial values in `storage` (storage_size() raw bytes laid out by this schema).
    void construct_values(std::byte* storage) const;
    /// Destroys the values constructed by construct_values (nothing for trivially copyable keys).
    void destroy_values(std::byte* storage) const noexcept;
    /// Copies the values of `from` into `to` (raw storage laid out by this schema): the bytes, then
    /// each value that is not trivially copyable constructed as a copy. If a copy throws, the copies
    /// made are destroyed and `to` holds no constructed value; `from` is left as it was.
    void copy_values(std::byte* to, const std::byte* from) const;
    /// Feeds the values in `storage` to `h` (World::state_hash): when every key is trivially copyable,
    /// the storage's bytes; otherwise key by key, the bytes of trivially copyable keys and the content
    /// hash (BlackboardValue<T>::hash) of the others, so that equal contents hash equal wherever a
    /// string keeps its characters.
    void hash_values(detail::Fnv1a& h, const std::byte* storage) const;

    /// Checked lookup used by typed access: throws UsageError naming the key and both types.
    KeyId require(std::string_view name, const TypeInfo* type) const;
    void require(KeyId id, const TypeInfo* type) const;
    /// The same for a Key<T>: also throws UsageError, naming both trees, for a key obtained from
    /// another tree's schema (one compare on the way through).
    void require(KeyId id, std::uint32_t tag, const TypeInfo* type) const {
        if (tag != seal_.tag && tag != 0) [[unlikely]]
            foreign_key(id, tag);
        require(id, type);
    }

    /// A tree's schema: a number unique among the schemas of live trees (never 0), carried by the keys
    /// obtained from it (Key<T>::tag). 0 for any other schema (a builder's, a SharedBlackboard's).
    std::uint32_t tag() const noexcept { return seal_.tag; }
    /// The name of the tree whose schema this is ("" for other schemas).
    const std::string& owner() const noexcept { return owner_; }
    /// Engine use (TreeBuilder::end()): makes this the schema of tree `owner`, with a fresh tag.
    void seal(std::string owner);

private:
    /// Blackboard::get and set by key (every write of game code) check the key with checked_info:
    /// inline in those templates, and not API (require() is).
    friend class Blackboard;
    /// require(id, tag, type) and then info(id), for Blackboard::get and set by key: the three checks
    /// inline, one compare each, and the key's entry returned without at()'s second bounds check; a
    /// wrong key goes out of line to the same UsageError as require.
    const KeyInfo& checked_info(KeyId id, std::uint32_t tag, const TypeInfo* type) const {
        if ((tag != seal_.tag && tag != 0) || id >= keys_.size() || keys_[id].type != type) [[unlikely]]
            refuse_key(id, tag, type);
        return keys_[id];
    }
    [[noreturn]] void foreign_key(KeyId id, std::uint32_t tag) const;
    /// checked_info's error path: throws require(id, tag, type)'s UsageError for a key it refuses.
    [[noreturn]] void refuse_key(KeyId id, std::uint32_t tag, const TypeInfo* type) const;

    /// The tag of a sealed schema, registered (tag -> schema) so that a foreign key's error can name
    /// the key and its tree. A copy is another schema: it starts unsealed (and so does a move).
    struct Seal {
        std::uint32_t tag = 0;
        Seal() = default;
        Seal(const Seal&) noexcept {}
        Seal& operator=(const Seal&) noexcept;
        ~Seal();
    };

    std::vector<KeyInfo> keys_;
    std::map<std::string, KeyId, std::less<>> index_;  // name -> id: find() stays fast for trees with many keys
    std::vector<std::byte> defaults_;  // trivially copyable initial values; zero bytes where a non-trivial key is
    std::vector<Value> boxed_defaults_;  // per key: the initial value of a non-trivial key (empty for the others)
    std::vector<KeyId> nontrivial_;
    std::vector<std::string> scopes_;
    std::size_t shared_keys_ = 0;
    std::size_t max_align_ = 1;
    std::string owner_;
    Seal seal_;  // last: unregistered before the keys an error message would read are destroyed
};

/// An agent's blackboard: typed access to its values. Owned by an Agent (see Agent::blackboard()).
class Blackboard {
public:
    template <class T> Key<T> key(std::string_view name) const {
        return Key<T>{schema().require(name, type_of<T>()), schema().tag()};
    }

    /// By key: a reference to the stored value (it sees later writes); T must be the declared type.
    template <class T> const T& get(Key<T> key) const {
        return *reinterpret_cast<const T*>(values_ + schema().checked_info(key.id, key.tag, type_of<T>()).offset);
    }
    /// By name: a copy of the value. When T and the declared type are different numbers (integers,
    /// float, double; not bool), the value is converted if T holds it exactly, and UsageError names the
    /// key, both types and the value otherwise (docs/architecture.md, "Blackboard conversions").
    template <class T> T get(std::string_view name) const {
        const KeyId id = schema().find(name);
        if constexpr (detail::is_convertible_number_v<T>) {
            if (id != kNoKey && schema_->info(id).type != type_of<T>()) {
                T out{};
                get_converted(id, type_of<T>(), &out);
                return out;
            }
        }
        if (id != kNoKey) return get(Key<T>{id, schema_->tag()});
        return get(key<T>(name));  // throws: no such key
    }

    /// Writes `value`; returns true when it changed the stored value (and so emitted a change).
    /// For a key of a shared scope the write goes to the bound shared blackboard instead, and is seen
    /// (here too) once that blackboard publishes; it then returns false.
    template <class T> bool set(Key<T> key, const T& value) {
        const KeyInfo& info = schema().checked_info(key.id, key.tag, type_of<T>());
        if (info.scope != kLocalScope) {
            set_shared(key.id, &value);
            return false;
        }
        T* slot = reinterpret_cast<T*>(values_ + info.offset);
        if (*slot == value) return false;
        *slot = value;
        changed(key.id);
        return true;
    }
    /// A std::string key written with a string literal, a char pointer or a std::string_view.
    bool set(Key<std::string> key, std::string_view value) { return set(key, std::string(value)); }
    /// By name. A string literal, a char pointer or a std::string_view is written as a std::string.
    /// When T and the declared type are different numbers (integers, float, double; not bool),
    /// the value is converted if the declared type holds it exactly (4.0 into a float, 300 into a long
    /// long, 16777216 into a float), and UsageError names the key, both types and the value otherwise
    /// (4.1 into a float, 300 into an unsigned char, 16777217 into a float), changing nothing.
    template <class T> bool set(std::string_view name, const T& value) {
        if constexpr (!std::is_same_v<detail::stored_t<T>, T>) {
            return set(name, detail::stored_t<T>(value));
        } else {
            return set_by_name(name, value);
        }
    }

    /// Throws UsageError for the blackboard of a moved-from agent.
    const BlackboardSchema& schema() const {
        if (!schema_) throw UsageError("blackboard of a moved-from agent");
        return *schema_;
    }
    Agent* agent() const noexcept { return agent_; }

private:
    friend class Agent;
    Blackboard() = default;
    template <class T> bool set_by_name(std::string_view name, const T& value) {
        const KeyId id = schema().find(name);
        if constexpr (detail::is_convertible_number_v<T>) {
            if (id != kNoKey && schema_->info(id).type != type_of<T>()) return set_converted(id, number_of(value));
        }
        if (id != kNoKey) return set(Key<T>{id, schema_->tag()}, value);
        return set(key<T>(name), value);  // throws: no such key
    }
    template <class T> static detail::Number number_of(T value) {
        detail::Number n;
        n.type = type_of<T>();
        if constexpr (std::is_floating_point_v<T>) {
            n.kind = detail::Number::Kind::Floating;
            n.f = static_cast<double>(value);
        } else if constexpr (std::is_signed_v<T>) {
            n.kind = detail::Number::Kind::Signed;
            n.i = static_cast<long long>(value);
        } else {
            n.kind = detail::Number::Kind::Unsigned;
            n.u = static_cast<unsigned long long>(value);
        }
        return n;
    }
    /// The number paths of set and get by name (blackboard_conversions.cpp): UsageError for a declared
    /// type that is not a number, or a value the target type does not hold exactly.
    bool set_converted(KeyId id, const detail::Number& value);
    void get_converted(KeyId id, const TypeInfo* as, void* out) const;
    void changed(KeyId id);
    void set_shared(KeyId id, const void* value);
    // The engine's hooks, reached through detail::EngineAccess (<ebt/detail/engine_access.hpp>):
    friend struct detail::EngineAccess;
    /// The values, laid out by the schema (guard evaluation, state hashing, debug views).
    const std::byte* raw_values() const noexcept { return values_; }
    /// Stores a shared key's newly published value (a World routing a publish); a change wakes guards
    /// and is emitted like any other change. Returns true when the value changed.
    bool mirror(KeyId id, const void* value);

    const BlackboardSchema* schema_ = nullptr;
    std::byte* values_ = nullptr;
    Agent* agent_ = nullptr;
    ChangeBus* bus_ = nullptr;
};

}  // namespace ebt
