// World: storage, scheduling and bookkeeping for many agents stepped frame by frame.
#include <ebt/world.hpp>

#include "world/huge_pages.hpp"
#include "world/parallel_state.hpp"
#include "runtime/resume_run.hpp"  // Runtime::resume_suspended, inline in resume_all
#include "runtime/world_tick.hpp"  // Runtime::world_tick, inline in tick_agent
#include "runtime/move_ticks.hpp"  // the move entries, inline in step_hinted_slot
#include "tree/tree_data.hpp"
#include "world/state_block_pool.hpp"
#include "world/world_slot.hpp"
#include "world/end_move_in_slot.hpp"  // World::end_move_in_slot, inline in step_hinted_slot

#include <ebt/detail/hash.hpp>
#include <ebt/limits.hpp>
#include <ebt/detail/engine_access.hpp>  // mirror, set_host, tick_numbered, raw_values
#include <ebt/signals.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <functional>
#include <limits>
#include <new>
#include <string>
#include <type_traits>

namespace ebt {

namespace {
using State = detail::SlotState;
bool later(const auto& a, const auto& b) { return a.due > b.due; }  // min-heap order
constexpr TimePoint kNever = std::numeric_limits<TimePoint>::max();
/// The generation a slot may not reach: when a despawn would give it this one, the slot is retired
/// (handles carry 32-bit generations; reusing the slot further would bring old handles back).
constexpr std::uint32_t kRetiredGeneration = 0xFFFFFFFF;
}  // namespace

World::World() : blocks_(std::make_unique<detail::StateBlockPool>()), bus_(std::make_unique<ChangeBus>()) {}

World::~World() {
    // Every handle is stale before the first onTerminate runs; spawns from those are refused, and
    // despawns (of stale handles) return false.
    closing_ = true;
    in_step_ = false;
    ++busy_;
    pending_spawns_.clear();
    for (std::uint32_t i = 0; i < slot_count_; ++i) {
        if (schedule(i).state == State::Free) continue;
        ++slot(i).generation;
        schedule(i).state = State::Dying;
    }
    for (std::uint32_t i = 0; i < slot_count_; ++i) slot(i).agent.reset();  // running actions: onTerminate(Aborted)
}

World::Slot& World::slot(std::uint32_t index) const noexcept {
    // Chunk c covers indices [kFirstChunk * (2^c - 1), kFirstChunk * (2^(c+1) - 1)).
    const std::uint64_t v = std::uint64_t{index} + kFirstChunk;
    const auto c = static_cast<std::uint32_t>(std::bit_width(v)) - 1 - kChunkShift;
    return chunks_[c][v - (std::uint64_t{kFirstChunk} << c)];
}

World::SlotRecord& World::record(std::uint32_t index) const noexcept {
    const std::uint64_t v = std::uint64_t{index} + kFirstChunk;  // as slot(index)
    const auto c = static_cast<std::uint32_t>(std::bit_width(v)) - 1 - kChunkShift;
    return records_[c][v - (std::uint64_t{kFirstChunk} << c)];
}

namespace {
/// A chunk's memory from the heap (World::make_chunk below the huge-page threshold, or with huge pages
/// off), with the alignment its elements need; free_heap_chunk gives it back.
template <class T> void* allocate_heap_chunk(std::size_t bytes) {
    if constexpr (alignof(T) > __STDCPP_DEFAULT_NEW_ALIGNMENT__)
        return ::operator new(bytes, std::align_val_t{alignof(T)});
    else
        return ::operator new(bytes);
}
template <class T> void free_heap_chunk(T* chunk) noexcept {
    if constexpr (alignof(T) > __STDCPP_DEFAULT_NEW_ALIGNMENT__)
        ::operator delete(static_cast<void*>(chunk), std::align_val_t{alignof(T)});
    else
        ::operator delete(static_cast<void*>(chunk));
}
}  // namespace

template <class T> World::Chunk<T> World::make_chunk(std::size_t count) {
    static_assert(std::is_nothrow_default_constructible_v<T>, "a chunk's elements are made without a way to undo");
    const std::size_t bytes = count * sizeof(T);
    std::byte* memory = bytes >= detail::kHugeThreshold ? detail::map_huge(bytes) : nullptr;
    const bool mapped = memory != nullptr;
    if (!mapped) memory = static_cast<std::byte*>(allocate_heap_chunk<T>(bytes));
    T* chunk = reinterpret_cast<T*>(memory);
    for (std::size_t i = 0; i < count; ++i) ::new (static_cast<void*>(chunk + i)) T();  // (Slot's and SlotRecord's do not throw)
    return Chunk<T>(chunk, detail::ChunkFree<T>{count, mapped});
}

template <class T> void detail::ChunkFree<T>::operator()(T* chunk) const noexcept {
    for (std::size_t i = 0; i < count; ++i) chunk[i].~T();
    if (mapped)
        detail::unmap_huge(reinterpret_cast<std::byte*>(chunk), count * sizeof(T));
    else
        free_heap_chunk<T>(chunk);
}

std::uint32_t World::new_slot() {
    if (!free_.empty()) {
        const std::uint32_t index = free_.back();
        free_.pop_back();
        return index;
    }
    // 0xFFFFFFFF stays an index no handle can name (AgentHandle's default).
    if (slot_count_ == 0xFFFFFFFF) throw UsageError("World::spawn(): all 2^32 - 1 slots are in use or retired");
    const std::uint32_t index = slot_count_;
    const std::uint64_t v = std::uint64_t{index} + kFirstChunk;
    const auto c = static_cast<std::uint32_t>(std::bit_width(v)) - 1 - kChunkShift;
    if (!chunks_[c]) {
        records_[c] = make_chunk<SlotRecord>(std::size_t{kFirstChunk} << c);
        chunks_[c] = make_chunk<Slot>(std::size_t{kFirstChunk} << c);
    }
    schedules_.emplace_back();
    // The awake set covers every slot (its words are made here, as the slots), so that
    // World::resume_all's wake need not test whether a slot's word exists.
    grow_awake_set(index / 64);
    ++slot_count_;
    return index;
}

void World::set_generation_for_test(std::uint32_t index, std::uint32_t generation) {
    if (index >= slot_count_) throw UsageError("set_generation_for_test(): no slot " + std::to_string(index));
    slot(index).generation = generation;
}

bool World::valid(AgentHandle h) const noexcept {
    if (h.index >= slot_count_) return false;
    const State state = schedule(h.index).state;
    return slot(h.index).generation == h.generation && (state == State::Live || state == State::Joining);
}

bool World::alive(AgentHandle h) const noexcept { return valid(h); }

Agent* World::agent(AgentHandle h) {
    if (parallel_phase_) {
        const detail::ParallelTick* tick = detail::parallel_tick();
        if (!tick || tick->world != this || tick->slot != h.index) refuse_parallel("World::agent() of another agent");
    }
    if (!valid(h)) return nullptr;
    return schedule(h.index).state == State::Live ? &*slot(h.index).agent : nullptr;
}
const Agent* World::agent(AgentHandle h) const { return const_cast<World*>(this)->agent(h); }

Agent& World::at(AgentHandle h) {
    if (Agent* a = agent(h)) return *a;
    const std::string what = "agent handle {" + std::to_string(h.index) + ", generation " + std::to_string(h.generation) + "}";
    if (valid(h)) throw UsageError(what + " was spawned during this frame and joins at its end");
    throw UsageError(what + " is stale: its agent was despawned or never existed");
}

std::uint64_t World::slot_errors() const noexcept {
    std::uint64_t n = bus_->slot_errors();
    for (const auto& entry : shared_) n += entry.blackboard->slot_errors();
    return n;
}

// ---- shared blackboards --------------------------------------------------------------------------------

SharedBlackboard& World::create_shared(std::string name) {
    refuse_in_parallel_phase("World::create_shared()");
    if (closing_) throw UsageError("World::create_shared(): the world is being destroyed");
    if (shared(name)) throw UsageError("World::create_shared(): a shared blackboard '" + name + "' exists already");
    SharedBlackboard& created = adopt_shared(std::make_unique<SharedBlackboard>(std::move(name)));
    if (input_observer_) input_observer_->on_create_shared(created);
    return created;
}

SharedBlackboard& World::adopt_shared(std::unique_ptr<SharedBlackboard> blackboard) {
    SharedEntry entry;
    entry.blackboard = std::move(blackboard);
    const std::size_t index = shared_.size();
    entry.router = entry.blackboard->changes().connect([this, index](const SharedBlackboard&, KeyId key) { route(index, key); });
    shared_.push_back(std::move(entry));
    detail::EngineAccess::attach_publish_queue(*shared_.back().blackboard, &shared_written_, static_cast<std::uint32_t>(index));
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
    for (std::size_t b = 0; b < options.shared.size(); ++b) {
        const auto& [scope, blackboard] = options.shared[b];
        if (std::find(schema.scopes().begin(), schema.scopes().end(), scope) == schema.scopes().end())
            throw UsageError("World::spawn(): tree '" + tree.name() + "' has no shared scope '" + scope + "'");
        if (!blackboard || shared_index(blackboard) == shared_.size())
            throw UsageError("World::spawn(): scope '" + scope + "' is bound to a shared blackboard this world does not own");
        for (std::size_t earlier = 0; earlier < b; ++earlier)
            if (options.shared[earlier].first == scope)
                throw UsageError("World::spawn(): shared scope '" + scope + "' is bound twice in SpawnOptions::shared");
    }
    for (std::size_t s = 0; s < schema.scopes().size(); ++s) {
        const std::string& scope = schema.scopes()[s];
        const auto it = std::find_if(options.shared.begin(), options.shared.end(), [&](const auto& b) { return b.first == scope; });
        if (it == options.shared.end())
            throw UsageError("World::spawn(): tree '" + tree.name() + "' reads shared scope '" + scope +
                             "', which SpawnOptions::shared does not bind");
        detail::bind_shared_keys(tree, static_cast<std::uint8_t>(s), *it->second, "World::spawn(): ", false);
    }
}

void World::subscribe(std::uint32_t index, const SpawnOptions& options) {
    Agent& a = *slot(index).agent;
    const BlackboardSchema& schema = a.tree().schema();
    for (const auto& [scope, blackboard] : options.shared) {
        a.bind(scope, *blackboard);
        SharedEntry& entry = shared_[shared_index(blackboard)];
        for (KeyId k = 0; k < schema.size(); ++k) {
            const KeyInfo& info = schema.info(k);
            if (info.scope == kLocalScope || schema.scopes()[info.scope] != scope) continue;
            const KeyId sid = blackboard->schema().find(info.shared_name);
            if (entry.subscribers.size() <= sid) entry.subscribers.resize(sid + 1u);
            auto& list = entry.subscribers[sid];
            list.push_back(Subscriber{index, slot(index).generation, k});
            // Entries of agents that left are dropped when a change is routed; for a key that is never
            // written, drop them here once they could outnumber the live ones (each agent subscribes
            // once per key), so that spawning and despawning cannot grow the list without bound.
            if (routing_ == 0 && list.size() > 2 * live_ + 64)
                std::erase_if(list, [this](const Subscriber& sub) {
                    return schedule(sub.slot).state != State::Live || slot(sub.slot).generation != sub.generation;
                });
        }
    }
}

std::uint64_t World::publish_shared() {
    // Only the blackboards written since they last published: a World with thousands of squads reads
    // none of them in a frame where none was written. In index order, as if every one published in
    // turn: a change slot's write to a blackboard after the one publishing is published in this loop,
    // to that one or one before it in the next frame (its entry waits in shared_written_).
    std::vector<std::uint32_t>& batch = shared_publishing_;
    batch.clear();
    batch.swap(shared_written_);
    std::sort(batch.begin(), batch.end());
    batch.erase(std::unique(batch.begin(), batch.end()), batch.end());  // (a game's own publish() between writes)
    // With several threads, the changes are routed into the agents' mirrors by the tasks of the
    // parallel phase, each into its own range's agents (parallel_phase.cpp), when nothing can see the
    // mirrors before the phase; otherwise here, as each change is emitted.
    ParallelState* const deferring = parallel_ && parallel_->may_defer_routes(*this, batch) ? parallel_.get() : nullptr;
    struct Collecting {
        ParallelState* state;
        ~Collecting() {
            if (state) state->collecting_routes = false;
        }
    } collecting{deferring};
    if (deferring) deferring->collecting_routes = true;
    std::uint64_t errors = 0;
    for (std::size_t k = 0; k < batch.size(); ++k) {
        const std::uint32_t index = batch[k];
        SharedBlackboard& blackboard = *shared_[index].blackboard;
        const std::uint64_t errors_before = blackboard.slot_errors();
        try {
            blackboard.publish();
        } catch (...) {
            // A value whose copy threw (the step throws it): this blackboard and the ones after it
            // publish in the next step, and the changes collected for the phase are routed now.
            publish_threw_ = index;
            shared_written_.insert(shared_written_.end(), batch.begin() + static_cast<std::ptrdiff_t>(k), batch.end());
            if (deferring) {
                deferring->collecting_routes = false;
                deferring->finish_routes(*this, true);
            }
            throw;
        }
        errors += blackboard.slot_errors() - errors_before;
        if (shared_written_.empty()) continue;
        // Written by a change slot of this publish (rare): the later ones join this loop.
        std::size_t kept = 0;
        for (const std::uint32_t written : shared_written_) {
            if (written > index && !std::binary_search(batch.begin() + static_cast<std::ptrdiff_t>(k) + 1, batch.end(), written))
                batch.insert(std::upper_bound(batch.begin() + static_cast<std::ptrdiff_t>(k) + 1, batch.end(), written), written);
            else if (written <= index)
                shared_written_[kept++] = written;
        }
        shared_written_.resize(kept);
    }
    if (deferring) {
        deferring->collecting_routes = false;
        deferring->settle_routes(*this);
    }
    return errors;
}

void World::route(std::size_t shared_index, KeyId key) {
    if (shared_[shared_index].subscribers.size() <= key) return;
    if (parallel_ && parallel_->collecting_routes) {  // routed by the parallel phase's tasks
        parallel_->collect_route(*this, static_cast<std::uint32_t>(shared_index), key);
        return;
    }
    ++routing_;
    struct Routing {
        std::uint32_t& depth;
        ~Routing() { --depth; }
    } routing{routing_};
    // The list is indexed afresh on every turn: a change slot run by mirror() may spawn agents (which
    // subscribe, growing the lists) or create shared blackboards (growing shared_).
    for (std::size_t i = 0; i < shared_[shared_index].subscribers[key].size();) {
        auto& list = shared_[shared_index].subscribers[key];
        const Subscriber sub = list[i];
        if (schedule(sub.slot).state != State::Live || slot(sub.slot).generation != sub.generation) {
            list[i] = list.back();  // the agent is gone: forget it
            list.pop_back();
            continue;
        }
        // Wakes the agent if a live guard reads the key.
        detail::EngineAccess::mirror(slot(sub.slot).agent->blackboard(), sub.tree_key, shared_[shared_index].blackboard->published(key));
        ++i;
    }
}

// ---- agents ----------------------------------------------------------------------------------------------

AgentHandle World::spawn(Tree tree, SpawnOptions options) {
    refuse_in_parallel_phase("World::spawn()");
    if (closing_) throw UsageError("World::spawn(): the world is being destroyed");
    if (!tree) throw UsageError("World::spawn(): the tree is empty");
    if (options.tick_interval < 1) throw UsageError("World::spawn(): tick_interval must be >= 1");
    validate_bindings(tree, options);
    check_initial_values(tree, options.blackboard, "World::spawn()");
    if (input_observer_) input_observer_->before_spawn(tree, options);  // may refuse: nothing changed yet
    // Every check passed: the keys the shared blackboards lack are declared now (the tree declares them).
    for (const auto& [scope, blackboard] : options.shared) {
        const auto& scopes = tree.schema().scopes();
        const auto index = static_cast<std::uint8_t>(std::find(scopes.begin(), scopes.end(), scope) - scopes.begin());
        detail::bind_shared_keys(tree, index, *blackboard, "World::spawn(): ", true);
    }
    const std::uint32_t index = new_slot();
    SlotRecord& r = record(index);
    schedule(index).interval = options.tick_interval;
    r.forwarder = Forwarder{};
    r.forwarder.world = this;
    r.forwarder.own = options.listener;
    r.forwarder.index = index;
    const AgentHandle handle{index, slot(index).generation};
    if (in_step_) {
        schedule(index).state = State::Joining;
        pending_spawns_.push_back(PendingSpawn{index, std::move(tree), std::move(options), {}});
    } else {
        // Between frames, even from a callback: slots never move, so creating an agent cannot disturb one
        // that is running user code.
        try {
            materialize(index, std::move(tree), options);
        } catch (...) {
            release(index);
            throw;
        }
    }
    ++live_;
    if (input_observer_) input_observer_->on_spawn(handle, in_step_ ? pending_spawns_.back().tree : slot(index).agent->tree(),
                                                   in_step_ ? pending_spawns_.back().options : options);
    free_when_idle();
    return handle;
}

void World::materialize(std::uint32_t index, Tree tree, const SpawnOptions& options) {
    Slot& s = slot(index);
    SlotRecord& r = record(index);
    AgentOptions ao;
    ao.mode = options.mode;
    ao.seed = options.seed;
    ao.restart_on_end = options.restart_on_end;
    ao.listener = listeners_.empty() ? r.forwarder.own : &r.forwarder;
    ao.bus = bus_.get();
    ao.user = options.user;
    ao.blackboard = options.blackboard;
    // A small state block from the World's pool, at its slot's place; a large one from the heap
    // (StateBlockPool::kLargestBlock), unless its slot's page is in a huge-page region of the pool
    // (StateBlockPool::takes). Restored, migrated and reloaded agents, made as plain Agents first,
    // move into the pool when they join (pool_block).
    const std::size_t block_bytes = detail::EngineAccess::tree_data(tree).layout.block_bytes;
    note_block_bytes(block_bytes);
    if (detail::StateBlockPool::takes(index, block_bytes))
        s.agent.emplace(std::move(tree), ao, detail::EngineAccess::hosted_block(*this, index));
    else
        s.agent.emplace(std::move(tree), ao);
    detail::EngineAccess::set_host(*s.agent, this, index);
    subscribe(index, options);
    s.last_time = now_;
    schedule(index).state = State::Live;
    set_awake(index);  // the root starts on the agent's first tick
}

void World::pool_block(std::uint32_t index) noexcept {
    Agent& a = *slot(index).agent;
    const std::size_t block_bytes = detail::EngineAccess::tree_data(a.tree()).layout.block_bytes;
    note_block_bytes(block_bytes);
    if (!detail::StateBlockPool::takes(index, block_bytes)) return;
    try {
        detail::EngineAccess::move_block_to(a, detail::EngineAccess::hosted_block(*this, index));
    } catch (...) {
        // Only where the agent's block is changes: it keeps its own (move_block_to left it unchanged).
    }
}

bool World::despawn(AgentHandle h) {
    refuse_in_parallel_phase("World::despawn()");
    if (!valid(h)) return false;
    if (input_observer_) input_observer_->on_despawn(h);
    --live_;
    SlotRecord& r = record(h.index);
    if (schedule(h.index).state == State::Joining) {
        // A spawn still pending in this frame is simply cancelled; its handle goes stale like any other.
        const auto it = std::find_if(pending_spawns_.begin(), pending_spawns_.end(),
                                     [&](const PendingSpawn& p) { return p.slot == h.index; });
        if (it != pending_spawns_.end()) pending_spawns_.erase(it);
        next_generation(h.index);
        release(h.index);
        return true;
    }
    next_generation(h.index);  // every handle to it is stale from now on
    schedule(h.index).state = State::Dying;
    clear_awake(h.index);
    disarm_timer(r);
    Agent& a = *slot(h.index).agent;
    if (callback_running() || a.in_tick()) {
        // Someone may still use the agent: its own tick or abort() (then the tick ends as soon as the
        // calling user function returns), a change slot reading its blackboard, the frame loop.
        if (a.in_tick()) a.abort();
        pending_frees_.push_back(h.index);
    } else {
        destroy(h.index);
        free_when_idle();
    }
    return true;
}

/// Moves a slot to its next generation (making every handle to it stale); a slot whose generations are
/// used up is retired: release() will not put it back on the free list.
void World::next_generation(std::uint32_t index) noexcept {
    if (++slot(index).generation == kRetiredGeneration) record(index).retired = true;
}

void World::release(std::uint32_t index) {
    slot(index).agent.reset();
    SlotRecord& r = record(index);
    schedule(index).state = State::Free;
    clear_awake(index);
    disarm_timer(r);
    compact_timers_if_stale();
    if (!r.retired) free_.push_back(index);
}

void World::destroy(std::uint32_t index) {
    ++busy_;
    // Running actions get onTerminate(Aborted). From there, spawns take effect at once (slots do not
    // move, and this slot is not free yet) and despawns are deferred.
    slot(index).agent.reset();
    --busy_;
    release(index);
}

bool World::callback_running() const noexcept { return in_step_ || busy_ != 0 || bus_->emitting(); }

void World::free_when_idle() {
    if (pending_frees_.empty() || callback_running()) return;
    free_deferred();
}

void World::free_deferred() {
    // In despawn order. destroy() runs callbacks that may despawn more agents: they are appended and
    // freed in this loop too. An agent still inside its own tick or abort() (game code despawned it
    // from there) stays in the list for later.
    std::size_t kept = 0;
    for (std::size_t k = 0; k < pending_frees_.size(); ++k) {
        const std::uint32_t index = pending_frees_[k];
        if (slot(index).agent->in_tick()) {
            pending_frees_[kept++] = index;
            continue;
        }
        destroy(index);
    }
    pending_frees_.resize(kept);
}

bool World::set_tick_interval(AgentHandle h, std::uint32_t interval) {
    refuse_in_parallel_phase("World::set_tick_interval()");
    if (interval < 1) throw UsageError("World::set_tick_interval(): the interval must be >= 1");
    if (!valid(h)) return false;
    if (input_observer_) input_observer_->on_tick_interval(h, interval);
    schedule(h.index).interval = interval;  // a joining agent keeps it when it joins
    return true;
}

bool World::lod_frame(std::uint32_t slot) const {
    // Agents with the same interval are spread over its frames by slot, so that they do not all
    // tick in the same frame.
    const std::uint32_t interval = schedule(slot).interval;
    return interval <= 1 || (frame_ + slot) % interval == 0;
}

AgentHandle World::handle_of(std::uint32_t index) const noexcept {
    const std::uint32_t generation = slot(index).generation;
    // A despawn moves the slot's generation on at once (and so does ~World): while the agent still
    // runs user code, its own handle is the one before, stale, and never valid again.
    return AgentHandle{index, schedule(index).state == State::Dying ? generation - 1 : generation};
}

bool World::resume(const ResumeHandle& handle, Status status) {
    refuse_in_parallel_phase("World::resume()");
    if (status != Status::Success && status != Status::Failure)
        throw UsageError(std::string("World::resume() needs Success or Failure, got ") + to_string(status));
    Agent* a = agent(handle.agent);
    // The serial check keeps a handle of another world's agent in the same slot out. The agent tells
    // the input observer of a resume of its own handle (on_agent_resume); the world, of the others.
    if (a && a->serial() == handle.agent_serial) return a->resume(handle, status);
    if (input_observer_) input_observer_->on_resume(handle, status, false);
    return false;
}

std::size_t World::resume_all(std::span<const ResumeHandle> handles, Status status) {
    refuse_in_parallel_phase("World::resume_all()");
    if (status != Status::Success && status != Status::Failure)
        throw UsageError(std::string("World::resume_all() needs Success or Failure, got ") + to_string(status));
    // Resumes that will make the next frame's phase run on the threads: the workers are called first,
    // so that their wake-up overlaps the resumes (call_workers; the inline wakes below do not check).
    if (awake_count_ < call_workers_at_ && handles.size() >= call_workers_at_ - awake_count_) call_workers();

    // The handles lie anywhere in the world's storage, in the order the game asked for them, so that
    // every line a resume reads is a miss unless it was asked for in advance. Three handles are at
    // three stages of a pipeline in each round: handle i + kLocateAhead is located (its slot, found
    // once and kept in `places`) and the lines the check and the resume read are fetched: its slot's
    // three (the agent's members, the serial, the generation) and its schedule's state; handle
    // i + kBlockAhead's agent's state block is fetched (its address is in the slot, fetched
    // kLocateAhead - kBlockAhead rounds earlier); handle i is checked and resumed as resume() would.
    constexpr std::size_t kLocateAhead = 8;
    constexpr std::size_t kBlockAhead = 4;
    constexpr std::size_t kPlaces = 16;  // a ring of the located slots, kLocateAhead + 1 at least
    static_assert(std::has_single_bit(kPlaces) && kPlaces > kLocateAhead && kLocateAhead > kBlockAhead);
    std::array<Slot*, kPlaces> places;  // null: the handle's index is not a slot of this world
    // Each chunk's address less its first slot's index times a slot's size (as SlotCursor's origin_),
    // so that locating a slot is one chunk number, one load and a multiply-add. (Integers: the
    // addresses themselves may be outside any allocation.) Indexed by the highest set bit of
    // index + kFirstChunk, which is the chunk's number plus kChunkShift (one bsr instruction).
    std::array<std::uintptr_t, kChunks + kChunkShift> origins;
    for (std::uint32_t c = 0; c < kChunks && chunks_[c]; ++c)
        origins[c + kChunkShift] = reinterpret_cast<std::uintptr_t>(chunks_[c].get()) -
                                   std::uintptr_t{(kFirstChunk << c) - kFirstChunk} * sizeof(Slot);
    // Stage one for handle k: its slot, and the prefetches.
    const auto locate = [this, handles, &places, &origins](std::size_t k) {
        const std::uint32_t index = handles[k].agent.index;
        Slot*& place = places[k % kPlaces];
        if (index >= slot_count_) [[unlikely]] {
            place = nullptr;
            return;
        }
        const auto high_bit = static_cast<std::uint32_t>(63 ^ std::countl_zero(std::uint64_t{index} + kFirstChunk));
        const auto bytes = origins[high_bit] + std::uintptr_t{index} * sizeof(Slot);
        place = reinterpret_cast<Slot*>(bytes);
        // The slot's three lines, whether or not its optional holds an agent (the check below reads
        // the flag): the prefetches only name addresses in it and read nothing.
        static_assert(alignof(Slot) == 64 && sizeof(Slot) == 3 * 64);
        __builtin_prefetch(reinterpret_cast<const char*>(bytes));
        __builtin_prefetch(reinterpret_cast<const char*>(bytes) + 64);
        __builtin_prefetch(reinterpret_cast<const char*>(bytes) + 128);
        __builtin_prefetch(&schedule(index));
    };
    // Stage two for handle k: its agent's state block.
    const auto fetch_block = [&places](std::size_t k) {
        const Slot* s = places[k % kPlaces];
        if (s && s->agent) detail::Runtime::prefetch_block_for_resume(*s->agent);
    };
    const std::uint16_t resume_flags = detail::Runtime::resume_flags(status);
    std::size_t accepted = 0;
    // Stage three for handle i: resume(handles[i], status), with its once-per-call checks (the
    // phase, the status) done above, World::agent's checks of the handle inline, and what the agent
    // would tell its host done here: the wake (on_agent_wake's set_awake: no parallel phase, the slot
    // live) and the input observer's call (on_agent_resume, the agent's own handle).
    const auto resume_at = [&](std::size_t i) {
        const ResumeHandle& h = handles[i];
        const std::uint32_t index = h.agent.index;
        Slot* const s = places[i % kPlaces];
        if (s && schedule(index).state == State::Live && s->generation == h.agent.generation &&
            s->agent->serial() == h.agent_serial) [[likely]] {
            Agent& a = *s->agent;
            const auto outcome = detail::Runtime::resume_suspended(a, h, resume_flags);
#if defined(EBT_VALIDATE)
            if (outcome != detail::Runtime::ResumeOutcome::Refused && !a.in_tick())
                detail::Runtime(a).check_invariants("Agent::resume()");
#endif
            if (outcome == detail::Runtime::ResumeOutcome::AcceptedWake) {
                // set_awake(index) without its growing path (the slot's word exists: new_slot made
                // it) and without a branch on the bit (an agent a write woke earlier has it). Inline,
                // because set_awake's call saves the registers of its growing path on every call.
                const std::uint32_t word = index / 64;
                EBT_ASSERT(word < awake_.size(), "World::resume_all(): slot " + std::to_string(index) + " has no awake word");
                std::uint64_t& bits = awake_[word];
                const std::uint64_t before = bits;
                bits = before | std::uint64_t{1} << (index % 64);
                awake_count_ += static_cast<std::uint32_t>(~before >> (index % 64) & 1);  // 1 if it was clear
                awake_words_[word / 64] |= std::uint64_t{1} << (word % 64);
            }
            const bool resumed = outcome != detail::Runtime::ResumeOutcome::Refused;
            if (input_observer_) on_agent_resume(index, h, status, resumed);
            accepted += resumed ? 1 : 0;
        } else if (input_observer_) {
            input_observer_->on_resume(h, status, false);
        }
    };
    const std::size_t n = handles.size();
    for (std::size_t k = 0; k < std::min(n, kLocateAhead); ++k) locate(k);
    for (std::size_t k = 0; k < std::min(n, kBlockAhead); ++k) fetch_block(k);
    std::size_t i = 0;
    for (; i + kLocateAhead < n; ++i) {  // all three stages
        locate(i + kLocateAhead);
        fetch_block(i + kBlockAhead);
        resume_at(i);
    }
    for (; i < n; ++i) {  // the last kLocateAhead handles (located already)
        if (i + kBlockAhead < n) fetch_block(i + kBlockAhead);
        resume_at(i);
    }
    return accepted;
}

bool World::abort(AgentHandle h) {
    refuse_in_parallel_phase("World::abort()");
    Agent* a = agent(h);
    if (!a) return false;
    a->abort();  // the input observer hears it through on_agent_abort
    return true;
}

void World::on_agent_abort(std::uint32_t index) {
    // Not for an agent being despawned: its tick ends as with abort(), and the despawn was heard.
    if (input_observer_ && schedule(index).state == State::Live) input_observer_->on_abort(handle_of(index));
}

void World::on_agent_resume(std::uint32_t index, const ResumeHandle& handle, Status status, bool accepted) {
    if (!input_observer_ || schedule(index).state != State::Live) return;
    ResumeHandle in_world = handle;
    in_world.agent = handle_of(index);  // the agent's own handle, whatever the caller's handle named
    input_observer_->on_resume(in_world, status, accepted);
}

void* World::allocate_state_block(std::uint32_t index, std::size_t bytes) { return blocks_->allocate(index, bytes); }

void World::release_state_block(std::uint32_t index, std::size_t bytes, void* block) noexcept {
    blocks_->release(index, bytes, block);
}

void World::on_agent_restart(std::uint32_t index) {
    if (input_observer_ && schedule(index).state == State::Live) input_observer_->on_restart(handle_of(index));
}

void World::on_tick_refused(std::uint32_t index, std::int64_t dt_us) noexcept {
    // tick_agent set the slot's last tick time to now_ before the agent refused the tick: put back
    // the time before, so that the agent's next tick has this frame's time as well, like an agent
    // the frame did not reach (docs/world.md, "A step that throws"). Only this slot's own field, on
    // the thread that ticks it.
    slot(index).last_time = now_ - dt_us;
}

void World::set_input_observer(WorldInputObserver* observer) {
    if (callback_running()) throw UsageError("World::set_input_observer during a frame: change it between frames");
    input_observer_ = observer;
}

void World::Forwarder::on_event(const TraceEvent& event) {
    // Every listener hears every event even when an earlier one throws; the agent counts the first
    // error (listeners cannot be added or removed meanwhile: see add_listener).
    if (world->input_observer_) world->input_observer_->before_event(world->handle_of(index), event);
    std::exception_ptr error;
    if (own) {
        try {
            own->on_event(event);
        } catch (...) {
            error = std::current_exception();
        }
    }
    const AgentHandle handle = world->handle_of(index);
    const Agent& agent = *world->slot(index).agent;
    for (WorldListener* listener : world->listeners_) {
        try {
            listener->on_event(handle, agent, event);
        } catch (...) {
            if (!error) error = std::current_exception();
        }
    }
    if (error) std::rethrow_exception(error);
}

void World::add_listener(WorldListener* listener) {
    if (!listener) throw UsageError("World::add_listener(nullptr)");
    if (callback_running()) throw UsageError("World::add_listener during a frame: add listeners between frames");
    if (std::find(listeners_.begin(), listeners_.end(), listener) != listeners_.end())
        throw UsageError("World::add_listener: this listener was already added");
    listeners_.push_back(listener);
    attach_forwarders();
}

bool World::remove_listener(WorldListener* listener) {
    if (callback_running()) throw UsageError("World::remove_listener during a frame: remove listeners between frames");
    const auto it = std::find(listeners_.begin(), listeners_.end(), listener);
    if (it == listeners_.end()) return false;
    listeners_.erase(it);
    attach_forwarders();
    return true;
}

void World::set_listener(WorldListener* listener) {
    if (callback_running()) throw UsageError("World::set_listener during a frame: change listeners between frames");
    listeners_.clear();
    if (listener) listeners_.push_back(listener);
    attach_forwarders();
}

void World::attach_forwarders() {
    for (std::uint32_t i = 0; i < slot_count_; ++i) {
        Slot& s = slot(i);
        Forwarder& forwarder = record(i).forwarder;
        if (s.agent) s.agent->set_listener(listeners_.empty() ? forwarder.own : &forwarder);
    }
}

bool World::set_listener(AgentHandle h, TraceListener* listener) {
    refuse_in_parallel_phase("World::set_listener()");
    if (!valid(h)) return false;
    Slot& s = slot(h.index);
    Forwarder& forwarder = record(h.index).forwarder;
    forwarder.own = listener;  // a joining agent takes it when it joins
    if (s.agent) s.agent->set_listener(listeners_.empty() ? listener : &forwarder);
    return true;
}

TraceListener* World::listener(AgentHandle h) const noexcept {
    return valid(h) ? record(h.index).forwarder.own : nullptr;
}

void World::on_agent_wake(std::uint32_t index) {
    if (parallel_phase_) {
        // From a tick of the parallel phase: the agent woke itself (its slot is awake and is put to
        // sleep or not after the phase), or a tick broke the threading rule by writing to another
        // agent; that wake is kept for after the phase, where it changes the shared awake set.
        detail::ParallelTick* tick = detail::parallel_tick();
        if (tick && tick->slot != index) tick->buffer->wakes.push_back(index);
        else if (tick && tick->routed_wake) *tick->routed_wake = true;  // a task routing a change into it
        return;
    }
    // A write to an agent that is stepped every frame finds its bit set: set_awake would change
    // nothing then, whatever the slot's state, so neither the schedule nor set_awake is read.
    if (is_awake(index)) return;
    if (index < slot_count_ && schedule(index).state == State::Live) set_awake(index);
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

namespace {
/// Counts `quiet` quiet ticks (Runtime::world_tick returned true, which counts them nowhere) in `m`:
/// each stepped an agent, handled one event (the pop of its action) and updated one behavior, as the
/// general path would have counted them. The serial loop (World::step_serial) counts its quiet ticks
/// once, when it returns; a parallel task's World::tick_slot counts each.
void count_quiet_ticks(FrameMetrics& m, std::uint32_t quiet) {
    m.agents_stepped += quiet;
    m.events_handled += quiet;
    m.behaviors_updated += quiet;
}
}  // namespace

/// One agent's tick in a frame, with its time since its last tick; counts it in `m` unless it is a
/// quiet one. Slots never move and agents are freed only when no callback runs (at the end of the
/// frame): `s` and its agent stay valid through the tick, even if the agent despawns itself or spawns
/// others. Returns true when the tick was a quiet one (Runtime::world_tick): the agent then has work
/// pending for its next tick, and the caller counts the tick (count_quiet_ticks).
inline bool World::tick_agent(Slot& s, FrameMetrics& m) {
    Agent& a = *s.agent;
    const Duration dt(now_ - s.last_time);
    s.last_time = now_;
    // The tick checks what game code could have broken: a tick number behind the agent's (it was
    // ticked by hand), a tick of the same agent already running, a moved-from agent. The agent adds
    // its tick's counts to `m` itself. world_tick is tick_numbered with a lean path for a quiet tick,
    // inline here (runtime/world_tick.hpp).
    const bool quiet = detail::Runtime::world_tick(a, frame_, dt, m);
    if (!quiet) ++m.agents_stepped;
    return quiet;
}

// Inline: the single-threaded loop calls it for every agent it steps.
inline bool World::step_slot(std::uint32_t index, Slot& s, FrameMetrics& m) {
    // After a quiet tick (Runtime::world_tick) the agent stays awake: its running action is queued for
    // its next tick, and it is still live, since a despawn during its own tick asks it to abort (which
    // makes the tick not quiet). (A despawn clears the slot's awake bit itself, in any case.)
    if (tick_agent(s, m)) return true;
    // schedule_after_step(index), with the state and the agent read once. The common case: the agent
    // is still live and has work pending (stays_awake), so it stays awake.
    if (schedule(index).state != State::Live) {
        clear_awake(index);
        return false;
    }
    const Agent& a = *s.agent;
    if (!a.has_pending_work()) {
        // fall_asleep's common case here, without its call: an agent with no deadline while no slot
        // has a timer (a latent move's next start, which suspends) only has its awake bit cleared.
        if (a.next_deadline() == kNever && timers_live_ == 0) clear_awake(index);
        else fall_asleep(index, a);
        // Its next tick, when it wakes, is likely the end of a resumed move (a latent move's first
        // start went this way): step_hinted_slot tries that entry first.
        schedule(index).move_hint = MoveHint::EndsMove;
        move_hints_used_ = true;
    }
    return false;
}

// Inline: step_serial_loop<true> calls it for every slot whose hint is set (in a world of latent
// moves, most of the agents it steps).
[[gnu::always_inline]] inline bool World::step_hinted_slot(std::uint32_t index, Slot& s, MoveHint hint, FrameMetrics& m) {
    if (hint == MoveHint::EndsMove) {
        const MoveEnd end = end_move_in_slot(index, s, m);
        if (end == MoveEnd::RestartQueued) return false;
        if (end == MoveEnd::RunEnded) {
            schedule_after_step(index);  // (an agent that does not restart: its run has ended)
            return false;
        }
    } else {
        schedule(index).move_hint = MoveHint::None;
        Agent& a = *s.agent;
        // tick_agent's time keeping: the tick's dt, and the slot's time of its last tick set before the
        // tick, which runs user code (put back when the entry declines, for step_slot's tick_agent).
        const TimePoint last_time = s.last_time;
        s.last_time = now_;
        // (The agent's handle in this World, as handle_of(index) makes it for a live agent.)
        if (detail::Runtime::world_restart_tick(a, frame_, Duration(now_ - last_time), m, AgentHandle{index, s.generation})) {
            ++m.agents_stepped;
            // step_slot's after-tick work. The next move's start ran user code, which may have despawned
            // the agent (or spawned others: the schedules found again).
            SlotSchedule& schedule_after = schedule(index);
            if (schedule_after.state != State::Live) {
                clear_awake(index);
                return false;
            }
            if (a.has_pending_work()) return false;  // stays awake (the start did not suspend)
            // The next move's start suspended: the agent sleeps until its resume, whose tick ends the move.
            schedule_after.move_hint = MoveHint::EndsMove;
            if (a.next_deadline() == kNever && timers_live_ == 0) {
                // clear_awake(index), inline: the word exists (the loop read it) and the bit is set
                // unless the tick cleared it.
                const std::uint64_t bit = std::uint64_t{1} << (index % 64);
                std::uint64_t& word = awake_[index / 64];
                if ((word & bit) != 0) {
                    word &= ~bit;
                    if (word == 0) awake_words_[index / 64 / 64] &= ~(std::uint64_t{1} << (index / 64 % 64));
                    --awake_count_;
                }
            } else {
                fall_asleep(index, a);
            }
            return false;
        }
        s.last_time = last_time;
    }
    return step_slot(index, s, m);
}

bool World::step_serial(FrameMetrics& m, std::uint32_t from, std::uint32_t to) {
    // A world none of whose agents ever slept (every agent stepped every frame: guard_a, wide_64) has
    // no hints to test: its loop is the one without (step_serial_loop<false>).
    // The loop's two other choices that hold for the whole frame are made here as well: whether it
    // prefetches blocks ahead (prefetch_blocks_: spawns during the frame join after it, so it cannot
    // change in the loop).
    if (move_hints_used_)
        return prefetch_blocks_ ? step_serial_loop<true, true>(m, from, to) : step_serial_loop<true, false>(m, from, to);
    return prefetch_blocks_ ? step_serial_loop<false, true>(m, from, to) : step_serial_loop<false, false>(m, from, to);
}

template <bool kHinted, bool kPrefetchBlocks>
bool World::step_serial_loop(FrameMetrics& m, std::uint32_t from, std::uint32_t to) {
    // A word of awake bits (64 slots) at a time. A tick may wake agents later in slot order (a write
    // to their blackboards, a resume): they are stepped in this frame too, so after each tick the
    // rest of the word is read again (and the next words are read only when the loop gets there).
    SlotCursor slots(*this);
    // The slots kBlockPrefetchDistance ahead, whose blocks are prefetched (kPrefetchBlocks:
    // prefetch_blocks_ when the frame began).
    SlotCursor ahead(*this);
    // Quiet ticks, counted in m when the loop returns (count_quiet_ticks). (A tick that throws ends
    // the frame, and step() then returns no metrics: the count need not be added on the way out.)
    std::uint32_t quiet_ticks = 0;
    for (std::uint32_t i = next_awake(from, to); i < to;) {
        const std::uint32_t word = i / 64;
        const std::uint64_t word_end = std::uint64_t{word} * 64 + 64;
        const std::uint64_t below_to = word_end > to ? (std::uint64_t{1} << (to % 64)) - 1 : ~std::uint64_t{0};
        std::uint64_t unvisited = (~std::uint64_t{0} << (i % 64)) & below_to;  // slots [i, to) of the word
        for (std::uint64_t bits = awake_[word] & unvisited; bits != 0; bits = awake_[word] & unvisited) {
            const auto bit = static_cast<std::uint32_t>(std::countr_zero(bits));
            const std::uint32_t index = word * 64 + bit;
            // The slots after this one in the word, as they are after its tick: ~1 << bit has the bits
            // above `bit` set (none for bit 63), without a shift by 64.
            unvisited &= ~std::uint64_t{1} << bit;
            // A sparse frame (agents woken here and there by resumes or writes: a latent move's two
            // ticks) is a walk the hardware does not fetch ahead: when the next awake slot is not the
            // next slot, its hot lines, its state block and its schedule word (where its visit's kind
            // is read, the branch a mixed frame mispredicts) are asked for now, while this agent
            // ticks. The next awake slot is the word's next one, or, after the word's last, the next
            // word's first (a third of the visits in guard_b's frames, ~3 awake slots a word; the
            // next word exists when word_end < to). A dense frame (every slot awake) skips it. Only
            // in the hinted loop (a world whose agents sleep between moves): in a quiet world's loop,
            // every slot awake, the test alone cost 11-12 instructions per agent-frame (guard_a,
            // wide_64). The slot's address is found first, so that the next awake slot's, in the same
            // chunk of the cursor in all but a few words, costs a compare (SlotCursor::later).
            // (docs/benchmarks.md, "The ninth pass on a move": ~2-3 % less time a move.)
            Slot& s = slots[index];
            if constexpr (kHinted) {
                if (const std::uint64_t later = awake_[word] & unvisited; later != 0) {
                    const std::uint32_t next = word * 64 + static_cast<std::uint32_t>(std::countr_zero(later));
                    if (next > index + 1) {
                        detail::prefetch_slot(slots.later(next));
                        __builtin_prefetch(&schedule(next));
                    }
                } else if (word_end < to) {
                    if (const std::uint64_t next_word = awake_[word + 1]; next_word != 0) {
                        const std::uint64_t next = word_end + static_cast<std::uint32_t>(std::countr_zero(next_word));
                        if (next < to && next > index + 1) {
                            detail::prefetch_slot(slots.later(static_cast<std::uint32_t>(next)));
                            __builtin_prefetch(&schedule(static_cast<std::uint32_t>(next)));
                        }
                    }
                }
            }
            const SlotSchedule schedule_now = schedule(index);  // state and interval: one 8-byte read
            // Live and ticked every frame (the interval 0 or 1), both in one test of the 8 bytes; else
            // the state, then the LOD interval (lod_frame), each alone.
            bool due = live_every_frame(schedule_now);
            if (!due) {
                if (schedule_now.state != State::Live) {
                    clear_awake(index);
                    continue;
                }
                due = (frame_ + index) % schedule_now.interval == 0;
            }
            if (due) {
                if (budget_ && m.agents_stepped + quiet_ticks >= budget_) {
                    cursor_ = index;
                    count_quiet_ticks(m, quiet_ticks);
                    return true;
                }
                if (kPrefetchBlocks && index + kBlockPrefetchDistance < to) {
                    // A live slot has its agent: its schedule word, not the optional's flag, which is
                    // in the slot's third line, one a quiet tick does not read (world_slot.hpp).
                    const Slot& later = ahead[index + kBlockPrefetchDistance];
                    if (schedule(index + kBlockPrefetchDistance).state == State::Live)
                        detail::Runtime::prefetch_quiet_line(*later.agent);
                }
                // A slot whose hint names a move tick takes that entry first (step_hinted_slot): the
                // choice is made here, from the hint read with the slot's state, before the slot is
                // read.
                if (kHinted && schedule_now.move_hint != MoveHint::None)
                    quiet_ticks += step_hinted_slot(index, s, schedule_now.move_hint, m) ? 1 : 0;
                else
                    quiet_ticks += step_slot(index, s, m) ? 1 : 0;
            }
        }
        if (word_end >= to) break;
        // next_awake(word_end, to) without its test that the next word exists: new_slot makes every
        // slot's word, and word_end < to <= the slot count.
        if (const std::uint64_t next_word = awake_[word + 1]; next_word != 0) {
            const std::uint64_t next = word_end + static_cast<std::uint32_t>(std::countr_zero(next_word));
            i = next < to ? static_cast<std::uint32_t>(next) : to;
        } else {
            i = next_awake_far(static_cast<std::uint32_t>(word_end), to);
        }
    }
    count_quiet_ticks(m, quiet_ticks);
    return false;
}

bool World::stays_awake(std::uint32_t index) const noexcept {
    return schedule(index).state == State::Live && slot(index).agent->has_pending_work();
}

World::SlotTick World::tick_slot(std::uint32_t index, FrameMetrics& m) {
    Slot& s = slot(index);
    const bool quiet = tick_agent(s, m);
    if (quiet) count_quiet_ticks(m, 1);
    return {&*s.agent, quiet};
}

void World::schedule_after_step(std::uint32_t index) {
    if (schedule(index).state != State::Live) {
        clear_awake(index);
        return;
    }
    const Agent& a = *slot(index).agent;
    if (a.has_pending_work()) return;  // stays awake (polling agents always do)
    fall_asleep(index, a);
}

void World::fall_asleep(std::uint32_t index, const Agent& a) {
    clear_awake(index);
    const TimePoint due = sleep_due(a);
    if (due == kNever) {
        // Its timer, if it has one, goes stale. While no slot has one (timers_live_ counts them), the
        // slot's cold record is not read: an agent that suspends again without a deadline (a latent
        // move's next start) touches only its hot slot and the awake bits.
        if (timers_live_ != 0) disarm_timer(record(index));
        return;
    }
    SlotRecord& r = record(index);
    if (r.timer_armed && r.timer_due == due) return;  // the entry in the heap serves (a wake changed nothing)
    arm_timer(index, due);
}

TimePoint World::sleep_due(const Agent& a) const noexcept {
    // Agent time runs with world time, so the deadline falls due at this world time; saturated like
    // the agent's own deadlines: one past the end of the world's clock never comes.
    const TimePoint d = a.next_deadline();
    const TimePoint left = d - a.now();  // both in [0, kNever]: no overflow (negative: due already)
    return d == kNever || left > kNever - now_ ? kNever : now_ + left;
}

void World::arm_timer(std::uint32_t index, TimePoint due) {
    SlotRecord& r = record(index);
    disarm_timer(r);  // its old entry, if any, goes stale
    r.timer_armed = true;
    r.timer_due = due;
    ++timers_live_;
    push_timer(TimerEntry{due, index, ++r.timer_stamp});
}

void World::push_timer(const TimerEntry& entry) {
    timers_.push_back(entry);
    std::push_heap(timers_.begin(), timers_.end(), [](const TimerEntry& x, const TimerEntry& y) { return later(x, y); });
    compact_timers_if_stale();
}

void World::compact_timers_if_stale() {
    // Stale entries (deadlines that moved, agents that left) would stay until due, maybe for hours:
    // drop them once they outnumber the live ones (by 64), so the heap stays within twice the agents.
    if (timers_.size() > 2 * timers_live_ + 64) compact_timers();
}

void World::disarm_timer(SlotRecord& r) noexcept {
    if (!r.timer_armed) return;
    r.timer_armed = false;
    --timers_live_;
}

void World::compact_timers() {
    std::erase_if(timers_, [this](const TimerEntry& e) {
        const SlotRecord& r = record(e.slot);
        return !r.timer_armed || r.timer_stamp != e.stamp;
    });
    std::make_heap(timers_.begin(), timers_.end(), [](const TimerEntry& x, const TimerEntry& y) { return later(x, y); });
}

FrameMetrics World::step(Duration dt) {
    if (in_step_) throw UsageError("World::step() called from inside a step");
    if (closing_) throw UsageError("World::step(): the world is being destroyed");
    if (callback_running())
        throw UsageError("World::step() called from a callback of the world (a change slot, or an onTerminate of an agent being freed)");
    if (dt.count() < 0) throw UsageError("World::step() with a negative dt");
    if (dt.count() > limits::kMaxClockMicroseconds - now_)
        throw UsageError("World::step(): a dt of " + std::to_string(dt.count()) +
                         " us would move the world clock past its limit (2^61 us, about 73,000 years)");
    if (input_observer_) input_observer_->on_step(dt);
    const auto wall_start = std::chrono::steady_clock::now();
    phase_times_ = StepPhaseTimes{};
    phase_mark_ = wall_start;
    const std::uint64_t bus_errors_before = bus_->slot_errors();
    // Agents despawned between frames from callbacks are freed now, before the frame.
    free_when_idle();
    if (!pending_reloads_.empty()) apply_pending_reloads(frame_);  // asked for by callbacks between frames (reload.cpp)
    FrameMetrics m;
    m.frame = frame_;
    in_step_ = true;
    // Whatever a step throws (a UsageError from game code misusing an agent during the frame), the
    // world must not stay "in a step": the next step() and the spawn/despawn rules depend on it.
    struct StepScope {
        World& w;
        ~StepScope() { w.in_step_ = false; }
    } scope{*this};
    // A frame that throws (a UsageError out of an agent's tick, an input observer's exception while
    // the shared blackboards publish) is finished before the exception leaves step(), as a frame that
    // returns: its despawns freed, its spawns joined, its reloads applied, and it is counted (its
    // clock has moved, and the agents ticked in it carry its number: the next step is the next frame,
    // or those agents would refuse its tick). docs/world.md, "A step that throws".
    const std::uint32_t cursor_before = cursor_;
    std::uint64_t publish_errors = 0;
    publish_threw_.reset();
    joins_refused_.clear();
    try {
        publish_errors = run_frame(dt, m);
    } catch (...) {
        finish_thrown_frame(cursor_before);
        if (input_observer_) tell_step_threw(std::current_exception());
        throw;
    }
    ++frame_;
    // (A shared blackboard's slots run only when it publishes: counted by publish_shared.)
    m.slot_errors = static_cast<std::uint32_t>(bus_->slot_errors() - bus_errors_before + publish_errors);
    m.wall_time = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - wall_start);
    if (input_observer_) input_observer_->on_step_end(m);
    return m;
}

/// The frame itself, for step() (which made its checks, freed the despawns left from between frames
/// and set in_step_): the clock, the publish, the timers falling due, the ticks, and the frame's frees
/// and joins. Returns the exceptions the shared blackboards' change slots threw while publishing.
std::uint64_t World::run_frame(Duration dt, FrameMetrics& m) {
    now_ += dt.count();

    // Shared blackboards publish last frame's writes (and game code's since): the snapshot this frame reads.
    // (By index: a change slot may create a shared blackboard.)
    frame_stage_ = StepThrow::Stage::Publish;
    if (input_observer_) input_observer_->on_publish();
    const std::uint64_t publish_errors = publish_shared();
    if (input_observer_) input_observer_->after_publish();
    frame_stage_ = StepThrow::Stage::Tick;

    // Deadlines that fall due in this frame wake their agents.
    const auto order = [](const TimerEntry& x, const TimerEntry& y) { return later(x, y); };
    while (!timers_.empty() && timers_.front().due <= now_) {
        std::pop_heap(timers_.begin(), timers_.end(), order);
        const TimerEntry e = timers_.back();
        timers_.pop_back();
        SlotRecord& r = record(e.slot);
        if (!r.timer_armed || r.timer_stamp != e.stamp) continue;  // stale: the deadline moved or the agent left
        disarm_timer(r);
        if (schedule(e.slot).state == State::Live) set_awake(e.slot);
    }
    compact_timers_if_stale();
    end_phase(&StepPhaseTimes::before);

    // Step the awake agents in slot order; with a budget, round robin from where the last frame stopped.
    const std::uint32_t count = slot_count_;  // agents joining during the frame are not stepped in it
    const std::uint32_t start = budget_ ? std::min(cursor_, count) : 0;
    bool stopped_early = false;
    if (threads_ > 1) stopped_early = step_in_parallel(m, count, start);
    for (int pass = 0; pass < 2 && !stopped_early && threads_ == 1; ++pass) {  // (one thread: choose and step together)
        const std::uint32_t from = pass == 0 ? start : 0;
        const std::uint32_t to = pass == 0 ? count : start;
        stopped_early = step_serial(m, from, to);
    }
    if (threads_ == 1) end_phase(&StepPhaseTimes::tick);
    if (stopped_early) {
        for (std::uint32_t i = next_awake(0, count); i < count; i = next_awake(i + 1, count)) {
            if (schedule(i).state == State::Live && lod_frame(i)) ++m.agents_waiting;
        }
        m.agents_waiting -= std::min(m.agents_waiting, m.agents_stepped);
    } else {
        cursor_ = 0;
    }

    frame_stage_ = StepThrow::Stage::Join;
    finish_frame();
    end_phase(&StepPhaseTimes::after);
    return publish_errors;
}

void World::finish_thrown_frame(std::uint32_t cursor_before) noexcept {
    // With a budget, the round robin starts the next frame where this one started (the agents this
    // frame did not reach keep their work, as the ones a budget leaves waiting do): at one thread and
    // at several alike, although a parallel phase's choice may have moved the cursor already.
    cursor_ = cursor_before;
    try {
        finish_frame();
    } catch (...) {
        // (Only memory running out, or a value whose copy throws as an agent joins, throws here.) The
        // exception step() rethrows is the one that ended the frame.
    }
    end_phase(&StepPhaseTimes::after);
    ++frame_;
}

bool World::step_in_parallel(FrameMetrics& m, std::uint32_t count, std::uint32_t start) {
    ParallelState& p = *parallel_;
    bool stopped_early = false;
    if (budget_) {
        // 1. With a budget, choose (calling thread) the agents the serial loop would step, in its
        //    order, until the budget is used up (round robin from `start`). No tick has run yet, and a
        //    tick that follows the threading rule cannot change which ones those are.
        p.step_list.clear();
        for (int pass = 0; pass < 2 && !stopped_early; ++pass) {
            const std::uint32_t from = pass == 0 ? start : 0;
            const std::uint32_t to = pass == 0 ? count : start;
            // The same walk as the serial loop's, a word of awake bits (64 slots) at a time.
            for (std::uint32_t i = next_awake(from, to); i < to;) {
                const std::uint32_t word = i / 64;
                const std::uint64_t word_end = std::uint64_t{word} * 64 + 64;
                std::uint64_t bits = awake_[word] & (~std::uint64_t{0} << (i % 64));  // slots i and up
                if (word_end > to) bits &= (std::uint64_t{1} << (to % 64)) - 1;        // below `to`
                for (; bits != 0 && !stopped_early; bits &= bits - 1) {
                    const std::uint32_t index = word * 64 + static_cast<std::uint32_t>(std::countr_zero(bits));
                    if (schedule(index).state != State::Live) {
                        clear_awake(index);
                        continue;
                    }
                    if (!lod_frame(index)) continue;  // LOD: not its frame
                    if (p.step_list.size() >= budget_) {
                        cursor_ = index;
                        stopped_early = true;
                        break;
                    }
                    p.step_list.push_back(index);
                }
                if (stopped_early || word_end >= to) break;
                i = next_awake(static_cast<std::uint32_t>(word_end), to);
            }
        }
        end_phase(&StepPhaseTimes::choose);
        if (p.step_list.empty()) return stopped_early;
    } else {
        // 1. Without a budget nothing is chosen here: each task of the phase walks the awake bits of
        //    its own range of slots and ticks what it finds (the serial loop's choice, LOD included),
        //    so that no thread lists every agent before the ticking starts.
        end_phase(&StepPhaseTimes::choose);
        if (awake_count_ == 0 && p.routes.empty()) return false;
    }
    // 2. Tick them (parallel_phase.cpp). A UsageError out of a tick (game code misused an agent:
    //    see "misuse" in docs/world.md) ends the phase; what was ticked is still applied below, and
    //    the agents no task reached stay awake, as with one thread.
    std::exception_ptr error;
    try {
        tick_in_parallel(m, count, budget_ != 0);
    } catch (...) {
        error = std::current_exception();
    }
    end_phase(&StepPhaseTimes::tick);
    p.finish_routes(*this, error != nullptr);  // (the lists' entries of agents that left; after an error, the rest)
    // 3. Apply (calling thread, slot order: the tasks' records sorted by their first slot) what the
    //    ticks left for the world: sleep and timers (as step_slot does after each tick), wakes of
    //    other agents (a world breaking the rule), then the shared blackboard writes
    //    (parallel_phase.cpp).
    gather_parallel_tasks();
    apply_sleeps_and_wakes();
    apply_deferred_writes();
    end_phase(&StepPhaseTimes::apply);
    if (error) std::rethrow_exception(error);
    return stopped_early;
}

void World::finish_frame() {
    // Frees first, so that their slots can be reused by later frames (not by this frame's spawns,
    // which already hold their indices). Their onTerminate callbacks may spawn (joining now, below)
    // and despawn (freed in the same loop); joining runs no user code but a value's copy.
    std::exception_ptr join_error;  // the first spawn that could not join: thrown once the rest is done
    for (;;) {
        free_deferred();
        if (pending_spawns_.empty() && !pending_reloads_.empty()) {
            apply_pending_reloads(frame_ + 1);  // reloads asked for during the frame (reload.cpp)
            continue;
        }
        if (pending_spawns_.empty()) break;
        std::vector<PendingSpawn> spawns;
        spawns.swap(pending_spawns_);
        for (auto& p : spawns) {
            try {
                if (!p.refusal.empty()) throw std::runtime_error(p.refusal);  // refuse_join (a replay)
                materialize(p.slot, std::move(p.tree), p.options);
            } catch (...) {
                if (!join_error) join_error = std::current_exception();
                if (input_observer_) joins_refused_.push_back(AgentHandle{p.slot, slot(p.slot).generation});
                cancel_join(p.slot);
            }
        }
    }
    if (join_error) std::rethrow_exception(join_error);
}

bool detail::EngineAccess::refuse_join(World& world, AgentHandle h, std::string message) {
    return world.refuse_join(h, std::move(message));
}

bool World::refuse_join(AgentHandle h, std::string message) {
    if (!in_step_ || !valid(h) || schedule(h.index).state != State::Joining) return false;
    for (PendingSpawn& p : pending_spawns_) {
        if (p.slot != h.index) continue;
        p.refusal = message.empty() ? std::string("unknown exception") : std::move(message);
        return true;
    }
    return false;
}

void World::tell_step_threw(const std::exception_ptr& error) noexcept {
    // Where the frame was cut short, for the input observer (a recorder): what the frame had reached
    // when it threw (run_frame's stage), the shared blackboard whose publish threw, if one did, and
    // the joins its end refused.
    try {
        StepThrow what;
        what.stage = frame_stage_;
        if (publish_threw_) {
            what.stage = StepThrow::Stage::Publish;
            what.shared = *publish_threw_;
        } else if (frame_stage_ == StepThrow::Stage::Publish) {
            what.stage = StepThrow::Stage::Other;  // on_publish or after_publish threw
        }
        try {
            std::rethrow_exception(error);
        } catch (const std::exception& e) {
            what.message = e.what();
        } catch (...) {
            what.message = "unknown exception";
        }
        what.joins_refused = joins_refused_;
        input_observer_->on_step_threw(what);
    } catch (...) {
        // (The observer's own exception, or memory running out: the step's exception is the one that leaves.)
    }
}

void World::cancel_join(std::uint32_t index) {
    // As a despawn of a spawn still pending: the handle goes stale, the slot is free again. An agent
    // made before the failure (its subscriptions failed) is destroyed; it never ticked.
    next_generation(index);
    --live_;
    release(index);
}

std::vector<AgentHandle> World::handles() const {
    std::vector<AgentHandle> v;
    for (std::uint32_t i = 0; i < slot_count_; ++i)
        if (schedule(i).state == State::Live) v.push_back(AgentHandle{i, slot(i).generation});
    return v;
}

std::uint64_t World::state_hash() const {
    detail::Fnv1a h;
    const auto mix = [&h](const void* data, std::size_t n) { h.bytes(data, n); };
    for (std::uint32_t i = 0; i < slot_count_; ++i) {
        if (schedule(i).state != State::Live) continue;
        const Slot& s = slot(i);
        const Agent& a = *s.agent;
        mix(&i, sizeof i);
        for (NodeIndex n = 0; n < a.tree().size(); ++n) {
            const Status st = a.status(n);
            mix(&st, sizeof st);
        }
        // The logical clock: what the agent's clock reads once the frames it skipped are applied.
        const TimePoint clock = a.now() + (now_ - s.last_time);
        mix(&clock, sizeof clock);
        a.tree().schema().hash_values(h, detail::EngineAccess::raw_values(a.blackboard()));
    }
    for (const auto& entry : shared_) entry.blackboard->hash_published(h);
    return h.value();
}

}  // namespace ebt
