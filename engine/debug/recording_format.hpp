// The recording file's vocabulary (docs/debugging.md, "Record and replay"): record tags, call kinds,
// and the small helpers the recorder and the replay share (handles, value types, the lifecycle hash).
// Engine-internal: included by engine/debug/recorder.cpp and engine/debug/replay.cpp only.
#pragma once

#include "binary_io.hpp"

#include <ebt/blackboard.hpp>
#include <ebt/detail/hash.hpp>
#include <ebt/handles.hpp>
#include <ebt/trace.hpp>
#include <ebt/world.hpp>

#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>

namespace ebt::debug::recording {

using io::ByteReader;
using io::ByteWriter;

inline constexpr std::string_view kMagic{"EBTREC\0\0", 8};
/// Version 2 added the Loose and Restart records, version 3 the Threw record (a step that threw);
/// version 1 and 2 files are read as they are.
inline constexpr std::uint32_t kVersion = 3;
inline constexpr std::uint32_t kOldestVersion = 1;

/// The tag byte in front of every record.
enum class Tag : std::uint8_t {
    Tree = 1,
    Shared = 2,
    Declare = 3,
    Spawn = 4,
    Despawn = 5,
    Resume = 6,
    Abort = 7,
    Interval = 8,
    Budget = 9,
    Write = 10,
    SharedWrite = 11,
    Step = 12,
    Call = 13,
    Condition = 14,
    FrameEnd = 15,
    End = 16,
    Loose = 17,    // an input made during a frame outside any action call (a listener, a change slot)
    Restart = 18,  // Agent::restart
    Threw = 19,    // the frame's step threw: where (StepThrow), before the frame's FrameEnd
};
inline constexpr std::uint8_t kLastTag = 19;
/// The first version with the Threw record: in an older file, a frame whose step threw has no
/// FrameEnd (the next Step follows).
inline constexpr std::uint32_t kThrewVersion = 3;

/// Which callback of an action a Call record is.
enum class CallKind : std::uint8_t { Initialize = 0, Update = 1, Terminate = 2 };
inline const char* to_string(CallKind kind) {
    switch (kind) {
    case CallKind::Initialize: return "Initialize";
    case CallKind::Update: return "Update";
    case CallKind::Terminate: return "Terminate";
    }
    return "?";
}

/// Call record flags.
inline constexpr std::uint8_t kSuspended = 1;  // the action suspended itself during the call
inline constexpr std::uint8_t kThrew = 2;      // the callback threw (its message follows)

inline void write_handle(ByteWriter& out, AgentHandle h) {
    out.varint(h.index);
    out.varint(h.generation);
}
inline AgentHandle read_handle(ByteReader& in) {
    AgentHandle h;
    h.index = static_cast<std::uint32_t>(in.varint_at_most(0xFFFFFFFF, "agent index"));
    h.generation = static_cast<std::uint32_t>(in.varint_at_most(0xFFFFFFFF, "agent generation"));
    return h;
}

/// The value types a recording holds: the builtin types (the XML literal types), recorded as their
/// bytes, and every type with both an XML name and a binary form (std::string, an enum added with
/// Registry::add_enum, a user type added with Registry::add_type whose BlackboardValue<T> has
/// save/load), recorded in its binary form. Builtin types are named in records by TypeInfo::name,
/// the others by their XML name, which the replaying program finds again (value_type_named) when it
/// has named the same types.
inline const std::array<const TypeInfo*, 7>& builtin_types() {
    static const std::array<const TypeInfo*, 7> types{type_of<bool>(), type_of<int>(), type_of<unsigned>(), type_of<long>(),
                                                      type_of<long long>(), type_of<float>(), type_of<double>()};
    return types;
}
inline bool is_builtin(const TypeInfo* type) {
    for (const TypeInfo* t : builtin_types())
        if (t == type) return true;
    return false;
}
inline bool is_recordable(const TypeInfo* type) {
    return is_builtin(type) || (type->serializable() && detail::value_type_xml_name(type) != nullptr);
}
/// What the refusals say a recording holds.
inline constexpr const char* kRecordableTypes =
    "bool, integers, float, double, std::string, and enums and user types named with Registry::add_enum or "
    "Registry::add_type that have a binary form";
/// The name records give a recordable type.
inline std::string recorded_type_name(const TypeInfo* type) {
    if (is_builtin(type)) return type->name;
    const char* xml = detail::value_type_xml_name(type);
    return xml ? xml : type->name;
}
/// Why a replay cannot read a value type a recording names (a game's enum or user type).
inline constexpr const char* unknown_type_hint =
    "which this program has not named: a replay of a game's enums and user types must name them as the game "
    "did (Registry::add_enum, Registry::add_type) before it reads the recording";
/// The recordable type records call `name`, or null (a type this program has not named).
inline const TypeInfo* recordable_named(std::string_view name) {
    for (const TypeInfo* t : builtin_types())
        if (name == t->name) return t;
    const TypeInfo* named = detail::value_type_named(name);
    return named && is_recordable(named) ? named : nullptr;
}

/// Calls f(number) with the value at `value` when `type` is a builtin number type (not bool).
template <class F> void with_builtin_number(const TypeInfo* type, const void* value, F&& f) {
    const auto read = [&](auto tag) {
        decltype(tag) v;
        std::memcpy(&v, value, sizeof v);
        f(v);
    };
    if (type == type_of<int>()) read(int{});
    else if (type == type_of<unsigned>()) read(unsigned{});
    else if (type == type_of<long>()) read(long{});
    else if (type == type_of<long long>()) read(static_cast<long long>(0));
    else if (type == type_of<float>()) read(float{});
    else if (type == type_of<double>()) read(double{});
}

/// The recorded form of a value of a recordable type: a builtin value's bytes, another's binary form.
inline std::string value_bytes(const TypeInfo* type, const void* value) {
    if (is_builtin(type)) return std::string(static_cast<const char*>(value), type->size);
    io::ByteWriter out;
    ValueWriter writer(out);
    type->serializer->save(type, value, writer);
    return std::string(reinterpret_cast<const char*>(out.bytes().data()), out.size());
}

/// Appends one port value to a condition's values: a builtin value's bytes (its size is its type's),
/// another value's recorded form after its length (4 bytes), so that a run of values reads back one
/// way only.
inline void append_port_value(std::string& out, const TypeInfo* type, const void* value) {
    const std::string bytes = value_bytes(type, value);
    if (!is_builtin(type)) {
        const auto size = static_cast<std::uint32_t>(bytes.size());
        out.append(reinterpret_cast<const char*>(&size), sizeof size);
    }
    out += bytes;
}
/// A value for a divergence message: "true", "2", "\"charge\"", an enum's name, a user type's text.
inline std::string value_text(const TypeInfo* type, const void* value) {
    if (type == type_of<bool>()) return *static_cast<const bool*>(value) ? "true" : "false";
    if (type == type_of<std::string>()) return "\"" + *static_cast<const std::string*>(value) + "\"";
    if (type->text) return type->text->format(type, value);
    std::string text;
    with_builtin_number(type, value, [&](auto v) { text = std::to_string(v); });
    return text.empty() ? std::string("(a ") + type->name + ")" : text;
}

/// Calls f(const void*) with a value of `type` read from its recorded form; false (f not called)
/// when `bytes` are not exactly one value of the type (for bool: a byte other than 0 or 1).
template <class F> bool with_value(const TypeInfo* type, std::string_view bytes, F&& f) {
    if (!type) return false;
    if (is_builtin(type)) {
        if (bytes.size() != type->size) return false;
        if (type == type_of<bool>() && static_cast<unsigned char>(bytes[0]) > 1) return false;
        f(static_cast<const void*>(bytes.data()));
        return true;
    }
    Value value(type);
    try {
        io::ByteReader in(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size(), "value");
        ValueReader reader(in);
        type->serializer->load(type, reader, value.data());
        if (!in.at_end()) return false;
    } catch (const FileFormatError&) {
        return false;
    }
    f(static_cast<const void*>(value.data()));
    return true;
}
/// Whether `bytes` are the recorded form of one value of `type`.
inline bool valid_value(const TypeInfo* type, std::string_view bytes) {
    return with_value(type, bytes, [](const void*) {});
}

/// The World handle of an agent known by address (a condition sees only its blackboard's agent). Looked
/// up in a map filled from World::handles(), refilled when an agent is not in it (a new one, or a
/// freed agent's slot reused at the same address).
class HandleCache {
public:
    AgentHandle find(World& world, const Agent* agent) {
        const auto it = map_.find(agent);
        if (it != map_.end() && world.agent(it->second) == agent) return it->second;
        map_.clear();
        for (const AgentHandle h : world.handles()) map_[world.agent(h)] = h;
        const auto again = map_.find(agent);
        return again == map_.end() ? AgentHandle{} : again->second;
    }

private:
    std::unordered_map<const Agent*, AgentHandle> map_;
};

/// One agent's lifecycle events (Initialize, Update, Terminate) since the last frame end: how many,
/// and a FNV-1a hash of each one's world frame, node, kind and status. The world frame, not the
/// event's tick: an event between frames (an abort, a despawn) carries the agent's tick count, which
/// differs between the modes for an agent that event mode let sleep.
struct TraceDigest {
    AgentHandle agent;
    std::uint64_t events = 0;
    detail::Fnv1a hash;
    void add(std::uint64_t frame, const TraceEvent& e) {
        ++events;
        hash(frame);
        hash(e.node);
        hash(static_cast<std::uint8_t>(e.kind));
        hash(static_cast<std::uint8_t>(e.status));
    }
};

}  // namespace ebt::debug::recording
