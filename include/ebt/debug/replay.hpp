// Replaying a recording (ebt::debug::Recorder, <ebt/debug/record.hpp>) without the game: the same
// trees, fed the recorded inputs, with user code answered from the file, checked frame by frame
// (docs/debugging.md, "Record and replay").
//
//   ebt::debug::Replay replay("bug.ebtrec", {.mode = ebt::Mode::Polling});
//   while (replay.step()) {}
//   std::puts(replay.summary().c_str());   // "identical after 300 frames", or the first divergence
//
// Needs the XML loader: part of ebt only when it is built with EBT_XML (the default).
#pragma once

#include <ebt/handles.hpp>
#include <ebt/world.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ebt::debug {

struct ReplayOptions {
    /// Runs every agent in this mode, whatever mode it was recorded in (default: as recorded).
    std::optional<Mode> mode;
    /// Calls replay_breakpoint(N) just before stepping frame N (frames count from 0).
    std::optional<std::uint64_t> break_at;
};

/// Where a replay first did something else than the recording.
struct Divergence {
    std::uint64_t frame = 0;           // the frame being replayed (from 0)
    std::optional<AgentHandle> agent;  // the agent, when one is concerned
    std::string node;                  // its node's path, when one node is concerned
    std::string expected;              // what the recording says
    std::string actual;                // what the replay did
    /// "frame 17, agent {3, 1}, node /ReactiveFallback/Patrol: expected ..., got ..."
    std::string message() const;
};

/// A frame whose step threw in the recording and, made to throw at the same place, in the replay
/// (docs/debugging.md, "A step that threw").
struct ThrownStep {
    std::uint64_t frame = 0;
    std::string message;  // the exception's what(), as recorded
};

/// Does nothing, is never inlined: Replay::step() calls it before stepping ReplayOptions::break_at,
/// for a debugger's breakpoint (`break ebt::debug::replay_breakpoint`).
void replay_breakpoint(std::uint64_t frame);

/// A recording being replayed. Owns its World, its trees and the replay registry (actions and
/// conditions made from the recorded trees' node models, answering from the recording). Reads the
/// whole file when constructed (FileFormatError for a file that is not a recording, of another
/// version, or cut short in its header) and parses a frame when it steps it (FileFormatError for a
/// corrupt frame; a frame cut short is where the replay stops: see cut()). Single-threaded.
class Replay {
public:
    explicit Replay(const std::filesystem::path& file, ReplayOptions options = {});
    /// From bytes in memory; `name` names them in errors.
    Replay(std::vector<std::byte> bytes, std::string name, ReplayOptions options = {});
    ~Replay();
    Replay(const Replay&) = delete;
    Replay& operator=(const Replay&) = delete;

    /// Replays one frame (its inputs, the step, the checks). Returns false, doing nothing, once the
    /// recording is finished or has diverged; true when the frame was replayed identically.
    bool step();
    /// Steps until the end or the first divergence; true when everything was identical.
    bool run();
    /// Whether the end of the recording was reached (every frame replayed identically).
    bool finished() const noexcept;
    /// Whether the recording stopped before its end record (the game crashed or was killed before
    /// Recorder::stop()): after a whole frame, or inside a frame whose bytes were cut short. Every
    /// whole frame before the cut was replayed identically; the cut frame is not replayed.
    bool cut() const noexcept;
    /// The frames replayed so far whose step threw, as recorded (a publish whose value's copy threw,
    /// a spawn that could not join). A recorded step that threw where a replay cannot make it throw
    /// (an agent's tick refused) stops the replay before that frame: summary() says so.
    const std::vector<ThrownStep>& thrown_steps() const noexcept;
    const std::optional<Divergence>& divergence() const noexcept;
    /// Frames replayed identically so far.
    std::uint64_t frames() const noexcept;
    /// "identical after N frames" when finished, the divergence's message when diverged, "identical
    /// for N frames; the recording ends inside frame N (cut short: ...)" or "... ends there without
    /// its end record (...)" when cut, "identical for N frames; the recording's step of frame N threw
    /// ...: the replay stops there" at a thrown step it cannot reproduce, else "identical so far after
    /// N frames". A finished replay in which steps threw as recorded adds "; the steps of frames 3, 6
    /// threw, as recorded".
    std::string summary() const;
    /// The replayed world (read it between steps; changing it makes the replay diverge).
    World& world() noexcept;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace ebt::debug
