// The live inspector: a web page on http://127.0.0.1:PORT/ that shows a running World (frame
// metrics, a searchable agent list, one agent's tree with live statuses, its blackboard and recent
// trace events) and sends commands back (pause, resume, single-step, write a blackboard key, abort
// an agent).
//
//   ebt::debug::Inspector inspector(world, {.port = 8080});   // off unless a game creates one
//   std::printf("inspector: %s\n", inspector.url().c_str());
//   for (;;) {
//       if (inspector.before_frame()) inspector.after_frame(world.step(50ms));   // false while paused
//       sleep_until_next_frame();
//   }
//
// Threads. The Inspector is owned by the game and used on the thread that steps its World: the
// constructor, before_frame(), after_frame() and the destructor run there. Its HTTP server runs on a
// thread of its own and never touches the World: it reads snapshots the game thread publishes and
// queues commands the game thread applies in before_frame(), both under one mutex, which the game
// thread takes only when a request came since the last frame or a page is watching. The game thread
// never waits for the network. The agent a page watches is heard through a listener the inspector puts
// in front of that agent's own (World::set_listener(handle, ...)), and takes out again when the page
// selects another, stops watching, or the inspector is destroyed. Security: the server listens on 127.0.0.1 unless told otherwise;
// another address needs a token that every request must carry; read_only refuses every command
// (docs/debugging.md, "The live inspector").
#pragma once

#include <ebt/world.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace ebt::debug {

/// Every member has a default, so that designated initializers of a subset ({.port = 8080}) compile
/// without -Wmissing-field-initializers warnings (tests/debug_inspector_test.cpp uses one).
struct InspectorOptions {
    /// The TCP port on 127.0.0.1; 0 picks a free one (Inspector::port() tells which).
    std::uint16_t port = 0;
    /// false: no server at all (requests only through Inspector::handle, e.g. from a game's own
    /// web server or a test).
    bool serve = true;
    /// Snapshots of the agent list and of the selected agent are rebuilt at most this often...
    std::chrono::milliseconds publish_interval{100};
    /// ...and only while someone asked for them within this time (nobody watching: no snapshots).
    std::chrono::milliseconds watch_timeout{3000};
    /// How long a command request waits for the game thread to apply it (before_frame) before it
    /// is answered 503.
    std::chrono::milliseconds command_timeout{2000};
    /// A connection must send its whole request within this time of connecting (else 408).
    std::chrono::milliseconds request_timeout{5000};
    /// Frames of metrics kept for the chart.
    std::size_t history_frames = 600;
    /// Trace events of the selected agent kept.
    std::size_t recent_events = 100;
    /// The address the server binds: loopback by default. Any address that is not loopback
    /// ("127.x.x.x", "::1", "localhost"), e.g. "0.0.0.0", also needs a token (else UsageError).
    std::string address = "127.0.0.1";
    /// When not empty, every request to the server must carry it, in the header X-Ebt-Token or as
    /// the query parameter token= (the page: http://HOST:PORT/?token=...); else 401.
    std::string token{};
    /// Commands (pause, resume, step, write, abort) are refused with 403; the page hides its buttons.
    bool read_only = false;
};

/// Whether the inspector counts `address` as loopback ("127.x.x.x", "::1", "localhost"): any other
/// address needs InspectorOptions::token. (ebt_arena checks its --inspect-address with it.)
bool is_loopback_address(std::string_view address) noexcept;

/// One HTTP answer of Inspector::handle.
struct InspectorResponse {
    int status = 200;
    std::string content_type;
    std::string body;
};

/// A live view of one World, served over HTTP (see the top of this file). Created and destroyed on
/// the game thread, between frames; the World must outlive it. Throws std::system_error when the
/// address or port cannot be bound, UsageError for an address that is not loopback without a token.
class Inspector {
public:
    explicit Inspector(World& world, InspectorOptions options = {});
    ~Inspector();
    Inspector(const Inspector&) = delete;
    Inspector& operator=(const Inspector&) = delete;

    /// The port the server listens on (0 when options.serve is false).
    std::uint16_t port() const noexcept;
    /// "http://ADDRESS:PORT/", with "?token=TOKEN" when there is a token.
    std::string url() const;

    /// Game thread, between frames: applies the queued commands in the order they came, publishes
    /// the world's state (and, when someone is watching, fresh snapshots), and says whether to step
    /// the world now: false while paused, except once per single-step command.
    bool before_frame();
    /// Game thread, after World::step: records the frame's metrics for the chart.
    void after_frame(const FrameMetrics& metrics);
    /// Whether the world is paused (game thread).
    bool paused() const noexcept;

    /// Answers one request as the server does (method "GET" or "POST", target "/api/state", a
    /// form-encoded body). Thread-safe; what the server thread calls. A command waits until the game
    /// thread applies it (or options.command_timeout): do not call one from the game thread.
    InspectorResponse handle(std::string_view method, std::string_view target, std::string_view body = {});

    /// The page (HTML with its script and style; no external resources).
    static std::string_view page() noexcept;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace ebt::debug
