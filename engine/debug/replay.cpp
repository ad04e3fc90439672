// debug::Replay: runs a recording's trees in a new World from the file alone, with the recorded
// inputs and answers, and reports the first divergence (docs/debugging.md, "Record and replay").
#include <ebt/debug/replay.hpp>

#include "recording_format.hpp"

#include <ebt/debug/file_error.hpp>
#include <ebt/limits.hpp>
#include <ebt/detail/engine_access.hpp>
#include <ebt/registry.hpp>
#include <ebt/shared_blackboard.hpp>
#include <ebt/xml.hpp>

#include <pugixml.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <unordered_map>

namespace ebt::debug {

using recording::CallKind;
using recording::Tag;
using io::ByteReader;
using io::ByteWriter;

#if defined(__GNUC__)
__attribute__((noinline))
#endif
void replay_breakpoint(std::uint64_t frame) {
    // A volatile store the optimizer keeps, so that the call and a breakpoint on it stay.
    static volatile std::uint64_t last = 0;
    last = frame;
    (void)last;
}

namespace {

std::string handle_text(AgentHandle h) { return "{" + std::to_string(h.index) + ", " + std::to_string(h.generation) + "}"; }

std::string hex(std::uint64_t v) {
    char buffer[17];
    std::snprintf(buffer, sizeof buffer, "%016llx", static_cast<unsigned long long>(v));
    return buffer;
}

/// One record of the file, parsed. Field use by tag (recording_format.hpp, docs/debugging.md).
struct Item {
    Tag tag = Tag::End;
    AgentHandle agent;
    std::uint64_t a = 0, b = 0, c = 0;  // node, run, key, dt, interval, shared or tree number, seed, hash
    std::uint8_t kind = 0, status = 0, flags = 0;
    std::string s1, s2, s3, s4;  // names, XML, type names, value bytes, messages
    std::vector<std::pair<std::string, std::uint64_t>> bindings;                 // Spawn
    std::vector<std::tuple<std::string, std::string, std::string>> values;      // Spawn
    std::vector<Item> effects;                                                   // Call
    std::vector<recording::TraceDigest> digests;                                 // FrameEnd (hash in `hash`)
    std::vector<std::uint64_t> digest_hashes;                                    // FrameEnd
    std::vector<AgentHandle> handles;                                            // Threw: the joins refused
};

std::string value_bytes(ByteReader& in) { return in.string(); }

Item read_item(ByteReader& in, int depth);

void read_fields(ByteReader& in, Item& it, int depth) {
    switch (it.tag) {
    case Tag::Tree:
        it.s1 = in.string();
        it.s2 = in.string(std::size_t{1} << 30);
        break;
    case Tag::Shared: it.s1 = in.string(); break;
    case Tag::Declare:
        it.a = in.varint();
        it.s1 = in.string();
        it.s2 = in.string();
        it.s3 = value_bytes(in);
        it.s4 = value_bytes(in);
        break;
    case Tag::Spawn: {
        it.a = in.varint();
        it.agent = recording::read_handle(in);
        it.kind = in.u8();
        it.b = in.u64();
        it.flags = in.u8();
        it.c = in.varint_at_most(0xFFFFFFFF, "tick interval");
        const std::uint64_t n = in.varint_at_most(255, "shared binding count");
        for (std::uint64_t i = 0; i < n; ++i) {
            std::string scope = in.string();
            it.bindings.emplace_back(std::move(scope), in.varint());
        }
        const std::uint64_t m = in.varint_at_most(65535, "initial value count");
        for (std::uint64_t i = 0; i < m; ++i) {
            std::string key = in.string();
            std::string type = in.string();
            it.values.emplace_back(std::move(key), std::move(type), value_bytes(in));
        }
        break;
    }
    case Tag::Despawn:
    case Tag::Abort:
    case Tag::Restart: it.agent = recording::read_handle(in); break;
    case Tag::Loose: {
        it.a = in.varint();
        if (depth > 0) in.fail("corrupt: a loose input inside another record");
        Item input = read_item(in, depth + 1);
        switch (input.tag) {
        case Tag::Tree: case Tag::Shared: case Tag::Declare: case Tag::Spawn: case Tag::Despawn: case Tag::Resume:
        case Tag::Abort: case Tag::Interval: case Tag::Budget: case Tag::Write: case Tag::Restart: break;
        default: in.fail("corrupt: record " + std::to_string(static_cast<int>(input.tag)) + " as a loose input");
        }
        it.effects.push_back(std::move(input));
        break;
    }
    case Tag::Resume:
        it.agent = recording::read_handle(in);
        it.a = in.varint();
        it.b = in.varint();
        it.status = in.u8();
        it.flags = in.u8();
        break;
    case Tag::Interval:
        it.agent = recording::read_handle(in);
        it.a = in.varint_at_most(0xFFFFFFFF, "tick interval");
        break;
    case Tag::Budget: it.a = in.varint_at_most(0xFFFFFFFF, "agent budget"); break;
    case Tag::Write:
        it.agent = recording::read_handle(in);
        it.a = in.varint();
        it.s1 = value_bytes(in);
        break;
    case Tag::SharedWrite:
        it.a = in.varint();
        it.b = in.varint();
        it.s1 = value_bytes(in);
        break;
    case Tag::Step: it.a = in.varint_at_most(static_cast<std::uint64_t>(limits::kMaxClockMicroseconds), "dt"); break;
    case Tag::Call: {
        it.agent = recording::read_handle(in);
        it.a = in.varint();
        it.kind = in.u8();
        if (it.kind > 2) in.fail("corrupt: call kind " + std::to_string(it.kind));
        it.status = in.u8();
        if (it.status > static_cast<std::uint8_t>(Status::Aborted)) in.fail("corrupt: status " + std::to_string(it.status));
        it.flags = in.u8();
        if (it.flags & recording::kThrew) it.s1 = in.string();
        const std::uint64_t n = in.count("effects");
        if (depth > 64) in.fail("corrupt: calls nested more than 64 deep");
        for (std::uint64_t i = 0; i < n; ++i) it.effects.push_back(read_item(in, depth + 1));
        break;
    }
    case Tag::Condition:
        it.agent = recording::read_handle(in);
        it.s1 = in.string();
        it.s2 = in.string();
        it.flags = in.u8();
        if (it.flags & recording::kThrew) it.s3 = in.string();
        break;
    case Tag::FrameEnd: {
        it.a = in.u64();
        const std::uint64_t n = in.count("agent digests");
        for (std::uint64_t i = 0; i < n; ++i) {
            recording::TraceDigest d;
            d.agent = recording::read_handle(in);
            d.events = in.varint();
            it.digests.push_back(d);
            it.digest_hashes.push_back(in.u64());
        }
        break;
    }
    case Tag::End: it.a = in.varint(); break;
    case Tag::Threw: {
        it.kind = in.u8();  // StepThrow::Stage
        if (it.kind > static_cast<std::uint8_t>(StepThrow::Stage::Other)) in.fail("corrupt: step stage " + std::to_string(it.kind));
        it.s1 = in.string();
        it.a = in.varint();  // Publish: the shared blackboard
        it.b = in.varint();  // Publish: the key that was not published
        const std::uint64_t n = in.count("refused joins");
        for (std::uint64_t i = 0; i < n; ++i) it.handles.push_back(recording::read_handle(in));
        break;
    }
    }
}

Item read_item(ByteReader& in, int depth) {
    Item it;
    const std::uint8_t tag = in.u8();
    if (tag == 0 || tag > recording::kLastTag) in.fail("corrupt: unknown record tag " + std::to_string(tag));
    it.tag = static_cast<Tag>(tag);
    read_fields(in, it, depth);
    return it;
}

std::vector<std::byte> read_file(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw FileFormatError(file.string(), 0, "cannot open the file");
    std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<std::byte> bytes(chars.size());
    if (!chars.empty()) std::memcpy(bytes.data(), chars.data(), chars.size());
    return bytes;
}

}  // namespace

std::string Divergence::message() const {
    std::string m = "frame " + std::to_string(frame);
    if (agent) m += ", agent " + handle_text(*agent);
    if (!node.empty()) m += ", node " + node;
    m += ": expected " + expected + ", got " + actual;
    return m;
}

struct Replay::Impl final : WorldInputObserver, WorldListener {
    std::vector<std::byte> bytes;
    std::string name;
    ReplayOptions options;
    ByteReader in;
    Registry registry;
    std::shared_ptr<Impl*> self = std::make_shared<Impl*>(this);
    std::vector<Tree> trees;
    std::unique_ptr<World> world;
    std::vector<SharedBlackboard*> shared;
    std::unordered_map<std::string, std::pair<std::uint8_t, std::string>> conditions;  // key -> (flags, message)
    recording::HandleCache handles;
    struct Source {
        std::vector<Item>* items;
        std::size_t next;
    };
    std::vector<Source> sources;
    std::vector<Item> frame_items;
    struct AgentTrace {
        recording::TraceDigest digest;
        std::vector<TraceEvent> events;
    };
    std::unordered_map<std::uint32_t, AgentTrace> traces;  // by slot, this frame
    std::optional<Divergence> divergence;
    /// A corrupt record met inside a callback the engine runs (which would contain the exception as a
    /// user error): kept, the frame is cut short, and step() throws it once the engine has returned.
    std::exception_ptr file_error;
    std::uint64_t frame = 0;
    std::uint64_t frame_events = 0;  // lifecycle events of the frame being stepped so far
    bool finished = false;
    /// A condition diverged: its guard's or its own node is named by the agent's next GuardEvaluated
    /// or ConditionEvaluated event (a condition's context does not know its node).
    bool condition_node_pending = false;
    /// The recording stops before its end record: after a whole frame, or inside a frame (its bytes
    /// cut short). The game stopped (crashed) there; every whole frame before it was replayed.
    bool cut = false;
    bool cut_inside_frame = false;
    /// The file's format version (recording_format.hpp).
    std::uint32_t version = 0;
    /// The current frame's Threw record (its step threw in the recording), or null.
    const Item* frame_throw = nullptr;
    /// The recorded step of frame `frame` threw where a replay cannot make it throw (an agent's tick
    /// refused, the recorder's own exception, or a version 2 file that does not say where): the replay
    /// stops before that frame, and this says why.
    std::string unreplayable_throw;
    /// The frames whose step threw, as in the recording, with the message.
    std::vector<ThrownStep> thrown_steps;

    Impl(std::vector<std::byte> b, std::string n, ReplayOptions o)
        : bytes(std::move(b)), name(std::move(n)), options(o), in(bytes.data(), bytes.size(), name) {
        version = in.header(recording::kMagic, "ebt recording", recording::kOldestVersion, recording::kVersion);
        world = std::make_unique<World>();
        world->set_input_observer(this);
        world->add_listener(this);
    }
    ~Impl() override {
        *self = nullptr;
        world.reset();  // before the registry and the trees (its agents' onTerminate calls answer nothing)
    }

    // ---- divergences ---------------------------------------------------------------------------------
    void diverge(std::optional<AgentHandle> agent, std::string node, std::string expected, std::string actual) {
        if (divergence) return;
        divergence = Divergence{frame, agent, std::move(node), std::move(expected), std::move(actual)};
    }
    std::string node_path(AgentHandle h, std::uint64_t node) {
        const Agent* a = world->agent(h);
        if (a && node < a->tree().size()) return a->tree().path(static_cast<NodeIndex>(node));
        return "#" + std::to_string(node);
    }
    static std::string describe_call(const Item& it) {
        const auto kind = static_cast<CallKind>(it.kind);
        std::string s = recording::to_string(kind);
        if (kind == CallKind::Update) s += std::string(" -> ") + to_string(static_cast<Status>(it.status));
        if (kind == CallKind::Terminate) s += std::string("(") + to_string(static_cast<Status>(it.status)) + ")";
        return s;
    }
    std::string describe_item(const Item& it) {
        switch (it.tag) {
        case Tag::Call: return describe_call(it) + " of agent " + handle_text(it.agent) + " node " + node_path(it.agent, it.a);
        case Tag::SharedWrite: return "a shared blackboard publish";
        case Tag::Loose:
            return "an input from a listener or change slot after " + std::to_string(it.a) + " lifecycle events of the frame";
        case Tag::FrameEnd: return "the end of the frame";
        case Tag::Threw: return "the end of a frame whose step threw '" + it.s1 + "'";
        case Tag::Step: return "the next frame";
        default: return "record " + std::to_string(static_cast<int>(it.tag));
        }
    }

    // ---- reading the items of a frame -------------------------------------------------------------------
    Item* peek() {
        if (sources.empty()) return nullptr;
        Source& s = sources.back();
        return s.next < s.items->size() ? &(*s.items)[s.next] : nullptr;
    }
    Item* take() {
        Item* it = peek();
        if (it) ++sources.back().next;
        return it;
    }

    /// Parses the next frame's records (up to its FrameEnd); false at the end of the recording, or
    /// where it was cut short (`cut`: the game stopped before Recorder::stop(), maybe inside a frame).
    bool read_frame() {
        frame_items.clear();
        if (in.at_end()) {  // no end record, after a whole frame: the game stopped while in the next one
            cut = true;
            return false;
        }
        try {
            return read_frame_items();
        } catch (const FileFormatError&) {
            if (!in.ran_out()) throw;  // a wrong value, not bytes that end
            frame_items.clear();
            cut = true;
            cut_inside_frame = true;
            return false;
        }
    }
    bool read_frame_items() {
        bool stepped = false;
        bool threw = false;
        for (;;) {
            if (in.at_end()) {
                cut = cut_inside_frame = true;
                frame_items.clear();
                return false;
            }
            Item it = read_item(in, 0);
            if (it.tag == Tag::End) {
                if (!frame_items.empty())
                    in.fail("corrupt: the recording ends inside frame " + std::to_string(frame));
                if (it.a != frame)
                    in.fail("corrupt: the end record counts " + std::to_string(it.a) + " frames, the file holds " +
                            std::to_string(frame));
                if (!in.at_end()) in.fail("corrupt: bytes after the end record");
                return false;
            }
            if (it.tag == Tag::Condition) {
                add_condition(it);
                continue;
            }
            if (it.tag == Tag::Step) {
                if (stepped && version < recording::kThrewVersion) {
                    // An older recorder wrote no end for a frame whose step threw: the next frame follows.
                    unreplayable_throw = "the recording's step of frame " + std::to_string(frame) +
                                         " threw (a version " + std::to_string(version) + " recording does not say where)";
                    frame_items.clear();
                    return false;
                }
                if (stepped) in.fail("corrupt: two Step records in frame " + std::to_string(frame));
                stepped = true;
            }
            if (it.tag == Tag::Threw && (!stepped || threw))
                in.fail("corrupt: a Threw record " + std::string(stepped ? "twice" : "before the step") + " in frame " + std::to_string(frame));
            if (threw && it.tag != Tag::FrameEnd) in.fail("corrupt: a Threw record not followed by the frame's end");
            threw = threw || it.tag == Tag::Threw;
            const bool end = it.tag == Tag::FrameEnd;
            if (end && !stepped) in.fail("corrupt: a frame end without its step");
            frame_items.push_back(std::move(it));
            if (end) return true;
        }
    }

    // ---- answering for user code (the replay registry) ----------------------------------------------------
    Status action_call(ActionContext& ctx, CallKind kind, Status given) {
        if (divergence || file_error) return Status::Failure;
        const AgentHandle h = ctx.agent_handle();
        const NodeIndex node = ctx.node();
        if (!apply_loose()) return Status::Failure;
        Item* it = peek();
        const bool same = it && it->tag == Tag::Call && it->agent == h && it->a == node &&
                          it->kind == static_cast<std::uint8_t>(kind) &&
                          (kind != CallKind::Terminate || it->status == static_cast<std::uint8_t>(given));
        if (!same) {
            std::string actual = recording::to_string(kind);
            if (kind == CallKind::Terminate) actual += std::string("(") + to_string(given) + ")";
            std::string expected = !it ? "no more calls"
                                   : it->tag == Tag::Call && it->agent == h && it->a == node ? describe_call(*it)
                                                                                              : describe_item(*it);
            diverge(h, ctx.agent().tree().path(node), std::move(expected), std::move(actual));
            return Status::Failure;
        }
        take();
        try {
            if (it->flags & recording::kSuspended) ctx.suspend();
            apply_items(it->effects, Items::Effects);
        } catch (...) {
            file_error = std::current_exception();
            return Status::Failure;
        }
        if (it->flags & recording::kThrew) throw std::runtime_error(it->s1);
        return kind == CallKind::Update ? static_cast<Status>(it->status) : given;
    }

    /// Applies the loose inputs (made by a listener or a change slot during the recorded frame) that
    /// come next and were made after no more lifecycle events than the replay has had so far in this
    /// frame. Called where the engine hands control to user code: the replay's listener, an action
    /// call, the end of the publish. False when a corrupt record was met (kept in file_error).
    bool apply_loose() {
        try {
            for (Item* it = peek(); it && !divergence && it->tag == Tag::Loose && it->a <= frame_events; it = peek()) {
                take();
                apply(it->effects.front());
            }
        } catch (...) {
            file_error = std::current_exception();
            return false;
        }
        return true;
    }

    static std::string condition_key(AgentHandle h, const std::string& name, const std::string& values) {
        std::string key(reinterpret_cast<const char*>(&h), sizeof h);
        key += name;
        key += '\0';
        key += values;
        return key;
    }
    void add_condition(const Item& it) { conditions[condition_key(it.agent, it.s1, it.s2)] = {it.flags, it.s3}; }

    bool condition(const ConditionContext& ctx, const std::string& name, const std::vector<PortSpec>& ports) {
        if (divergence || file_error || !ctx.blackboard().agent()) return false;
        const Agent* agent = ctx.blackboard().agent();
        const AgentHandle h = handles.find(*world, agent);
        std::string values;
        std::string shown;  // "range = 2, armed = true"
        for (std::size_t i = 0; i < ports.size(); ++i) {
            const void* value = detail::EngineAccess::port_value(ctx, i);
            recording::append_port_value(values, ports[i].type, value);
            shown += (shown.empty() ? "" : ", ") + ports[i].name + " = " + recording::value_text(ports[i].type, value);
        }
        const auto found = conditions.find(condition_key(h, name, values));
        if (found == conditions.end()) {
            diverge(h, {}, "an answer of condition '" + name + "' recorded for " + (shown.empty() ? "no ports" : shown),
                    "no answer recorded for these values");
            condition_node_pending = true;  // the node is named by the evaluation's trace event
            return false;
        }
        if (found->second.first & recording::kThrew) throw std::runtime_error(found->second.second);
        return (found->second.first & 1) != 0;
    }

    /// Registers the actions and conditions of a tree document's <TreeNodesModel> (those not yet known).
    void register_model(const std::string& xml_text, std::size_t tree_number) {
        pugi::xml_document doc;
        if (!doc.load_buffer(xml_text.data(), xml_text.size()))
            in.fail("corrupt: tree " + std::to_string(tree_number) + " is not an XML document");
        const pugi::xml_node model = doc.child("root").child("TreeNodesModel");
        for (const pugi::xml_node n : model.children()) {
            const std::string kind = n.name();
            if (kind != "Action" && kind != "Condition") continue;
            const std::string id = n.attribute("ID").as_string();
            if (registry.find_action(id) || registry.find_condition(id)) continue;
            std::vector<PortSpec> ports;
            for (const pugi::xml_node p : n.children()) {
                const std::string element = p.name();
                PortSpec port;
                port.name = p.attribute("name").as_string();
                port.type = recording::recordable_named(p.attribute("type").as_string());
                if (!port.type)
                    in.fail("tree " + std::to_string(tree_number) + ": port '" + port.name + "' of '" + id + "' has the type '" +
                            p.attribute("type").as_string() + "', " + recording::unknown_type_hint);
                port.direction = element == "input_port" ? PortDirection::In
                                 : element == "output_port" ? PortDirection::Out
                                                           : PortDirection::InOut;
                if (const pugi::xml_attribute d = p.attribute("default")) {
                    const std::string text = d.as_string();
                    if (text == "{=}") {
                        port.default_key();
                    } else if (text.size() >= 2 && text.front() == '{' && text.back() == '}') {
                        port.default_key(text.substr(1, text.size() - 2));
                    } else {
                        Value value(port.type);
                        if (!xml::parse_value(port.type, text, value.data()))
                            in.fail("tree " + std::to_string(tree_number) + ": bad default '" + text + "' of port '" + port.name + "'");
                        port.fallback = PortDefault{PortDefault::Kind::Value, {}, port.type, std::move(value), {}};
                    }
                }
                ports.push_back(std::move(port));
            }
            if (kind == "Action") {
                ActionSpec spec;
                spec.ports = std::move(ports);
                spec.on_initialize = [self = self](ActionContext& ctx) {
                    if (Impl* r = *self) r->action_call(ctx, CallKind::Initialize, Status::Invalid);
                };
                spec.update = [self = self](ActionContext& ctx) {
                    Impl* r = *self;
                    return r ? r->action_call(ctx, CallKind::Update, Status::Invalid) : Status::Failure;
                };
                spec.on_terminate = [self = self](ActionContext& ctx, Status status) {
                    if (Impl* r = *self) r->action_call(ctx, CallKind::Terminate, status);
                };
                registry.add_action(id, std::move(spec));
            } else {
                ConditionSpec spec;
                spec.ports = ports;
                spec.evaluate = [self = self, id, ports](const ConditionContext& ctx) {
                    Impl* r = *self;
                    return r ? r->condition(ctx, id, ports) : false;
                };
                registry.add_condition(id, std::move(spec));
            }
        }
    }

    // ---- applying records -----------------------------------------------------------------------------------
    /// Which list of records apply_items() runs: a whole frame (its inputs, its Step, which runs the
    /// engine, its FrameEnd) or the effects of one action call (inputs only).
    enum class Items { Frame, Effects };

    /// Applies `items` in order until they end or the replay diverges. A call record met here is one the
    /// engine did not make (a divergence): the calls it makes take theirs in action_call().
    void apply_items(std::vector<Item>& items, Items which) {
        sources.push_back(Source{&items, 0});
        struct Pop {
            std::vector<Source>& s;
            ~Pop() { s.pop_back(); }
        } pop{sources};
        while (!divergence) {
            Item* it = take();
            if (!it) break;
            if (it->tag == Tag::Call) {
                diverge(it->agent, node_path(it->agent, it->a), describe_call(*it), "no such call");
                break;
            }
            if (which == Items::Frame && it->tag == Tag::Step) {
                if (options.break_at && *options.break_at == frame) replay_breakpoint(frame);
                step_world(Duration(static_cast<std::int64_t>(it->a)));
                continue;
            }
            if (which == Items::Frame && it->tag == Tag::Threw) continue;  // (step_world made the step throw there)
            if (which == Items::Frame && it->tag == Tag::FrameEnd) {
                check_frame_end(*it);
                break;
            }
            if (which == Items::Frame && it->tag == Tag::Loose) {  // not reached during the step
                diverge({}, {}, describe_item(*it), "the end of the frame after " + std::to_string(frame_events) + " lifecycle events");
                break;
            }
            apply(*it);  // (a Step, FrameEnd or Loose among a call's effects: a corrupt file)
            if (which == Items::Frame && file_error) std::rethrow_exception(file_error);
        }
    }

    /// Steps the replayed world one frame. A step that throws must be one the recording says threw,
    /// with the same message (the replay made it throw at the same place: on_publish, spawn), and
    /// one that returns must be one that did; otherwise that is the divergence.
    void step_world(Duration dt) {
        std::optional<std::string> threw;
        try {
            world->step(dt);
        } catch (const FileFormatError&) {
            throw;
        } catch (const std::exception& e) {
            threw = e.what();
        } catch (...) {
            threw = "unknown exception";
        }
        if (file_error) std::rethrow_exception(file_error);
        const std::string expected = frame_throw ? "a step that throws '" + frame_throw->s1 + "'" : "a step that returns";
        if (threw && (!frame_throw || *threw != frame_throw->s1)) diverge({}, {}, expected, "a step that throws '" + *threw + "'");
        else if (!threw && frame_throw) diverge({}, {}, expected, "a step that returns");
        else if (threw) thrown_steps.push_back(ThrownStep{frame, *threw});
    }

    /// Applies one record. What the World or a blackboard refuses (a spawn with bindings the tree does
    /// not have, a duplicate shared blackboard, ...) can only come from a corrupt file.
    void apply(Item& it) {
        try {
            apply_record(it);
        } catch (const FileFormatError&) {
            throw;
        } catch (const std::exception& e) {
            in.fail(std::string("corrupt: ") + e.what());
        }
    }
    void apply_record(Item& it) {
        switch (it.tag) {
        case Tag::Tree: {
            register_model(it.s2, trees.size());
            try {
                trees.push_back(xml::Loader(registry).load_string(it.s2, name + " (tree " + std::to_string(trees.size()) + ")"));
            } catch (const std::exception& e) {
                in.fail(std::string("tree '") + it.s1 + "' does not load: " + e.what());
            }
            break;
        }
        case Tag::Shared: shared.push_back(&world->create_shared(it.s1)); break;
        case Tag::Declare: {
            if (it.a >= shared.size()) in.fail("corrupt: shared blackboard " + std::to_string(it.a));
            SharedBlackboard& b = *shared[it.a];
            const TypeInfo* type = recording::recordable_named(it.s2);
            if (!type) in.fail("key '" + it.s1 + "' has the type '" + it.s2 + "', " + recording::unknown_type_hint);
            if (!recording::valid_value(type, it.s3) || !recording::valid_value(type, it.s4))
                in.fail("corrupt: key '" + it.s1 + "' of type '" + it.s2 + "'");
            const KeyId existing = b.schema().find(it.s1);
            if (existing == kNoKey)
                recording::with_value(type, it.s3, [&](const void* value) { b.declare_raw(it.s1, type, value); });
            else if (b.schema().info(existing).type != type)
                in.fail("corrupt: key '" + it.s1 + "' declared twice");
            if (it.s4 != it.s3)
                recording::with_value(type, it.s4, [&](const void* value) { b.set_raw(b.schema().find(it.s1), value); });
            break;
        }
        case Tag::Spawn: spawn(it); break;
        case Tag::Despawn:
            if (!world->despawn(it.agent)) diverge(it.agent, {}, "a despawn of a live agent", "a stale handle");
            break;
        case Tag::Resume: {
            const Agent* a = world->agent(it.agent);
            const ResumeHandle h{it.agent, a ? a->serial() : 0, static_cast<NodeIndex>(it.a), it.b};
            if (it.status != static_cast<std::uint8_t>(Status::Success) && it.status != static_cast<std::uint8_t>(Status::Failure))
                in.fail("corrupt: resume status " + std::to_string(it.status));
            const bool accepted = world->resume(h, static_cast<Status>(it.status));
            if (accepted != (it.flags != 0))
                diverge(it.agent, node_path(it.agent, it.a), it.flags ? "a resume accepted" : "a resume refused",
                        accepted ? "accepted" : "refused");
            break;
        }
        case Tag::Abort:
            if (!world->abort(it.agent)) diverge(it.agent, {}, "an abort of a live agent", "a stale handle");
            break;
        case Tag::Restart:
            if (Agent* a = world->agent(it.agent)) a->restart();
            else diverge(it.agent, {}, "a restart of a live agent", "a stale handle");
            break;
        case Tag::Interval:
            if (it.a < 1) in.fail("corrupt: tick interval 0");
            if (!world->set_tick_interval(it.agent, static_cast<std::uint32_t>(it.a)))
                diverge(it.agent, {}, "a tick interval change of a live agent", "a stale handle");
            break;
        case Tag::Budget: world->set_agent_budget(static_cast<std::uint32_t>(it.a)); break;
        case Tag::Write: {
            Agent* a = world->agent(it.agent);
            if (!a) {
                diverge(it.agent, {}, "a blackboard write to a live agent", "no such agent");
                break;
            }
            const BlackboardSchema& schema = a->blackboard().schema();
            if (it.a >= schema.size() || !recording::valid_value(schema.info(static_cast<KeyId>(it.a)).type, it.s1))
                in.fail("corrupt: a write to key " + std::to_string(it.a) + " of agent " + handle_text(it.agent));
            recording::with_value(schema.info(static_cast<KeyId>(it.a)).type, it.s1, [&](const void* value) {
                detail::EngineAccess::mirror(a->blackboard(), static_cast<KeyId>(it.a), value);
            });
            break;
        }
        case Tag::SharedWrite:
            diverge({}, {}, "a shared blackboard publish", "none (no frame started)");
            break;
        default: in.fail("corrupt: record " + std::to_string(static_cast<int>(it.tag)) + " out of place");
        }
    }

    void spawn(const Item& it) {
        if (it.a >= trees.size()) in.fail("corrupt: tree number " + std::to_string(it.a));
        if (it.kind > 1) in.fail("corrupt: mode " + std::to_string(it.kind));
        SpawnOptions o;
        o.mode = options.mode ? *options.mode : static_cast<Mode>(it.kind);
        o.seed = it.b;
        o.restart_on_end = it.flags != 0;
        o.tick_interval = static_cast<std::uint32_t>(it.c);
        for (const auto& [scope, number] : it.bindings) {
            if (number >= shared.size()) in.fail("corrupt: shared blackboard " + std::to_string(number));
            o.shared.emplace_back(scope, shared[number]);
        }
        for (const auto& initial : it.values) {
            // (Named references, not a structured binding: lambdas may not capture those before C++20's
            // P1091 reached every compiler.)
            const std::string& key = std::get<0>(initial);
            const std::string& value = std::get<2>(initial);
            const TypeInfo* type = recording::recordable_named(std::get<1>(initial));
            if (!type) in.fail("the initial value of key '" + key + "' has the type '" + std::get<1>(initial) + "', " + recording::unknown_type_hint);
            if (!recording::valid_value(type, value)) in.fail("corrupt: initial value of key '" + key + "'");
            recording::with_value(type, value, [&](const void* v) {
                InitialValue initial_value(key, 0);
                initial_value.value = Value(type, v);
                initial_value.type = type;
                o.blackboard.push_back(std::move(initial_value));
            });
        }
        const AgentHandle got = world->spawn(trees[it.a], std::move(o));
        // A spawn whose join the recorded frame's end refused (a value's copy threw) fails to join alike.
        if (frame_throw && world->in_step() &&
            std::find(frame_throw->handles.begin(), frame_throw->handles.end(), got) != frame_throw->handles.end())
            detail::EngineAccess::refuse_join(*world, got, frame_throw->s1);
        if (got != it.agent) diverge(it.agent, {}, "spawn to return " + handle_text(it.agent), "spawn returned " + handle_text(got));
    }

    // ---- WorldInputObserver: the replayed world's own inputs --------------------------------------------------
    void on_step(Duration) override { frame_events = 0; }  // as the recorder counts: not the events between frames
    void on_publish() override {
        // The recorded pending values go in just before the publish, as they were in the recorded frame.
        // When the recorded publish threw at shared blackboard T, key K (a value's copy), the values it
        // did not reach (T's keys from K on, the blackboards after T) go in after the ones it published
        // (the blackboards up to T, T's keys before K) have been published here, and the step throws
        // from here with the recorded message: the frame goes on as the recorded one did.
        const Item* threw = frame_throw && frame_throw->kind == static_cast<std::uint8_t>(StepThrow::Stage::Publish) ? frame_throw : nullptr;
        std::vector<const Item*> not_reached;
        while (!divergence) {
            Item* it = peek();
            if (!it || it->tag != Tag::SharedWrite) break;
            take();
            if (threw && (it->a > threw->a || (it->a == threw->a && it->b >= threw->b))) not_reached.push_back(it);
            else set_pending(*it);
        }
        if (!threw || divergence) return;
        if (threw->a >= shared.size()) in.fail("corrupt: shared blackboard " + std::to_string(threw->a) + " of a publish that threw");
        for (std::size_t i = 0; i <= threw->a; ++i) shared[i]->publish();
        for (const Item* it : not_reached) set_pending(*it);
        throw std::runtime_error(threw->s1);
    }
    /// A recorded SharedWrite: the pending value of a shared blackboard's key.
    void set_pending(const Item& it) {
        if (it.a >= shared.size()) in.fail("corrupt: shared blackboard " + std::to_string(it.a));
        SharedBlackboard& b = *shared[it.a];
        if (it.b >= b.schema().size() || !recording::valid_value(b.schema().info(static_cast<KeyId>(it.b)).type, it.s1))
            in.fail("corrupt: a shared write to key " + std::to_string(it.b));
        recording::with_value(b.schema().info(static_cast<KeyId>(it.b)).type, it.s1,
                              [&](const void* value) { b.set_raw(static_cast<KeyId>(it.b), value); });
    }
    void after_publish() override { apply_loose(); }
    void on_step_end(const FrameMetrics&) override {}
    void on_spawn(AgentHandle, const Tree&, const SpawnOptions&) override {}
    void on_despawn(AgentHandle) override {}
    void on_resume(const ResumeHandle&, Status, bool) override {}
    void on_abort(AgentHandle) override {}
    void on_tick_interval(AgentHandle, std::uint32_t) override {}
    void on_agent_budget(std::uint32_t) override {}
    void on_create_shared(SharedBlackboard&) override {}

    // ---- WorldListener: the lifecycle traces ------------------------------------------------------------------
    void on_event(AgentHandle handle, const Agent& agent, const TraceEvent& event) override {
        if (condition_node_pending && divergence && divergence->agent == handle &&
            (event.kind == TraceKind::GuardEvaluated || event.kind == TraceKind::ConditionEvaluated)) {
            divergence->node = agent.tree().path(event.node);
            condition_node_pending = false;
        }
        if (!event.is_lifecycle()) return;
        ++frame_events;
        if (!divergence && !file_error) apply_loose();
        AgentTrace& t = traces[handle.index];
        if (t.digest.events == 0) t.digest.agent = handle;
        t.digest.add(world->frame(), event);
        TraceEvent copy = event;
        copy.message = {};
        copy.tick = world->frame();
        t.events.push_back(copy);
    }

    std::string events_text(const AgentTrace& t) {
        std::string s;
        const Agent* a = world->agent(t.digest.agent);
        for (const TraceEvent& e : t.events) {
            s += s.empty() ? ": " : "; ";
            s += std::to_string(e.tick) + " ";
            s += a ? a->tree().path(e.node) : "#" + std::to_string(e.node);
            s += std::string(" ") + to_string(e.kind);
            if (e.kind != TraceKind::Initialize) s += std::string("(") + to_string(e.status) + ")";
        }
        return s;
    }

    void check_frame_end(const Item& end) {
        std::vector<std::uint32_t> slots;
        for (const auto& [slot, t] : traces) slots.push_back(slot);
        for (const auto& d : end.digests) slots.push_back(d.agent.index);
        std::sort(slots.begin(), slots.end());
        slots.erase(std::unique(slots.begin(), slots.end()), slots.end());
        for (const std::uint32_t slot : slots) {
            const auto t = traces.find(slot);
            std::size_t k = 0;
            while (k < end.digests.size() && end.digests[k].agent.index != slot) ++k;
            const std::uint64_t want_events = k < end.digests.size() ? end.digests[k].events : 0;
            const std::uint64_t want_hash = k < end.digests.size() ? end.digest_hashes[k] : detail::Fnv1a{}.value();
            const std::uint64_t got_events = t != traces.end() ? t->second.digest.events : 0;
            const std::uint64_t got_hash = t != traces.end() ? t->second.digest.hash.value() : detail::Fnv1a{}.value();
            if (want_events == got_events && want_hash == got_hash) continue;
            const AgentHandle agent = k < end.digests.size() ? end.digests[k].agent : t->second.digest.agent;
            diverge(agent, {}, std::to_string(want_events) + " lifecycle events (hash " + hex(want_hash) + ")",
                    std::to_string(got_events) + " (hash " + hex(got_hash) + ")" + (t != traces.end() ? events_text(t->second) : ""));
            return;
        }
        const std::uint64_t hash = world->state_hash();
        if (hash != end.a) diverge({}, {}, "state hash " + hex(end.a), "state hash " + hex(hash));
    }

    // ---- one frame ----------------------------------------------------------------------------------------------
    bool step() {
        if (finished || cut || divergence || file_error || !unreplayable_throw.empty()) return false;
        if (!read_frame()) {
            finished = !cut;
            return false;
        }
        traces.clear();
        frame_throw = nullptr;
        for (const Item& it : frame_items)
            if (it.tag == Tag::Threw) frame_throw = &it;
        if (frame_throw && (frame_throw->kind == static_cast<std::uint8_t>(StepThrow::Stage::Tick) ||
                            frame_throw->kind == static_cast<std::uint8_t>(StepThrow::Stage::Other))) {
            // Nothing the replay controls makes an agent's tick refused (game code misused the agent,
            // which a recording does not hold) or the recorder throw: stop before the frame.
            unreplayable_throw = "the recording's step of frame " + std::to_string(frame) + " threw '" + frame_throw->s1 + "' " +
                                 (frame_throw->kind == static_cast<std::uint8_t>(StepThrow::Stage::Tick)
                                      ? "as an agent's tick was refused (game code misused the agent)"
                                      : "from the recorder");
            frame_throw = nullptr;
            return false;
        }
        apply_items(frame_items, Items::Frame);
        frame_throw = nullptr;
        if (divergence) return false;
        ++frame;
        return true;
    }
};

Replay::Replay(const std::filesystem::path& file, ReplayOptions options)
    : Replay(read_file(file), file.string(), options) {}

Replay::Replay(std::vector<std::byte> bytes, std::string name, ReplayOptions options)
    : impl_(std::make_unique<Impl>(std::move(bytes), std::move(name), options)) {}

Replay::~Replay() = default;

bool Replay::step() { return impl_->step(); }
bool Replay::run() {
    while (impl_->step()) {
    }
    return !impl_->divergence;
}
bool Replay::finished() const noexcept { return impl_->finished; }
bool Replay::cut() const noexcept { return impl_->cut; }
const std::vector<ThrownStep>& Replay::thrown_steps() const noexcept { return impl_->thrown_steps; }
const std::optional<Divergence>& Replay::divergence() const noexcept { return impl_->divergence; }
std::uint64_t Replay::frames() const noexcept { return impl_->frame; }
World& Replay::world() noexcept { return *impl_->world; }

std::string Replay::summary() const {
    if (impl_->divergence) return impl_->divergence->message();
    const std::string frames = std::to_string(impl_->frame);
    if (!impl_->unreplayable_throw.empty())
        return "identical for " + frames + " frames; " + impl_->unreplayable_throw + ": the replay stops there";
    std::string thrown;  // "; the steps of frames 3, 6 threw, as recorded"
    for (const ThrownStep& t : impl_->thrown_steps) thrown += (thrown.empty() ? "" : ", ") + std::to_string(t.frame);
    if (!thrown.empty())
        thrown = std::string("; the step") + (impl_->thrown_steps.size() > 1 ? "s of frames " : " of frame ") + thrown + " threw, as recorded";
    if (impl_->cut_inside_frame)
        return "identical for " + frames + " frames; the recording ends inside frame " + frames +
               " (cut short: the game stopped while it was written)";
    if (impl_->cut)
        return "identical for " + frames + " frames; the recording ends there without its end record (the game stopped in frame " +
               frames + ", before Recorder::stop())";
    return std::string(impl_->finished ? "identical after " : "identical so far after ") + std::to_string(impl_->frame) + " frames" + thrown;
}

}  // namespace ebt::debug
