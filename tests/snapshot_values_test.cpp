// The binary form of blackboard values (<ebt/value_type.hpp>: ValueSerializer, ValueWriter,
// ValueReader): the built-in serializers, a user type's save/load hooks, and bad input.
#include "debug/binary_io.hpp"

#include <ebt/ebt.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>

using namespace ebt;

namespace snapshot_values_test {
enum class Stance : std::uint8_t { Idle, Alert, Fleeing = 200 };
enum Plain : int { kMinus = -70000, kZero = 0 };

/// A user type that is not trivially copyable, opted in with hash and the snapshot hooks.
struct Loadout {
    std::string weapon;
    int ammo = 0;
    bool operator==(const Loadout&) const = default;
};
/// Opted in with hash only: no binary form.
struct Badge {
    std::string text;
    bool operator==(const Badge&) const = default;
};
/// Trivially copyable, no hooks: no binary form either (its bytes are not a portable format).
struct Vec2 {
    float x = 0, y = 0;
    bool operator==(const Vec2&) const = default;
};
/// Trivially copyable with hooks.
struct Cell {
    std::int16_t x = 0, y = 0;
    bool operator==(const Cell&) const = default;
};
}  // namespace snapshot_values_test

using snapshot_values_test::Badge;
using snapshot_values_test::Cell;
using snapshot_values_test::Loadout;
using snapshot_values_test::Plain;
using snapshot_values_test::Stance;
using snapshot_values_test::Vec2;

template <> struct ebt::BlackboardValue<Loadout> {
    static std::uint64_t hash(const Loadout& v) { return BlackboardValue<std::string>::hash(v.weapon) ^ static_cast<std::uint64_t>(v.ammo); }
    static void save(const Loadout& v, ValueWriter& out) {
        out.string(v.weapon);
        out.i64(v.ammo);
    }
    static void load(ValueReader& in, Loadout& out) {
        out.weapon = in.string();
        const std::int64_t ammo = in.i64();
        if (ammo < 0 || ammo > 1000) in.fail("a loadout's ammo is " + std::to_string(ammo) + " (0 to 1000)");
        out.ammo = static_cast<int>(ammo);
    }
};
template <> struct ebt::BlackboardValue<Badge> {
    static std::uint64_t hash(const Badge& v) { return BlackboardValue<std::string>::hash(v.text); }
};
template <> struct ebt::BlackboardValue<Cell> {
    static void save(const Cell& v, ValueWriter& out) {
        out.i64(v.x);
        out.i64(v.y);
    }
    static void load(ValueReader& in, Cell& out) {
        out.x = static_cast<std::int16_t>(in.i64());
        out.y = static_cast<std::int16_t>(in.i64());
    }
};

namespace {

std::vector<std::byte> save_one(const TypeInfo* type, const void* value) {
    debug::io::ByteWriter bytes;
    ValueWriter out(bytes);
    type->serializer->save(type, value, out);
    return bytes.bytes();
}

template <class T> T round_trip(const T& value, std::size_t* size = nullptr) {
    const TypeInfo* type = type_of<T>();
    REQUIRE(type->serializable());
    const std::vector<std::byte> bytes = save_one(type, &value);
    if (size) *size = bytes.size();
    debug::io::ByteReader reader(bytes.data(), bytes.size(), "value.bin");
    ValueReader in(reader);
    Value loaded(type);
    type->serializer->load(type, in, loaded.data());
    CHECK(reader.at_end());
    return *static_cast<const T*>(loaded.data());
}

/// Loads a value of `type` from `bytes`; the error message, or "loaded".
std::string load_error(const TypeInfo* type, const std::vector<std::byte>& bytes) {
    debug::io::ByteReader reader(bytes.data(), bytes.size(), "value.bin");
    ValueReader in(reader);
    Value loaded(type);
    try {
        type->serializer->load(type, in, loaded.data());
    } catch (const debug::FileFormatError& e) {
        return e.what();
    }
    return "loaded";
}

}  // namespace

TEST_CASE("value serializer: bool, every integer type, float and double round-trip exactly") {
    CHECK(round_trip(true) == true);
    CHECK(round_trip(false) == false);
    CHECK(round_trip(std::numeric_limits<int>::min()) == std::numeric_limits<int>::min());
    CHECK(round_trip(std::numeric_limits<int>::max()) == std::numeric_limits<int>::max());
    CHECK(round_trip(-1) == -1);
    CHECK(round_trip(std::numeric_limits<long long>::min()) == std::numeric_limits<long long>::min());
    CHECK(round_trip(std::numeric_limits<unsigned long long>::max()) == std::numeric_limits<unsigned long long>::max());
    CHECK(round_trip(std::uint8_t{255}) == 255);
    CHECK(round_trip(std::int16_t{-32768}) == -32768);
    CHECK(round_trip(123u) == 123u);
    CHECK(round_trip(-0.0f) == 0.0f);
    CHECK(std::signbit(round_trip(-0.0f)));
    CHECK(round_trip(3.25f) == 3.25f);
    CHECK(round_trip(1e-300) == 1e-300);
    CHECK(std::isnan(round_trip(std::numeric_limits<double>::quiet_NaN())));
    CHECK(round_trip(std::numeric_limits<double>::infinity()) == std::numeric_limits<double>::infinity());
    // small integers are short whatever their type and sign (varints, signed ones zigzagged)
    std::size_t size = 0;
    round_trip(-3, &size);
    CHECK(size == 1);
    round_trip(100000ull, &size);
    CHECK(size == 3);
}

TEST_CASE("value serializer: enums by their underlying value, named or not; std::string by its characters") {
    CHECK(round_trip(Stance::Fleeing) == Stance::Fleeing);
    CHECK(round_trip(static_cast<Stance>(77)) == static_cast<Stance>(77));  // a value without a name
    CHECK(round_trip(snapshot_values_test::kMinus) == snapshot_values_test::kMinus);
    CHECK(round_trip(std::string()) == "");
    CHECK(round_trip(std::string("halt")) == "halt");
    const std::string long_text(5000, 'x');  // past the short-string buffer
    CHECK(round_trip(long_text) == long_text);
    CHECK(round_trip(std::string("nul\0inside", 10)) == std::string("nul\0inside", 10));
}

TEST_CASE("value serializer: a user type with save/load hooks round-trips; without hooks it is not serializable") {
    const Loadout rifle{"rifle", 30};
    CHECK(round_trip(rifle) == rifle);
    CHECK(round_trip(Cell{-4, 7}) == Cell{-4, 7});
    CHECK(type_of<Loadout>()->serializable());
    CHECK(type_of<Cell>()->serializable());
    CHECK_FALSE(type_of<Badge>()->serializable());
    CHECK_FALSE(type_of<Vec2>()->serializable());
    CHECK(type_of<std::string>()->serializable());
    CHECK(type_of<Stance>()->serializable());
    CHECK_FALSE(type_of<long double>()->serializable());
}

TEST_CASE("value serializer: bad input is refused with the file, the offset and what is wrong") {
    // truncated
    const int big = 1 << 20;
    std::vector<std::byte> bytes = save_one(type_of<int>(), &big);
    bytes.pop_back();
    CHECK(load_error(type_of<int>(), bytes) == "value.bin: byte 3: truncated: the file ends inside a varint");
    // an integer that does not fit its type
    const int too_big = 300;
    CHECK(load_error(type_of<std::int8_t>(), save_one(type_of<int>(), &too_big)) ==
          "value.bin: byte 2: the integer 300 does not fit in signed char");
    const unsigned wide = 300;
    CHECK(load_error(type_of<Stance>(), save_one(type_of<unsigned>(), &wide)) ==
          "value.bin: byte 2: the integer 300 does not fit in snapshot_values_test::Stance");
    // a bool that is neither 0 nor 1
    CHECK(load_error(type_of<bool>(), {std::byte{2}}) == "value.bin: byte 1: corrupt: a bool value is 2 (0 or 1)");
    // a user hook's own check; the value it was loading into is left as it was
    const Loadout bad{"rifle", 5000};
    CHECK(load_error(type_of<Loadout>(), save_one(type_of<Loadout>(), &bad)) ==
          "value.bin: byte 8: a loadout's ammo is 5000 (0 to 1000)");
}
