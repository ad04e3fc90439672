// Snapshots: an agent's whole state saved between ticks to bytes, and restored into a new agent of
// the same tree definition, in this process or another, so that it carries on exactly as if nothing
// had happened (same traces, same statuses). docs/snapshots.md describes the format and its versions.
// A whole World is saved and restored the same way (save_world / restore_world), and a squad moves
// from one World to another with save_agents(world, handles) / restore_agents(world, ...).
//
//   std::vector<std::byte> bytes = ebt::save_agent(guard);                  // between ticks
//   ...                                                                      // (write it, read it back)
//   ebt::Agent again = ebt::restore_agent(tree, bytes, {.user = &npc, .listener = &log});
//   for (const ebt::SuspendedAction& s : ebt::suspended_actions(again))      // re-bind latent actions
//       movement.rebind(s.node, s.handle);
//
// What is saved: every node's status, flags and runtime memory (cursors, counters, deadlines, run
// ids, action user memory), the event queue, the clock, tick count, next deadline, statistics, the
// restart and stopped flags, the seed, the mode, and every blackboard value (each through its type's
// serializer, <ebt/value_type.hpp>; a key whose type has none is refused at save time, naming the
// key). What the game supplies again (RestoreOptions): the listener, the change bus, the user pointer
// and the shared blackboards, by scope name. Pointers are never saved.
//
// Who may call what: save_agent between the agent's ticks (UsageError inside one); restore_agent any
// time. Both are plain functions over an agent the caller owns; neither is thread-safe with
// respect to other calls on the same agent.
#pragma once

#include <ebt/agent.hpp>
#include <ebt/handles.hpp>
#include <ebt/tree.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace ebt {

class SharedBlackboard;
class World;

/// A snapshot that cannot be saved (a blackboard key whose type has no binary form) or restored into
/// what the game gives (another tree definition, a shared scope without its blackboard). A file that
/// is not a readable snapshot (truncated, corrupt, foreign, a version this build does not read) is a
/// debug::FileFormatError (<ebt/debug/file_error.hpp>) instead, naming the file and the byte offset.
class SnapshotError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// The structural hash of a tree definition: node kinds and structure, every node's parameters
/// (counts, durations, weights, labels, action memory sizes, guards and predicates), the blackboard
/// keys with their types, shared scopes and the state block's layout. Two trees with the same hash
/// lay out and run their agents alike; a snapshot is restored only into a tree of its hash. The tree
/// name is not part of it (a tree loaded from XML and the same tree built in C++ match).
std::uint64_t structural_hash(const Tree& tree);

/// What the game gives a restored agent again: what a snapshot cannot hold (pointers).
struct RestoreOptions {
    UserPointer user = {};              // the game object the agent acts for (AgentOptions::user)
    TraceListener* listener = nullptr;  // not owned (AgentOptions::listener)
    ChangeBus* bus = nullptr;           // not owned (AgentOptions::bus)
    /// The shared blackboards to bind, by scope name (Agent::bind). Every scope that was bound when the
    /// agent was saved needs one; the agent's mirrors of their keys keep the values they had when saved.
    std::vector<std::pair<std::string, SharedBlackboard*>> shared = {};
    /// Names the bytes in error messages (a file name).
    std::string source = "snapshot";
};

/// Saves `agent` (see the top of this header). Throws UsageError inside a tick of the agent or for a
/// moved-from agent, and SnapshotError for a blackboard key whose type has no binary form.
std::vector<std::byte> save_agent(const Agent& agent);

/// A new agent of `tree` in the state `snapshot` holds. Throws debug::FileFormatError for bytes that
/// are not a readable agent snapshot, SnapshotError when `tree` is not the saved agent's definition
/// (naming both structural hashes) or a shared scope bound when saving is missing from `options`,
/// UsageError for a shared blackboard that does not fit its scope (Agent::bind). Nothing runs: no
/// action is called and nothing is emitted. The agent has a new serial: resume handles from before
/// are stale; get new ones from suspended_actions().
Agent restore_agent(const Tree& tree, std::span<const std::byte> snapshot, const RestoreOptions& options = {});

/// Saves several agents (a squad, or every agent a game keeps) into one snapshot: each tree's identity
/// once, then each agent's state, in the order given. Refuses what save_agent refuses, naming the call.
std::vector<std::byte> save_agents(std::span<const Agent* const> agents);
/// The agents of a save_agents snapshot, in the order they were saved, each of the tree among `trees`
/// with its structural hash (SnapshotError naming a saved tree that none of them is). `options(i)`
/// gives agent i what the game supplies again (no function: nothing). Errors as restore_agent; the
/// whole snapshot is read and checked before the first agent is made.
std::vector<Agent> restore_agents(std::span<const Tree> trees, std::span<const std::byte> snapshot,
                                  const std::function<RestoreOptions(std::size_t)>& options = {});

/// A suspended action of an agent and a handle that resumes its current run.
struct SuspendedAction {
    NodeIndex node = kNoNode;
    ResumeHandle handle;
};
/// The agent's suspended actions that wait for a resume (not those already resumed), in tree order,
/// each with a fresh handle: how game code re-binds its resume handles after restore_agent. Handles
/// name the agent's World handle when it has one.
std::vector<SuspendedAction> suspended_actions(const Agent& agent);
/// The handle of the suspended action `node` (Tree::find), or an invalid handle (valid() false) when
/// that node is not suspended waiting for a resume. UsageError for a NodeRef of another tree.
ResumeHandle resume_handle(const Agent& agent, NodeRef node);

// ---- Worlds ---------------------------------------------------------------------------------------

/// What the game gives each agent of a restored World again (the pointers a snapshot cannot hold).
/// The bus and the shared blackboards are the world's own.
struct WorldAgentOptions {
    UserPointer user = {};              // SpawnOptions::user
    TraceListener* listener = nullptr;  // the agent's own listener (SpawnOptions::listener), not owned
};

/// How restore_world() gives the agents their pointers, and names the bytes.
struct WorldRestoreOptions {
    /// Called once per saved agent, in slot order, with its handle (the same as in the saved world)
    /// before anything changes in the world. No function: no user pointer and no listener.
    std::function<WorldAgentOptions(AgentHandle)> agent = {};
    /// Names the bytes in error messages (a file name).
    std::string source = "snapshot";
};

/// Saves a whole World between frames: its clock, frame number, agent budget and round-robin cursor,
/// its shared blackboards (names, keys, published and pending values), and every slot: the
/// generation (so that handles stay the same and the handles of despawned agents stay stale), and for
/// a live agent its tree, LOD interval, last tick time, awake bit, timer, shared bindings by name and
/// its state (as save_agents saves it). The thread count is not saved: the restoring game chooses it.
/// Throws UsageError inside a step or a callback of the world, or while despawned agents wait to be
/// freed; SnapshotError for a blackboard key (of an agent or a shared blackboard) without a binary form.
std::vector<std::byte> save_world(const World& world);

/// Restores a save_world snapshot into `world`, which must be new: no agent ever spawned, no shared
/// blackboard, no input observer (UsageError otherwise). Each agent's tree is the one among `trees`
/// with its saved structural hash (SnapshotError naming a saved tree that none of them is). The
/// world then steps exactly as the saved one would have: the same state hash after every later
/// frame, the same traces, in both modes and at any thread count. Errors as restore_agents; the whole
/// snapshot is read and checked, and every agent made, before the world changes: after an error the
/// world is still empty. Nothing runs: no action is called and nothing is emitted. Suspended actions
/// are re-bound with suspended_actions(*world.agent(handle)).
void restore_world(World& world, std::span<const Tree> trees, std::span<const std::byte> snapshot,
                   const WorldRestoreOptions& options = {});

/// Saves some agents of `world` (a squad moving to another World) between frames: each agent's record
/// (as save_agents), its LOD interval, how long ago (world time) it last ticked, its awake bit and
/// timer, and the shared blackboards its scopes are bound to (names, keys and values). Despawn them in
/// `world` afterwards to complete a move. Throws UsageError inside a frame, for a stale handle or one
/// given twice; SnapshotError as save_world.
std::vector<std::byte> save_agents(const World& world, std::span<const AgentHandle> handles);

/// Restores the agents of a save_agents(world, ...) snapshot into `world`, between frames, in new slots
/// (the handles returned, in the saved order), as if they had always been there: each scope is bound
/// to this world's shared blackboard of the saved name, or, when it has none, to a new one created
/// with the saved keys and values (the squad's blackboard moves with it). The agent keeps its timers
/// and its place in the world's time: it ticks next when it would have in the old world, provided
/// this world's frames and clock run alike (the trace's tick numbers are this world's frames; a world
/// at an earlier frame, or with a clock behind the time since an agent's last tick, is refused with
/// SnapshotError). An LOD interval above 1 ticks in the frames of its new slot. `options.agent(saved
/// handle)` gives each agent's pointers. Errors as restore_world; after one, the world is unchanged.
std::vector<AgentHandle> restore_agents(World& world, std::span<const Tree> trees, std::span<const std::byte> snapshot,
                                        const WorldRestoreOptions& options = {});

}  // namespace ebt
