// World snapshots (<ebt/snapshot.hpp>: save_world, restore_world). A world is saved as its scalars,
// its shared blackboards, the trees of its agents, every slot (generation; for a live agent its
// scheduling state and its agent record), and the free list; docs/snapshots.md has the format.
//
// WorldSnapshotAccess is World's friend for this file only: it reads a world between frames and fills
// a new one. A restore reads and checks the whole snapshot and makes every agent before it touches
// the world, so that an error leaves the world empty.
#include "snapshot/snapshot_access.hpp"
#include "snapshot/snapshot_format.hpp"
#include "world/world_slot.hpp"

#include <ebt/limits.hpp>
#include <ebt/shared_blackboard.hpp>
#include <ebt/world.hpp>

#include <algorithm>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace ebt::detail {

namespace {

using namespace snapshot;
using State = SlotState;

constexpr std::uint32_t kRetiredGeneration = 0xFFFFFFFF;  // as world.cpp: a slot at it is retired

/// A shared blackboard as the snapshot holds it, read and checked.
struct SharedImage {
    std::string name;
    struct Key {
        std::string name;
        const TypeInfo* type = nullptr;
        Value initial;  // as declared (bindings check it)
        Value published;
        Value pending;
        bool pending_differs = false;
    };
    std::vector<Key> keys;
};

/// A slot as the snapshot holds it, read and checked.
struct SlotImage {
    std::uint32_t generation = 1;
    bool live = false;
    bool retired = false;
    // A live slot's:
    std::size_t tree = 0;
    std::uint32_t interval = 1;
    TimePoint last_time = 0;
    bool awake = false;
    bool timer_armed = false;
    TimePoint timer_due = 0;
    std::vector<std::size_t> bindings;  // per shared scope of the tree: the index of its shared blackboard
    AgentImage agent;
};

void write_value(io::ByteWriter& out, const TypeInfo* type, const void* value) {
    io::ByteWriter bytes;
    ValueWriter w(bytes);
    type->serializer->save(type, value, w);
    out.varint(bytes.size());
    out.raw(bytes.bytes().data(), bytes.size());
}

Value read_value(io::ByteReader& in, const TypeInfo* type, const std::string& what, const std::string& source) {
    const std::uint64_t size = in.varint_at_most(in.remaining(), "value size");
    const std::uint64_t start = in.offset();
    Value value(type);
    ValueReader r(in);
    type->serializer->load(type, r, value.data());
    if (in.offset() - start != size)
        throw debug::FileFormatError(source, start,
                                     "corrupt: " + what + " holds " + std::to_string(size) + " bytes, but its value (" +
                                         type->name + ") was " + std::to_string(in.offset() - start));
    return value;
}

/// SnapshotError unless every key of `b` has a binary form.
void check_shared_savable(const SharedBlackboard& b, const char* who) {
    const BlackboardSchema& schema = b.schema();
    for (KeyId k = 0; k < schema.size(); ++k)
        if (!schema.info(k).type->serializable())
            throw SnapshotError(std::string(who) + ": key '" + schema.info(k).name + "' of shared blackboard '" + b.name() + "' is " +
                                schema.info(k).type->name + ", which has no binary form: give ebt::BlackboardValue<" +
                                schema.info(k).type->name + "> save and load hooks (<ebt/value_type.hpp>)");
}

/// A shared blackboard's record: its name, then per key its name, type name, initial, published and
/// pending value.
void write_shared(io::ByteWriter& out, const SharedBlackboard& b) {
    out.string(b.name());
    out.varint(b.schema().size());
    for (KeyId k = 0; k < b.schema().size(); ++k) {
        const KeyInfo& info = b.schema().info(k);
        out.string(info.name);
        out.string(info.type->name);
        write_value(out, info.type, b.schema().initial(k));
        write_value(out, info.type, b.published(k));
        write_value(out, info.type, b.pending_value(k));
    }
}

/// The value types a saved shared blackboard's key may have: those of the trees' keys, and the
/// built-in ones (a type is found by its name).
std::vector<const TypeInfo*> value_types(std::span<const Tree> trees) {
    std::vector<const TypeInfo*> types = {type_of<bool>(), type_of<int>(), type_of<std::int64_t>(), type_of<std::uint32_t>(),
                                          type_of<std::uint64_t>(), type_of<float>(), type_of<double>(), type_of<std::string>()};
    for (const Tree& tree : trees)
        for (KeyId k = 0; k < tree.schema().size(); ++k) types.push_back(tree.schema().info(k).type);
    return types;
}

SharedImage read_shared(io::ByteReader& in, std::span<const std::byte> bytes, const std::vector<const TypeInfo*>& types,
                        const std::string& source, const char* who) {
    SharedImage image;
    image.name = in.string(1 << 16);
    if (image.name.empty()) in.fail("corrupt: a shared blackboard with an empty name");
    image.keys.resize(static_cast<std::size_t>(in.count("shared keys")));
    if (image.keys.size() >= kNoKey - 1u)
        in.fail("corrupt: shared blackboard '" + image.name + "' has " + std::to_string(image.keys.size()) + " keys (at most " +
                std::to_string(kNoKey - 2u) + ")");
    for (SharedImage::Key& key : image.keys) {
        key.name = in.string(1 << 16);
        if (key.name.empty()) in.fail("corrupt: shared blackboard '" + image.name + "' has a key with an empty name");
        for (const SharedImage::Key& other : image.keys) {
            if (&other == &key) break;
            if (other.name == key.name) in.fail("corrupt: shared blackboard '" + image.name + "' has two keys '" + key.name + "'");
        }
        const std::uint64_t at = in.offset();
        const std::string type_name = in.string(1 << 16);
        const auto type = std::find_if(types.begin(), types.end(), [&](const TypeInfo* t) { return t->name == type_name; });
        if (type == types.end())
            throw SnapshotError(std::string(who) + ": key '" + key.name + "' of shared blackboard '" + image.name + "' is " + type_name +
                                ", which no key of the trees given has (" + source + ", byte " + std::to_string(at) + ")");
        if (!(*type)->serializable())
            throw SnapshotError(std::string(who) + ": key '" + key.name + "' of shared blackboard '" + image.name + "' is " + type_name +
                                ", which has no binary form in this program");
        key.type = *type;
        const std::string what = "key '" + key.name + "' of shared blackboard '" + image.name + "'";
        key.initial = read_value(in, key.type, what, source);
        const std::uint64_t published_at = in.offset();
        key.published = read_value(in, key.type, what, source);
        const std::uint64_t pending_at = in.offset();
        key.pending = read_value(in, key.type, what, source);
        // Equal bytes, equal values: a pending value equal to the published one publishes nothing.
        key.pending_differs = !std::equal(bytes.begin() + static_cast<std::ptrdiff_t>(published_at),
                                          bytes.begin() + static_cast<std::ptrdiff_t>(pending_at),
                                          bytes.begin() + static_cast<std::ptrdiff_t>(pending_at),
                                          bytes.begin() + static_cast<std::ptrdiff_t>(in.offset()));
    }
    return image;
}

/// The structural hashes of the trees a restore was given, in their order (`who`: the API call, for
/// the error on an empty tree).
std::vector<std::uint64_t> given_tree_hashes(std::span<const Tree> trees, const char* who) {
    std::vector<std::uint64_t> given(trees.size());
    for (std::size_t t = 0; t < trees.size(); ++t) {
        if (!trees[t]) throw UsageError(std::string(who) + ": tree " + std::to_string(t) + " is empty");
        given[t] = structural_hash(trees[t]);
    }
    return given;
}

/// A snapshot's list of shared blackboards (read_shared each), with no two of one name.
std::vector<SharedImage> read_shared_list(io::ByteReader& in, std::span<const std::byte> bytes, std::span<const Tree> trees,
                                          const std::string& source, const char* who) {
    const std::vector<const TypeInfo*> types = value_types(trees);
    std::vector<SharedImage> shared(static_cast<std::size_t>(in.count("shared blackboards")));
    for (std::size_t b = 0; b < shared.size(); ++b) {
        shared[b] = read_shared(in, bytes, types, source, who);
        for (std::size_t other = 0; other < b; ++other)
            if (shared[other].name == shared[b].name) in.fail("corrupt: two shared blackboards called '" + shared[b].name + "'");
    }
    return shared;
}

/// A snapshot's list of tree identities, each matched to the given tree of its structural hash
/// (`given`: given_tree_hashes(trees)); a saved tree none of them matches is a SnapshotError.
std::vector<const Tree*> read_saved_trees(io::ByteReader& in, std::span<const Tree> trees, const std::vector<std::uint64_t>& given,
                                          const char* who) {
    std::vector<const Tree*> saved_trees(static_cast<std::size_t>(in.count("trees")));
    for (const Tree*& tree : saved_trees) {
        const TreeIdentity id = read_agent_identity(in);
        const auto it = std::find(given.begin(), given.end(), id.hash);
        if (it == given.end())
            throw SnapshotError(std::string(who) + ": the snapshot holds agents of tree '" + id.name +
                                "', and none of the trees given has its structural hash");
        tree = &trees[static_cast<std::size_t>(it - given.begin())];
    }
    return saved_trees;
}

/// A shared blackboard (not yet a world's) with the keys and values `image` holds.
std::unique_ptr<SharedBlackboard> make_shared(const SharedImage& image) {
    auto b = std::make_unique<SharedBlackboard>(image.name);
    for (const SharedImage::Key& key : image.keys) {
        b->declare_raw(key.name, key.type, key.initial.data());
        b->set_raw(b->schema().find(key.name), key.published.data());
    }
    b->publish();  // no slot is connected yet: this only sets the published values
    for (const SharedImage::Key& key : image.keys)
        if (key.pending_differs) b->set_raw(b->schema().find(key.name), key.pending.data());
    return b;
}

}  // namespace

struct WorldSnapshotAccess {
    static std::vector<std::byte> save(const World& w);
    static void restore(World& w, std::span<const Tree> trees, std::span<const std::byte> bytes, const WorldRestoreOptions& options);
    static std::vector<std::byte> save_squad(const World& w, std::span<const AgentHandle> handles);
    static std::vector<AgentHandle> restore_squad(World& w, std::span<const Tree> trees, std::span<const std::byte> bytes,
                                                  const WorldRestoreOptions& options);
};

std::vector<std::byte> WorldSnapshotAccess::save(const World& w) {
    if (w.in_step_ || w.callback_running())
        throw UsageError("save_world() inside a frame or a callback of the world: save it between frames");
    if (!w.pending_frees_.empty())
        throw UsageError("save_world(): despawned agents are still waiting to be freed (despawned from a callback): "
                         "save after the next world call");
    // The agents' trees, each identified once.
    std::vector<const Tree*> trees;
    std::vector<std::uint64_t> hashes;
    std::vector<std::size_t> tree_of(w.slot_count_, 0);
    for (std::uint32_t i = 0; i < w.slot_count_; ++i) {
        if (w.schedule(i).state == State::Free) continue;
        const Agent& a = *w.slot(i).agent;
        check_savable(a, "save_world()");
        std::size_t at = 0;
        while (at < trees.size() && &EngineAccess::tree_data(*trees[at]) != &EngineAccess::tree_data(a.tree())) ++at;
        if (at == trees.size()) {
            trees.push_back(&a.tree());
            hashes.push_back(structural_hash(a.tree()));
        }
        tree_of[i] = at;
    }
    for (const World::SharedEntry& entry : w.shared_) check_shared_savable(*entry.blackboard, "save_world()");

    io::ByteWriter out;
    out.u64(static_cast<std::uint64_t>(w.now_));
    out.u64(w.frame_);
    out.varint(w.budget_);
    out.varint(w.cursor_);

    out.varint(w.shared_.size());
    for (const World::SharedEntry& entry : w.shared_) write_shared(out, *entry.blackboard);

    out.varint(trees.size());
    for (std::size_t t = 0; t < trees.size(); ++t) write_identity(out, *trees[t], hashes[t]);

    out.varint(w.slot_count_);
    for (std::uint32_t i = 0; i < w.slot_count_; ++i) {
        const World::Slot& s = w.slot(i);
        const World::SlotRecord& r = w.record(i);
        out.varint(s.generation);
        if (w.schedule(i).state == State::Free) {
            out.u8(r.retired ? 2 : 0);
            continue;
        }
        // Live (no slot joins between frames; a dying one was refused above).
        out.u8(1);
        const Agent& a = *s.agent;
        out.varint(tree_of[i]);
        out.varint(w.schedule(i).interval);
        out.u64(static_cast<std::uint64_t>(s.last_time));
        out.u8(static_cast<std::uint8_t>((w.is_awake(i) ? 1 : 0) | (r.timer_armed ? 2 : 0)));
        if (r.timer_armed) out.u64(static_cast<std::uint64_t>(r.timer_due));
        for (const std::string& scope : a.tree().schema().scopes()) {
            const SharedBlackboard* bound = a.bound(scope);
            out.varint(bound ? w.shared_index(bound) + 1 : 0);
        }
        write_agent_state(out, a);
    }

    out.varint(w.free_.size());
    for (const std::uint32_t index : w.free_) out.varint(index);

    // Each shared key's subscribers as they are, entries of agents that left included: a publish
    // reaches the agents in this order (and emits their mirrors' changes on the bus in it), and the
    // entries that left decide how the list is reordered when they are dropped.
    for (const World::SharedEntry& entry : w.shared_) {
        out.varint(entry.subscribers.size());
        for (const std::vector<World::Subscriber>& list : entry.subscribers) {
            out.varint(list.size());
            for (const World::Subscriber& sub : list) {
                out.varint(sub.slot);
                out.varint(sub.generation);
                out.varint(sub.tree_key);
            }
        }
    }
    return finish_file(Kind::World, out);
}

void WorldSnapshotAccess::restore(World& w, std::span<const Tree> trees, std::span<const std::byte> bytes,
                                  const WorldRestoreOptions& options) {
    if (w.slot_count_ != 0 || !w.shared_.empty())
        throw UsageError("restore_world(): the world is not new (it has had agents or shared blackboards): restore into a new World");
    if (w.in_step_ || w.callback_running() || w.closing_)
        throw UsageError("restore_world() inside a frame or a callback of the world");
    if (w.input_observer_)
        throw UsageError("restore_world(): the world has an input observer (a recorder cannot follow a restore): set it after");
    const std::string& source = options.source;
    io::ByteReader in = open_file(bytes, Kind::World, source);
    const std::vector<std::uint64_t> given = given_tree_hashes(trees, "restore_world()");

    // 1. Read and check everything.
    const std::uint64_t now = in.u64();
    if (now > static_cast<std::uint64_t>(limits::kMaxClockMicroseconds))
        in.fail("corrupt: world clock " + std::to_string(now) + " us is past the clock's range");
    const std::uint64_t frame = in.u64();
    const auto budget = static_cast<std::uint32_t>(in.varint_at_most(0xFFFFFFFFu, "agent budget"));
    const std::uint64_t cursor = in.varint_at_most(0xFFFFFFFEu, "budget cursor");

    const std::vector<SharedImage> shared = read_shared_list(in, bytes, trees, source, "restore_world()");

    const std::vector<const Tree*> saved_trees = read_saved_trees(in, trees, given, "restore_world()");

    const auto slot_count = static_cast<std::uint32_t>(std::min<std::uint64_t>(in.count("slots"), 0xFFFFFFFFu));
    std::vector<SlotImage> slots(slot_count);
    for (std::uint32_t i = 0; i < slot_count; ++i) {
        SlotImage& s = slots[i];
        s.generation = static_cast<std::uint32_t>(in.varint_at_most(kRetiredGeneration, "slot generation"));
        const std::uint8_t kind = in.u8();
        if (kind > 2) in.fail("corrupt: slot " + std::to_string(i) + " is of kind " + std::to_string(kind));
        s.retired = kind == 2;
        if (s.retired != (s.generation == kRetiredGeneration))
            in.fail("corrupt: slot " + std::to_string(i) + " is " + (s.retired ? "" : "not ") + "retired at generation " +
                    std::to_string(s.generation));
        if (kind != 1) continue;
        s.live = true;
        s.tree = static_cast<std::size_t>(in.varint_at_most(saved_trees.empty() ? 0 : saved_trees.size() - 1, "tree index"));
        if (saved_trees.empty()) in.fail("corrupt: an agent without any tree");
        const Tree& tree = *saved_trees[s.tree];
        s.interval = static_cast<std::uint32_t>(in.varint_at_most(0xFFFFFFFFu, "tick interval"));
        if (s.interval == 0) in.fail("corrupt: slot " + std::to_string(i) + " has tick interval 0");
        const std::uint64_t last_time = in.u64();
        if (last_time > now) in.fail("corrupt: slot " + std::to_string(i) + " last ticked after the world's clock");
        s.last_time = static_cast<TimePoint>(last_time);
        const std::uint8_t flags = in.u8();
        if (flags > 3) in.fail("corrupt: slot flags " + std::to_string(flags));
        s.awake = (flags & 1) != 0;
        s.timer_armed = (flags & 2) != 0;
        if (s.timer_armed) {
            const std::uint64_t due = in.u64();
            if (due > static_cast<std::uint64_t>(std::numeric_limits<TimePoint>::max())) in.fail("corrupt: a timer past the clock's range");
            s.timer_due = static_cast<TimePoint>(due);
        }
        for (const std::string& scope : tree.schema().scopes()) {
            const std::uint64_t b = in.varint_at_most(shared.size(), "shared blackboard index");
            if (b == 0) in.fail("corrupt: slot " + std::to_string(i) + " leaves shared scope '" + scope + "' unbound");
            s.bindings.push_back(static_cast<std::size_t>(b - 1));
        }
        s.agent = read_agent_state(in, tree, source);
        if (s.agent.ticks > frame) in.fail("corrupt: slot " + std::to_string(i) + "'s agent ticked in a frame to come");
        if (std::find(s.agent.scope_bound.begin(), s.agent.scope_bound.end(), false) != s.agent.scope_bound.end())
            in.fail("corrupt: slot " + std::to_string(i) + "'s agent has an unbound shared scope");
    }

    const std::uint64_t free_count = in.varint_at_most(slot_count, "free slot count");
    std::vector<std::uint32_t> free_list;
    std::vector<bool> listed(slot_count, false);
    for (std::uint64_t f = 0; f < free_count; ++f) {
        const auto index = static_cast<std::uint32_t>(in.varint_at_most(slot_count == 0 ? 0 : slot_count - 1, "free slot"));
        if (slot_count == 0 || slots[index].live || slots[index].retired || listed[index])
            in.fail("corrupt: slot " + std::to_string(index) + " cannot be on the free list");
        listed[index] = true;
        free_list.push_back(index);
    }
    for (std::uint32_t i = 0; i < slot_count; ++i)
        if (!slots[i].live && !slots[i].retired && !listed[i]) in.fail("corrupt: free slot " + std::to_string(i) + " is not on the free list");
    // The subscriber lists. An entry naming a live agent must name one of its shared keys of a scope
    // bound to this blackboard, stored there under this key (routing writes the value into the agent).
    std::vector<std::vector<std::vector<World::Subscriber>>> subscribers(shared.size());
    for (std::size_t b = 0; b < shared.size(); ++b) {
        subscribers[b].resize(static_cast<std::size_t>(in.varint_at_most(shared[b].keys.size(), "subscriber list count")));
        for (std::size_t key = 0; key < subscribers[b].size(); ++key) {
            subscribers[b][key].resize(static_cast<std::size_t>(in.count("subscribers")));
            for (World::Subscriber& sub : subscribers[b][key]) {
                sub.slot = static_cast<std::uint32_t>(in.varint_at_most(0xFFFFFFFEu, "subscriber slot"));
                sub.generation = static_cast<std::uint32_t>(in.varint_at_most(0xFFFFFFFFu, "subscriber generation"));
                sub.tree_key = static_cast<KeyId>(in.varint_at_most(kNoKey, "subscriber key"));
                // An entry of an agent that left has an older generation than its slot (a later agent
                // there must not match it).
                if (sub.slot >= slot_count || sub.generation > slots[sub.slot].generation ||
                    (sub.generation == slots[sub.slot].generation && !slots[sub.slot].live))
                    in.fail("corrupt: a subscriber of key '" + shared[b].keys[key].name + "' of shared blackboard '" + shared[b].name +
                            "' names slot " + std::to_string(sub.slot) + " at generation " + std::to_string(sub.generation) +
                            ", which no agent there had");
                if (slots[sub.slot].generation != sub.generation) continue;
                const SlotImage& s = slots[sub.slot];
                const BlackboardSchema& schema = saved_trees[s.tree]->schema();
                const bool fits = sub.tree_key < schema.size() && schema.info(sub.tree_key).scope != kLocalScope &&
                                  s.bindings[schema.info(sub.tree_key).scope] == b &&
                                  schema.info(sub.tree_key).shared_name == shared[b].keys[key].name &&
                                  schema.info(sub.tree_key).type == shared[b].keys[key].type;
                if (!fits)
                    in.fail("corrupt: a subscriber of key '" + shared[b].keys[key].name + "' of shared blackboard '" + shared[b].name +
                            "' names slot " + std::to_string(sub.slot) + " and a key its agent does not read from there");
            }
        }
    }
    if (!in.at_end()) in.fail("corrupt: " + std::to_string(in.remaining()) + " bytes after the world");

    // 2. Make the shared blackboards and the agents, outside the world: an error here leaves it empty.
    std::vector<std::unique_ptr<SharedBlackboard>> blackboards;
    for (const SharedImage& image : shared) blackboards.push_back(make_shared(image));
    std::vector<Agent> agents;
    std::vector<TraceListener*> own_listeners;  // per agent: its own listener (the world forwards to it)
    try {
        for (std::uint32_t i = 0; i < slot_count; ++i) {
            SlotImage& s = slots[i];
            if (!s.live) continue;
            const Tree& tree = *saved_trees[s.tree];
            const auto& scopes = tree.schema().scopes();
            RestoreOptions made;
            made.bus = w.bus_.get();
            made.source = source;
            for (std::size_t scope = 0; scope < scopes.size(); ++scope) {
                SharedBlackboard& b = *blackboards[s.bindings[scope]];
                try {
                    bind_shared_keys(tree, static_cast<std::uint8_t>(scope), b, "", false);
                } catch (const UsageError& e) {
                    throw debug::FileFormatError(source, 0, std::string("corrupt: slot ") + std::to_string(i) +
                                                                "'s agent cannot bind its shared scope '" + scopes[scope] + "': " + e.what());
                }
                made.shared.emplace_back(scopes[scope], &b);
            }
            if (options.agent) {
                const WorldAgentOptions given_options = options.agent(AgentHandle{i, s.generation});
                made.user = given_options.user;
                made.listener = given_options.listener;
            }
            agents.push_back(make_agent(tree, std::move(s.agent), made));
            own_listeners.push_back(made.listener);
        }
    } catch (...) {
        for (Agent& a : agents) disarm_agent(a);  // destroyed without calling any action
        throw;
    }

    // 3. Fill the world (nothing here throws but for memory).
    w.now_ = static_cast<TimePoint>(now);
    w.frame_ = frame;
    w.budget_ = budget;
    w.cursor_ = static_cast<std::uint32_t>(cursor);
    for (std::unique_ptr<SharedBlackboard>& b : blackboards) w.adopt_shared(std::move(b));
    std::size_t next_agent = 0;
    for (std::uint32_t i = 0; i < slot_count; ++i) {
        const SlotImage& image = slots[i];
        const std::uint32_t index = w.new_slot();  // the world is new: slots come in order
        World::Slot& s = w.slot(index);
        World::SlotRecord& r = w.record(index);
        s.generation = image.generation;
        r.retired = image.retired;
        if (!image.live) continue;
        w.schedule(index).interval = image.interval;
        s.last_time = image.last_time;
        r.forwarder = World::Forwarder{};
        r.forwarder.world = &w;
        r.forwarder.index = index;
        r.forwarder.own = own_listeners[next_agent];
        s.agent.emplace(std::move(agents[next_agent++]));
        EngineAccess::set_host(*s.agent, &w, index);
        w.pool_block(index);
        s.agent->set_listener(w.listeners_.empty() ? r.forwarder.own : &r.forwarder);
        w.schedule(index).state = State::Live;
        ++w.live_;
        if (image.awake) w.set_awake(index);
        if (image.timer_armed) w.arm_timer(index, image.timer_due);
    }
    w.free_ = std::move(free_list);
    for (std::size_t b = 0; b < subscribers.size(); ++b) w.shared_[b].subscribers = std::move(subscribers[b]);
}

// ---- squads moving between worlds -------------------------------------------------------------------

std::vector<std::byte> WorldSnapshotAccess::save_squad(const World& w, std::span<const AgentHandle> handles) {
    if (w.in_step_ || w.callback_running())
        throw UsageError("save_agents(world) inside a frame or a callback of the world: save between frames");
    std::vector<const Tree*> trees;
    std::vector<std::uint64_t> hashes;
    std::vector<std::size_t> tree_of;
    std::vector<const SharedBlackboard*> shared;
    for (std::size_t i = 0; i < handles.size(); ++i) {
        const AgentHandle h = handles[i];
        if (!w.valid(h) || w.schedule(h.index).state != State::Live)
            throw UsageError("save_agents(world): agent handle {" + std::to_string(h.index) + ", generation " + std::to_string(h.generation) +
                             "} is stale or joins at the end of a frame");
        for (std::size_t j = 0; j < i; ++j)
            if (handles[j] == h) throw UsageError("save_agents(world): agent " + std::to_string(h.index) + " is given twice");
        const Agent& a = *w.slot(h.index).agent;
        check_savable(a, "save_agents(world)");
        std::size_t at = 0;
        while (at < trees.size() && &EngineAccess::tree_data(*trees[at]) != &EngineAccess::tree_data(a.tree())) ++at;
        if (at == trees.size()) {
            trees.push_back(&a.tree());
            hashes.push_back(structural_hash(a.tree()));
        }
        tree_of.push_back(at);
        for (const std::string& scope : a.tree().schema().scopes()) {
            const SharedBlackboard* b = a.bound(scope);
            if (std::find(shared.begin(), shared.end(), b) == shared.end()) {
                check_shared_savable(*b, "save_agents(world)");
                shared.push_back(b);
            }
        }
    }
    io::ByteWriter out;
    out.varint(shared.size());
    for (const SharedBlackboard* b : shared) write_shared(out, *b);
    out.varint(trees.size());
    for (std::size_t t = 0; t < trees.size(); ++t) write_identity(out, *trees[t], hashes[t]);
    out.varint(handles.size());
    for (std::size_t i = 0; i < handles.size(); ++i) {
        const World::Slot& s = w.slot(handles[i].index);
        const World::SlotRecord& r = w.record(handles[i].index);
        const Agent& a = *s.agent;
        out.varint(handles[i].index);
        out.varint(handles[i].generation);
        out.varint(tree_of[i]);
        out.varint(w.schedule(handles[i].index).interval);
        out.u64(static_cast<std::uint64_t>(w.now_ - s.last_time));  // world time since its last tick
        out.u8(static_cast<std::uint8_t>((w.is_awake(handles[i].index) ? 1 : 0) | (r.timer_armed ? 2 : 0)));
        if (r.timer_armed) out.u64(static_cast<std::uint64_t>(r.timer_due - w.now_));  // two's complement: may be due already
        for (const std::string& scope : a.tree().schema().scopes())
            out.varint(static_cast<std::uint64_t>(std::find(shared.begin(), shared.end(), a.bound(scope)) - shared.begin()));
        write_agent_state(out, a);
    }
    return finish_file(Kind::WorldAgents, out);
}

std::vector<AgentHandle> WorldSnapshotAccess::restore_squad(World& w, std::span<const Tree> trees, std::span<const std::byte> bytes,
                                                            const WorldRestoreOptions& options) {
    if (w.in_step_ || w.callback_running() || w.closing_)
        throw UsageError("restore_agents(world) inside a frame or a callback of the world, or while it is being destroyed");
    if (w.input_observer_)
        throw UsageError("restore_agents(world): the world has an input observer (a recorder cannot follow a restore)");
    const std::string& source = options.source;
    io::ByteReader in = open_file(bytes, Kind::WorldAgents, source);
    const std::vector<std::uint64_t> given = given_tree_hashes(trees, "restore_agents(world)");
    const std::vector<SharedImage> shared = read_shared_list(in, bytes, trees, source, "restore_agents(world)");
    const std::vector<const Tree*> saved_trees = read_saved_trees(in, trees, given, "restore_agents(world)");
    struct Migrant {
        AgentHandle saved;
        std::size_t tree = 0;
        std::uint32_t interval = 1;
        TimePoint since_tick = 0;
        bool awake = false;
        bool timer_armed = false;
        TimePoint timer_in = 0;
        std::vector<std::size_t> bindings;
        AgentImage agent;
    };
    std::vector<Migrant> migrants(static_cast<std::size_t>(in.count("agents")));
    for (Migrant& m : migrants) {
        m.saved.index = static_cast<std::uint32_t>(in.varint_at_most(0xFFFFFFFEu, "slot index"));
        m.saved.generation = static_cast<std::uint32_t>(in.varint_at_most(0xFFFFFFFEu, "generation"));
        m.tree = static_cast<std::size_t>(in.varint_at_most(saved_trees.empty() ? 0 : saved_trees.size() - 1, "tree index"));
        if (saved_trees.empty()) in.fail("corrupt: an agent without any tree");
        m.interval = static_cast<std::uint32_t>(in.varint_at_most(0xFFFFFFFFu, "tick interval"));
        if (m.interval == 0) in.fail("corrupt: tick interval 0");
        const std::uint64_t since_tick = in.u64();
        if (since_tick > static_cast<std::uint64_t>(limits::kMaxClockMicroseconds)) in.fail("corrupt: a last tick out of the clock's range");
        m.since_tick = static_cast<TimePoint>(since_tick);
        const std::uint8_t flags = in.u8();
        if (flags > 3) in.fail("corrupt: agent flags " + std::to_string(flags));
        m.awake = (flags & 1) != 0;
        m.timer_armed = (flags & 2) != 0;
        if (m.timer_armed) {
            m.timer_in = static_cast<TimePoint>(in.u64());
            if (m.timer_in > limits::kMaxClockMicroseconds || m.timer_in < -limits::kMaxClockMicroseconds) in.fail("corrupt: a timer out of range");
        }
        const Tree& tree = *saved_trees[m.tree];
        for (std::size_t scope = 0; scope < tree.schema().scopes().size(); ++scope)
            m.bindings.push_back(static_cast<std::size_t>(in.varint_at_most(shared.empty() ? 0 : shared.size() - 1, "shared blackboard index")));
        if (!tree.schema().scopes().empty() && shared.empty()) in.fail("corrupt: a shared scope without a shared blackboard");
        m.agent = read_agent_state(in, tree, source);
        if (m.agent.ticks > w.frame_)
            throw SnapshotError("restore_agents(world): the agent saved as slot " + std::to_string(m.saved.index) + " last ticked in frame " +
                                std::to_string(m.agent.ticks) + "; this world is at frame " + std::to_string(w.frame_) +
                                " (tick numbers must not go backwards: step it to that frame first)");
        if (m.since_tick > w.now_)
            throw SnapshotError("restore_agents(world): the agent saved as slot " + std::to_string(m.saved.index) + " last ticked " +
                                std::to_string(m.since_tick) + " us before it was saved; this world's clock is only at " +
                                std::to_string(w.now_) + " us");
    }
    if (!in.at_end()) in.fail("corrupt: " + std::to_string(in.remaining()) + " bytes after the agents");

    // The shared blackboards: this world's of the same name, or new ones (added below) with the saved values.
    std::vector<SharedBlackboard*> targets;
    std::vector<std::unique_ptr<SharedBlackboard>> created;
    for (const SharedImage& image : shared) {
        if (SharedBlackboard* mine = w.shared(image.name)) {
            targets.push_back(mine);
        } else {
            created.push_back(make_shared(image));
            targets.push_back(created.back().get());
        }
    }
    // Every binding checked before any agent is made (making one declares the keys a blackboard lacks).
    for (const Migrant& m : migrants)
        for (std::size_t scope = 0; scope < m.bindings.size(); ++scope)
            bind_shared_keys(*saved_trees[m.tree], static_cast<std::uint8_t>(scope), *targets[m.bindings[scope]], "restore_agents(world): ", false);
    std::vector<Agent> agents;
    std::vector<TraceListener*> own_listeners;
    try {
        for (Migrant& m : migrants) {
            const Tree& tree = *saved_trees[m.tree];
            const auto& scopes = tree.schema().scopes();
            RestoreOptions made;
            made.bus = w.bus_.get();
            made.source = source;
            for (std::size_t scope = 0; scope < scopes.size(); ++scope) made.shared.emplace_back(scopes[scope], targets[m.bindings[scope]]);
            if (options.agent) {
                const WorldAgentOptions given_options = options.agent(m.saved);
                made.user = given_options.user;
                made.listener = given_options.listener;
            }
            agents.push_back(make_agent(tree, std::move(m.agent), made));
            own_listeners.push_back(made.listener);
        }
    } catch (...) {
        for (Agent& a : agents) disarm_agent(a);
        throw;
    }

    // Into the world: the new shared blackboards, then each agent in a new slot, as a spawn between
    // frames places it, with the scheduling state it had.
    for (std::unique_ptr<SharedBlackboard>& b : created) w.adopt_shared(std::move(b));
    std::vector<AgentHandle> out;
    for (std::size_t k = 0; k < migrants.size(); ++k) {
        const Migrant& m = migrants[k];
        const std::uint32_t index = w.new_slot();
        World::Slot& s = w.slot(index);
        World::SlotRecord& r = w.record(index);
        w.schedule(index).interval = m.interval;
        s.last_time = w.now_ - m.since_tick;
        r.forwarder = World::Forwarder{};
        r.forwarder.world = &w;
        r.forwarder.index = index;
        r.forwarder.own = own_listeners[k];
        s.agent.emplace(std::move(agents[k]));
        EngineAccess::set_host(*s.agent, &w, index);
        w.pool_block(index);
        s.agent->set_listener(w.listeners_.empty() ? r.forwarder.own : &r.forwarder);
        w.schedule(index).state = State::Live;
        ++w.live_;
        if (m.awake) w.set_awake(index);
        if (m.timer_armed) w.arm_timer(index, w.now_ + m.timer_in);
        const BlackboardSchema& schema = s.agent->tree().schema();
        for (std::size_t scope = 0; scope < schema.scopes().size(); ++scope) {
            World::SharedEntry& entry = w.shared_[w.shared_index(targets[m.bindings[scope]])];
            for (KeyId key = 0; key < schema.size(); ++key) {
                const KeyInfo& info = schema.info(key);
                if (info.scope != static_cast<std::uint8_t>(scope)) continue;
                const KeyId sid = entry.blackboard->schema().find(info.shared_name);
                if (entry.subscribers.size() <= sid) entry.subscribers.resize(sid + 1u);
                entry.subscribers[sid].push_back(World::Subscriber{index, w.slot(index).generation, key});
            }
        }
        out.push_back(AgentHandle{index, w.slot(index).generation});
    }
    return out;
}

}  // namespace ebt::detail

namespace ebt {

std::vector<std::byte> save_world(const World& world) { return detail::WorldSnapshotAccess::save(world); }

void restore_world(World& world, std::span<const Tree> trees, std::span<const std::byte> snapshot, const WorldRestoreOptions& options) {
    detail::WorldSnapshotAccess::restore(world, trees, snapshot, options);
}

std::vector<std::byte> save_agents(const World& world, std::span<const AgentHandle> handles) {
    return detail::WorldSnapshotAccess::save_squad(world, handles);
}

std::vector<AgentHandle> restore_agents(World& world, std::span<const Tree> trees, std::span<const std::byte> snapshot,
                                        const WorldRestoreOptions& options) {
    return detail::WorldSnapshotAccess::restore_squad(world, trees, snapshot, options);
}

}  // namespace ebt
