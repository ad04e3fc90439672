// Recording a World to a file, to replay it later without the game (ebt::debug::Replay,
// <ebt/debug/replay.hpp>; docs/debugging.md, "Record and replay").
//
//   ebt::debug::Recorder recorder(game_registry);
//   ebt::Tree tree = ebt::TreeBuilder("guard", recorder.registry())...end();  // or an xml::Loader
//   ebt::World world;
//   recorder.start(world, "bug.ebtrec");
//   ... the game runs: spawns, blackboard writes, world.step(dt), world.resume(...) ...
//   recorder.stop();
//
// Needs the XML saver: part of ebt only when it is built with EBT_XML (the default).
#pragma once

#include <ebt/registry.hpp>
#include <ebt/world.hpp>

#include <cstdint>
#include <filesystem>
#include <memory>

namespace ebt::debug {

/// Records one World: its inputs, what user code answered, and per-frame checks. Owns the recording
/// registry (the game's actions and conditions wrapped so that their calls are recorded) and, while
/// recording, the file. Trees of the recorded world must be built with registry(); the registry's
/// callbacks call the game's ones, and record only while a recording runs.
///
/// While recording, the recorder is the world's input observer, one of its listeners and a slot of its
/// bus; stop() (or the destructor) detaches it. Stop before the world is destroyed. Called from the
/// simulation thread only, between frames.
class Recorder {
public:
    /// Wraps every action and condition of `game` (copied: `game` may die first). Throws UsageError
    /// for a port whose type a recording cannot hold (only bool, int, unsigned, long, long long, float
    /// and double can be).
    explicit Recorder(const Registry& game);
    ~Recorder();
    Recorder(const Recorder&) = delete;
    Recorder& operator=(const Recorder&) = delete;

    /// The registry to build and load the recorded world's trees with.
    const Registry& registry() const noexcept;

    /// Starts recording `world` into `file` (created or truncated). The world must be new: frame 0,
    /// no agents, no input observer, and no shared blackboards yet (create them after start()).
    /// Throws UsageError otherwise, or when the file cannot be opened, or when already recording.
    void start(World& world, const std::filesystem::path& file);
    /// Writes the end of the recording and closes the file; detaches from the world. Nothing when not
    /// recording.
    void stop();
    bool recording() const noexcept;
    /// Frames recorded so far.
    std::uint64_t frames() const noexcept;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace ebt::debug
