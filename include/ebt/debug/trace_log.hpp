// Trace logs: every lifecycle event of chosen agents (or of all), their guard and condition results,
// errors and blackboard changes, written to a compact binary file while the game runs, and read back
// later (filtered, printed, exported as JSON Lines) by TraceLogReader and the `ebt_trace` tool.
//
//   ebt::debug::TraceLogWriter log("run.ebtlog", {.agents = {guard}});  // {} = every agent
//   log.attach(world);             // hears the world's events and its change bus
//   ... world.step(50ms) ...
//   log.close();                   // throws TraceLogError if the disk refused a write
//
//   ebt::debug::TraceLogReader reader("run.ebtlog");
//   for (ebt::debug::TraceRecord r; reader.next(r);) std::puts(reader.format(r).c_str());
//   if (!reader.damage().empty()) std::puts(reader.damage().c_str());  // cut short by a crash
//
// The format (docs/debugging.md, "Trace logs"): the debug files' header (magic "EBTLOG\0\0", version
// 1), then blocks. Each block is a kind byte ('R' records, 'E' the end), a 32-bit length and its
// bytes. Records are varint-coded and stateful: a tree's table (name, each node's path and kind, each
// key's name and type) comes before the first record that uses the tree, an agent record names the
// agent (handle and tree) the following records belong to, and a tick record moves the tick by a
// delta. A log cut short by a crash is still read up to its last whole block.
//
// Not included by <ebt/ebt.hpp>; this header does not include Boost.
#pragma once

#include <ebt/debug/file_error.hpp>
#include <ebt/handles.hpp>
#include <ebt/trace.hpp>
#include <ebt/tree.hpp>
#include <ebt/world.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ebt::debug {

/// What one record of a trace log says: the six TraceKinds, and a blackboard change.
enum class LogKind : std::uint8_t {
    Initialize,
    Update,
    Terminate,
    GuardEvaluated,
    ConditionEvaluated,
    Error,
    BlackboardChange,
};
inline constexpr int kLogKindCount = 7;
/// The kind's name as `ebt_trace --kind` takes it: initialize, update, terminate, guard, condition,
/// error, change.
const char* to_string(LogKind kind) noexcept;
/// The kind named `name` (as to_string writes it), or nothing.
std::optional<LogKind> log_kind_from_string(std::string_view name) noexcept;

/// Thrown by TraceLogWriter when its file cannot be opened, or by flush()/close() when a write to it
/// failed (the message names the file, how many bytes reached it and the system's reason).
class TraceLogError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// What a TraceLogWriter records.
struct TraceLogOptions {
    /// The agents to log (their World handles, or the names given to TraceLogAgentListener). Empty:
    /// every agent.
    std::vector<AgentHandle> agents = {};
    /// Also log GuardEvaluated and ConditionEvaluated events.
    bool guards = true;
    /// Also log the blackboard changes of the logged agents (attach() / watch()).
    bool changes = true;
    /// Records are kept in memory and written in blocks of about this many bytes (at least 256).
    std::size_t block_bytes = 64 * 1024;
};

/// Writes a trace log. A WorldListener: attach() it to a World (or call on_event from a
/// TraceLogAgentListener for an agent of its own). Owned by the game or tool that logs; it must be
/// detached (or destroyed, which detaches it) before the World it is attached to is destroyed, and
/// used on the simulation thread. Attaching and detaching are refused during a frame, like every
/// World listener change.
///
/// Writing never throws from inside the engine's callbacks: when a write to the file fails (a full
/// disk), the writer keeps the reason (error()), stops writing and drops what comes after; the next
/// flush() or close() throws TraceLogError with that reason. A log in memory (the constructor without
/// a path) never fails this way; its bytes are memory().
class TraceLogWriter final : public WorldListener {
public:
    /// Logs to the file `path` (created or truncated). Throws TraceLogError when it cannot be opened.
    explicit TraceLogWriter(const std::string& path, TraceLogOptions options = {});
    /// Logs to memory (for tests, benchmarks and tools that send the bytes elsewhere).
    explicit TraceLogWriter(TraceLogOptions options = {});
    /// Detaches and closes; a write error here is not thrown (call close() first to see it).
    ~TraceLogWriter() override;
    TraceLogWriter(const TraceLogWriter&) = delete;
    TraceLogWriter& operator=(const TraceLogWriter&) = delete;

    /// Starts logging `world`: adds this writer as a world listener and, when options.changes, subscribes
    /// to world.bus() for the logged agents' blackboard changes (shared keys included: a publish that
    /// changes an agent's copy is logged as that agent's change). UsageError when already attached, or
    /// from inside a frame.
    void attach(World& world);
    /// Stops logging the world it is attached to (nothing when not attached).
    void detach();
    /// Also logs the blackboard changes emitted on `bus` (an Agent's AgentOptions::bus). Changes of
    /// an agent outside a World are logged when a TraceLogAgentListener names it. Kept until close().
    void watch(ChangeBus& bus);

    /// The WorldListener call: records `event` of `agent` when the agent is one of the logged ones.
    void on_event(AgentHandle handle, const Agent& agent, const TraceEvent& event) override;

    /// Writes the records kept in memory to the file and flushes it. Throws TraceLogError when a
    /// write failed (now or earlier).
    void flush();
    /// Writes the end of the log and closes the file; nothing is logged afterwards. Detaches. Throws
    /// TraceLogError when a write failed. A second call does nothing.
    void close();

    /// Why writing stopped ("" while it has not).
    const std::string& error() const noexcept;
    /// Records logged so far (trees and agent records included).
    std::uint64_t records() const noexcept;
    /// Bytes handed to the file (or to memory) so far, header included.
    std::uint64_t bytes_written() const noexcept;
    /// The log's bytes, for a writer logging to memory (what has been flushed or closed so far).
    const std::vector<std::byte>& memory() const noexcept;

private:
    friend class TraceLogAgentListener;
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

/// Puts one Agent that is not in a World into a trace log: set it as the agent's listener
/// (Agent::set_listener or AgentOptions::listener). `name` is the handle the log calls the agent by
/// (the default names no World slot). Must outlive the agent's use of it, and not outlive `writer`.
class TraceLogAgentListener final : public TraceListener {
public:
    TraceLogAgentListener(TraceLogWriter& writer, const Agent& agent, AgentHandle name = {});
    ~TraceLogAgentListener() override;
    TraceLogAgentListener(const TraceLogAgentListener&) = delete;
    TraceLogAgentListener& operator=(const TraceLogAgentListener&) = delete;
    void on_event(const TraceEvent& event) override;

private:
    TraceLogWriter& writer_;
    const Agent& agent_;
    AgentHandle name_;
};

/// A tree as its log describes it, so that a reader needs no registry or tree of its own.
struct LoggedTree {
    struct Node {
        std::string path;  // Tree::path, e.g. "/ActiveSelector/Sequence[0]/Action 'Patrol'[1]"
        NodeKind kind = NodeKind::Action;
    };
    struct Key {
        std::string name;
        std::string type;  // TypeInfo::name
    };
    std::string name;
    std::vector<Node> nodes;
    std::vector<Key> keys;
};

/// One record read back. `node` is set for the six event kinds, `key` for a change.
struct TraceRecord {
    std::uint64_t tick = 0;    // the agent's tick (a World's frame number); a change made between
                               // frames carries the frame that comes next
    AgentHandle agent;
    std::uint32_t tree = 0;    // index into TraceLogReader::trees()
    LogKind kind = LogKind::Initialize;
    NodeIndex node = kNoNode;
    Status status = Status::Invalid;  // Update, Terminate
    bool result = false;              // GuardEvaluated, ConditionEvaluated
    KeyId key = kNoKey;               // BlackboardChange
    std::string text;                 // Error: the message; BlackboardChange: the new value as text
};

/// Which records to keep. Every part left at its default keeps everything.
struct TraceFilter {
    /// Agents to keep; empty: all. An entry whose generation is 0 keeps every agent of that slot index.
    std::vector<AgentHandle> agents = {};
    /// The node's path, exactly, or a glob in which '*' stands for any characters (also '/') and '?'
    /// for one: "/ActiveSelector/Sequence[0]*" keeps a branch. Blackboard changes have no node: a
    /// node filter drops them. Empty: every node.
    std::string node = {};
    std::uint64_t first_tick = 0;
    std::uint64_t last_tick = std::numeric_limits<std::uint64_t>::max();
    /// Bit (1 << LogKind) per kind to keep.
    std::uint32_t kinds = (1u << kLogKindCount) - 1;

    static std::uint32_t kind_bit(LogKind kind) noexcept { return 1u << static_cast<unsigned>(kind); }
};

/// Whether `path` matches `pattern` (exactly, or as the glob TraceFilter::node describes).
bool path_matches(std::string_view pattern, std::string_view path) noexcept;

/// Reads a trace log. The file is read into memory when opened and its records are decoded one by one
/// (next()). Throws FileFormatError at once for a file that is not a trace log or of another format
/// version. A log that is damaged further on (cut short by a crash, corrupt) still gives every record
/// before the damage: next() then returns false and damage() says what was wrong and where; a log cut
/// short is known when it is opened (truncated()).
class TraceLogReader {
public:
    /// Opens the file `path`. FileFormatError when it cannot be read, is not a trace log, or is of a
    /// version this build does not read.
    explicit TraceLogReader(const std::string& path);
    /// Reads a log from bytes in memory; `name` stands for the file in messages.
    TraceLogReader(std::vector<std::byte> bytes, std::string name);

    /// The next record that passes `filter` (default: every record), or false at the end or at damage.
    bool next(TraceRecord& record, const TraceFilter& filter = {});
    /// Every (remaining) record that passes `filter`.
    std::vector<TraceRecord> read_all(const TraceFilter& filter = {});

    /// The format version of the file.
    std::uint32_t version() const noexcept { return version_; }
    /// The trees described so far (a tree's table comes before the first record that uses it).
    const std::vector<LoggedTree>& trees() const noexcept { return trees_; }
    /// True when the file ends inside a block or without the end of the log (the writer did not close it).
    bool truncated() const noexcept { return truncated_; }
    /// "" while the log read so far is sound; else the FileFormatError message of the damage found
    /// (at opening for a cut, during next() for corrupt records), e.g. "run.ebtlog: byte 70000:
    /// truncated: ...". Records before it were given.
    const std::string& damage() const noexcept { return damage_; }
    /// Records decoded so far, filtered or not (trees and agent records not counted).
    std::uint64_t records_read() const noexcept { return records_read_; }

    /// The record's node path ("" for a change), tree name and key name ("" for an event).
    const std::string& node_path(const TraceRecord& record) const;
    const std::string& tree_name(const TraceRecord& record) const;
    const std::string& key_name(const TraceRecord& record) const;

    /// One line for a person: "12 3:1 update /ActiveSelector/Action 'Patrol'[1] Running",
    /// "12 3:1 guard /ActiveSelector/Sequence[0] true", "12 3:1 change enemy_seen = true".
    std::string format(const TraceRecord& record) const;
    /// One JSON object (a line of JSON Lines, without the newline):
    /// {"tick":12,"agent":"3:1","tree":"guard","kind":"update","node":"/...","status":"Running"}; a guard
    /// or condition has "result":true|false, an error "message":"...", a change "key" and "value".
    std::string json(const TraceRecord& record) const;

private:
    void scan_blocks();
    bool decode(TraceRecord& record);  // the next event or change record; false at the end
    bool next_block();

    std::vector<std::byte> bytes_;
    std::string name_;
    std::uint32_t version_ = 0;
    std::vector<LoggedTree> trees_;
    std::size_t records_end_ = 0;  // where the sound blocks end (the rest is cut or the end block)
    std::size_t pos_ = 0;          // the next block header
    std::size_t block_end_ = 0;    // the end of the block being decoded (== pos_ between blocks)
    std::size_t cursor_ = 0;       // the next record inside the block
    AgentHandle agent_;
    std::uint32_t agent_tree_ = 0;
    bool have_agent_ = false;
    std::uint64_t tick_ = 0;
    std::uint64_t records_read_ = 0;
    bool truncated_ = false;
    bool done_ = false;
    std::string damage_;
    std::string cut_;  // the message of a cut found at opening, reported after the last sound record
};

}  // namespace ebt::debug
