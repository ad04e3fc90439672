// Blackboard value types: what the engine knows about a C++ type it stores in a blackboard.
//
// Every blackboard value type has one TypeInfo (type_of<T>()). It says how big and how aligned the
// value is and, for a type that is not trivially copyable, how to construct, copy, compare, hash and
// destroy it (ValueOps). A trivially copyable type (numbers, bool, enums, ids, small structs) has no
// ValueOps: the engine copies it with memcpy, exactly as before non-trivial values existed.
//
// Which types are accepted (a static_assert says what to do otherwise):
//   - trivially copyable types with operator== (no opt-in);
//   - std::string, built in;
//   - any other copyable type with operator== whose ebt::BlackboardValue<T> specialization gives a
//     deterministic content hash (the World's state hash):
//
//       template <> struct ebt::BlackboardValue<game::Loadout> {
//           static std::uint64_t hash(const game::Loadout& v);                  // required
//           static std::string format(const game::Loadout& v);                 // optional: XML literals
//           static bool parse(std::string_view text, game::Loadout& out);      // optional: XML literals
//       };
//
//     format and parse (both or neither) give the type a text form: XML literals (port values,
//     initial values, == / != comparisons) and save(). A trivially copyable type may specialize
//     BlackboardValue too, for format/parse only (its hash stays its bytes).
//
//       static void save(const game::Loadout& v, ebt::ValueWriter& out);      // optional: snapshots
//       static void load(ebt::ValueReader& in, game::Loadout& out);           // optional: snapshots
//
//     save and load (both or neither) give the type a binary form: snapshots (<ebt/snapshot.hpp>)
//     and recordings. load reads exactly what save wrote, in the same order; a value it cannot
//     accept is refused with in.fail("why"). Built in (no hooks needed): bool, the integer types,
//     float, double, enums (by their underlying value) and std::string. A type with neither is not
//     serializable (TypeInfo::serializable()): saving an agent with a key of that type names the key.
//   - enums get a text form (their value names) from Registry::add_enum (include/ebt/registry.hpp).
//
// A Value owns one value of any such type, on the heap (never relocated byte-wise): it is how
// initial values, port defaults, comparison literals and shared blackboards hold values outside an
// agent's state block. Thread-safety: TypeInfo is immutable after start-up (add_enum, at start-up,
// sets an enum's text form once); a Value is a plain value object.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

namespace ebt {

struct TypeInfo;
namespace debug::io {
class ByteWriter;  // engine/debug/binary_io.hpp, private to the engine
class ByteReader;
}  // namespace debug::io

/// Writes the binary form of one blackboard value (a BlackboardValue<T>::save hook, the built-in
/// serializers). Made by the engine around its own byte buffer; game code only receives one. The
/// encoding is little-endian on every machine: integers as LEB128 varints (signed ones zigzagged),
/// floating point as its IEEE bits, strings and byte runs with their length first.
class ValueWriter {
public:
    explicit ValueWriter(debug::io::ByteWriter& out) noexcept : out_(&out) {}
    void boolean(bool v);
    void u64(std::uint64_t v);  // any unsigned integer
    void i64(std::int64_t v);   // any signed integer
    void f32(float v);
    void f64(double v);
    void string(std::string_view v);
    /// `size` bytes as they are (the reader must know the size: write it first when it varies).
    void bytes(const void* data, std::size_t size);

private:
    debug::io::ByteWriter* out_;
};

/// Reads what a ValueWriter wrote, in the same order. Every read is bounds-checked: a short or
/// malformed input throws ebt::debug::FileFormatError naming the file and the byte offset, and so
/// does fail(), for a value the reader cannot accept (a load hook's own checks).
class ValueReader {
public:
    explicit ValueReader(debug::io::ByteReader& in) noexcept : in_(&in) {}
    bool boolean();  // refuses a byte other than 0 or 1
    std::uint64_t u64();
    std::int64_t i64();
    float f32();
    double f64();
    std::string string();
    void bytes(void* out, std::size_t size);
    [[noreturn]] void fail(const std::string& problem) const;

private:
    debug::io::ByteReader* in_;
};

/// The binary form of a value type (see ValueWriter / ValueReader): `save` writes the value,
/// `load` reads one into the constructed value `out` (throwing debug::FileFormatError, `out`
/// unchanged, when the input is not a value of the type).
struct ValueSerializer {
    void (*save)(const TypeInfo* type, const void* value, ValueWriter& out);
    void (*load)(const TypeInfo* type, ValueReader& in, void* out);
};

/// Operations on a value type that is not trivially copyable. All take pointers to values of that
/// type; `copy_construct` and `default_construct` construct in raw storage of the type's size and
/// alignment, the others act on constructed values.
struct ValueOps {
    void (*default_construct)(void* to);
    void (*copy_construct)(void* to, const void* from);
    void (*copy_assign)(void* to, const void* from);
    void (*destroy)(void* value) noexcept;
    bool (*equal)(const void* a, const void* b);
    /// A hash of the value's content (not its address): equal values hash equal on every run.
    std::uint64_t (*hash)(const void* value);
};

/// The text form of a value type (XML literals, save(), error messages): std::string, enums added
/// with Registry::add_enum, user types whose BlackboardValue<T> has format and parse.
struct TextForm {
    /// The text of a value; round-trips through parse.
    std::string (*format)(const TypeInfo* type, const void* value);
    /// Parses `text` into the constructed value `out`; false (leaving `out` as it was) when the text
    /// is not a value of the type.
    bool (*parse)(const TypeInfo* type, std::string_view text, void* out);
    /// Enums: the value names in registration order and their values (as long long), for parse,
    /// format and the "allowed names" of an error message. Empty for other types.
    std::vector<std::pair<std::string, long long>> names;
    /// Enums: the value as a long long, and storing one (null for other types).
    long long (*enum_value)(const void* value) = nullptr;
    void (*set_enum)(void* value, long long v) = nullptr;
};

/// Run-time description of a blackboard value type. One instance per C++ type (see type_of<T>()).
struct TypeInfo {
    const char* name;
    std::size_t size;
    std::size_t align;
    /// Null for trivially copyable types (memcpy, memcmp, hashed by their bytes).
    const ValueOps* ops = nullptr;
    /// Null for a type without a text form. Set once per type at start-up (built-in types, user
    /// types with format/parse, and enums when Registry::add_enum names their values).
    mutable const TextForm* text = nullptr;
    /// Null for a type without a binary form (snapshots): built in for bool, integers, float, double,
    /// enums and std::string; user types through BlackboardValue<T>::save / load.
    const ValueSerializer* serializer = nullptr;

    bool trivial() const noexcept { return ops == nullptr; }
    /// Whether values of the type can be saved in a snapshot (see `serializer`).
    bool serializable() const noexcept { return serializer != nullptr; }
};

/// The opt-in of a user type that is not trivially copyable (see the top of this header), and the
/// optional text form of any type. Not specialized: no opt-in.
template <class T> struct BlackboardValue;

/// std::string, built in: hashed by its characters; its text form is the characters themselves.
template <> struct BlackboardValue<std::string> {
    static std::uint64_t hash(const std::string& v) noexcept {
        std::uint64_t h = 1469598103934665603ull;  // FNV-1a over the characters
        for (const char c : v) {
            h ^= static_cast<unsigned char>(c);
            h *= 1099511628211ull;
        }
        return h;
    }
    static std::string format(const std::string& v) { return v; }
    static bool parse(std::string_view text, std::string& out) {
        out.assign(text);
        return true;
    }
};

namespace detail {
template <class T> constexpr const char* type_display_name() {
    if constexpr (std::is_same_v<T, bool>) return "bool";
    else if constexpr (std::is_same_v<T, int>) return "int";
    else if constexpr (std::is_same_v<T, unsigned>) return "unsigned";
    else if constexpr (std::is_same_v<T, long>) return "long";
    else if constexpr (std::is_same_v<T, long long>) return "long long";
    else if constexpr (std::is_same_v<T, float>) return "float";
    else if constexpr (std::is_same_v<T, double>) return "double";
    else if constexpr (std::is_same_v<T, std::string>) return "std::string";
    else return nullptr;
}
/// The readable name of T ("game::Vec2"), taken from the compiler's signature of this function.
template <class T> const char* pretty_type_name() {
#if defined(__clang__) || defined(__GNUC__)
    static const std::string name = [](std::string_view sig) {
        // sig: "const char* ebt::detail::pretty_type_name() [with T = game::Vec2]"
        const auto start = sig.find("T = ");
        if (start == std::string_view::npos) return std::string(typeid(T).name());
        auto end = sig.find_first_of(";]", start);
        return std::string(sig.substr(start + 4, end - start - 4));
    }(__PRETTY_FUNCTION__);
    return name.c_str();
#else
    return typeid(T).name();
#endif
}

template <class T>
concept HasValueHash = requires(const T& v) {
    { BlackboardValue<T>::hash(v) } -> std::convertible_to<std::uint64_t>;
};
template <class T>
concept HasValueText = requires(const T& v, T& out, std::string_view s) {
    { BlackboardValue<T>::format(v) } -> std::convertible_to<std::string>;
    { BlackboardValue<T>::parse(s, out) } -> std::convertible_to<bool>;
};

template <class T>
concept HasValueSave = requires(const T& v, ValueWriter& w) { BlackboardValue<T>::save(v, w); };
template <class T>
concept HasValueLoad = requires(T& out, ValueReader& r) { BlackboardValue<T>::load(r, out); };

template <class T> struct OpsOf {
    static void default_construct(void* to) { ::new (to) T(); }
    static void copy_construct(void* to, const void* from) { ::new (to) T(*static_cast<const T*>(from)); }
    static void copy_assign(void* to, const void* from) { *static_cast<T*>(to) = *static_cast<const T*>(from); }
    static void destroy(void* value) noexcept { static_cast<T*>(value)->~T(); }
    static bool equal(const void* a, const void* b) { return *static_cast<const T*>(a) == *static_cast<const T*>(b); }
    static std::uint64_t hash(const void* value) {
        return static_cast<std::uint64_t>(BlackboardValue<T>::hash(*static_cast<const T*>(value)));
    }
    static inline const ValueOps ops{&default_construct, &copy_construct, &copy_assign, &destroy, &equal, &hash};
};

template <class T> struct TextOf {
    static std::string format(const TypeInfo*, const void* value) { return BlackboardValue<T>::format(*static_cast<const T*>(value)); }
    static bool parse(const TypeInfo*, std::string_view text, void* out) {
        T parsed{};
        if (!BlackboardValue<T>::parse(text, parsed)) return false;
        *static_cast<T*>(out) = std::move(parsed);
        return true;
    }
    static inline const TextForm form{&format, &parse, {}};
};

/// The built-in binary forms and the user's save/load hooks (BlackboardValue<T>), as a ValueSerializer.
template <class T> struct SerialOf {
    static void save(const TypeInfo*, const void* value, ValueWriter& out) {
        const T& v = *static_cast<const T*>(value);
        if constexpr (HasValueSave<T>) BlackboardValue<T>::save(v, out);
        else if constexpr (std::is_same_v<T, bool>) out.boolean(v);
        else if constexpr (std::is_enum_v<T>) {
            const auto underlying = static_cast<std::underlying_type_t<T>>(v);
            SerialOf<std::underlying_type_t<T>>::save(nullptr, &underlying, out);
        }
        else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) out.i64(static_cast<std::int64_t>(v));
        else if constexpr (std::is_integral_v<T>) out.u64(static_cast<std::uint64_t>(v));
        else if constexpr (std::is_same_v<T, float>) out.f32(v);
        else if constexpr (std::is_same_v<T, double>) out.f64(v);
        else out.string(v);  // std::string
    }
    static void load(const TypeInfo* type, ValueReader& in, void* out) {
        T& v = *static_cast<T*>(out);
        if constexpr (HasValueLoad<T>) {
            T loaded{};
            BlackboardValue<T>::load(in, loaded);
            v = std::move(loaded);
        } else if constexpr (std::is_same_v<T, bool>) {
            v = in.boolean();
        } else if constexpr (std::is_enum_v<T>) {
            std::underlying_type_t<T> u{};
            SerialOf<std::underlying_type_t<T>>::load(type, in, &u);
            v = static_cast<T>(u);
        } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
            const std::int64_t n = in.i64();
            if (n < static_cast<std::int64_t>(std::numeric_limits<T>::min()) || n > static_cast<std::int64_t>(std::numeric_limits<T>::max()))
                in.fail("the integer " + std::to_string(n) + " does not fit in " + type->name);
            v = static_cast<T>(n);
        } else if constexpr (std::is_integral_v<T>) {
            const std::uint64_t n = in.u64();
            if (n > static_cast<std::uint64_t>(std::numeric_limits<T>::max()))
                in.fail("the integer " + std::to_string(n) + " does not fit in " + type->name);
            v = static_cast<T>(n);
        } else if constexpr (std::is_same_v<T, float>) {
            v = in.f32();
        } else if constexpr (std::is_same_v<T, double>) {
            v = in.f64();
        } else {
            v = in.string();
        }
    }
    static inline const ValueSerializer serializer{&save, &load};
};

template <class T> const ValueSerializer* serializer_of() {
    static_assert(HasValueSave<T> == HasValueLoad<T>,
                  "ebt::BlackboardValue<T> gives save without load or load without save: give both or neither");
    constexpr bool builtin = std::is_same_v<T, bool> || std::is_enum_v<T> || std::is_integral_v<T> ||
                             std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, std::string>;
    if constexpr (HasValueSave<T> || builtin) return &SerialOf<T>::serializer;
    else return nullptr;
}

template <class T> const ValueOps* ops_of() {
    if constexpr (std::is_trivially_copyable_v<T>) return nullptr;
    else return &OpsOf<T>::ops;
}
template <class T> const TextForm* text_of() {
    if constexpr (HasValueText<T>) return &TextOf<T>::form;
    else return nullptr;
}

/// Gives `type` the XML name `xml_name` and, when `form` is not null, that text form (an enum's names;
/// kept for the life of the process). Registering the same again is allowed (every Registry of a
/// program may add the same enum); another name or other value names for a type, or a name taken by
/// another type, throw BuildError. Engine use: Registry::add_enum and Registry::add_type call it.
void name_value_type(const TypeInfo* type, const std::string& xml_name, std::unique_ptr<TextForm> form);
/// The type an XML file names `xml_name` (see name_value_type; "string" is std::string), or null.
const TypeInfo* value_type_named(std::string_view xml_name) noexcept;
/// The name XML files call `type` by (name_value_type; "string" for std::string), or null.
const char* value_type_xml_name(const TypeInfo* type) noexcept;

template <class E> struct EnumOf {
    static long long value(const void* p) { return static_cast<long long>(*static_cast<const E*>(p)); }
    static void set(void* p, long long v) { *static_cast<E*>(p) = static_cast<E>(v); }
};

template <class T> struct TypeTag {
    static inline const TypeInfo info{type_display_name<T>() ? type_display_name<T>() : pretty_type_name<T>(),
                                      sizeof(T), alignof(T), ops_of<T>(), text_of<T>(),
                                      serializer_of<T>()};
};
}  // namespace detail

/// The TypeInfo of a blackboard value type: trivially copyable types, std::string, and user types
/// that opt in with BlackboardValue<T> (see the top of this header).
template <class T> const TypeInfo* type_of() {
    static_assert(!std::is_reference_v<T> && !std::is_const_v<T> && !std::is_volatile_v<T>,
                  "blackboard value types are plain object types (no reference, const or volatile)");
    static_assert(!std::is_pointer_v<T> || !std::is_same_v<std::remove_cv_t<std::remove_pointer_t<T>>, char>,
                  "a blackboard does not store char pointers: use std::string (a string literal given to "
                  "set(), eq() or an initial value is stored as std::string when the key is a std::string)");
    static_assert(std::is_trivially_copyable_v<T> || detail::HasValueHash<T>,
                  "a blackboard value that is not trivially copyable needs the opt-in "
                  "ebt::BlackboardValue<T> with `static std::uint64_t hash(const T&)` (and optionally "
                  "format/parse for XML literals); see <ebt/value_type.hpp>");
    static_assert(std::is_trivially_copyable_v<T> || std::is_copy_constructible_v<T>,
                  "blackboard values must be copyable");
    static_assert(alignof(T) <= 16, "blackboard values must not need more than 16-byte alignment");
    return &detail::TypeTag<T>::info;
}

namespace detail {
/// What a value given to the blackboard is stored as: a string literal, a char pointer or a
/// std::string_view becomes std::string; anything else stays itself.
template <class T>
using stored_t = std::conditional_t<std::is_convertible_v<const T&, std::string_view> && !std::is_same_v<std::decay_t<T>, std::nullptr_t>,
                                    std::string, std::decay_t<T>>;
}  // namespace detail

/// One owned value of any blackboard type, on the heap (its bytes are never moved: a moved Value
/// hands over its pointer). Empty (no type) when default-constructed or moved from.
class Value {
public:
    Value() noexcept = default;
    /// A value-initialized (T{}) value of `type`.
    explicit Value(const TypeInfo* type) : type_(type), data_(allocate(type)) {
        if (!type_->ops) {
            std::memset(data_, 0, type_->size);
            return;
        }
        try {
            type_->ops->default_construct(data_);
        } catch (...) {
            free_storage();  // (no destructor runs for a constructor that throws)
            throw;
        }
    }
    /// A copy of the value `from` points to, of type `type`.
    Value(const TypeInfo* type, const void* from) : type_(type), data_(allocate(type)) { construct_from(from); }
    template <class T, class = std::enable_if_t<!std::is_same_v<std::decay_t<T>, Value>>>
    static Value of(const T& v) {
        const detail::stored_t<T> stored(v);
        return Value(type_of<detail::stored_t<T>>(), &stored);
    }
    Value(const Value& other) : type_(other.type_), data_(other.type_ ? allocate(other.type_) : nullptr) {
        if (type_) construct_from(other.data_);
    }
    Value(Value&& other) noexcept : type_(std::exchange(other.type_, nullptr)), data_(std::exchange(other.data_, nullptr)) {}
    Value& operator=(const Value& other) {
        if (this != &other) *this = Value(other);
        return *this;
    }
    Value& operator=(Value&& other) noexcept {
        if (this != &other) {
            reset();
            type_ = std::exchange(other.type_, nullptr);
            data_ = std::exchange(other.data_, nullptr);
        }
        return *this;
    }
    ~Value() { reset(); }

    const TypeInfo* type() const noexcept { return type_; }
    const void* data() const noexcept { return data_; }
    void* data() noexcept { return data_; }
    bool empty() const noexcept { return type_ == nullptr; }
    /// Same type and equal values (operator== of the type; the bytes of a trivially copyable one).
    friend bool operator==(const Value& a, const Value& b) {
        if (a.type_ != b.type_) return false;
        if (!a.type_) return true;
        return a.type_->ops ? a.type_->ops->equal(a.data_, b.data_) : std::memcmp(a.data_, b.data_, a.type_->size) == 0;
    }

private:
    static void* allocate(const TypeInfo* type) {
        return ::operator new(type->size ? type->size : 1, std::align_val_t{type->align < alignof(std::max_align_t) ? alignof(std::max_align_t) : type->align});
    }
    /// From a constructor: copies the value into the storage just allocated, which is freed again if
    /// the value's copy throws (no destructor runs for a constructor that throws).
    void construct_from(const void* from) {
        if (!type_->ops) {
            std::memcpy(data_, from, type_->size);
            return;
        }
        try {
            type_->ops->copy_construct(data_, from);
        } catch (...) {
            free_storage();
            throw;
        }
    }
    /// Frees the storage (holding no constructed value any more) and empties the Value.
    void free_storage() noexcept {
        ::operator delete(data_, std::align_val_t{type_->align < alignof(std::max_align_t) ? alignof(std::max_align_t) : type_->align});
        type_ = nullptr;
        data_ = nullptr;
    }
    void reset() noexcept {
        if (!type_) return;
        if (type_->ops) type_->ops->destroy(data_);
        free_storage();
    }

    const TypeInfo* type_ = nullptr;
    void* data_ = nullptr;
};

namespace detail {
/// Copy-assigns the value `from` into the constructed value `to` (memcpy for trivial types).
inline void assign_value(const TypeInfo* type, void* to, const void* from) {
    if (type->ops) type->ops->copy_assign(to, from);
    else std::memcpy(to, from, type->size);
}
/// Constructs a copy of `from` in raw storage `to`.
inline void construct_value(const TypeInfo* type, void* to, const void* from) {
    if (type->ops) type->ops->copy_construct(to, from);
    else std::memcpy(to, from, type->size);
}
/// Whether two values are equal (the bytes for trivial types, as the engine always compared them).
inline bool values_equal(const TypeInfo* type, const void* a, const void* b) {
    return type->ops ? type->ops->equal(a, b) : std::memcmp(a, b, type->size) == 0;
}
}  // namespace detail

}  // namespace ebt
