// World: storage, scheduling and bookkeeping for many agents stepped frame by frame.
#include <ebt/world.hpp>

#include <ebt/limits.hpp>

#include <algorithm>
#include <bit>
#include <functional>
#include <string>

namespace ebt {

/// One place in the world's storage. A slot is reused after its agent is freed; its generation then
/// changes, which makes old handles stale.
struct World::Slot {
    std::optional<Agent> agent;
    std::uint32_t generation = 1;
    std::uint32_t interval = 1;    // LOD: tick every `interval` frames
    TimePoint last_time = 0;       // world time of the agent's last tick (or of its joining)
    std::uint32_t timer_stamp = 0; // the current entry of this slot in the timer heap
    bool live = false;             // has an agent
    bool joining = false;          // spawned during a frame: joins at its end
    bool dying = false;            // despawned during a frame: freed at its end
};

namespace {
bool later(const auto& a, const auto& b) { return a.due > b.due; }  // min-heap order
}  // namespace

World::World() = default;
World::~World() {
    in_step_ = false;
    for (std::uint32_t i = 0; i < slots_.size(); ++i)
        if (slots_[i].agent) slots_[i].agent.reset();
}

bool World::valid(AgentHandle h) const noexcept {
    if (h.index >= slots_.size()) {
        for (const auto& p : pending_spawns_)
            if (p.slot == h.index) return h.generation == 1;
        return false;
    }
    const Slot& s = slots_[h.index];
    return s.generation == h.generation && (s.live || s.joining) && !s.dying;
}

bool World::alive(AgentHandle h) const noexcept { return valid(h); }

Agent* World::agent(AgentHandle h) noexcept {
    if (h.index >= slots_.size() || !valid(h)) return nullptr;
    Slot& s = slots_[h.index];
    return s.live && s.agent ? &*s.agent : nullptr;
}
const Agent* World::agent(AgentHandle h) const noexcept { return const_cast<World*>(this)->agent(h); }

Agent& World::at(AgentHandle h) {
    if (Agent* a = agent(h)) return *a;
    const std::string what = "agent handle {" + std::to_string(h.index) + ", generation " + std::to_string(h.generation) + "}";
    if (valid(h)) throw UsageError(what + " was spawned during this frame and joins at its end");
    throw UsageError(what + " is stale: its agent was despawned or never existed");
}

// ---- shared blackboards --------------------------------------------------------------------------------

SharedBlackboard& World::create_shared(std::string name) {
    if (shared(name)) throw UsageError("World::create_shared(): a shared blackboard '" + name + "' exists already");
    SharedEntry entry;
    entry.blackboard = std::make_unique<SharedBlackboard>(std::move(name));
    const std::size_t index = shared_.size();
    entry.router = entry.blackboard->changes().connect([this, index](const SharedBlackboard&, KeyId key) { route(index, key); });
    shared_.push_back(std::move(entry));
    return *shared_.back().blackboard;
}

SharedBlackboard* World::shared(std::string_view name) noexcept {
    for (auto& e : shared_)
        if (e.blackboard->name() == name) return e.blackboard.get();
    return nullptr;
}

std::size_t World::shared_index(const SharedBlackboard* blackboard) const {
    for (std::size_t i = 0; i < shared_.size(); ++i)
        if (shared_[i].blackboard.get() == blackboard) return i;
    return shared_.size();
}

void World::validate_bindings(const Tree& tree, const SpawnOptions& options) const {
    const BlackboardSchema& schema = tree.schema();
    for (const auto& [scope, blackboard] : options.shared) {
        if (std::find(schema.scopes().begin(), schema.scopes().end(), scope) == schema.scopes().end())
            throw UsageError("World::spawn(): tree '" + tree.name() + "' has no shared scope '" + scope + "'");
        if (!blackboard || shared_index(blackboard) == shared_.size())
            throw UsageError("World::spawn(): scope '" + scope + "' is bound to a shared blackboard this world does not own");
    }
    for (std::size_t s = 0; s < schema.scopes().size(); ++s) {
        const std::string& scope = schema.scopes()[s];
        const auto it = std::find_if(options.shared.begin(), options.shared.end(), [&](const auto& b) { return b.first == scope; });
        if (it == options.shared.end())
            throw UsageError("World::spawn(): tree '" + tree.name() + "' reads shared scope '" + scope +
                             "', which SpawnOptions::shared does not bind");
        for (const KeyInfo& info : schema.keys()) {
            if (info.scope != s) continue;
            const KeyId sid = it->second->schema().find(info.shared_name);
            if (sid == kNoKey || it->second->schema().info(sid).type != info.type)
                throw UsageError("World::spawn(): shared blackboard '" + it->second->name() + "' has no key '" +
                                 info.shared_name + "' of type " + info.type->name + " (tree '" + tree.name() +
                                 "' reads '" + info.name + "')");
        }
    }
}

void World::subscribe(std::uint32_t slot, const SpawnOptions& options) {
    Agent& a = *slots_[slot].agent;
    const BlackboardSchema& schema = a.tree().schema();
    for (const auto& [scope, blackboard] : options.shared) {
        a.bind(scope, *blackboard);
        SharedEntry& entry = shared_[shared_index(blackboard)];
        for (KeyId k = 0; k < schema.size(); ++k) {
            const KeyInfo& info = schema.info(k);
            if (info.scope == kLocalScope || schema.scopes()[info.scope] != scope) continue;
            const KeyId sid = blackboard->schema().find(info.shared_name);
            if (entry.subscribers.size() <= sid) entry.subscribers.resize(sid + 1u);
            entry.subscribers[sid].push_back(Subscriber{slot, slots_[slot].generation, k});
        }
    }
}

void World::route(std::size_t shared_index, KeyId key) {
    SharedEntry& entry = shared_[shared_index];
    if (entry.subscribers.size() <= key) return;
    auto& list = entry.subscribers[key];
    const std::byte* value = entry.blackboard->published(key);
    for (std::size_t i = 0; i < list.size();) {
        const Subscriber& sub = list[i];
        Slot* s = sub.slot < slots_.size() ? &slots_[sub.slot] : nullptr;
        if (!s || !s->live || s->dying || !s->agent || s->generation != sub.generation) {
            list[i] = list.back();  // the agent is gone: forget it
            list.pop_back();
            continue;
        }
        s->agent->blackboard().mirror(sub.tree_key, value);  // wakes the agent if a live guard reads it
        ++i;
    }
}

// ---- agents ----------------------------------------------------------------------------------------------

AgentHandle World::spawn(Tree tree, SpawnOptions options) {
    if (!tree) throw UsageError("World::spawn(): the tree is empty");
    if (options.tick_interval < 1) throw UsageError("World::spawn(): tick_interval must be >= 1");
    validate_bindings(tree, options);
    std::uint32_t index;
    if (!free_.empty()) {
        index = free_.back();
        free_.pop_back();
    } else {
        index = static_cast<std::uint32_t>(slots_.size());
        for (const auto& p : pending_spawns_) index = std::max(index, p.slot + 1);
    }
    PendingSpawn spawn{index, std::move(tree), options};
    const std::uint32_t generation = index < slots_.size() ? slots_[index].generation : 1;
    if (in_step_) {
        if (index < slots_.size()) slots_[index].joining = true;
        pending_spawns_.push_back(std::move(spawn));
    } else {
        materialize(spawn);
    }
    ++live_;
    return AgentHandle{index, generation};
}

void World::materialize(PendingSpawn& p) {
    if (p.slot >= slots_.size()) slots_.resize(p.slot + 1);
    Slot& s = slots_[p.slot];
    AgentOptions ao;
    ao.mode = p.options.mode;
    ao.seed = p.options.seed;
    ao.restart_on_end = p.options.restart_on_end;
    ao.listener = p.options.listener;
    ao.bus = &bus_;
    s.agent.emplace(std::move(p.tree), ao);
    s.agent->set_host(this, p.slot);
    subscribe(p.slot, p.options);
    s.interval = p.options.tick_interval;
    s.last_time = now_;
    s.live = true;
    s.joining = false;
    s.dying = false;
    set_awake(p.slot);  // the root starts on the agent's first tick
}

bool World::despawn(AgentHandle h) {
    if (!valid(h)) return false;
    --live_;
    // A spawn still pending in this frame is simply cancelled.
    for (auto it = pending_spawns_.begin(); it != pending_spawns_.end(); ++it)
        if (it->slot == h.index) {
            pending_spawns_.erase(it);
            if (h.index < slots_.size()) {
                slots_[h.index].joining = false;
                ++slots_[h.index].generation;
            }
            free_.push_back(h.index);
            return true;
        }
    Slot& s = slots_[h.index];
    ++s.generation;  // every handle to it is stale from now on
    clear_awake(h.index);
    if (in_step_) {
        s.dying = true;
        if (stepping_ == h.index) s.agent->abort();  // ends its tick as soon as the calling code returns
        pending_frees_.push_back(h.index);
    } else {
        destroy(h.index);
    }
    return true;
}

void World::destroy(std::uint32_t index) {
    Slot& s = slots_[index];
    s.agent.reset();  // running actions get onTerminate(Aborted)
    s.live = false;
    s.dying = false;
    clear_awake(index);
    free_.push_back(index);
}

bool World::set_tick_interval(AgentHandle h, std::uint32_t interval) {
    if (interval < 1) throw UsageError("World::set_tick_interval(): the interval must be >= 1");
    if (!valid(h) || h.index >= slots_.size()) return false;
    slots_[h.index].interval = interval;
    return true;
}

bool World::lod_frame(std::uint32_t slot) const {
    // Agents with the same interval are spread over its frames by slot, so that they do not all
    // tick in the same frame.
    const std::uint32_t interval = slots_[slot].interval;
    return interval <= 1 || (frame_ + slot) % interval == 0;
}

void World::on_agent_wake(std::uint32_t slot) {
    if (slot < slots_.size() && slots_[slot].live && !slots_[slot].dying) set_awake(slot);
}

std::uint32_t World::next_awake_far(std::uint32_t from, std::uint32_t end) const {
    if (awake_count_ == 0) return end;
    while (from < end) {
        std::uint32_t word = from / 64;
        if (word >= awake_.size()) return end;
        const std::uint64_t bits = awake_[word] >> (from % 64);
        if (bits) {
            const std::uint32_t i = from + static_cast<std::uint32_t>(std::countr_zero(bits));
            return i < end ? i : end;
        }
        // Skip to the next word with an awake slot, 64 words (4096 slots) per summary word.
        ++word;
        for (;;) {
            const std::uint32_t summary = word / 64;
            if (summary >= awake_words_.size()) return end;
            const std::uint64_t words = awake_words_[summary] >> (word % 64);
            if (words) {
                word += static_cast<std::uint32_t>(std::countr_zero(words));
                break;
            }
            word = (summary + 1) * 64;
        }
        from = word * 64;
    }
    return end;
}

void World::step_slot(std::uint32_t index, FrameMetrics& m) {
    // Agents are freed only at the end of the frame and slots_ does not grow during one: `s` and
    // `a` stay valid through the tick, even if the agent despawns itself.
    Slot& s = slots_[index];
    Agent& a = *s.agent;
    const Duration dt(now_ - s.last_time);
    s.last_time = now_;
    const AgentStats& stats = a.stats();
    const std::uint32_t updates = stats.updates, guards = stats.guards_evaluated;
    const std::uint32_t visited = stats.nodes_visited, timers = stats.timers_fired;
    stepping_ = index;
    // tick_numbered() checks what game code could have broken: a tick number behind the agent's (it
    // was ticked by hand), a tick of the same agent already running, a moved-from agent.
    a.tick_numbered(frame_, dt);
    stepping_ = 0xFFFFFFFF;
    ++m.agents_stepped;
    m.behaviors_updated += stats.updates - updates;
    m.guards_evaluated += stats.guards_evaluated - guards;
    m.events_handled += stats.nodes_visited - visited;
    m.timers_fired += stats.timers_fired - timers;
    if (!s.dying && a.has_pending_work()) return;  // the common case: it stays awake
    schedule_after_step(index);
}

void World::schedule_after_step(std::uint32_t index) {
    Slot& s = slots_[index];
    if (s.dying || !s.agent) {
        clear_awake(index);
        return;
    }
    const Agent& a = *s.agent;
    if (a.has_pending_work()) return;  // stays awake (polling agents always do)
    clear_awake(index);
    const TimePoint d = a.next_deadline();
    if (d == std::numeric_limits<TimePoint>::max()) return;
    // Agent time runs with world time, so the deadline falls due at this world time.
    timers_.push_back(TimerEntry{now_ + (d - a.now()), index, ++s.timer_stamp});
    std::push_heap(timers_.begin(), timers_.end(), [](const TimerEntry& x, const TimerEntry& y) { return later(x, y); });
}

FrameMetrics World::step(Duration dt) {
    if (in_step_) throw UsageError("World::step() called from inside a step");
    if (dt.count() < 0) throw UsageError("World::step() with a negative dt");
    if (dt.count() > limits::kMaxClockMicroseconds - now_)
        throw UsageError("World::step(): a dt of " + std::to_string(dt.count()) +
                         " us would move the world clock past its limit (2^61 us, about 73,000 years)");
    const auto wall_start = std::chrono::steady_clock::now();
    FrameMetrics m;
    m.frame = frame_;
    in_step_ = true;
    // Whatever a step throws (a UsageError from game code misusing an agent during the frame), the
    // world must not stay "in a step": the next step() and the spawn/despawn rules depend on it.
    struct StepScope {
        World& w;
        ~StepScope() {
            w.in_step_ = false;
            w.stepping_ = 0xFFFFFFFF;
        }
    } scope{*this};
    now_ += dt.count();

    // Shared blackboards publish last frame's writes (and game code's since): the snapshot this frame reads.
    for (auto& entry : shared_) entry.blackboard->publish();

    // Deadlines that fall due in this frame wake their agents.
    const auto order = [](const TimerEntry& x, const TimerEntry& y) { return later(x, y); };
    while (!timers_.empty() && timers_.front().due <= now_) {
        std::pop_heap(timers_.begin(), timers_.end(), order);
        const TimerEntry e = timers_.back();
        timers_.pop_back();
        if (e.slot < slots_.size() && slots_[e.slot].live && !slots_[e.slot].dying && slots_[e.slot].timer_stamp == e.stamp)
            set_awake(e.slot);
    }

    // Step the awake agents in slot order; with a budget, round robin from where the last frame stopped.
    const auto count = static_cast<std::uint32_t>(slots_.size());
    const std::uint32_t start = budget_ ? std::min(cursor_, count) : 0;
    bool stopped_early = false;
    for (int pass = 0; pass < 2 && !stopped_early; ++pass) {
        const std::uint32_t from = pass == 0 ? start : 0;
        const std::uint32_t to = pass == 0 ? count : start;
        for (std::uint32_t i = next_awake(from, to); i < to; i = next_awake(i + 1, to)) {
            Slot& s = slots_[i];
            if (!s.live || s.dying || !s.agent) {
                clear_awake(i);
                continue;
            }
            if (!lod_frame(i)) continue;  // LOD: not its frame
            if (budget_ && m.agents_stepped >= budget_) {
                cursor_ = i;
                stopped_early = true;
                break;
            }
            step_slot(i, m);
        }
    }
    if (stopped_early) {
        for (std::uint32_t i = next_awake(0, count); i < count; i = next_awake(i + 1, count)) {
            const Slot& s = slots_[i];
            if (s.live && !s.dying && lod_frame(i)) ++m.agents_waiting;
        }
        m.agents_waiting -= std::min(m.agents_waiting, m.agents_stepped);
    } else {
        cursor_ = 0;
    }

    finish_frame();
    ++frame_;
    m.wall_time = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - wall_start);
    return m;
}

void World::finish_frame() {
    // Frees first, so that their slots can be reused by later frames (not by this frame's spawns,
    // which already hold their indices).
    std::vector<std::uint32_t> frees;
    frees.swap(pending_frees_);
    for (std::uint32_t i : frees) destroy(i);
    std::vector<PendingSpawn> spawns;
    spawns.swap(pending_spawns_);
    for (auto& p : spawns) materialize(p);
}

std::vector<AgentHandle> World::handles() const {
    std::vector<AgentHandle> v;
    for (std::uint32_t i = 0; i < slots_.size(); ++i)
        if (slots_[i].live && !slots_[i].dying) v.push_back(AgentHandle{i, slots_[i].generation});
    return v;
}

std::uint64_t World::state_hash() const {
    std::uint64_t h = 1469598103934665603ull;  // FNV-1a
    const auto mix = [&h](const void* data, std::size_t n) {
        const auto* p = static_cast<const unsigned char*>(data);
        for (std::size_t i = 0; i < n; ++i) {
            h ^= p[i];
            h *= 1099511628211ull;
        }
    };
    for (std::uint32_t i = 0; i < slots_.size(); ++i) {
        const Slot& s = slots_[i];
        if (!s.live || s.dying || !s.agent) continue;
        const Agent& a = *s.agent;
        mix(&i, sizeof i);
        for (NodeIndex n = 0; n < a.tree().size(); ++n) {
            const Status st = a.status(n);
            mix(&st, sizeof st);
        }
        // The logical clock: what the agent's clock reads once the frames it skipped are applied.
        const TimePoint clock = a.now() + (now_ - s.last_time);
        mix(&clock, sizeof clock);
        mix(a.blackboard().raw_values(), a.tree().schema().storage_size());
    }
    for (const auto& entry : shared_) {
        const auto& values = entry.blackboard->published_values();
        mix(values.data(), values.size());
    }
    return h;
}

}  // namespace ebt
