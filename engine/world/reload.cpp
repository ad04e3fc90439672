// Hot reload: World::reload replaces the tree definition of a running World's agents
// (docs/hot_reload.md). Which agents: those whose tree has the given name. When: at once between
// frames; requested during a frame (or from a callback between frames), at the end of that frame (or
// at the start of the next step). How: an agent whose new definition has the same structural_hash
// (only the values of port literals differ) keeps running on it; any other ends its run (running
// nodes Aborted, leaves first) and is replaced, in its slot and under its handle, by an agent of the
// new tree that goes on from the old one's clock with the blackboard values whose key kept its name
// and type.
//
// The Agent members the World needs for this (ending a run without telling the host, going on from
// another agent, swapping in a tree of the same structure) are defined here too, next to their one
// caller, and reached through detail::EngineAccess.
#include <ebt/world.hpp>

#include "runtime/runtime.hpp"
#include "tree/tree_data.hpp"
#include "world/world_slot.hpp"

#include <ebt/detail/engine_access.hpp>
#include <ebt/snapshot.hpp>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ebt {

namespace {

using State = detail::SlotState;

/// A port literal's private constant key ("=range#0"): a parameter, not a value the agent keeps.
bool is_port_literal(const KeyInfo& info) { return !info.name.empty() && info.name.front() == '='; }

std::string handle_text(AgentHandle h) {
    return "agent {" + std::to_string(h.index) + ", generation " + std::to_string(h.generation) + "}";
}

/// The agents of one old definition in a reload, and what their keys become.
struct Group {
    const detail::TreeData* old = nullptr;
    std::vector<std::pair<KeyId, KeyId>> carried;  // (new key, old key): same name, local, same type
    ReloadChange change;
};

/// Compares the old definition's local keys with the new one's: kept, dropped (and why), added.
void plan_keys(const BlackboardSchema& from, const BlackboardSchema& to, Group& g) {
    for (KeyId k = 0; k < from.size(); ++k) {
        const KeyInfo& old_key = from.info(k);
        if (old_key.scope != kLocalScope || is_port_literal(old_key)) continue;
        const KeyId n = to.find(old_key.name);
        if (n == kNoKey) {
            g.change.dropped.push_back({old_key.name, "not in the new tree"});
            continue;
        }
        const KeyInfo& new_key = to.info(n);
        if (new_key.scope != kLocalScope) {
            g.change.dropped.push_back({old_key.name, "now a key of the shared scope '" + to.scopes()[new_key.scope] + "'"});
        } else if (new_key.type != old_key.type) {
            g.change.dropped.push_back(
                {old_key.name, std::string("type changed from ") + old_key.type->name + " to " + new_key.type->name});
        } else {
            g.change.kept.push_back(old_key.name);
            g.carried.emplace_back(n, k);
        }
    }
    for (KeyId n = 0; n < to.size(); ++n) {
        const KeyInfo& new_key = to.info(n);
        if (new_key.scope != kLocalScope || is_port_literal(new_key)) continue;
        if (from.find(new_key.name) == kNoKey) g.change.added.push_back(new_key.name);
    }
}

/// Marks a scope as running world callbacks (so that despawns from them are deferred).
struct BusyScope {
    std::uint32_t& depth;
    explicit BusyScope(std::uint32_t& d) : depth(d) { ++depth; }
    ~BusyScope() { --depth; }
};

}  // namespace

// ---- the Agent's part ------------------------------------------------------------------------------------

void Agent::end_run_for_reload() {
    struct InTick {  // as during a tick: tick() from an onTerminate is refused, a despawn is deferred
        bool& flag;
        explicit InTick(bool& f) : flag(f) { flag = true; }
        ~InTick() { flag = false; }
    } scope(in_tick_);
    detail::Runtime rt(*this);
    rt.abort_all();
}

void Agent::continue_from(const Agent& old, const std::vector<std::pair<KeyId, KeyId>>& carried) {
    clock_ = old.clock_;
    ticks_ = old.ticks_;
    user_ = old.user_;
    user_type_ = old.user_type_;
    restart_on_end_ = old.restart_on_end_;
    // The re-check deadline was armed from clock 0 by the constructor: from the clock it goes on from.
    const auto& data = detail::EngineAccess::tree_data(tree_);
    if (data.recheck_interval) {
        auto& recheck = *reinterpret_cast<TimePoint*>(reinterpret_cast<std::byte*>(block_.get()) + data.layout.recheck_offset);
        recheck = data.recheck_interval > detail::kNever - clock_ ? detail::kNever : clock_ + data.recheck_interval;
        next_deadline_ = recheck;
    }
    // Nothing has run: set like initial values, without change events or wakes.
    for (const auto& [to, from] : carried) {
        const KeyInfo& info = data.schema.info(to);
        detail::assign_value(info.type, blackboard_.values_ + info.offset,
                             old.blackboard_.values_ + old.blackboard_.schema_->info(from).offset);
    }
}

std::vector<KeyId> Agent::swap_parameters(Tree tree) {
    tree_ = std::move(tree);
    const BlackboardSchema& schema = detail::EngineAccess::tree_data(tree_).schema;
    blackboard_.schema_ = &schema;  // same keys, types and offsets (same structural hash)
    std::vector<KeyId> changed;
    for (KeyId k = 0; k < schema.size(); ++k) {
        const KeyInfo& info = schema.info(k);
        if (!is_port_literal(info)) continue;
        std::byte* value = blackboard_.values_ + info.offset;
        if (detail::values_equal(info.type, value, schema.initial(k))) continue;
        detail::assign_value(info.type, value, schema.initial(k));
        changed.push_back(k);
    }
    // A changed literal wakes the guards that read it, as a blackboard write would (polling
    // re-evaluates them anyway); nothing is emitted on the bus: no game key changed.
    for (const KeyId k : changed) on_blackboard_change(k);
    return changed;
}

// ---- the World's part ------------------------------------------------------------------------------------

ReloadReport World::reload(Tree tree) {
    if (!tree) throw UsageError("World::reload(): the tree is empty");
    const std::string name = tree.name();
    return reload(name, std::move(tree));
}

ReloadReport World::reload(std::string_view name, Tree tree) {
    refuse_in_parallel_phase("World::reload()");  // first: nothing else is read from the phase's threads
    if (callback_running()) {
        std::vector<std::uint32_t> slots;
        check_reload(name, tree, slots);  // refused now, or applied later
        ReloadReport report;
        report.tree = std::string(name);
        report.frame = in_step_ ? frame_ + 1 : frame_;
        pending_reloads_.push_back(PendingReload{std::string(name), std::move(tree)});
        return report;
    }
    ReloadReport report = apply_reload(name, tree, frame_);
    free_when_idle();  // agents despawned by the ended runs' onTerminate callbacks
    if (!pending_reloads_.empty()) apply_pending_reloads(frame_);  // reloads asked for by those callbacks
    return report;
}

std::vector<ReloadReport> World::take_reload_reports() {
    std::vector<ReloadReport> reports;
    reports.swap(reload_reports_);
    return reports;
}

void World::set_reload_report_limit(std::size_t limit) {
    refuse_in_parallel_phase("World::set_reload_report_limit()");
    reload_report_limit_ = limit;
    if (reload_reports_.size() <= limit) return;
    const std::size_t over = reload_reports_.size() - limit;
    reload_reports_.erase(reload_reports_.begin(), reload_reports_.begin() + static_cast<std::ptrdiff_t>(over));
    dropped_reload_reports_ += over;
}

void World::keep_reload_report(ReloadReport report) {
    if (reload_report_limit_ == 0) {
        ++dropped_reload_reports_;
        return;
    }
    if (reload_reports_.size() >= reload_report_limit_) {
        reload_reports_.erase(reload_reports_.begin());  // the oldest (the list is short: the limit's length)
        ++dropped_reload_reports_;
    }
    reload_reports_.push_back(std::move(report));
}

void World::check_reload(std::string_view name, const Tree& tree, std::vector<std::uint32_t>& slots) const {
    refuse_in_parallel_phase("World::reload()");
    if (closing_) throw UsageError("World::reload(): the world is being destroyed");
    if (!tree) throw UsageError("World::reload(): the tree is empty");
    if (input_observer_)
        throw UsageError("World::reload(): the world has an input observer (a recorder), and a recording cannot hold a reload");
    const std::uint64_t new_hash = structural_hash(tree);
    const BlackboardSchema& schema = tree.schema();
    const detail::TreeData* same_structure = nullptr;  // the last old definition found of the new hash
    const detail::TreeData* other_structure = nullptr;  // ... and of another one
    for (std::uint32_t i = 0; i < slot_count_; ++i) {
        if (schedule(i).state != State::Live) continue;
        const Agent& a = *slot(i).agent;
        if (a.tree().name() != name) continue;
        slots.push_back(i);
        const detail::TreeData* old = &detail::EngineAccess::tree_data(a.tree());
        if (old == same_structure) continue;
        if (old != other_structure) {
            if (structural_hash(a.tree()) == new_hash) {
                same_structure = old;
                continue;
            }
            other_structure = old;
        }
        // Restarted: the new tree's shared scopes need this agent's bindings, with keys that fit.
        for (std::size_t s = 0; s < schema.scopes().size(); ++s) {
            const std::string& scope = schema.scopes()[s];
            SharedBlackboard* shared = a.bound(scope);
            if (!shared)
                throw UsageError("World::reload(): tree '" + tree.name() + "' reads shared scope '" + scope + "', which " +
                                 handle_text(AgentHandle{i, slot(i).generation}) + " (tree '" + a.tree().name() +
                                 "') is not bound to");
            detail::bind_shared_keys(tree, static_cast<std::uint8_t>(s), *shared, "World::reload(): ", false);
        }
    }
}

ReloadReport World::apply_reload(std::string_view name, const Tree& tree, std::uint64_t first_frame) {
    std::vector<std::uint32_t> slots;
    check_reload(name, tree, slots);  // everything that can be refused is refused before anything changes
    ReloadReport report;
    report.tree = std::string(name);
    report.applied = true;
    report.frame = first_frame;
    const std::uint64_t new_hash = structural_hash(tree);
    std::vector<Group> groups;
    BusyScope busy(busy_);  // onTerminate callbacks run: their despawns are deferred, their reloads queued
    std::vector<std::uint32_t> restarted;                        // slots
    std::vector<std::pair<std::uint32_t, SpawnOptions>> rebind;  // restarted agents with shared scopes
    // The restarted agents' old subscriptions name the old trees' keys: dropped, then made afresh
    // (also when making an agent throws, for the agents restarted before it).
    const auto resubscribe = [&] {
        if (restarted.empty() || shared_.empty()) return;
        std::vector<bool> is_restarted(slot_count_, false);
        for (const std::uint32_t index : restarted) is_restarted[index] = true;
        for (SharedEntry& entry : shared_)
            for (auto& list : entry.subscribers)
                std::erase_if(list, [&](const Subscriber& sub) { return sub.slot < is_restarted.size() && is_restarted[sub.slot]; });
        for (const auto& [index, options] : rebind)
            if (schedule(index).state == State::Live) subscribe(index, options);
    };
    try {
        for (const std::uint32_t index : slots) {
            if (schedule(index).state != State::Live) continue;  // despawned by an earlier agent's callback
            Slot& s = slot(index);
            const detail::TreeData* old = &detail::EngineAccess::tree_data(s.agent->tree());
            auto g = std::find_if(groups.begin(), groups.end(), [old](const Group& x) { return x.old == old; });
            if (g == groups.end()) {
                Group fresh;
                fresh.old = old;
                fresh.change.old_tree = s.agent->tree().name();
                fresh.change.restarted = structural_hash(s.agent->tree()) != new_hash;
                plan_keys(s.agent->tree().schema(), tree.schema(), fresh);
                groups.push_back(std::move(fresh));
                g = groups.end() - 1;
            }
            SlotRecord& r = record(index);
            const AgentHandle handle{index, slot(index).generation};
            if (!g->change.restarted) {
                detail::EngineAccess::swap_parameters(*s.agent, tree);
                if (s.agent->has_pending_work()) set_awake(index);
                g->change.agents.push_back(handle);
                ++report.agents_updated;
                continue;
            }
            detail::EngineAccess::end_run_for_reload(*s.agent);  // Aborted, leaves first: user callbacks run
            if (schedule(index).state != State::Live) continue;  // an onTerminate despawned it
            const Agent& old_agent = *s.agent;
            SpawnOptions bindings;
            for (const std::string& scope : tree.schema().scopes()) bindings.shared.emplace_back(scope, old_agent.bound(scope));
            AgentOptions ao;
            ao.mode = old_agent.mode();
            ao.seed = old_agent.seed();
            ao.listener = listeners_.empty() ? r.forwarder.own : &r.forwarder;
            ao.bus = bus_.get();
            std::optional<Agent> replacement;
            replacement.emplace(tree, ao);
            detail::EngineAccess::continue_from(*replacement, old_agent, g->carried);
            s.agent.reset();  // nothing runs any more: no callback
            s.agent.emplace(std::move(*replacement));
            detail::EngineAccess::set_host(*s.agent, this, index);
            pool_block(index);
            disarm_timer(r);
            set_awake(index);  // the root starts on its next tick
            restarted.push_back(index);
            if (!bindings.shared.empty()) rebind.emplace_back(index, std::move(bindings));
            g->change.agents.push_back(handle);
            ++report.agents_restarted;
        }
    } catch (...) {
        resubscribe();
        throw;
    }
    resubscribe();
    compact_timers_if_stale();
    for (Group& g : groups) report.changes.push_back(std::move(g.change));
    return report;
}

void World::apply_pending_reloads(std::uint64_t first_frame) {
    // Reloads asked for by the callbacks of these are appended and applied in this loop too.
    while (!pending_reloads_.empty()) {
        PendingReload next = std::move(pending_reloads_.front());
        pending_reloads_.erase(pending_reloads_.begin());
        try {
            keep_reload_report(apply_reload(next.name, next.tree, first_frame));
        } catch (const UsageError& e) {
            ReloadReport failed;
            failed.tree = next.name;
            failed.frame = first_frame;
            failed.error = e.what();
            keep_reload_report(std::move(failed));
        }
    }
}

}  // namespace ebt
