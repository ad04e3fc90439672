// debug::Inspector: the game-thread side (commands, snapshots, the trace listener) and the answers to
// requests (JSON). The HTTP server is inspector_http.cpp, the page inspector_page.cpp.
//
// What the two threads share lives in Impl::Shared, under Impl::mutex: the command queue and its
// results, the snapshots (immutable once published, handed out by shared_ptr), the metrics history
// as the page sees it and the watch (what was asked for, and when). The world's state (frame, clock,
// agents, paused) is four atomics, and `attention` tells the game thread that a request came since
// its last look. Everything else in Impl is the game thread's.
//
// The cost with no page open (the common case: an inspector left attached) is kept to a few atomic
// loads and stores per frame: before_frame() takes the mutex only when `attention` is set or a page
// is watching, and after_frame() keeps the metrics in the game thread's own ring, copied to the
// shared one only while a page is watching. Watching one agent costs only that agent: its events
// come through an AgentTap set as that agent's own listener, not through a World listener that would
// hear every agent.
#include <ebt/debug/inspector.hpp>

#include <ebt/detail/engine_access.hpp>
#include <ebt/xml.hpp>

#include "debug/inspector_http.hpp"

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <set>
#include <unordered_map>

namespace ebt::debug {

namespace {

using Clock = std::chrono::steady_clock;

// ---- JSON (nlohmann-json; ordered, so that keys come in the order written) ---------------------

using Json = nlohmann::ordered_json;

/// Compact JSON text; bytes that are not UTF-8 (a key name typed into a request) become U+FFFD
/// instead of throwing.
std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

std::string json_error(std::string_view message) { return dump(Json{{"error", std::string(message)}}); }

std::string handle_text(AgentHandle h) { return std::to_string(h.index) + "." + std::to_string(h.generation); }

/// "12.1" -> {12, 1}; false for anything else.
bool parse_handle(std::string_view s, AgentHandle& out) {
    const std::size_t dot = s.find('.');
    if (dot == std::string_view::npos) return false;
    const auto number = [](std::string_view d, std::uint32_t& v) {
        if (d.empty() || d.size() > 10) return false;
        std::uint64_t x = 0;
        for (char c : d) {
            if (c < '0' || c > '9') return false;
            x = x * 10 + static_cast<std::uint64_t>(c - '0');
        }
        if (x > 0xFFFFFFFFu) return false;
        v = static_cast<std::uint32_t>(x);
        return true;
    };
    return number(s.substr(0, dot), out.index) && number(s.substr(dot + 1), out.generation);
}

std::string lowercase(std::string_view s) {
    std::string out(s);
    for (char& c : out)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return out;
}

// ---- what the game thread publishes -------------------------------------------------------------

/// One tree's nodes as the page draws them. Built once per definition, immutable, shared with the
/// server thread (it keeps the Tree, so that the definition's address names no other tree meanwhile).
struct TreeInfo {
    Tree tree;
    std::string name;
    struct Node {
        std::string kind, label, path;
        int parent = -1;
        int depth = 0;
        bool guard = false;
        std::string abort;  // the guard's abort mode ("" without a guard)
    };
    std::vector<Node> nodes;
};

/// One line of the agent list: a snapshot row, made on the game thread, read by the server thread.
struct AgentRow {
    AgentHandle handle;
    std::shared_ptr<const TreeInfo> tree;
    NodeIndex running = kNoNode;  // the deepest running node (the first in pre-order among the deepest)
    Status root = Status::Invalid;
};

/// The agent list as of one frame (published whole; immutable once published).
struct AgentList {
    std::uint64_t frame = 0;
    std::vector<AgentRow> rows;
};

/// One of the selected agent's recent trace events (kept by the listener, copied into the snapshot).
struct EventRow {
    std::uint64_t frame = 0;  // of the last time
    TraceEvent event;         // event.message is not kept: see `message`
    /// The tree whose node `event.node` is: the agent's tree when the event came (a hot reload gives
    /// the same handle another tree, whose node numbers name other nodes).
    std::shared_ptr<const TreeInfo> tree;
    std::string message;      // Error events
    std::uint32_t times = 1;  // the same update of the same node in consecutive ticks, counted in one row
};

/// The selected agent as of one frame: its statuses, blackboard text and recent events (immutable
/// once published).
struct AgentDetail {
    AgentHandle handle;
    bool gone = false;  // the agent no longer exists (nothing else is set)
    std::uint64_t frame = 0;
    std::shared_ptr<const TreeInfo> tree;
    std::vector<Status> statuses;
    std::uint64_t ticks = 0;
    Mode mode = Mode::Event;
    struct Value {
        std::string key, type, value;
        bool shared = false;
    };
    std::vector<Value> blackboard;
    std::vector<EventRow> events;
};

/// One frame's FrameMetrics, as the chart needs them.
struct MetricsRow {
    std::uint64_t frame;
    std::int64_t wall_ns;
    std::uint32_t events, agents, guards, updates;
};

enum class CommandKind { Pause, Resume, Step, Write, Abort };

/// A command from the page, queued by the server thread and applied by before_frame.
struct Command {
    std::uint64_t id = 0;
    CommandKind kind = CommandKind::Pause;
    AgentHandle handle;
    std::string key, value;
};

/// What a command's request answers (status and JSON body), handed back to the waiting request.
struct CommandResult {
    int status = 200;
    std::string body;
};

std::string event_text(const EventRow& r) {
    const TraceEvent& e = r.event;
    switch (e.kind) {
    case TraceKind::Initialize: return "Initialize";
    case TraceKind::Update: return std::string("Update ") + to_string(e.status);
    case TraceKind::Terminate: return std::string("Terminate ") + to_string(e.status);
    case TraceKind::GuardEvaluated: return e.result ? "guard true" : "guard false";
    case TraceKind::ConditionEvaluated: return e.result ? "condition true" : "condition false";
    case TraceKind::Error: return "error: " + r.message;
    }
    return "?";
}

/// Writes `bytes` (a value of the builtin type `type`) into key `id`; false when `type` is not T.
template <class T> bool write_as(Blackboard& bb, KeyId id, const TypeInfo* type, const void* bytes) {
    if (type != type_of<T>()) return false;
    T value;
    std::memcpy(&value, bytes, sizeof value);
    bb.set(Key<T>{id, bb.schema().tag()}, value);
    return true;
}

}  // namespace

/// The inspector's state, owned by the Inspector. Its game-thread half is used by before_frame,
/// after_frame and, through `tap` while an agent is watched, during that agent's ticks; its shared
/// half (`shared`, under `mutex`, and the atomics) also by the server thread through handle().
struct Inspector::Impl {
    explicit Impl(World& w, InspectorOptions o) : world(w), options(o) { tap.impl = this; }

    /// Hears the watched agent's trace events. It is set as that agent's own listener
    /// (World::set_listener(handle, ...)) in front of the listener the agent had, `previous`, which
    /// it calls first, so that the game's listener hears every event as before. Owned by the Impl;
    /// game thread only. See watch() and unwatch() for when it is put in and taken out.
    struct AgentTap final : TraceListener {
        Impl* impl = nullptr;
        TraceListener* previous = nullptr;
        void on_event(const TraceEvent& event) override {
            std::exception_ptr error;  // the game's listener's, passed on to the agent after ours ran
            if (previous) {
                try {
                    previous->on_event(event);
                } catch (...) {
                    error = std::current_exception();
                }
            }
            impl->keep_event(event);
            if (error) std::rethrow_exception(error);
        }
    };

    World& world;
    const InspectorOptions options;
    std::unique_ptr<http::Server> server;  // destroyed first (~Inspector)
    std::atomic<std::uint16_t> bound_port{0};  // the server's port, once bound

    // ---- shared with the server thread, under `mutex` ----
    std::mutex mutex;
    std::condition_variable results_ready;
    struct Shared {
        std::deque<Command> commands;
        std::map<std::uint64_t, CommandResult> results;
        std::set<std::uint64_t> abandoned;  // commands whose request timed out: their results are dropped
        std::uint64_t next_id = 1;
        bool stopping = false;
        // the watch: the last request, and the agent the page asked about
        Clock::time_point last_request{};
        bool asked = false;  // any request yet
        bool selected = false;
        AgentHandle selected_handle;
        // snapshots
        std::shared_ptr<const AgentList> agents_list;
        std::shared_ptr<const AgentDetail> detail;
        std::deque<MetricsRow> metrics;  // a copy of the game thread's `metrics`, kept while watching
    } shared;

    // ---- shared without the mutex ----
    /// Set by the server thread after each request (and command) it took: the game thread's next
    /// before_frame takes the mutex and looks. Cleared by that before_frame.
    std::atomic<bool> attention{false};
    /// The state /api/state shows, stored by every before_frame and after_frame.
    std::atomic<std::uint64_t> state_frame{0};
    std::atomic<TimePoint> state_now{0};
    std::atomic<std::size_t> state_agents{0};
    std::atomic<bool> state_paused{false};

    // ---- game thread only ----
    bool paused = false;
    std::uint32_t steps = 0;  // single steps granted while paused
    bool watching = false;    // someone asked within watch_timeout (as of the last before_frame)
    bool metrics_shared = false;  // shared.metrics is a copy of `metrics`, kept current (while watching)
    std::deque<MetricsRow> metrics;  // the last history_frames frames
    AgentTap tap;
    bool tapped = false;      // `tap` is (or was, until the game replaced it) `watched`'s own listener
    AgentHandle watched;      // the agent whose events are kept (valid while tapped)
    std::deque<EventRow> events;
    Clock::time_point last_publish{};
    std::uint64_t last_published_frame = ~std::uint64_t{0};
    std::unordered_map<const void*, std::shared_ptr<const TreeInfo>> trees;
    std::shared_ptr<const TreeInfo> watched_tree;  // the tree of the watched agent's last kept event

    /// The watched agent's tree as of now (it changes when a hot reload restarts the agent).
    std::shared_ptr<const TreeInfo> current_watched_tree() {
        const Agent* agent = world.agent(watched);
        if (!agent) return watched_tree;
        if (!watched_tree || &detail::EngineAccess::tree_data(watched_tree->tree) != &detail::EngineAccess::tree_data(agent->tree()))
            watched_tree = tree_info(agent->tree());
        return watched_tree;
    }

    /// The watched agent's recent events (from `tap`: game thread, during its ticks and commands).
    void keep_event(const TraceEvent& event) {
        std::shared_ptr<const TreeInfo> tree = current_watched_tree();
        // A running action's update every frame would push everything else out: one row counts them.
        if (!events.empty() && event.kind == TraceKind::Update) {
            EventRow& last = events.back();
            if (last.event.kind == TraceKind::Update && last.event.node == event.node && last.tree == tree &&
                last.event.status == event.status && last.event.tick + 1 == event.tick) {
                last.frame = world.frame();
                last.event.tick = event.tick;
                ++last.times;
                return;
            }
        }
        EventRow row{world.frame(), event, std::move(tree), std::string(event.message), 1};
        row.event.message = {};
        events.push_back(std::move(row));
        while (events.size() > options.recent_events) events.pop_front();
    }

    std::shared_ptr<const TreeInfo> tree_info(const Tree& tree) {
        const void* key = &detail::EngineAccess::tree_data(tree);
        auto it = trees.find(key);
        if (it != trees.end()) return it->second;
        if (trees.size() >= 256) trees.clear();  // trees built on the fly: keep the cache bounded
        auto info = std::make_shared<TreeInfo>();
        info->tree = tree;
        info->name = tree.name();
        info->nodes.resize(tree.size());
        for (NodeIndex i = 0; i < tree.size(); ++i) {
            TreeInfo::Node& n = info->nodes[i];
            n.kind = to_string(tree.kind(i));
            n.label = tree.label(i);
            n.path = tree.path(i);
            const NodeIndex p = tree.parent(i);
            n.parent = p == kNoNode ? -1 : static_cast<int>(p);
            n.depth = p == kNoNode ? 0 : info->nodes[p].depth + 1;  // a parent comes before its children
            n.guard = tree.has_guard(i);
            if (n.guard) n.abort = to_string(tree.abort_mode(i));
        }
        trees.emplace(key, info);
        return info;
    }

    std::shared_ptr<const AgentList> build_agent_list() {
        auto list = std::make_shared<AgentList>();
        list->frame = world.frame();
        list->rows.reserve(world.size());
        // Agents mostly share a few trees: the last one's info is reused without a look-up.
        const void* last_tree = nullptr;
        std::shared_ptr<const TreeInfo> last_info;
        for (const AgentHandle h : world.handles()) {
            const Agent* a = world.agent(h);
            if (!a) continue;  // joins at the end of the frame
            const void* tree = &detail::EngineAccess::tree_data(a->tree());
            if (tree != last_tree) {
                last_info = tree_info(a->tree());
                last_tree = tree;
            }
            AgentRow row{h, last_info, kNoNode, a->status()};
            int best = -1;
            for (NodeIndex i = 0; i < row.tree->nodes.size(); ++i)
                if (a->status(i) == Status::Running && row.tree->nodes[i].depth > best) {
                    best = row.tree->nodes[i].depth;
                    row.running = i;
                }
            list->rows.push_back(std::move(row));
        }
        return list;
    }

    std::shared_ptr<const AgentDetail> build_detail(AgentHandle h) {
        auto d = std::make_shared<AgentDetail>();
        d->handle = h;
        d->frame = world.frame();
        const Agent* a = world.agent(h);
        if (!a) {
            d->gone = !world.alive(h);
            if (d->gone) return d;
            return nullptr;  // spawned during this frame: nothing to show yet
        }
        d->tree = tree_info(a->tree());
        d->statuses.resize(d->tree->nodes.size());
        for (NodeIndex i = 0; i < d->statuses.size(); ++i) d->statuses[i] = a->status(i);
        d->ticks = a->ticks();
        d->mode = a->mode();
        const BlackboardSchema& schema = a->blackboard().schema();
        const std::byte* values = detail::EngineAccess::raw_values(a->blackboard());
        for (const KeyInfo& k : schema.keys()) {
            AgentDetail::Value v{k.name, k.type->name, {}, k.scope != kLocalScope};
            if (auto text = xml::format_value(k.type, values + k.offset)) v.value = *text;
            else v.value = "(" + std::to_string(k.type->size) + " bytes)";
            d->blackboard.push_back(std::move(v));
        }
        if (tapped && watched == h) d->events.assign(events.begin(), events.end());
        return d;
    }

    CommandResult apply(const Command& c) {
        const auto paused_body = [&] {
            return dump(Json{{"ok", true}, {"paused", paused}, {"frame", world.frame()}});
        };
        switch (c.kind) {
        case CommandKind::Pause: paused = true; steps = 0; return {200, paused_body()};
        case CommandKind::Resume: paused = false; steps = 0; return {200, paused_body()};
        case CommandKind::Step:
            paused = true;
            ++steps;
            return {200, paused_body()};
        case CommandKind::Abort: {
            Agent* a = world.agent(c.handle);
            if (!a) return {404, json_error("agent " + handle_text(c.handle) + " does not exist (any more)")};
            a->abort();
            return {200, dump(Json{{"ok", true}, {"handle", handle_text(c.handle)}})};
        }
        case CommandKind::Write: {
            Agent* a = world.agent(c.handle);
            if (!a) return {404, json_error("agent " + handle_text(c.handle) + " does not exist (any more)")};
            Blackboard& bb = a->blackboard();
            const BlackboardSchema& schema = bb.schema();
            const KeyId id = schema.find(c.key);
            if (id == kNoKey) {
                std::string names;
                for (const KeyInfo& k : schema.keys()) names += (names.empty() ? "" : ", ") + k.name;
                return {400, json_error("agent " + handle_text(c.handle) + " has no blackboard key '" + c.key +
                                        "' (its keys: " + (names.empty() ? "none" : names) + ")")};
            }
            const TypeInfo* type = schema.info(id).type;
            if (!xml::builtin_type(type->name) || xml::builtin_type(type->name) != type)
                return {400, json_error("key '" + c.key + "' holds a " + type->name +
                                        ": the inspector writes only bool, int, unsigned, long, long long, float "
                                        "and double keys")};
            std::vector<std::byte> bytes(type->size);
            if (!xml::parse_value(type, c.value, bytes.data()))
                return {400, json_error("key '" + c.key + "' is a " + type->name + ": '" + c.value + "' is not a " +
                                        type->name)};
            try {
                write_as<bool>(bb, id, type, bytes.data()) || write_as<int>(bb, id, type, bytes.data()) ||
                    write_as<unsigned>(bb, id, type, bytes.data()) || write_as<long>(bb, id, type, bytes.data()) ||
                    write_as<long long>(bb, id, type, bytes.data()) || write_as<float>(bb, id, type, bytes.data()) ||
                    write_as<double>(bb, id, type, bytes.data());
            } catch (const std::exception& e) {
                return {400, json_error(e.what())};
            }
            const std::string text = xml::format_value(type, bytes.data()).value_or("");
            return {200, dump(Json{{"ok", true}, {"handle", handle_text(c.handle)}, {"key", c.key}, {"value", text}})};
        }
        }
        return {400, json_error("unknown command")};
    }

    /// The state every request sees at once (a few numbers, no lock).
    void publish_state() {
        state_frame.store(world.frame(), std::memory_order_relaxed);
        state_now.store(world.now(), std::memory_order_relaxed);
        state_agents.store(world.size(), std::memory_order_relaxed);
        state_paused.store(paused, std::memory_order_relaxed);
    }

    /// Puts `tap` in front of agent h's own listener (game thread, between frames). Also when h is
    /// already watched but the game has replaced its listener since (World::set_listener(h, X)): the
    /// tap then goes in front of X. An agent that is not watched any more gets its listener back.
    void watch(AgentHandle h) {
        if (tapped && watched == h) {
            TraceListener* current = world.listener(h);
            if (current != &tap) {
                tap.previous = current;
                world.set_listener(h, &tap);
            }
            return;
        }
        unwatch();
        tap.previous = world.listener(h);
        world.set_listener(h, &tap);
        watched = h;
        tapped = true;
    }

    /// Takes `tap` out: the watched agent's own listener is the one it had before, unless the game has
    /// replaced it meanwhile (then the game's stays) or the agent is gone (then the World no longer
    /// calls the tap). Game thread, between frames, and ~Inspector.
    void unwatch() noexcept {
        if (!tapped) return;
        if (world.listener(watched) == &tap) world.set_listener(watched, tap.previous);
        tap.previous = nullptr;
        tapped = false;
        events.clear();
        watched_tree.reset();
    }

    bool before_frame() {
        // Nobody asked anything since the last frame and no page is watching: nothing to take from
        // the server thread, nothing to publish but the state.
        if (!attention.exchange(false, std::memory_order_acq_rel) && !watching) {
            publish_state();
            return step_now();
        }
        std::deque<Command> commands;
        bool selected;
        AgentHandle selected_handle;
        const Clock::time_point now = Clock::now();
        {
            std::lock_guard lock(mutex);
            commands.swap(shared.commands);
            watching = shared.asked && now - shared.last_request < options.watch_timeout;
            selected = shared.selected;
            selected_handle = shared.selected_handle;
            // The page's copy of the metrics: made whole when a page starts watching, then extended
            // by after_frame; dropped when nobody watches any more.
            if (watching && !metrics_shared) shared.metrics = metrics;
            else if (!watching) shared.metrics.clear();
            metrics_shared = watching;
        }
        std::vector<std::pair<std::uint64_t, CommandResult>> results;
        for (const Command& c : commands) results.emplace_back(c.id, apply(c));

        // The selected agent's events: kept only while someone watches it.
        if (watching && selected && world.alive(selected_handle)) watch(selected_handle);
        else unwatch();

        std::shared_ptr<const AgentList> list;
        std::shared_ptr<const AgentDetail> detail;
        const bool due = now - last_publish >= options.publish_interval || !results.empty() ||
                         (paused && world.frame() != last_published_frame);
        if (watching && due) {
            list = build_agent_list();
            if (selected) detail = build_detail(selected_handle);
            last_publish = now;
            last_published_frame = world.frame();
        }
        publish_state();
        {
            std::lock_guard lock(mutex);
            if (list) shared.agents_list = std::move(list);
            if (detail) shared.detail = std::move(detail);
            for (auto& [id, result] : results) {
                if (shared.abandoned.erase(id)) continue;
                shared.results.emplace(id, std::move(result));
            }
        }
        if (!results.empty()) results_ready.notify_all();
        return step_now();
    }

    /// Whether the world steps now: not while paused, except once per single-step command.
    bool step_now() {
        if (!paused) return true;
        if (steps > 0) {
            --steps;
            return true;
        }
        return false;
    }

    void after_frame(const FrameMetrics& m) {
        const MetricsRow row{m.frame, static_cast<std::int64_t>(m.wall_time.count()), m.events_handled,
                             m.agents_stepped, m.guards_evaluated, m.behaviors_updated};
        metrics.push_back(row);
        while (metrics.size() > options.history_frames) metrics.pop_front();
        publish_state();
        if (!metrics_shared) return;  // nobody watching: the page's copy is made when one comes
        std::lock_guard lock(mutex);
        shared.metrics.push_back(row);
        while (shared.metrics.size() > options.history_frames) shared.metrics.pop_front();
    }

    // ---- answers (any thread) ----

    InspectorResponse json(int status, std::string body) { return {status, "application/json", std::move(body)}; }

    InspectorResponse command(Command c) {
        std::unique_lock lock(mutex);
        c.id = shared.next_id++;
        const std::uint64_t id = c.id;
        shared.commands.push_back(std::move(c));
        attention.store(true, std::memory_order_release);
        const bool done = results_ready.wait_for(lock, options.command_timeout, [&] {
            return shared.stopping || shared.results.count(id) != 0;
        });
        auto it = shared.results.find(id);
        if (done && it != shared.results.end()) {
            CommandResult r = std::move(it->second);
            shared.results.erase(it);
            return json(r.status, std::move(r.body));
        }
        const auto queued = std::find_if(shared.commands.begin(), shared.commands.end(),
                                         [&](const Command& q) { return q.id == id; });
        if (queued != shared.commands.end()) shared.commands.erase(queued);  // not applied, and never will be
        else shared.abandoned.insert(id);                                    // being applied right now
        return json(503, json_error(shared.stopping ? "the inspector is shutting down"
                                                    : "the game loop did not take the command in time (is it "
                                                      "calling Inspector::before_frame?)"));
    }

    std::string state_json() {
        return dump(Json{{"frame", state_frame.load(std::memory_order_relaxed)},
                         {"time_us", state_now.load(std::memory_order_relaxed)},
                         {"agents", state_agents.load(std::memory_order_relaxed)},
                         {"paused", state_paused.load(std::memory_order_relaxed)},
                         {"read_only", options.read_only}});
    }

    std::string metrics_json() {
        std::vector<MetricsRow> rows;
        {
            std::lock_guard lock(mutex);
            rows.assign(shared.metrics.begin(), shared.metrics.end());
        }
        Json frames = Json::array();
        for (const MetricsRow& r : rows)
            frames.push_back(Json{{"frame", r.frame},
                                  {"wall_ms", static_cast<double>(r.wall_ns) * 1e-6},
                                  {"events", r.events},
                                  {"agents", r.agents},
                                  {"guards", r.guards},
                                  {"updates", r.updates}});
        return dump(Json{{"frames", std::move(frames)}});
    }

    std::string agents_json(const std::string& query, std::size_t limit) {
        std::shared_ptr<const AgentList> list;
        {
            std::lock_guard lock(mutex);
            list = shared.agents_list;
        }
        if (!list) return dump(Json{{"pending", true}, {"total", 0}, {"matched", 0}, {"agents", Json::array()}});
        const std::string q = lowercase(query);
        Json rows = Json::array();
        std::size_t matched = 0;
        for (const AgentRow& r : list->rows) {
            const std::string handle = handle_text(r.handle);
            const TreeInfo::Node* running = r.running == kNoNode ? nullptr : &r.tree->nodes[r.running];
            if (!q.empty()) {
                const bool hit = lowercase(handle).find(q) != std::string::npos ||
                                 lowercase(r.tree->name).find(q) != std::string::npos ||
                                 (running && (lowercase(running->label).find(q) != std::string::npos ||
                                              lowercase(running->path).find(q) != std::string::npos));
                if (!hit) continue;
            }
            if (matched++ >= limit) continue;
            rows.push_back(Json{{"handle", handle},
                                {"tree", r.tree->name},
                                {"status", to_string(r.root)},
                                {"running", running ? Json(running->label) : Json()},
                                {"path", running ? Json(running->path) : Json()}});
        }
        return dump(Json{{"pending", false},
                         {"frame", list->frame},
                         {"total", list->rows.size()},
                         {"matched", matched},
                         {"agents", std::move(rows)}});
    }

    std::string detail_json(AgentHandle h) {
        std::shared_ptr<const AgentDetail> d;
        {
            std::lock_guard lock(mutex);
            if (!shared.selected || shared.selected_handle != h) {
                shared.selected = true;
                shared.selected_handle = h;
                shared.detail.reset();
            }
            d = shared.detail;
        }
        const std::string handle = handle_text(h);
        if (!d || d->handle != h) return dump(Json{{"handle", handle}, {"pending", true}});
        if (d->gone) return dump(Json{{"handle", handle}, {"gone", true}});
        Json nodes = Json::array();
        for (std::size_t i = 0; i < d->tree->nodes.size(); ++i) {
            const TreeInfo::Node& n = d->tree->nodes[i];
            nodes.push_back(Json{{"index", i},
                                 {"parent", n.parent},
                                 {"kind", n.kind},
                                 {"label", n.label},
                                 {"guard", n.guard ? Json(n.abort) : Json()},
                                 {"status", to_string(d->statuses[i])}});
        }
        Json blackboard = Json::array();
        for (const AgentDetail::Value& v : d->blackboard)
            blackboard.push_back(Json{{"key", v.key}, {"type", v.type}, {"value", v.value}, {"shared", v.shared}});
        Json events = Json::array();
        for (const EventRow& e : d->events)
            events.push_back(Json{{"frame", e.frame},
                                  {"tick", e.event.tick},
                                  {"node", e.event.node},
                                  {"label", e.tree && e.event.node < e.tree->nodes.size() ? e.tree->nodes[e.event.node].label : ""},
                                  {"what", event_text(e)},
                                  {"times", e.times}});
        return dump(Json{{"handle", handle},
                         {"frame", d->frame},
                         {"tree", d->tree->name},
                         {"mode", to_string(d->mode)},
                         {"ticks", d->ticks},
                         {"nodes", std::move(nodes)},
                         {"blackboard", std::move(blackboard)},
                         {"events", std::move(events)}});
    }

    InspectorResponse handle(std::string_view method, std::string_view target, std::string_view body) {
        {
            std::lock_guard lock(mutex);
            shared.last_request = Clock::now();
            shared.asked = true;
        }
        attention.store(true, std::memory_order_release);
        const std::size_t question = target.find('?');
        const std::string_view path = target.substr(0, question);
        const std::string_view query = question == std::string_view::npos ? std::string_view{} : target.substr(question + 1);
        const bool get = method == "GET", post = method == "POST";

        if (path == "/" || path == "/index.html") {
            if (!get) return json(405, json_error("use GET for " + std::string(path)));
            return {200, "text/html; charset=utf-8", std::string(Inspector::page())};
        }
        if (path == "/api/state" || path == "/api/metrics" || path == "/api/agents" || path == "/api/agent") {
            if (!get) return json(405, json_error("use GET for " + std::string(path)));
            if (path == "/api/state") return json(200, state_json());
            if (path == "/api/metrics") return json(200, metrics_json());
            if (path == "/api/agents") {
                std::string q, limit_text;
                http::form_value(query, "q", q);
                std::size_t limit = 100;
                if (http::form_value(query, "limit", limit_text)) {
                    if (limit_text.empty() || limit_text.size() > 4 ||
                        limit_text.find_first_not_of("0123456789") != std::string::npos)
                        return json(400, json_error("limit must be a number from 0 to 9999, got '" + limit_text + "'"));
                    limit = std::stoul(limit_text);
                }
                return json(200, agents_json(q, limit));
            }
            std::string text;
            AgentHandle h;
            if (!http::form_value(query, "handle", text) || !parse_handle(text, h))
                return json(400, json_error("/api/agent needs handle=INDEX.GENERATION, e.g. /api/agent?handle=0.1"));
            return json(200, detail_json(h));
        }
        static const std::map<std::string_view, CommandKind> commands = {
            {"/api/pause", CommandKind::Pause}, {"/api/resume", CommandKind::Resume},
            {"/api/step", CommandKind::Step},   {"/api/write", CommandKind::Write},
            {"/api/abort", CommandKind::Abort}};
        const auto it = commands.find(path);
        if (it == commands.end()) return json(404, json_error("no such page: " + std::string(path)));
        if (!post) return json(405, json_error("use POST for " + std::string(path)));
        if (options.read_only)
            return json(403, json_error("the inspector is read-only (InspectorOptions::read_only): " + std::string(path) +
                                        " is disabled"));
        Command c;
        c.kind = it->second;
        if (c.kind == CommandKind::Write || c.kind == CommandKind::Abort) {
            std::string text;
            if (!http::form_value(body, "handle", text) || !parse_handle(text, c.handle))
                return json(400, json_error(std::string(path) + " needs handle=INDEX.GENERATION in its body"));
        }
        if (c.kind == CommandKind::Write) {
            if (!http::form_value(body, "key", c.key) || c.key.empty())
                return json(400, json_error("/api/write needs key=NAME in its body"));
            if (!http::form_value(body, "value", c.value))
                return json(400, json_error("/api/write needs value=TEXT in its body"));
        }
        return command(std::move(c));
    }
};

namespace {

/// `text` as a query parameter's value: letters, digits and "-._~" as they are, every other byte as %XX.
std::string percent_encoded(std::string_view text) {
    static constexpr char hex[] = "0123456789ABCDEF";
    std::string out;
    for (const char c : text) {
        const auto b = static_cast<unsigned char>(c);
        if ((b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9') || c == '-' || c == '.' ||
            c == '_' || c == '~') {
            out += c;
        } else {
            out += '%';
            out += hex[b >> 4];
            out += hex[b & 15];
        }
    }
    return out;
}

/// Compares without stopping at the first difference (the time taken tells nothing of the token).
bool same_token(std::string_view given, std::string_view token) {
    unsigned char diff = given.size() == token.size() ? 0 : 1;
    for (std::size_t i = 0; i < given.size(); ++i)
        diff |= static_cast<unsigned char>(given[i] ^ token[i % token.size()]);
    return diff == 0;
}

}  // namespace

bool is_loopback_address(std::string_view address) noexcept {
    return address.rfind("127.", 0) == 0 || address == "::1" || address == "localhost";
}

Inspector::Inspector(World& world, InspectorOptions options) {
    if (options.serve && !is_loopback_address(options.address) && options.token.empty())
        throw UsageError("inspector: binding " + options.address +
                         " (not loopback) needs InspectorOptions::token: without it anyone who can reach that "
                         "address could pause the world and write blackboards");
    impl_ = std::make_unique<Impl>(world, options);
    impl_->publish_state();
    if (options.serve) {
        Impl* impl = impl_.get();
        impl_->server = std::make_unique<http::Server>(options.address, options.port, options.request_timeout, [impl](const http::Request& r) {
            const std::string& token = impl->options.token;
            if (!token.empty()) {
                std::string given = r.token;
                const std::size_t question = r.target.find('?');
                if (given.empty() && question != std::string::npos)
                    http::form_value(std::string_view(r.target).substr(question + 1), "token", given);
                if (!same_token(given, token))
                    return http::Response{401, "application/json",
                                          json_error("this inspector needs its token: send the header X-Ebt-Token, "
                                                     "or open the page as /?token=TOKEN")};
            }
            // (a request can come before bound_port is set only when options.port names the port)
            const std::string port = std::to_string(impl->options.port ? impl->options.port : impl->bound_port.load());
            // Without a token, the Host check keeps pages of other sites out (DNS rebinding); with
            // one, the token does.
            if (token.empty() && r.host != "127.0.0.1:" + port && r.host != "localhost:" + port)
                return http::Response{403, "application/json",
                                      json_error("the inspector answers requests for 127.0.0.1:" + port +
                                                 " or localhost:" + port + " only")};
            if (r.method == "POST" && !r.inspector_header)
                return http::Response{403, "application/json",
                                      json_error("commands need the header X-Ebt-Inspector (the page sends it)")};
            InspectorResponse answer = impl->handle(r.method, r.target, r.body);
            return http::Response{answer.status, std::move(answer.content_type), std::move(answer.body)};
        });
        impl_->bound_port.store(impl_->server->port());
    }
}

Inspector::~Inspector() {
    {
        std::lock_guard lock(impl_->mutex);
        impl_->shared.stopping = true;
    }
    impl_->results_ready.notify_all();
    impl_->server.reset();
    impl_->unwatch();
}

std::uint16_t Inspector::port() const noexcept { return impl_->server ? impl_->server->port() : 0; }
std::string Inspector::url() const {
    const std::string& address = impl_->options.address;
    const std::string host = address.find(':') != std::string::npos ? "[" + address + "]" : address;
    return "http://" + host + ":" + std::to_string(port()) + "/" +
           (impl_->options.token.empty() ? "" : "?token=" + percent_encoded(impl_->options.token));
}
bool Inspector::before_frame() { return impl_->before_frame(); }
void Inspector::after_frame(const FrameMetrics& metrics) { impl_->after_frame(metrics); }
bool Inspector::paused() const noexcept { return impl_->paused; }
InspectorResponse Inspector::handle(std::string_view method, std::string_view target, std::string_view body) {
    return impl_->handle(method, target, body);
}

}  // namespace ebt::debug
