// The snapshot file format (docs/snapshots.md) and the agent record shared by agent, squad and world
// snapshots. Private to engine/snapshot.
//
//   header   "EBTSNAP\0", u32 version
//   u8       kind (Kind below)
//   ...      the kind's content (an agent snapshot: one agent record)
//   u64      FNV-1a of every byte between the header and this checksum
//
// An agent record is its tree's identity (name, structural hash, node and key counts) then its state
// (see write_agent_record). read_agent_identity / read_agent_state read it in two steps so that a
// world can pick the tree by the identity before reading the state the tree lays out.
#pragma once

#include "debug/binary_io.hpp"
#include "tree/tree_data.hpp"

#include <ebt/agent.hpp>
#include <ebt/snapshot.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ebt::detail::snapshot {

namespace io = ebt::debug::io;

inline constexpr std::string_view kMagic{"EBTSNAP\0", 8};
/// Version 3 (2026-11-26): the state block's layout for wide trees (statuses, flags, queue: the last
/// node's flags beside the queue; docs/snapshots.md, "Versions"). Version 2 (2026-11-25): flags, statuses,
/// queue. Files of an older version (1 and 2) are refused with older_layout_refusal.
inline constexpr std::uint32_t kVersion = 3;
/// Why a snapshot of an older version (1 or 2) does not load, added to the version message (open_file).
inline std::string older_layout_refusal(std::uint32_t version) {
    const std::string v = std::to_string(version);
    return " (version " + v + " laid an agent's state block out differently: a version-" + v +
           " snapshot cannot be restored by this build)";
}
inline constexpr std::size_t kHeaderBytes = 12;
enum class Kind : std::uint8_t { Agent = 1, Squad = 2, World = 3, WorldAgents = 4 };

/// Everything a restored agent takes from a snapshot, read and checked before any agent is made.
struct AgentImage {
    Mode mode = Mode::Event;
    bool restart_on_end = true;
    bool stopped = false;
    bool abort_requested = false;
    std::uint64_t engine_offset = 0;  // where the engine image starts in the file (for messages)
    std::uint64_t seed = 0;
    TimePoint clock = 0;
    TimePoint next_deadline = 0;
    std::uint64_t ticks = 0;
    AgentStats stats;
    std::uint16_t queue_head = 0;
    std::uint16_t queue_size = 0;
    std::vector<std::byte> engine;     // the state block's engine part, the shared-scope table zeroed
    std::vector<bool> scope_bound;     // per shared scope of the tree: bound when saved
    std::vector<Value> values;         // per key, in schema order
};

struct TreeIdentity {
    std::string name;
    std::uint64_t hash = 0;
    std::uint64_t nodes = 0;
    std::uint64_t keys = 0;
};

/// Refuses what save_agent refuses (inside a tick, moved from, a key without a binary form).
void check_savable(const Agent& agent, const char* who);
/// Appends `agent`'s record; `tree_hash` is structural_hash(agent.tree()) (computed once per tree).
void write_agent_record(io::ByteWriter& out, const Agent& agent, std::uint64_t tree_hash);
/// The record's two parts: the tree's identity, and the agent's state.
void write_identity(io::ByteWriter& out, const Tree& tree, std::uint64_t tree_hash);
void write_agent_state(io::ByteWriter& out, const Agent& agent);
TreeIdentity read_agent_identity(io::ByteReader& in);
/// SnapshotError unless `tree` is the definition `id` names.
void check_identity(const TreeIdentity& id, const Tree& tree, std::uint64_t tree_hash);
/// Reads and checks the state of an agent of `tree` (its identity already read and checked).
AgentImage read_agent_state(io::ByteReader& in, const Tree& tree, const std::string& source);
/// A new agent of `tree` in the state `image` holds, given what the game supplies again.
Agent make_agent(const Tree& tree, AgentImage image, const RestoreOptions& options);
/// Sets every node of `agent` not running, so that destroying it calls no action (a restore that
/// failed after making it).
void disarm_agent(Agent& agent) noexcept;

/// The file around a kind's content: header, kind, content, checksum.
std::vector<std::byte> finish_file(Kind kind, const io::ByteWriter& content);
/// Checks the header, the kind and the checksum; returns a reader over the content alone.
io::ByteReader open_file(std::span<const std::byte> bytes, Kind kind, const std::string& source);

}  // namespace ebt::detail::snapshot
