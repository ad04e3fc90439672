// The arena's rules and perception: setting up the world (squads, routes, guards, intruders),
// one frame (intruders move and fight back, the spatial grid, perception writing the guards'
// blackboards, squad alarms expiring, AI LOD, then World::step), and what can be observed of it
// (counts and the state hash). The guards' tree and actions: arena_ai.cpp; the picture: arena_svg.cpp.
#include "arena_internal.hpp"

#include "guard_scenario.hpp"

#include <ebt/detail/hash.hpp>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace ebt::scenarios {

using namespace arena_internal;

const char* to_string(Activity activity) noexcept {
    switch (activity) {
    case Activity::Patrol: return "patrol";
    case Activity::Respond: return "respond";
    case Activity::Attack: return "attack";
    case Activity::Flee: return "flee";
    case Activity::Stunned: return "stunned";
    case Activity::Knockback: return "knockback";
    }
    return "?";
}

// ---- construction ----------------------------------------------------------------------------------

Arena::Arena(ArenaConfig config) : config_(config) {
    if (config_.agents < 1) throw std::invalid_argument("ArenaConfig::agents must be at least 1");
    if (!(config_.hz > 0.0) || config_.hz > 1e6) throw std::invalid_argument("ArenaConfig::hz must be in (0, 1e6]");
    if (config_.squad_size < 1) throw std::invalid_argument("ArenaConfig::squad_size must be at least 1");
    if (config_.lod_interval < 1) throw std::invalid_argument("ArenaConfig::lod_interval must be at least 1");
    frame_dt_ = Duration(std::max<std::int64_t>(1, std::llround(1e6 / config_.hz)));
    rng_ = config_.seed * 0xD1B54A32D192ED03ull + 0x2545F4914F6CDD1Dull;
    registry_ = std::make_unique<Registry>();
    world_ = std::make_unique<World>(WorldOptions{.threads = config_.threads});
    try {
        build_tree();
        setup_world();
    } catch (...) {
        world_.reset();  // as in ~Arena, which a constructor that throws does not run
        throw;
    }
}

Arena::Arena(const ArenaSave& save, const ArenaConfig& runtime) : config_(save.config()) {
    config_.listener = runtime.listener;
    config_.listener_agent = runtime.listener_agent;
    config_.instrument = runtime.instrument;
    config_.threads = runtime.threads;
    frame_dt_ = Duration(std::max<std::int64_t>(1, std::llround(1e6 / config_.hz)));
    registry_ = std::make_unique<Registry>();
    world_ = std::make_unique<World>(WorldOptions{.threads = config_.threads});
    try {
        build_tree();
        restore(*save.state_);  // arena_save.cpp
    } catch (...) {
        // As in ~Arena, which a constructor that throws does not run: the guards restored so far
        // are members destroyed before world_, and ending their agents' runs writes them.
        world_.reset();
        throw;
    }
}

Arena::~Arena() {
    // The World first, while the guards are still there: ending a guard's run calls its running
    // action's on_terminate (Stunned, a move), which writes its Guard.
    world_.reset();
}

void Arena::setup_world() {
    const int agents = config_.agents;
    const int squads = std::clamp((agents + config_.squad_size / 2) / config_.squad_size, 1, agents);
    const int cols = static_cast<int>(std::ceil(std::sqrt(static_cast<double>(squads))));
    const int rows = (squads + cols - 1) / cols;
    width_ = cols * kSquadCell;
    height_ = rows * kSquadCell;

    // Squads: a cell each, with a jittered loop of 4-6 waypoints around its centre.
    squads_.resize(static_cast<std::size_t>(squads));
    alarm_before_.resize(squads_.size());
    for (int s = 0; s < squads; ++s) {
        Squad& sq = squads_[static_cast<std::size_t>(s)];
        sq.center = {(s % cols + 0.5) * kSquadCell, (s / cols + 0.5) * kSquadCell};
        const int n = 4 + static_cast<int>(detail::splitmix64_next(rng_) % 3);
        const double turn = uniform(rng_, 0.0, 2 * kPi);
        for (int k = 0; k < n; ++k) {
            const double a = turn + 2 * kPi * (k + uniform(rng_, -0.2, 0.2)) / n;
            const double r = kSquadCell * uniform(rng_, 0.25, 0.42);
            sq.route.push_back({sq.center.x + r * std::cos(a), sq.center.y + r * std::sin(a)});
        }
        sq.direction = (detail::splitmix64_next(rng_) & 1) ? 1 : -1;
        sq.first = static_cast<int>(static_cast<std::int64_t>(s) * agents / squads);
        sq.count = static_cast<int>(static_cast<std::int64_t>(s + 1) * agents / squads) - sq.first;
        sq.blackboard = &world_->create_shared("squad-" + std::to_string(s));
        sq.blackboard->declare<bool>("alarm", false);
        sq.alarm_key = sq.blackboard->schema().find("alarm");
    }

    // Guards: spread evenly along their squad's route, spawned in guard order (guard i = slot i).
    guards_.resize(static_cast<std::size_t>(agents));
    for (const Squad& sq : squads_) {
        const int n = static_cast<int>(sq.route.size());
        std::vector<double> seg(static_cast<std::size_t>(n));
        double perimeter = 0;
        for (int k = 0; k < n; ++k) {
            seg[static_cast<std::size_t>(k)] = dist(sq.route[static_cast<std::size_t>(k)], sq.route[static_cast<std::size_t>((k + 1) % n)]);
            perimeter += seg[static_cast<std::size_t>(k)];
        }
        for (int j = 0; j < sq.count; ++j) {
            Guard& g = guards_[static_cast<std::size_t>(sq.first + j)];
            g.squad = static_cast<int>(&sq - squads_.data());
            double along = perimeter * j / sq.count;
            int k = 0;
            while (k < n - 1 && along > seg[static_cast<std::size_t>(k)]) along -= seg[static_cast<std::size_t>(k++)];
            const Vec2 a = sq.route[static_cast<std::size_t>(k)], b = sq.route[static_cast<std::size_t>((k + 1) % n)];
            const double t = seg[static_cast<std::size_t>(k)] > 0 ? std::min(1.0, along / seg[static_cast<std::size_t>(k)]) : 0.0;
            g.pos = {a.x + (b.x - a.x) * t, a.y + (b.y - a.y) * t};
            // Walking forward the next waypoint is the segment's end; walking backward its start.
            g.waypoint = sq.direction > 0 ? (k + 1) % n : k;
        }
    }
    for (int i = 0; i < agents; ++i) {
        Guard& g = guards_[static_cast<std::size_t>(i)];
        SpawnOptions options;
        options.mode = config_.mode;
        options.seed = config_.seed;
        options.listener = i == config_.listener_agent ? config_.listener : nullptr;
        options.shared = {{"squad", squads_[static_cast<std::size_t>(g.squad)].blackboard}};
        options.user = &g;  // guards_ is not resized again: the pointer stays valid
        g.handle = world_->spawn(tree_, std::move(options));
    }

    // Intruders: they slip in one by one during the first seconds.
    const int count = config_.intruders > 0 ? config_.intruders : std::max(2, agents / 40);
    intruders_.resize(static_cast<std::size_t>(count));
    for (Intruder& in : intruders_) in.appear_at = uniform_time(rng_, kFirstAppearMin, kFirstAppearMax);

    size_grid();
}

void Arena::size_grid() {
    // The perception grid: cells of the sight radius.
    cell_ = kSight;
    grid_cols_ = std::max(1, static_cast<int>(std::ceil(width_ / cell_)));
    grid_rows_ = std::max(1, static_cast<int>(std::ceil(height_ / cell_)));
    grid_start_.assign(static_cast<std::size_t>(grid_cols_) * static_cast<std::size_t>(grid_rows_) + 1, 0);
    hot_.assign(static_cast<std::size_t>(grid_cols_) * static_cast<std::size_t>(grid_rows_), 0);
}

// ---- one frame -----------------------------------------------------------------------------------------

void Arena::update_intruders(double dt) {
    const TimePoint t = now_ + frame_dt_.count();
    for (Intruder& in : intruders_) {
        if (in.active && in.health <= 0) {  // fell in last frame's fights
            in.active = false;
            ++totals_.intruders_killed;
            in.appear_at = t + uniform_time(rng_, kRespawnMin, kRespawnMax);
            continue;
        }
        if (!in.active) {
            if (t < in.appear_at) continue;
            in.active = true;
            in.health = kIntruderHealth;
            in.dps = uniform(rng_, kIntruderDpsMin, kIntruderDpsMax);
            in.pos = {uniform(rng_, 0, width_), uniform(rng_, 0, height_)};
            in.goal = in.pos;
            in.engaged_until = 0;
            in.next_flash = t + kFlashMin;
            in.next_knock = t;
        }
        if (t < in.engaged_until) continue;  // standing its ground
        if (move_toward(in.pos, in.goal, kIntruderSpeed * dt)) {
            in.goal = {std::clamp(in.pos.x + uniform(rng_, -kIntruderRoam, kIntruderRoam), 0.0, width_),
                       std::clamp(in.pos.y + uniform(rng_, -kIntruderRoam, kIntruderRoam), 0.0, height_)};
        }
    }
}

void Arena::rebuild_grid() {
    // Counting sort of the active intruders by cell (stable: by intruder index within a cell).
    const auto cell_of = [this](Vec2 p) {
        const int cx = std::clamp(static_cast<int>(p.x / cell_), 0, grid_cols_ - 1);
        const int cy = std::clamp(static_cast<int>(p.y / cell_), 0, grid_rows_ - 1);
        return static_cast<std::size_t>(cy) * static_cast<std::size_t>(grid_cols_) + static_cast<std::size_t>(cx);
    };
    std::fill(grid_start_.begin(), grid_start_.end(), 0u);
    std::size_t active = 0;
    for (const Intruder& in : intruders_)
        if (in.active) {
            ++grid_start_[cell_of(in.pos) + 1];
            ++active;
        }
    for (std::size_t c = 1; c < grid_start_.size(); ++c) grid_start_[c] += grid_start_[c - 1];
    grid_items_.resize(active);
    std::vector<std::uint32_t>& fill = grid_fill_;
    fill.assign(grid_start_.begin(), grid_start_.end() - 1);
    for (std::size_t i = 0; i < intruders_.size(); ++i)
        if (intruders_[i].active) grid_items_[fill[cell_of(intruders_[i].pos)]++] = static_cast<std::int32_t>(i);

    if (!config_.lod) return;
    std::fill(hot_.begin(), hot_.end(), std::uint8_t{0});
    const int reach = static_cast<int>(std::ceil(kLodRadius / cell_));
    for (const Intruder& in : intruders_) {
        if (!in.active) continue;
        const std::size_t c = cell_of(in.pos);
        const int cx = static_cast<int>(c % static_cast<std::size_t>(grid_cols_));
        const int cy = static_cast<int>(c / static_cast<std::size_t>(grid_cols_));
        for (int y = std::max(0, cy - reach); y <= std::min(grid_rows_ - 1, cy + reach); ++y)
            for (int x = std::max(0, cx - reach); x <= std::min(grid_cols_ - 1, cx + reach); ++x)
                hot_[static_cast<std::size_t>(y) * static_cast<std::size_t>(grid_cols_) + static_cast<std::size_t>(x)] = 1;
    }
}

int Arena::nearest_intruder(Vec2 p, double radius) const {
    const int x0 = std::max(0, static_cast<int>((p.x - radius) / cell_));
    const int x1 = std::min(grid_cols_ - 1, static_cast<int>((p.x + radius) / cell_));
    const int y0 = std::max(0, static_cast<int>((p.y - radius) / cell_));
    const int y1 = std::min(grid_rows_ - 1, static_cast<int>((p.y + radius) / cell_));
    int best = -1;
    double best_d2 = radius * radius;
    for (int y = y0; y <= y1; ++y)
        for (int x = x0; x <= x1; ++x) {
            const std::size_t c = static_cast<std::size_t>(y) * static_cast<std::size_t>(grid_cols_) + static_cast<std::size_t>(x);
            for (std::uint32_t k = grid_start_[c]; k < grid_start_[c + 1]; ++k) {
                const int i = grid_items_[k];
                const Vec2 q = intruders_[static_cast<std::size_t>(i)].pos;
                const double d2 = (q.x - p.x) * (q.x - p.x) + (q.y - p.y) * (q.y - p.y);
                if (d2 < best_d2 || (d2 == best_d2 && best >= 0 && i < best)) {
                    best = i;
                    best_d2 = d2;
                }
            }
        }
    return best;
}

void Arena::perceive() {
    for (std::size_t i = 0; i < guards_.size(); ++i) {
        Guard& g = guards_[i];
        const bool was_seen = g.seen, was_low = g.low, was_dead = g.dead;
        bool lost_to_death = false;
        if (g.target >= 0) {
            const Intruder& foe = intruders_[static_cast<std::size_t>(g.target)];
            if (!foe.active) {
                g.target = -1;
                lost_to_death = true;
            } else if (dist(foe.pos, g.pos) > kLoseSight) {
                g.target = -1;
            }
        }
        if (g.target < 0) {
            g.target = nearest_intruder(g.pos, kSight);
            if (g.target >= 0) g.dead = false;
            else if (lost_to_death) g.dead = true;
        }
        g.low = g.health < kLowHealth || (g.low && g.health < kHealthyAgain);
        g.seen = g.target >= 0;
        // Written only when the perception changes (for the tree, equal writes are no-ops anyway): a
        // value written from outside, e.g. from the live inspector's page, holds until the guard
        // perceives something new. Most frames change nothing for most guards: the agent is looked
        // up only then (its lookup, per guard and frame, was a fifth of this loop).
        if (g.seen == was_seen && g.low == was_low && g.dead == was_dead) continue;
        Blackboard& bb = world_->at(g.handle).blackboard();
        if (g.seen != was_seen) bb.set(key_seen_, g.seen);
        if (g.low != was_low) bb.set(key_low_, g.low);
        if (g.dead != was_dead) bb.set(key_dead_, g.dead);
    }
}

void Arena::request_stun(int guard, double seconds) {
    Blackboard& bb = world_->at(handle(guard)).blackboard();
    bb.set(key_stun_seconds_, seconds);
    bb.set(key_stun_, true);
}

void Arena::request_knockback(int guard, double angle) {
    Blackboard& bb = world_->at(handle(guard)).blackboard();
    bb.set(key_knockback_angle_, angle);
    bb.set(key_knockback_, true);
}

void Arena::flash() {
    const TimePoint t = now_ + frame_dt_.count();
    for (Intruder& in : intruders_) {
        if (!in.active || in.health <= 0 || t >= in.engaged_until || t < in.next_flash) continue;  // flashes only in a fight
        in.next_flash = t + uniform_time(rng_, kFlashMin, kFlashMax);
        for (std::size_t i = 0; i < guards_.size(); ++i) {
            const Guard& g = guards_[i];
            if (g.stunned || dist(g.pos, in.pos) > kFlashRadius) continue;
            if (world_->at(g.handle).blackboard().get(key_stun_)) continue;  // already asked
            request_stun(static_cast<int>(i), kStunTime);
        }
    }
}

void Arena::end_stuns() {
    const TimePoint t = now_ + frame_dt_.count();
    for (Guard& g : guards_)
        if (g.stun_handle.valid() && t >= g.stunned_until) {
            world_->resume(g.stun_handle, Status::Success);
            g.stun_handle = {};  // Stunned's on_terminate clears `stunned` when the run ends
        }
}

void Arena::expire_alarms() {
    const TimePoint t = now_ + frame_dt_.count();
    for (Squad& s : squads_)
        if (s.alarm_pending() && t - s.raised_at >= kAlarmDuration) s.blackboard->set("alarm", false);
}

void Arena::apply_guard_effects() {
    for (std::size_t i = 0; i < guards_.size(); ++i) {
        Guard& g = guards_[i];
        totals_.attacks += static_cast<std::uint64_t>(g.attacks_started);
        totals_.flights += static_cast<std::uint64_t>(g.flights_started);
        g.attacks_started = g.flights_started = 0;
        // A request the tree has taken up is consumed: the game clears it (the tree only reads it).
        if (g.took_stun) {
            world_->at(g.handle).blackboard().set(key_stun_, false);
            ++totals_.stuns;
            g.took_stun = false;
        }
        if (g.took_knockback) {
            world_->at(g.handle).blackboard().set(key_knockback_, false);
            ++totals_.knockbacks;
            g.took_knockback = false;
        }
        if (g.raised_alarm) {
            Squad& s = squads_[static_cast<std::size_t>(g.squad)];
            s.alarm_pos = g.alarm_at;
            s.raised_at = g.alarm_time;
            g.raised_alarm = false;
        }
        if (g.struck) {
            Intruder& foe = intruders_[static_cast<std::size_t>(g.target)];
            foe.health -= g.damage;
            foe.engaged_until = g.hit_time + kEngagedFor;
            g.struck = false;
            // The intruder hits back hard now and then: the attacker is knocked away from it.
            if (g.hit_time >= foe.next_knock && !g.stunned && g.activity != Activity::Knockback) {
                const Blackboard& bb = world_->at(g.handle).blackboard();
                if (!bb.get(key_stun_) && !bb.get(key_knockback_)) {
                    foe.next_knock = g.hit_time + kKnockEvery;
                    request_knockback(static_cast<int>(i), std::atan2(g.pos.y - foe.pos.y, g.pos.x - foe.pos.x));
                }
            }
        }
    }
    // A squad's alarm is raised when a member's Attack wrote it while it was clear.
    for (std::size_t i = 0; i < squads_.size(); ++i)
        if (!alarm_before_[i] && squads_[i].alarm_pending()) ++totals_.alarms_raised;
}

void Arena::apply_lod() {
    if (!config_.lod) return;
    for (Guard& g : guards_) {
        const int cx = std::clamp(static_cast<int>(g.pos.x / cell_), 0, grid_cols_ - 1);
        const int cy = std::clamp(static_cast<int>(g.pos.y / cell_), 0, grid_rows_ - 1);
        const bool near = hot_[static_cast<std::size_t>(cy) * static_cast<std::size_t>(grid_cols_) + static_cast<std::size_t>(cx)] != 0;
        const std::uint32_t interval = near ? 1u : config_.lod_interval;
        if (interval != g.interval) {
            world_->set_tick_interval(g.handle, interval);
            g.interval = interval;
        }
    }
}

ArenaFrame Arena::step() {
    ArenaFrame f;
    const auto t0 = std::chrono::steady_clock::now();
    update_intruders(seconds(frame_dt_.count()));
    rebuild_grid();
    perceive();
    flash();
    expire_alarms();
    end_stuns();
    apply_lod();
    const auto t1 = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < squads_.size(); ++i) alarm_before_[i] = squads_[i].alarm_pending();
    f.ai = world_->step(frame_dt_);
    apply_guard_effects();
    now_ += frame_dt_.count();
    ++frame_;
    f.sim_time = std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0);
    return f;
}

// ---- observation -------------------------------------------------------------------------------------

int Arena::squads() const noexcept { return static_cast<int>(squads_.size()); }
int Arena::intruders() const noexcept { return static_cast<int>(intruders_.size()); }
AgentHandle Arena::handle(int guard) const { return guards_.at(static_cast<std::size_t>(guard)).handle; }
Activity Arena::activity(int guard) const { return guards_.at(static_cast<std::size_t>(guard)).activity; }
double Arena::health(int guard) const { return guards_.at(static_cast<std::size_t>(guard)).health; }

ArenaCounts Arena::counts() const {
    ArenaCounts c;
    for (const Guard& g : guards_) {
        switch (g.activity) {
        case Activity::Patrol: ++c.patrol; break;
        case Activity::Respond: ++c.respond; break;
        case Activity::Attack: ++c.attack; break;
        case Activity::Flee: ++c.flee; break;
        case Activity::Stunned: ++c.stunned; break;
        case Activity::Knockback: ++c.knocked_back; break;
        }
    }
    for (const Intruder& in : intruders_) c.intruders_active += in.active && in.health > 0;
    for (const Squad& s : squads_) c.squads_alarmed += s.blackboard->get<bool>("alarm");
    return c;
}

std::uint64_t Arena::sim_hash() const {
    detail::Fnv1a h;
    for (const Guard& g : guards_) {
        h(g.pos.x);
        h(g.pos.y);
        h(g.health);
        h(g.last_move);
        h(g.waypoint);
        h(g.target);
        h(g.interval);
        h(g.low);
        h(g.dead);
        h(g.activity);
        h(g.stunned);
        h(g.stunned_until);
        h(g.knock_angle);
        h(g.knock_until);
    }
    for (const Intruder& in : intruders_) {
        h(in.pos.x);
        h(in.pos.y);
        h(in.goal.x);
        h(in.goal.y);
        h(in.health);
        h(in.dps);
        h(in.appear_at);
        h(in.engaged_until);
        h(in.active);
        h(in.next_flash);
        h(in.next_knock);
    }
    for (const Squad& s : squads_) {
        h(s.alarm_pos.x);
        h(s.alarm_pos.y);
        h(s.raised_at);
        h(s.alarm_pending());
    }
    h(rng_);
    h(now_);
    h(frame_);
    h(totals_.intruders_killed);
    h(totals_.flights);
    h(totals_.attacks);
    h(totals_.alarms_raised);
    h(totals_.stuns);
    h(totals_.knockbacks);
    return h.value();
}

std::uint64_t Arena::hash() const {
    detail::Fnv1a h;
    h(world_->state_hash());
    h(sim_hash());
    return h.value();
}

}  // namespace ebt::scenarios
