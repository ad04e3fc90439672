// Agent snapshots (<ebt/snapshot.hpp>): the agent record, the file around it, and the re-binding of
// suspended actions after a restore. The format is described in snapshot_format.hpp and
// docs/snapshots.md.
#include "snapshot/snapshot_access.hpp"
#include "snapshot/snapshot_format.hpp"

#include <ebt/detail/hash.hpp>
#include <ebt/limits.hpp>
#include <ebt/shared_blackboard.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace ebt::detail::snapshot {

namespace {

/// The shared-scope table of the state block: pointers and key ids of this process, never saved.
std::uint32_t shared_table_bytes(const TreeData& t) {
    return t.schema.scopes().empty() ? 0 : static_cast<std::uint32_t>(8 * t.schema.scopes().size() + 2 * t.schema.size());
}

bool has_cursor(NodeKind k) {
    switch (k) {
    case NodeKind::Sequence:
    case NodeKind::Filter:
    case NodeKind::ReactiveSequence:
    case NodeKind::Selector:
    case NodeKind::ActiveSelector:
    case NodeKind::PrioritySelector:
    case NodeKind::NonPrioritySelector: return true;
    default: return false;
    }
}

template <class T> T read_at(const std::vector<std::byte>& image, std::size_t offset) {
    T v;
    std::memcpy(&v, image.data() + offset, sizeof v);
    return v;
}

/// The checks of an engine image that the scheduler's own validation (Runtime::validate) does not make:
/// values the runtime uses as indices or takes as enums. "" when it is fine, else what is wrong.
std::string check_engine_image(const TreeData& t, const std::vector<std::byte>& image) {
    const auto n = static_cast<NodeIndex>(t.nodes.size());
    const std::uint16_t known_flags = static_cast<std::uint16_t>((kCutByGuard << 1) - 1);
    for (NodeIndex i = 0; i < n; ++i) {
        const auto status = static_cast<std::uint8_t>(image[t.layout.status_offset + i]);
        if (status > static_cast<std::uint8_t>(Status::Aborted))
            return "node " + std::to_string(i) + " has status " + std::to_string(status) + " (no such status)";
        const auto flags = read_at<std::uint16_t>(image, t.layout.flags_offset + 2u * i);
        if (flags & ~known_flags) return "node " + std::to_string(i) + " has unknown flags " + std::to_string(flags);
        const NodeDef& d = t.nodes[i];
        const bool running = status == static_cast<std::uint8_t>(Status::Running);
        if (running && d.parent != kNoNode &&
            static_cast<std::uint8_t>(image[t.layout.status_offset + d.parent]) != static_cast<std::uint8_t>(Status::Running))
            return "node " + std::to_string(i) + " is running under node " + std::to_string(d.parent) + ", which is not";
        if (has_cursor(d.kind)) {
            const auto cursor = read_at<NodeIndex>(image, d.memory_offset);
            const bool child = cursor < n && t.nodes[cursor].parent == i;
            if (running ? !child : !(child || cursor == 0 || cursor == kNoNode))
                return "node " + std::to_string(i) + "'s current child is " + std::to_string(cursor) + ", not one of its children";
        }
        if (d.kind == NodeKind::RandomSelector || d.kind == NodeKind::WeightedSelector) {
            if (read_at<std::uint16_t>(image, d.memory_offset) > d.child_count)
                return "node " + std::to_string(i) + "'s draw rank is past its children";
            for (std::uint16_t c = 0; c < d.child_count; ++c)
                if (static_cast<std::uint8_t>(image[d.memory_offset + 8u + c]) >= d.child_count)
                    return "node " + std::to_string(i) + "'s drawn order names no child";
        }
    }
    return {};
}

std::uint64_t checksum(const std::byte* data, std::size_t size) {
    Fnv1a h;
    h.bytes(data, size);
    return h.value();
}

}  // namespace

void check_savable(const Agent& agent, const char* who) {
    if (SnapshotAccess::moved_from(agent)) throw UsageError(std::string(who) + ": the agent was moved from");
    if (SnapshotAccess::in_tick(agent))
        throw UsageError(std::string(who) + " inside a tick of the agent: save it between ticks");
    const BlackboardSchema& schema = agent.tree().schema();
    for (KeyId k = 0; k < schema.size(); ++k) {
        const KeyInfo& info = schema.info(k);
        if (!info.type->serializable())
            throw SnapshotError(std::string(who) + ": blackboard key '" + info.name + "' of tree '" + agent.tree().name() +
                                "' is " + info.type->name + ", which has no binary form: give ebt::BlackboardValue<" +
                                info.type->name + "> save and load hooks (<ebt/value_type.hpp>)");
    }
}

void write_identity(io::ByteWriter& out, const Tree& tree, std::uint64_t tree_hash) {
    out.string(tree.name());
    out.u64(tree_hash);
    out.varint(tree.size());
    out.varint(tree.schema().size());
}

void write_agent_record(io::ByteWriter& out, const Agent& agent, std::uint64_t tree_hash) {
    write_identity(out, agent.tree(), tree_hash);
    write_agent_state(out, agent);
}

void write_agent_state(io::ByteWriter& out, const Agent& agent) {
    const TreeData& t = EngineAccess::tree_data(agent.tree());
    out.u8(static_cast<std::uint8_t>(agent.mode()));
    out.u8(static_cast<std::uint8_t>((SnapshotAccess::restart_on_end(agent) ? 1 : 0) | (SnapshotAccess::stopped(agent) ? 2 : 0) |
                                     (SnapshotAccess::abort_requested(agent) ? 4 : 0)));
    out.u64(agent.seed());
    out.u64(static_cast<std::uint64_t>(agent.now()));
    out.u64(static_cast<std::uint64_t>(SnapshotAccess::next_deadline(agent)));
    out.u64(agent.ticks());
    const AgentStats& s = agent.stats();
    for (const std::uint32_t v : {s.nodes_visited, s.guards_evaluated, s.updates, s.timers_fired, s.listener_errors}) out.varint(v);
    out.varint(SnapshotAccess::queue_head(agent));
    out.varint(SnapshotAccess::queue_size(agent));

    // The engine part of the state block as it is (little-endian fields), the shared-scope table zeroed.
    out.varint(t.layout.engine_bytes);
    const std::byte* block = SnapshotAccess::block(agent);
    if (const std::uint32_t table = shared_table_bytes(t)) {
        out.raw(block, t.layout.shared_offset);
        const std::vector<std::byte> zeros(table);
        out.raw(zeros.data(), zeros.size());
        out.raw(block + t.layout.shared_offset + table, t.layout.engine_bytes - t.layout.shared_offset - table);
    } else {
        out.raw(block, t.layout.engine_bytes);
    }

    const auto& scopes = t.schema.scopes();
    for (const std::string& scope : scopes) out.u8(agent.bound(scope) ? 1 : 0);

    io::ByteWriter value_bytes;
    for (KeyId k = 0; k < t.schema.size(); ++k) {
        const KeyInfo& info = t.schema.info(k);
        value_bytes.clear();
        ValueWriter w(value_bytes);
        info.type->serializer->save(info.type, SnapshotAccess::values(agent) + info.offset, w);
        out.varint(value_bytes.size());
        out.raw(value_bytes.bytes().data(), value_bytes.size());
    }
}

TreeIdentity read_agent_identity(io::ByteReader& in) {
    TreeIdentity id;
    id.name = in.string(1 << 16);
    id.hash = in.u64();
    id.nodes = in.varint_at_most(limits::kMaxNodes, "node count");
    id.keys = in.varint_at_most(kNoKey, "key count");
    return id;
}

void check_identity(const TreeIdentity& id, const Tree& tree, std::uint64_t tree_hash) {
    if (id.hash == tree_hash) return;
    const auto hex = [](std::uint64_t v) {
        char text[17];
        std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(v));
        return std::string(text);
    };
    std::string what = "the snapshot's agent is of tree '" + id.name + "' (structural hash " + hex(id.hash) +
                       "), not of tree '" + tree.name() + "' (structural hash " + hex(tree_hash) + ")";
    if (id.nodes != tree.size())
        what += ": " + std::to_string(id.nodes) + " nodes, not " + std::to_string(tree.size());
    else if (id.keys != tree.schema().size())
        what += ": " + std::to_string(id.keys) + " blackboard keys, not " + std::to_string(tree.schema().size());
    else
        what += ": same node and key counts, other kinds, parameters, keys or types";
    throw SnapshotError(what);
}

AgentImage read_agent_state(io::ByteReader& in, const Tree& tree, const std::string& source) {
    const TreeData& t = EngineAccess::tree_data(tree);
    AgentImage image;
    const std::uint8_t mode = in.u8();
    if (mode > static_cast<std::uint8_t>(Mode::Event)) in.fail("corrupt: agent mode " + std::to_string(mode));
    image.mode = static_cast<Mode>(mode);
    const std::uint8_t flags = in.u8();
    if (flags > 7) in.fail("corrupt: agent flags " + std::to_string(flags));
    image.restart_on_end = (flags & 1) != 0;
    image.stopped = (flags & 2) != 0;
    image.abort_requested = (flags & 4) != 0;
    image.seed = in.u64();
    const std::uint64_t clock = in.u64();
    if (clock > static_cast<std::uint64_t>(limits::kMaxClockMicroseconds))
        in.fail("corrupt: agent clock " + std::to_string(clock) + " us is past the clock's range");
    image.clock = static_cast<TimePoint>(clock);
    image.next_deadline = static_cast<TimePoint>(in.u64());
    if (image.next_deadline < 0) in.fail("corrupt: negative next deadline");
    image.ticks = in.u64();
    std::uint32_t* stats[] = {&image.stats.nodes_visited, &image.stats.guards_evaluated, &image.stats.updates,
                              &image.stats.timers_fired, &image.stats.listener_errors};
    for (std::uint32_t* v : stats) *v = static_cast<std::uint32_t>(in.varint_at_most(0xFFFFFFFFu, "statistic"));
    const std::uint64_t capacity = t.layout.queue_capacity;
    image.queue_head = static_cast<std::uint16_t>(in.varint_at_most(capacity - 1, "queue head"));
    image.queue_size = static_cast<std::uint16_t>(in.varint_at_most(capacity, "queue size"));

    const std::uint64_t engine_bytes = in.varint();
    if (engine_bytes != t.layout.engine_bytes)
        in.fail("corrupt: the agent's state is " + std::to_string(engine_bytes) + " bytes; the tree lays out " +
                std::to_string(t.layout.engine_bytes));
    image.engine_offset = in.offset();
    image.engine.resize(t.layout.engine_bytes);
    in.raw(image.engine.data(), image.engine.size());
    if (const std::uint32_t table = shared_table_bytes(t)) std::memset(image.engine.data() + t.layout.shared_offset, 0, table);
    if (const std::string problem = check_engine_image(t, image.engine); !problem.empty())
        throw debug::FileFormatError(source, image.engine_offset, "corrupt: the agent's state is not one the engine makes: " + problem);

    for (std::size_t s = 0; s < t.schema.scopes().size(); ++s) {
        const std::uint8_t bound = in.u8();
        if (bound > 1) in.fail("corrupt: a shared scope's binding flag is " + std::to_string(bound));
        image.scope_bound.push_back(bound == 1);
    }

    image.values.reserve(t.schema.size());
    for (KeyId k = 0; k < t.schema.size(); ++k) {
        const KeyInfo& info = t.schema.info(k);
        const std::uint64_t size = in.varint_at_most(in.remaining(), "value size");
        const std::uint64_t start = in.offset();
        if (!info.type->serializable())
            in.fail("blackboard key '" + info.name + "' is " + info.type->name + ", which has no binary form in this program");
        Value value(info.type);
        ValueReader r(in);
        info.type->serializer->load(info.type, r, value.data());
        if (in.offset() - start != size)
            throw debug::FileFormatError(source, start,
                                         "corrupt: blackboard key '" + info.name + "' holds " + std::to_string(size) +
                                             " bytes, but its value (" + info.type->name + ") was " +
                                             std::to_string(in.offset() - start));
        image.values.push_back(std::move(value));
    }
    return image;
}

Agent make_agent(const Tree& tree, AgentImage image, const RestoreOptions& options) {
    const TreeData& t = EngineAccess::tree_data(tree);
    const auto& scopes = t.schema.scopes();
    for (std::size_t s = 0; s < scopes.size(); ++s) {
        if (!image.scope_bound[s]) continue;
        const bool given = std::any_of(options.shared.begin(), options.shared.end(),
                                       [&](const auto& entry) { return entry.first == scopes[s] && entry.second; });
        if (!given)
            throw SnapshotError("restore_agent(): the saved agent of tree '" + t.name + "' had shared scope '" + scopes[s] +
                                "' bound: give RestoreOptions::shared a blackboard for it");
    }
    AgentOptions made;
    made.mode = image.mode;
    made.seed = image.seed;
    made.restart_on_end = image.restart_on_end;
    made.listener = options.listener;
    made.bus = options.bus;
    made.user = options.user;
    Agent agent(tree, std::move(made));
    for (const auto& [scope, shared] : options.shared)
        if (shared) agent.bind(scope, *shared);

    // The block: the engine part but the shared-scope table (bound above), then every value. Nothing is
    // emitted and nothing wakes: the state is set, not changed.
    std::byte* block = SnapshotAccess::block(agent);
    const std::uint32_t table = shared_table_bytes(t);
    if (table) {
        std::memcpy(block, image.engine.data(), t.layout.shared_offset);
        const std::uint32_t after = t.layout.shared_offset + table;
        std::memcpy(block + after, image.engine.data() + after, t.layout.engine_bytes - after);
    } else {
        std::memcpy(block, image.engine.data(), t.layout.engine_bytes);
    }
    for (KeyId k = 0; k < t.schema.size(); ++k) {
        const KeyInfo& info = t.schema.info(k);
        assign_value(info.type, SnapshotAccess::values(agent) + info.offset, image.values[k].data());
    }
    SnapshotAccess::set_state(agent, image.clock, image.next_deadline, image.ticks, image.stats, image.queue_head,
                              image.queue_size, image.stopped, image.abort_requested);

    // The scheduler's own invariants, reported here instead of asserted: the state came from outside.
    std::string broken;
    {
        Runtime rt(agent);
        rt.broken_invariant = &broken;
        rt.validate("a restore");
    }
    if (!broken.empty()) {
        // Leave nothing running, so that the agent's destruction calls no action.
        std::memset(block + t.layout.status_offset, 0, t.nodes.size());
        throw debug::FileFormatError(options.source, image.engine_offset,
                                     "corrupt: the agent's state breaks a scheduler invariant: " + broken);
    }
    return agent;
}

void disarm_agent(Agent& agent) noexcept {
    const TreeData& t = EngineAccess::tree_data(agent.tree());
    std::memset(SnapshotAccess::block(agent) + t.layout.status_offset, 0, t.nodes.size());
}

std::vector<std::byte> finish_file(Kind kind, const io::ByteWriter& content) {
    io::ByteWriter out;
    out.header(kMagic, kVersion);
    out.u8(static_cast<std::uint8_t>(kind));
    out.raw(content.bytes().data(), content.size());
    out.u64(checksum(out.bytes().data() + kHeaderBytes, out.size() - kHeaderBytes));
    return out.bytes();
}

io::ByteReader open_file(std::span<const std::byte> bytes, Kind kind, const std::string& source) {
    io::ByteReader header(bytes.data(), bytes.size(), source);
    // A file of an older version (1 or 2: another layout of the state block) is refused with the reason
    // added to the version message (the header check alone names the versions only).
    if (bytes.size() >= kHeaderBytes && std::memcmp(bytes.data(), kMagic.data(), kMagic.size()) == 0) {
        const std::uint32_t version = io::ByteReader(bytes.data() + kMagic.size(), 4, source).u32();
        if (version >= 1 && version < kVersion)
            throw debug::FileFormatError(source, kHeaderBytes,
                                         "ebt snapshot format version " + std::to_string(version) +
                                             "; this build of ebt reads versions " + std::to_string(kVersion) + " to " +
                                             std::to_string(kVersion) + older_layout_refusal(version));
    }
    header.header(kMagic, "ebt snapshot", kVersion, kVersion);
    if (bytes.size() < kHeaderBytes + 1 + 8) header.fail("truncated: the snapshot ends before its content and checksum");
    const std::size_t body_end = bytes.size() - 8;
    io::ByteReader sum(bytes.data() + body_end, 8, source, body_end);
    if (sum.u64() != checksum(bytes.data() + kHeaderBytes, body_end - kHeaderBytes))
        throw debug::FileFormatError(source, body_end,
                                     "corrupt: the checksum does not match the content (the file was cut short, "
                                     "damaged or changed after it was written)");
    const auto found = static_cast<std::uint8_t>(bytes[kHeaderBytes]);
    if (found != static_cast<std::uint8_t>(kind))
        throw debug::FileFormatError(source, kHeaderBytes,
                                     "a snapshot of kind " + std::to_string(found) + ", not " + std::to_string(static_cast<int>(kind)) +
                                         " (" + (kind == Kind::Agent ? "one agent" : kind == Kind::Squad ? "a set of agents" : kind == Kind::World ? "a world" : "agents of a world") + ")");
    return io::ByteReader(bytes.data() + kHeaderBytes + 1, body_end - kHeaderBytes - 1, source, kHeaderBytes + 1);
}

}  // namespace ebt::detail::snapshot

namespace ebt {

using namespace detail::snapshot;

std::vector<std::byte> save_agent(const Agent& agent) {
    check_savable(agent, "save_agent()");
    debug::io::ByteWriter content;
    write_agent_record(content, agent, structural_hash(agent.tree()));
    return finish_file(Kind::Agent, content);
}

Agent restore_agent(const Tree& tree, std::span<const std::byte> snapshot, const RestoreOptions& options) {
    if (!tree) throw UsageError("restore_agent(): the tree is empty");
    debug::io::ByteReader in = open_file(snapshot, Kind::Agent, options.source);
    check_identity(read_agent_identity(in), tree, structural_hash(tree));
    AgentImage image = read_agent_state(in, tree, options.source);
    if (!in.at_end()) in.fail("corrupt: " + std::to_string(in.remaining()) + " bytes after the agent");
    return make_agent(tree, std::move(image), options);
}

std::vector<SuspendedAction> suspended_actions(const Agent& agent) {
    if (detail::SnapshotAccess::moved_from(agent)) throw UsageError("suspended_actions(): the agent was moved from");
    std::vector<SuspendedAction> out;
    detail::Runtime rt(const_cast<Agent&>(agent));  // reads only
    for (NodeIndex n = 0; n < agent.tree().size(); ++n) {
        if (rt.def(n).kind != NodeKind::Action || !rt.running(n) || !rt.has(n, detail::kSuspended) ||
            rt.has(n, detail::kResumePending))
            continue;
        out.push_back({n, ResumeHandle{detail::EngineAccess::handle(agent), agent.serial(), n, rt.run_id(n)}});
    }
    return out;
}

ResumeHandle resume_handle(const Agent& agent, NodeRef node) {
    if (!node) throw UsageError("resume_handle(): the NodeRef refers to no node");
    if (node.tree_tag() != agent.tree().schema().tag())
        throw UsageError("resume_handle(): node " + std::to_string(node.index()) + " was found in another tree than '" +
                         agent.tree().name() + "'");
    for (const SuspendedAction& s : suspended_actions(agent))
        if (s.node == node.index()) return s.handle;
    return ResumeHandle{};
}

}  // namespace ebt

namespace ebt {

std::vector<std::byte> save_agents(std::span<const Agent* const> agents) {
    // The trees, each identified once (its structural hash computed once), then each agent's state.
    std::vector<const Tree*> trees;
    std::vector<std::uint64_t> hashes;
    std::vector<std::size_t> tree_of(agents.size());
    for (std::size_t i = 0; i < agents.size(); ++i) {
        if (!agents[i]) throw UsageError("save_agents(): agent " + std::to_string(i) + " is null");
        check_savable(*agents[i], "save_agents()");
        const Tree& tree = agents[i]->tree();
        std::size_t at = 0;
        while (at < trees.size() && &detail::EngineAccess::tree_data(*trees[at]) != &detail::EngineAccess::tree_data(tree)) ++at;
        if (at == trees.size()) {
            trees.push_back(&tree);
            hashes.push_back(structural_hash(tree));
        }
        tree_of[i] = at;
    }
    debug::io::ByteWriter content;
    content.varint(trees.size());
    for (std::size_t t = 0; t < trees.size(); ++t) write_identity(content, *trees[t], hashes[t]);
    content.varint(agents.size());
    for (std::size_t i = 0; i < agents.size(); ++i) {
        content.varint(tree_of[i]);
        write_agent_state(content, *agents[i]);
    }
    return finish_file(Kind::Squad, content);
}

std::vector<Agent> restore_agents(std::span<const Tree> trees, std::span<const std::byte> snapshot,
                                  const std::function<RestoreOptions(std::size_t)>& options) {
    const std::string source = "snapshot";
    debug::io::ByteReader in = open_file(snapshot, Kind::Squad, source);
    std::vector<std::uint64_t> given(trees.size());
    for (std::size_t t = 0; t < trees.size(); ++t) {
        if (!trees[t]) throw UsageError("restore_agents(): tree " + std::to_string(t) + " is empty");
        given[t] = structural_hash(trees[t]);
    }
    // Which of `trees` each saved tree is.
    const std::uint64_t tree_count = in.varint_at_most(in.remaining(), "tree count");
    std::vector<const Tree*> saved_trees;
    for (std::uint64_t t = 0; t < tree_count; ++t) {
        const TreeIdentity id = read_agent_identity(in);
        const auto it = std::find(given.begin(), given.end(), id.hash);
        if (it == given.end())
            throw SnapshotError("restore_agents(): the snapshot holds agents of tree '" + id.name +
                                "', and none of the trees given has its structural hash");
        saved_trees.push_back(&trees[static_cast<std::size_t>(it - given.begin())]);
    }
    const std::uint64_t count = in.varint_at_most(in.remaining(), "agent count");
    std::vector<std::pair<const Tree*, AgentImage>> images;
    images.reserve(static_cast<std::size_t>(count));
    for (std::uint64_t i = 0; i < count; ++i) {
        const std::uint64_t t = in.varint_at_most(tree_count == 0 ? 0 : tree_count - 1, "tree index");
        if (tree_count == 0) in.fail("corrupt: an agent without any tree");
        images.emplace_back(saved_trees[t], read_agent_state(in, *saved_trees[t], source));
    }
    if (!in.at_end()) in.fail("corrupt: " + std::to_string(in.remaining()) + " bytes after the agents");
    std::vector<Agent> agents;
    agents.reserve(images.size());
    for (std::size_t i = 0; i < images.size(); ++i)
        agents.push_back(make_agent(*images[i].first, std::move(images[i].second), options ? options(i) : RestoreOptions{}));
    return agents;
}

}  // namespace ebt
