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
#include <string>
#include <string_view>
#include <unordered_map>

namespace ebt::debug::recording {

using io::ByteReader;
using io::ByteWriter;

inline constexpr std::string_view kMagic{"EBTREC\0\0", 8};
/// Version 2 added the Loose and Restart records; a version 1 file is read as it is.
inline constexpr std::uint32_t kVersion = 2;
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
};
inline constexpr std::uint8_t kLastTag = 18;

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
/// bytes, and std::string, recorded as its characters. Looked up by their TypeInfo::name.
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
inline bool is_string(const TypeInfo* type) { return type == type_of<std::string>(); }
inline bool is_recordable(const TypeInfo* type) { return is_builtin(type) || is_string(type); }
/// What the refusals name as the types a recording holds.
inline constexpr const char* kRecordableTypes = "bool, int, unsigned, long, long long, float, double, std::string";
inline const TypeInfo* recordable_named(std::string_view name) {
    for (const TypeInfo* t : builtin_types())
        if (name == t->name) return t;
    // A string is named "std::string" in the records and "string" in the trees' XML models.
    if (name == type_of<std::string>()->name || name == "string") return type_of<std::string>();
    return nullptr;
}

/// Calls f(T{}) with T the recordable type `type` is; UsageError for another type.
template <class F> void with_recordable(const TypeInfo* type, F&& f) {
    if (type == type_of<bool>()) f(bool{});
    else if (type == type_of<int>()) f(int{});
    else if (type == type_of<unsigned>()) f(unsigned{});
    else if (type == type_of<long>()) f(long{});
    else if (type == type_of<long long>()) f(static_cast<long long>(0));
    else if (type == type_of<float>()) f(float{});
    else if (type == type_of<double>()) f(double{});
    else if (type == type_of<std::string>()) f(std::string{});
    else throw UsageError(std::string("recording: values of type '") + type->name + "' cannot be recorded");
}

/// The recorded form of a value of a recordable type: a builtin value's bytes, a string's characters.
inline std::string value_bytes(const TypeInfo* type, const void* value) {
    if (is_string(type)) return *static_cast<const std::string*>(value);
    return std::string(static_cast<const char*>(value), type->size);
}
/// Appends one port value to a condition's values: a builtin value's bytes, a string's length (4 bytes)
/// then its characters, so that a run of values reads back one way only.
template <class T> void append_port_value(std::string& out, const T& value) {
    if constexpr (std::is_same_v<T, std::string>) {
        const auto size = static_cast<std::uint32_t>(value.size());
        out.append(reinterpret_cast<const char*>(&size), sizeof size);
        out += value;
    } else {
        out.append(reinterpret_cast<const char*>(&value), sizeof value);
    }
}

/// Whether `bytes` are the recorded form of a value of `type`: any characters for a string; for a
/// builtin type its size, and for bool 0 or 1 (other bytes are not a bool).
inline bool valid_value(const TypeInfo* type, std::string_view bytes) {
    if (!type) return false;
    if (is_string(type)) return true;
    if (bytes.size() != type->size) return false;
    return type != type_of<bool>() || static_cast<unsigned char>(bytes[0]) <= 1;
}
/// Calls f(const void*) with a value of `type` made from its recorded form (valid_value first).
template <class F> void with_value(const TypeInfo* type, const std::string& bytes, F&& f) {
    if (is_string(type)) {
        const std::string value = bytes;
        f(static_cast<const void*>(&value));
    } else {
        f(static_cast<const void*>(bytes.data()));
    }
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
