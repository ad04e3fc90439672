// debug::Recorder: writes a World's inputs and its user code's answers to a recording file
// (docs/debugging.md, "Record and replay"; the records are in recording_format.hpp).
#include <ebt/debug/record.hpp>

#include "recording_format.hpp"

#include "../runtime/runtime.hpp"  // whether an action suspended itself during a call

#include <ebt/detail/engine_access.hpp>
#include <ebt/signals.hpp>
#include <ebt/xml.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace ebt::debug {

using recording::Tag;
using io::ByteReader;
using io::ByteWriter;
using recording::CallKind;

namespace {

void check_ports(const std::string& what, const std::vector<PortSpec>& ports) {
    for (const PortSpec& p : ports)
        if (!recording::is_recordable(p.type))
            throw UsageError("Recorder: " + what + ", port '" + p.name + "' has the type '" + p.type->name +
                             "', which a recording cannot hold (" + recording::kRecordableTypes + ")");
}

}  // namespace

struct Recorder::Impl final : WorldInputObserver, WorldListener {
    /// What the wrapped callbacks reach the recorder through: trees built with the registry may outlive
    /// the recorder, whose destructor sets it to nullptr (the callbacks then only call the game's).
    std::shared_ptr<Impl*> self = std::make_shared<Impl*>(this);
    Registry wrapped;
    World* world = nullptr;
    std::FILE* file = nullptr;
    std::string path;
    ByteWriter out;  // the records of the frame being recorded
    /// A user callback being recorded: its agent and the records of what it did (its effects).
    struct OpenCall {
        AgentHandle handle;
        const Agent* agent;
        ByteWriter effects;
        std::uint64_t count = 0;
    };
    std::vector<OpenCall> calls;
    boost::signals2::scoped_connection bus_connection;
    std::vector<const void*> trees;  // recorded tree definitions, by number
    struct SharedState {
        SharedBlackboard* blackboard;
        std::size_t declared;  // keys recorded so far
    };
    std::vector<SharedState> shared;
    std::vector<recording::TraceDigest> digests;  // by slot index
    std::vector<std::uint32_t> touched;           // slots with lifecycle events this frame
    std::unordered_map<std::string, bool> condition_answers;
    std::unordered_map<std::string, std::uint32_t> condition_names;
    recording::HandleCache handles;
    std::uint64_t frames = 0;
    /// Lifecycle events (Initialize, Update, Terminate) of the frame being stepped so far, counted
    /// before any listener hears them: where an input made by a listener or a change slot during the
    /// frame is replayed (after the same number of lifecycle events).
    std::uint64_t frame_events = 0;
    bool engine_records = false;  // on_publish is writing the frame's own records (never loose)
    /// The XML text of each tree checked by before_spawn, until on_spawn records it.
    std::unordered_map<const void*, std::string> checked_trees;

    // ---- writing -----------------------------------------------------------------------------------
    /// Where the next record goes: the innermost call's effects, or the frame.
    ByteWriter& record(Tag tag) {
        ByteWriter& w = calls.empty() ? out : calls.back().effects;
        if (!calls.empty()) ++calls.back().count;
        w.u8(static_cast<std::uint8_t>(tag));
        return w;
    }
    /// Where the record of an input of the world goes: like record(), but an input made during a frame
    /// while no action call is open (from a listener, a change slot) is wrapped in a Loose record that
    /// says after how many of the frame's lifecycle events it came.
    ByteWriter& input(Tag tag) {
        if (calls.empty() && world->in_step() && !engine_records) {
            out.u8(static_cast<std::uint8_t>(Tag::Loose));
            out.varint(frame_events);
        }
        return record(tag);
    }
    void flush() {
        if (!file || out.size() == 0) return;
        const auto& b = out.bytes();
        if (std::fwrite(b.data(), 1, b.size(), file) != b.size() || std::fflush(file) != 0)
            throw UsageError("Recorder: cannot write '" + path + "': " + std::strerror(errno));
        out.clear();
    }

    AgentHandle handle_of(const Agent* agent) {
        if (!calls.empty() && calls.back().agent == agent) return calls.back().handle;
        return handles.find(*world, agent);
    }

    /// Records keys declared on the shared blackboards since they were last looked at.
    void sync_declarations() {
        for (std::size_t i = 0; i < shared.size(); ++i) {
            SharedState& s = shared[i];
            const BlackboardSchema& schema = s.blackboard->schema();
            for (; s.declared < schema.size(); ++s.declared) {
                const KeyInfo& k = schema.info(static_cast<KeyId>(s.declared));
                ByteWriter& w = input(Tag::Declare);
                w.varint(i);
                w.string(k.name);
                w.string(recording::recorded_type_name(k.type));
                w.string(recording::value_bytes(k.type, s.blackboard->published(static_cast<KeyId>(s.declared))));
                w.string(recording::value_bytes(k.type, s.blackboard->pending_value(static_cast<KeyId>(s.declared))));
            }
        }
    }
    std::size_t shared_number(const SharedBlackboard* b) const {
        for (std::size_t i = 0; i < shared.size(); ++i)
            if (shared[i].blackboard == b) return i;
        throw UsageError("Recorder: a shared blackboard of the world was created before the recording started");
    }
    std::optional<std::size_t> recorded_tree(const void* data) const {
        for (std::size_t i = 0; i < trees.size(); ++i)
            if (trees[i] == data) return i;
        return std::nullopt;
    }
    /// Whether a spawn can be recorded, before the world changes anything: its tree (at its first
    /// spawn: its keys' types, its XML), its shared blackboards, its initial values. UsageError if not.
    void check_spawn(const Tree& tree, const SpawnOptions& options) {
        for (const auto& binding : options.shared) shared_number(binding.second);
        for (const InitialValue& v : options.blackboard)
            if (!recording::is_recordable(v.type))
                throw UsageError("Recorder: the initial value of key '" + v.key + "' has the type '" + v.type->name +
                                 "', which a recording cannot hold (" + recording::kRecordableTypes + ")");
        const void* data = &detail::EngineAccess::tree_data(tree);
        if (recorded_tree(data) || checked_trees.count(data)) return;
        // A write of a key is recorded as the builtin value's bytes or the string's characters; a
        // replay has no other type to read it back as (an enum or user type exists only in the game).
        // Refused at the tree's first spawn, not recorded wrong.
        for (const KeyInfo& k : tree.schema().keys())
            if (!recording::is_recordable(k.type))
                throw UsageError("Recorder: tree '" + tree.name() + "' cannot be recorded: its key '" + k.name + "' has the type '" +
                                 k.type->name + "', which a recording cannot hold (" + recording::kRecordableTypes + ")");
        try {
            checked_trees[data] = xml::save(tree, wrapped);
        } catch (const std::exception& e) {
            throw UsageError("Recorder: tree '" + tree.name() +
                             "' cannot be recorded (build it with Recorder::registry(); it must be savable as XML): " + e.what());
        }
    }
    /// The tree's number, recording it at its first spawn (check_spawn saved its XML).
    std::size_t tree_number(const Tree& tree) {
        const void* data = &detail::EngineAccess::tree_data(tree);
        if (const auto number = recorded_tree(data)) return *number;
        const auto checked = checked_trees.find(data);
        if (checked == checked_trees.end()) check_spawn(tree, {});  // (a world calls before_spawn first)
        ByteWriter& w = input(Tag::Tree);
        w.string(tree.name());
        w.string(checked_trees.at(data));
        checked_trees.erase(data);
        trees.push_back(data);
        return trees.size() - 1;
    }

    // ---- the world's inputs (WorldInputObserver) -----------------------------------------------------
    void on_step(Duration dt) override {
        frame_events = 0;
        sync_declarations();
        ByteWriter& w = record(Tag::Step);
        w.varint(static_cast<std::uint64_t>(dt.count()));
    }
    void on_publish() override {
        engine_records = true;  // the pending values the publish takes: part of the frame, not loose
        struct Done {
            bool& flag;
            ~Done() { flag = false; }
        } done{engine_records};
        sync_declarations();
        for (std::size_t i = 0; i < shared.size(); ++i) {
            SharedBlackboard& b = *shared[i].blackboard;
            for (KeyId k = 0; k < b.schema().size(); ++k) {
                const KeyInfo& info = b.schema().info(k);
                const std::string pending = recording::value_bytes(info.type, b.pending_value(k));
                if (pending == recording::value_bytes(info.type, b.published(k))) continue;
                ByteWriter& w = record(Tag::SharedWrite);
                w.varint(i);
                w.varint(k);
                w.string(pending);
            }
        }
    }
    void on_step_end(const FrameMetrics&) override { end_frame(); }
    /// A step that threw: where (a Threw record), then the frame's end as after any step.
    void on_step_threw(const StepThrow& what) override {
        ByteWriter& w = record(Tag::Threw);
        w.u8(static_cast<std::uint8_t>(what.stage));
        w.string(what.message);
        w.varint(what.shared);
        w.varint(what.stage == StepThrow::Stage::Publish ? first_unpublished_key(what.shared) : 0);
        w.varint(what.joins_refused.size());
        for (const AgentHandle h : what.joins_refused) recording::write_handle(w, h);
        end_frame();
    }
    /// The key at which the publish of shared blackboard `index` threw: the first one whose pending
    /// value still differs from its published one (the keys before it were published).
    KeyId first_unpublished_key(std::uint32_t index) const {
        if (index >= shared.size()) return 0;
        const SharedBlackboard& b = *shared[index].blackboard;
        for (KeyId k = 0; k < b.schema().size(); ++k) {
            const TypeInfo* type = b.schema().info(k).type;
            if (recording::value_bytes(type, b.pending_value(k)) != recording::value_bytes(type, b.published(k))) return k;
        }
        return 0;
    }
    /// The frame's FrameEnd (state hash, lifecycle digests), written and flushed.
    void end_frame() {
        ByteWriter& w = record(Tag::FrameEnd);
        w.u64(world->state_hash());
        std::sort(touched.begin(), touched.end());
        w.varint(touched.size());
        for (const std::uint32_t slot : touched) {
            recording::TraceDigest& d = digests[slot];
            recording::write_handle(w, d.agent);
            w.varint(d.events);
            w.u64(d.hash.value());
            d = recording::TraceDigest{};
        }
        touched.clear();
        ++frames;
        flush();
    }
    void on_spawn(AgentHandle handle, const Tree& tree, const SpawnOptions& options) override {
        sync_declarations();
        const std::size_t number = tree_number(tree);
        ByteWriter& w = input(Tag::Spawn);
        w.varint(number);
        recording::write_handle(w, handle);
        w.u8(static_cast<std::uint8_t>(options.mode));
        w.u64(options.seed);
        w.u8(options.restart_on_end ? 1 : 0);
        w.varint(options.tick_interval);
        w.varint(options.shared.size());
        for (const auto& [scope, blackboard] : options.shared) {
            w.string(scope);
            w.varint(shared_number(blackboard));
        }
        w.varint(options.blackboard.size());
        for (const InitialValue& v : options.blackboard) {
            w.string(v.key);
            w.string(recording::recorded_type_name(v.type));
            w.string(recording::value_bytes(v.type, v.value.data()));
        }
    }
    void before_spawn(const Tree& tree, const SpawnOptions& options) override { check_spawn(tree, options); }
    void on_despawn(AgentHandle handle) override { recording::write_handle(input(Tag::Despawn), handle); }
    void on_resume(const ResumeHandle& handle, Status status, bool accepted) override {
        ByteWriter& w = input(Tag::Resume);
        recording::write_handle(w, handle.agent);
        w.varint(handle.node);
        w.varint(handle.run);
        w.u8(static_cast<std::uint8_t>(status));
        w.u8(accepted ? 1 : 0);
    }
    void on_abort(AgentHandle handle) override { recording::write_handle(input(Tag::Abort), handle); }
    void on_restart(AgentHandle handle) override { recording::write_handle(input(Tag::Restart), handle); }
    void on_tick_interval(AgentHandle handle, std::uint32_t interval) override {
        ByteWriter& w = input(Tag::Interval);
        recording::write_handle(w, handle);
        w.varint(interval);
    }
    void on_agent_budget(std::uint32_t agents) override { input(Tag::Budget).varint(agents); }
    void on_create_shared(SharedBlackboard& blackboard) override {
        input(Tag::Shared).string(blackboard.name());
        shared.push_back(SharedState{&blackboard, 0});
    }

    // ---- blackboard changes (the world's bus) ----------------------------------------------------------
    void on_change(const BlackboardChange& change) {
        // Inside an action call: an effect of it. Between frames: game code's write. During a frame
        // outside calls: a listener's or a change slot's write (loose). A shared key's change is the
        // engine's own, the published value reaching the agent (game code's writes of a shared key go
        // to the shared blackboard: recorded at its publish).
        if (!change.agent) return;
        const KeyInfo& k = change.blackboard.schema().info(change.key);
        if (k.scope != kLocalScope) return;
        const AgentHandle h = handle_of(change.agent);
        ByteWriter& w = input(Tag::Write);
        recording::write_handle(w, h);
        w.varint(change.key);
        w.string(recording::value_bytes(k.type, detail::EngineAccess::raw_values(change.blackboard) + k.offset));
    }

    // ---- traces (WorldListener) --------------------------------------------------------------------------
    void before_event(AgentHandle, const TraceEvent& event) override {
        if (event.is_lifecycle()) ++frame_events;
    }
    void on_event(AgentHandle handle, const Agent&, const TraceEvent& event) override {
        if (!event.is_lifecycle()) return;
        if (digests.size() <= handle.index) digests.resize(handle.index + std::size_t{1});
        recording::TraceDigest& d = digests[handle.index];
        if (d.events == 0) {
            d.agent = handle;
            touched.push_back(handle.index);
        }
        d.add(world->frame(), event);
    }

    // ---- user code (the wrapped registry) -----------------------------------------------------------------
    /// Runs an action callback `f` and records the call, its answer and its effects.
    template <class F> Status action_call(ActionContext& ctx, CallKind kind, Status given, F&& f) {
        if (!world) return f();
        Agent& agent = ctx.agent();
        const AgentHandle handle = ctx.agent_handle();
        const NodeIndex node = ctx.node();
        const bool suspended_before = detail::Runtime(agent).has(node, detail::kSuspended);
        calls.push_back(OpenCall{handle, &agent, {}, 0});
        Status result = given;
        std::exception_ptr error;
        std::string message;
        try {
            result = f();
        } catch (const std::exception& e) {
            error = std::current_exception();
            message = e.what();
        } catch (...) {
            error = std::current_exception();
            message = "unknown exception";
        }
        const bool suspended = !suspended_before && detail::Runtime(agent).has(node, detail::kSuspended);
        OpenCall call = std::move(calls.back());
        calls.pop_back();
        ByteWriter& w = record(Tag::Call);
        recording::write_handle(w, handle);
        w.varint(node);
        w.u8(static_cast<std::uint8_t>(kind));
        w.u8(static_cast<std::uint8_t>(result));
        w.u8(static_cast<std::uint8_t>((suspended ? recording::kSuspended : 0) | (error ? recording::kThrew : 0)));
        if (error) w.string(message);
        w.varint(call.count);
        w.raw(call.effects.bytes().data(), call.effects.size());
        if (error) std::rethrow_exception(error);
        return result;
    }

    /// Records a condition's answer for its agent and its ports' values, when it is new.
    void condition_answer(const ConditionContext& ctx, std::uint32_t name_id, const std::string& name,
                          const std::vector<PortSpec>& ports, bool result, const std::string* message) {
        if (!world || !ctx.blackboard().agent()) return;
        const AgentHandle h = handle_of(ctx.blackboard().agent());
        std::string values;
        for (std::size_t i = 0; i < ports.size(); ++i)
            recording::append_port_value(values, ports[i].type, detail::EngineAccess::port_value(ctx, i));
        std::string key(reinterpret_cast<const char*>(&h), sizeof h);
        key.append(reinterpret_cast<const char*>(&name_id), sizeof name_id);
        key += values;
        const bool answer = result && !message;
        const auto it = condition_answers.find(key);
        if (it != condition_answers.end() && it->second == answer && !message) return;
        condition_answers[key] = answer;
        out.u8(static_cast<std::uint8_t>(Tag::Condition));
        recording::write_handle(out, h);
        out.string(name);
        out.string(values);
        out.u8(static_cast<std::uint8_t>((answer ? 1 : 0) | (message ? recording::kThrew : 0)));
        if (message) out.string(*message);
    }

    void wrap(const Registry& game) {
        for (const std::string& name : game.action_names()) {
            const ActionSpec& spec = *game.find_action(name);
            check_ports("action '" + name + "'", spec.ports);
            ActionSpec w;
            w.ports = spec.ports;
            w.memory_bytes = spec.memory_bytes;
            w.on_initialize = [self = self, f = spec.on_initialize](ActionContext& ctx) {
                const auto call = [&] {
                    if (f) f(ctx);
                    return Status::Invalid;
                };
                if (Impl* r = *self) r->action_call(ctx, CallKind::Initialize, Status::Invalid, call);
                else call();
            };
            w.update = [self = self, f = spec.update](ActionContext& ctx) {
                const auto call = [&] { return f(ctx); };
                Impl* r = *self;
                return r ? r->action_call(ctx, CallKind::Update, Status::Invalid, call) : call();
            };
            w.on_terminate = [self = self, f = spec.on_terminate](ActionContext& ctx, Status status) {
                const auto call = [&] {
                    if (f) f(ctx, status);
                    return status;
                };
                if (Impl* r = *self) r->action_call(ctx, CallKind::Terminate, status, call);
                else call();
            };
            wrapped.add_action(name, std::move(w));
        }
        for (const std::string& name : game.condition_names()) {
            const ConditionSpec& spec = *game.find_condition(name);
            check_ports("condition '" + name + "'", spec.ports);
            const auto id = static_cast<std::uint32_t>(condition_names.size());
            condition_names[name] = id;
            ConditionSpec w;
            w.ports = spec.ports;
            w.recheck_interval = spec.recheck_interval;
            w.evaluate = [self = self, f = spec.evaluate, id, name, ports = spec.ports](const ConditionContext& ctx) {
                Impl* r = *self;
                if (!r) return f(ctx);
                bool result = false;
                try {
                    result = f(ctx);
                } catch (const std::exception& e) {
                    const std::string message = e.what();
                    r->condition_answer(ctx, id, name, ports, false, &message);
                    throw;
                } catch (...) {
                    const std::string message = "unknown exception";
                    r->condition_answer(ctx, id, name, ports, false, &message);
                    throw;
                }
                r->condition_answer(ctx, id, name, ports, result, nullptr);
                return result;
            };
            wrapped.add_condition(name, std::move(w));
        }
    }

    void detach() {
        if (!world) return;
        bus_connection.disconnect();
        world->remove_listener(this);
        world->set_input_observer(nullptr);
        world = nullptr;
    }
};

Recorder::Recorder(const Registry& game) : impl_(std::make_unique<Impl>()) { impl_->wrap(game); }

Recorder::~Recorder() {
    try {
        stop();
    } catch (...) {  // a file that cannot be written any more: nothing to tell from a destructor
    }
    if (impl_->file) std::fclose(impl_->file);
    *impl_->self = nullptr;
}

const Registry& Recorder::registry() const noexcept { return impl_->wrapped; }
bool Recorder::recording() const noexcept { return impl_->world != nullptr; }
std::uint64_t Recorder::frames() const noexcept { return impl_->frames; }

void Recorder::start(World& world, const std::filesystem::path& file) {
    Impl& d = *impl_;
    if (d.world) throw UsageError("Recorder::start(): already recording");
    if (world.frame() != 0 || world.size() != 0)
        throw UsageError("Recorder::start(): the world must be new (frame 0, no agents); it is at frame " +
                         std::to_string(world.frame()) + " with " + std::to_string(world.size()) + " agents");
    if (world.input_observer()) throw UsageError("Recorder::start(): the world has an input observer already");
    std::FILE* f = std::fopen(file.string().c_str(), "wb");
    if (!f) throw UsageError("Recorder::start(): cannot open '" + file.string() + "' for writing: " + std::strerror(errno));
    d.file = f;
    d.path = file.string();
    d.out.clear();
    d.calls.clear();
    d.trees.clear();
    d.shared.clear();
    d.digests.clear();
    d.touched.clear();
    d.condition_answers.clear();
    d.handles = {};
    d.frames = 0;
    d.frame_events = 0;
    d.checked_trees.clear();
    d.out.header(recording::kMagic, recording::kVersion);
    world.set_input_observer(&d);
    world.add_listener(&d);
    d.bus_connection = world.bus().subscribe([&d](const BlackboardChange& change) { d.on_change(change); });
    d.world = &world;
    d.flush();
}

void Recorder::stop() {
    Impl& d = *impl_;
    if (!d.world) return;
    d.detach();
    d.out.u8(static_cast<std::uint8_t>(Tag::End));
    d.out.varint(d.frames);
    d.flush();
    const int closed = std::fclose(d.file);
    d.file = nullptr;
    if (closed != 0) throw UsageError("Recorder: cannot write '" + d.path + "': " + std::strerror(errno));
}

}  // namespace ebt::debug
