#include "arena_scenario.hpp"

#include "guard_scenario.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace ebt::scenarios {

namespace {

// ---- the game's tuning (units are arena units and seconds) ----------------------------------------
constexpr double kSquadCell = 30.0;        // each squad guards a cell of this size
constexpr double kSight = 8.0;             // a guard sees intruders this close
constexpr double kLoseSight = 12.0;        // ... and keeps a target it has until it is this far
constexpr double kAttackRange = 1.5;
constexpr double kPatrolSpeed = 1.5;
constexpr double kRunSpeed = 4.5;          // attacking and responding guards
constexpr double kFleeSpeed = 4.0;
constexpr double kIntruderSpeed = 2.0;
constexpr double kIntruderRoam = 40.0;     // an intruder's next goal is at most this far
constexpr double kGuardDps = 10.0;         // damage a guard deals per second
constexpr double kIntruderDpsMin = 10.0;    // damage an intruder deals back, per attacker and second
constexpr double kIntruderDpsMax = 22.0;
constexpr double kHealRate = 3.0;          // health per second while fleeing
constexpr double kLowHealth = 30.0;        // health_low turns on below this ...
constexpr double kHealthyAgain = 70.0;     // ... and off again at this
constexpr double kMaxHealth = 100.0;
constexpr double kIntruderHealth = 160.0;
constexpr double kLodRadius = 24.0;        // LOD: guards within this of an active intruder tick every frame
constexpr TimePoint kAlarmDuration = 5'000'000;   // an alarm clears this long after its last raise
constexpr TimePoint kEngagedFor = 500'000;        // an intruder in a fight stands still this long
constexpr TimePoint kFirstAppearMin = 1'000'000, kFirstAppearMax = 12'000'000;
constexpr TimePoint kRespawnMin = 2'000'000, kRespawnMax = 6'000'000;

constexpr double kPi = 3.14159265358979323846;

std::uint64_t splitmix64(std::uint64_t& state) {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
double uniform(std::uint64_t& state, double lo, double hi) {
    return lo + (hi - lo) * static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53;
}
TimePoint uniform_time(std::uint64_t& state, TimePoint lo, TimePoint hi) {
    return lo + static_cast<TimePoint>(splitmix64(state) % static_cast<std::uint64_t>(hi - lo + 1));
}

struct Fnv {
    std::uint64_t h = 1469598103934665603ull;
    void bytes(const void* data, std::size_t n) {
        const auto* p = static_cast<const unsigned char*>(data);
        for (std::size_t i = 0; i < n; ++i) {
            h ^= p[i];
            h *= 1099511628211ull;
        }
    }
    template <class T> void operator()(const T& v) { bytes(&v, sizeof v); }
};

double seconds(TimePoint us) { return static_cast<double>(us) * 1e-6; }

}  // namespace

const char* to_string(Activity activity) noexcept {
    switch (activity) {
    case Activity::Patrol: return "patrol";
    case Activity::Respond: return "respond";
    case Activity::Attack: return "attack";
    case Activity::Flee: return "flee";
    }
    return "?";
}

// ---- simulation state ----------------------------------------------------------------------------------

struct Arena::Guard {
    AgentHandle handle;
    Vec2 pos;
    double health = kMaxHealth;
    TimePoint last_move = 0;    // agent-clock time the guard last moved (its actions move it)
    int squad = 0;
    int waypoint = 0;           // next waypoint of the squad's route
    int target = -1;            // intruder it perceives as its enemy
    std::uint32_t interval = 1; // LOD tick interval given to the World
    bool low = false;           // health_low as last perceived (hysteresis)
    bool dead = false;          // enemy_dead as last perceived
    Activity activity = Activity::Patrol;
};

struct Arena::Intruder {
    Vec2 pos, goal;
    double health = 0;
    double dps = 0;
    TimePoint appear_at = 0;       // when inactive: when it slips in (again)
    TimePoint engaged_until = 0;   // stands and fights until then
    bool active = false;
};

struct Arena::Squad {
    Vec2 center;
    std::vector<Vec2> route;        // closed loop
    int direction = 1;              // +1 or -1 along the route
    SharedBlackboard* blackboard = nullptr;
    Vec2 alarm_pos;
    TimePoint raised_at = 0;
    int first = 0, count = 0;       // its guards
};

// ---- construction ----------------------------------------------------------------------------------

Arena::Arena(ArenaConfig config) : config_(config) {
    if (config_.agents < 1) throw std::invalid_argument("ArenaConfig::agents must be at least 1");
    if (!(config_.hz > 0.0) || config_.hz > 1e6) throw std::invalid_argument("ArenaConfig::hz must be in (0, 1e6]");
    if (config_.squad_size < 1) throw std::invalid_argument("ArenaConfig::squad_size must be at least 1");
    if (config_.lod_interval < 1) throw std::invalid_argument("ArenaConfig::lod_interval must be at least 1");
    frame_dt_ = Duration(std::max<std::int64_t>(1, std::llround(1e6 / config_.hz)));
    rng_ = config_.seed * 0xD1B54A32D192ED03ull + 0x2545F4914F6CDD1Dull;
    registry_ = std::make_unique<Registry>();
    world_ = std::make_unique<World>();
    build_tree();
    setup_world();
}

Arena::~Arena() = default;

double Arena::move_dt(Guard& g, TimePoint now) {
    const double dt = seconds(now - g.last_move);
    g.last_move = now;
    return dt;
}

namespace {

double dist(Arena::Vec2 a, Arena::Vec2 b) { return std::hypot(a.x - b.x, a.y - b.y); }

/// Moves `p` toward `to` by at most `step`; true when it arrived (within `stop`).
bool move_toward(Arena::Vec2& p, Arena::Vec2 to, double step, double stop = 0.0) {
    const double dx = to.x - p.x, dy = to.y - p.y;
    const double d = std::hypot(dx, dy);
    if (d <= stop) return true;
    if (d - stop <= step) {
        const double k = (d - stop) / d;
        p.x += dx * k;
        p.y += dy * k;
        return true;
    }
    p.x += dx / d * step;
    p.y += dy / d * step;
    return false;
}

}  // namespace

void Arena::build_tree() {
    // Every agent's user pointer is its Guard (SpawnOptions::user); the Arena pointer is captured.
    Arena* self = this;
    const auto guard = [](ActionContext& ctx) -> Guard& { return ctx.user<Guard>(); };
    const auto clamp = [self](Vec2& p) {
        p.x = std::clamp(p.x, 0.0, self->width_);
        p.y = std::clamp(p.y, 0.0, self->height_);
    };

    ActionSpec patrol;
    patrol.update = [self, guard](ActionContext& ctx) {
        Guard& g = guard(ctx);
        const double dt = self->move_dt(g, ctx.now());
        g.activity = Activity::Patrol;
        const Squad& s = self->squads_[static_cast<std::size_t>(g.squad)];
        const int n = static_cast<int>(s.route.size());
        if (move_toward(g.pos, s.route[static_cast<std::size_t>(g.waypoint)], kPatrolSpeed * dt))
            g.waypoint = (g.waypoint + s.direction + n) % n;
        return Status::Running;
    };
    registry_->add_action("Patrol", patrol);

    ActionSpec attack;
    attack.ports = {port<bool>("squad.alarm")};
    attack.on_initialize = [self](ActionContext&) { ++self->totals_.attacks; };
    attack.update = [self, guard](ActionContext& ctx) {
        Guard& g = guard(ctx);
        const double dt = self->move_dt(g, ctx.now());
        g.activity = Activity::Attack;
        if (g.target < 0) return Status::Failure;  // lost from sight
        Intruder& foe = self->intruders_[static_cast<std::size_t>(g.target)];
        if (!foe.active || foe.health <= 0) return Status::Running;  // it fell; perception will say so
        // Call the squad: raise (or keep up) the alarm at the enemy's position.
        Squad& s = self->squads_[static_cast<std::size_t>(g.squad)];
        if (!s.blackboard->pending<bool>("alarm")) ++self->totals_.alarms_raised;
        ctx.out("squad.alarm", true);
        s.alarm_pos = foe.pos;
        s.raised_at = ctx.now();
        if (!move_toward(g.pos, foe.pos, kRunSpeed * dt, kAttackRange * 0.9)) return Status::Running;
        // In reach: both sides hurt.
        foe.health -= kGuardDps * dt;
        foe.engaged_until = ctx.now() + kEngagedFor;
        g.health = std::max(1.0, g.health - foe.dps * dt);
        return Status::Running;
    };
    registry_->add_action("Attack", attack);

    ActionSpec runaway;
    runaway.ports = {port<bool>(kHealthLow)};
    runaway.on_initialize = [self](ActionContext&) { ++self->totals_.flights; };
    runaway.update = [self, guard, clamp](ActionContext& ctx) {
        Guard& g = guard(ctx);
        const double dt = self->move_dt(g, ctx.now());
        g.activity = Activity::Flee;
        g.health = std::min(kMaxHealth, g.health + kHealRate * dt);
        const Intruder* foe = g.target >= 0 ? &self->intruders_[static_cast<std::size_t>(g.target)] : nullptr;
        if (foe && foe->active) {
            double dx = g.pos.x - foe->pos.x, dy = g.pos.y - foe->pos.y;
            const double d = std::hypot(dx, dy);
            if (d > 1e-9) {
                dx /= d;
                dy /= d;
            } else {
                dx = 1.0;
                dy = 0.0;
            }
            g.pos.x += dx * kFleeSpeed * dt;
            g.pos.y += dy * kFleeSpeed * dt;
            clamp(g.pos);
        } else {
            move_toward(g.pos, self->squads_[static_cast<std::size_t>(g.squad)].center, kPatrolSpeed * dt, 2.0);
        }
        return ctx.in<bool>("health_low") ? Status::Running : Status::Success;
    };
    registry_->add_action("Runaway", runaway);

    ActionSpec respond;
    respond.ports = {port<bool>("squad.alarm")};
    respond.update = [self, guard](ActionContext& ctx) {
        Guard& g = guard(ctx);
        const double dt = self->move_dt(g, ctx.now());
        g.activity = Activity::Respond;
        if (!ctx.in<bool>("squad.alarm")) return Status::Success;  // the alarm is over
        move_toward(g.pos, self->squads_[static_cast<std::size_t>(g.squad)].alarm_pos, kRunSpeed * dt, 2.0);
        return Status::Running;
    };
    registry_->add_action("Respond", respond);

    if (!config_.tree_file.empty()) {
#if EBT_HAS_XML
        tree_ = xml::Loader(*registry_).load_file(config_.tree_file);
#else
        throw std::invalid_argument("ArenaConfig::tree_file needs XML support, which this build of ebt does not have (EBT_XML=OFF)");
#endif
    } else {
        tree_ = builtin_tree();
    }
    key_seen_ = tree_.key<bool>(kEnemySeen);
    key_low_ = tree_.key<bool>(kHealthLow);
    key_dead_ = tree_.key<bool>(kEnemyDead);
}

Tree Arena::builtin_tree() const {
    return TreeBuilder("arena-guard", *registry_)
        .key<bool>(kEnemySeen)
        .key<bool>(kHealthLow)
        .key<bool>(kEnemyDead)
        .shared_key<bool>("squad", "alarm")
        .active_selector()
            .sequence()
                .check(kEnemySeen)
                .active_selector()
                    .sequence()
                        .check(kHealthLow)
                        .action("Runaway")
                    .back()
                    .monitor(Policy::RequireAll, Policy::RequireOne)
                        .check(kEnemyDead, false)
                        .action("Attack")
                    .back()
                .back()
            .back()
            .sequence()
                .check("squad.alarm")
                .check(kHealthLow, false)
                .action("Respond")
            .back()
            .action("Patrol")
        .back()
        .end();
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
    for (int s = 0; s < squads; ++s) {
        Squad& sq = squads_[static_cast<std::size_t>(s)];
        sq.center = {(s % cols + 0.5) * kSquadCell, (s / cols + 0.5) * kSquadCell};
        const int n = 4 + static_cast<int>(splitmix64(rng_) % 3);
        const double turn = uniform(rng_, 0.0, 2 * kPi);
        for (int k = 0; k < n; ++k) {
            const double a = turn + 2 * kPi * (k + uniform(rng_, -0.2, 0.2)) / n;
            const double r = kSquadCell * uniform(rng_, 0.25, 0.42);
            sq.route.push_back({sq.center.x + r * std::cos(a), sq.center.y + r * std::sin(a)});
        }
        sq.direction = (splitmix64(rng_) & 1) ? 1 : -1;
        sq.first = static_cast<int>(static_cast<std::int64_t>(s) * agents / squads);
        sq.count = static_cast<int>(static_cast<std::int64_t>(s + 1) * agents / squads) - sq.first;
        sq.blackboard = &world_->create_shared("squad-" + std::to_string(s));
        sq.blackboard->declare<bool>("alarm", false);
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
        Blackboard& bb = world_->at(g.handle).blackboard();
        bb.set(key_seen_, g.target >= 0);  // equal values are no-ops
        bb.set(key_low_, g.low);
        bb.set(key_dead_, g.dead);
    }
}

void Arena::expire_alarms() {
    const TimePoint t = now_ + frame_dt_.count();
    for (Squad& s : squads_)
        if (s.blackboard->pending<bool>("alarm") && t - s.raised_at >= kAlarmDuration) s.blackboard->set("alarm", false);
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
    expire_alarms();
    apply_lod();
    const auto t1 = std::chrono::steady_clock::now();
    f.ai = world_->step(frame_dt_);
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
        }
    }
    for (const Intruder& in : intruders_) c.intruders_active += in.active && in.health > 0;
    for (const Squad& s : squads_) c.squads_alarmed += s.blackboard->get<bool>("alarm");
    return c;
}

std::uint64_t Arena::sim_hash() const {
    Fnv h;
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
    }
    for (const Squad& s : squads_) {
        h(s.alarm_pos.x);
        h(s.alarm_pos.y);
        h(s.raised_at);
        h(s.blackboard->pending<bool>("alarm"));
    }
    h(rng_);
    h(now_);
    h(frame_);
    h(totals_.intruders_killed);
    h(totals_.flights);
    h(totals_.attacks);
    h(totals_.alarms_raised);
    return h.h;
}

std::uint64_t Arena::hash() const {
    Fnv h;
    h(world_->state_hash());
    h(sim_hash());
    return h.h;
}

void Arena::write_svg(const std::string& path) const {
    std::FILE* out = std::fopen(path.c_str(), "w");
    if (!out) throw std::runtime_error("cannot write '" + path + "'");
    const double scale = std::clamp(1200.0 / std::max(width_, height_), 0.5, 12.0);
    const double band = 56;  // title and legend above the arena
    const double w = width_ * scale, hgt = height_ * scale;
    const auto X = [&](double x) { return x * scale; };
    const auto Y = [&](double y) { return band + y * scale; };
    const ArenaCounts c = counts();
    std::fprintf(out,
                 "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
                 "font-family=\"sans-serif\">\n",
                 w, hgt + band, w, hgt + band);
    std::fprintf(out, "<rect width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n");
    std::fprintf(out, "<rect x=\"0\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#f3efe4\"/>\n", band, w, hgt);
    std::fprintf(out,
                 "<text x=\"8\" y=\"20\" font-size=\"15\" font-weight=\"bold\">ebt arena: %d guards, %d squads, "
                 "t = %.1f s (%s mode%s)</text>\n",
                 config_.agents, squads(), seconds(now_), to_string(config_.mode), config_.lod ? ", LOD" : "");
    struct Legend {
        const char* colour;
        const char* text;
        int n;
    };
    const Legend legend[] = {{"#3f6fb0", "patrol", c.patrol},
                             {"#e3a21a", "respond", c.respond},
                             {"#d3302f", "attack", c.attack},
                             {"#2f9e55", "flee", c.flee},
                             {"#000000", "intruders", c.intruders_active}};
    double lx = 8;
    for (const Legend& l : legend) {
        std::fprintf(out, "<circle cx=\"%.1f\" cy=\"40\" r=\"5\" fill=\"%s\"/>", lx + 5, l.colour);
        std::fprintf(out, "<text x=\"%.1f\" y=\"45\" font-size=\"13\">%s %d</text>\n", lx + 14, l.text, l.n);
        lx += 130;
    }
    std::fprintf(out, "<text x=\"%.1f\" y=\"45\" font-size=\"13\" fill=\"#c0392b\">alarmed squads %d</text>\n", lx,
                 c.squads_alarmed);

    // Patrol routes.
    const double route_w = std::max(0.6, 0.25 * scale);
    std::fprintf(out, "<g fill=\"none\" stroke=\"#c9c0aa\" stroke-width=\"%.2f\">\n", route_w);
    for (const Squad& s : squads_) {
        std::fprintf(out, "<polygon points=\"");
        for (const Vec2& p : s.route) std::fprintf(out, "%.1f,%.1f ", X(p.x), Y(p.y));
        std::fprintf(out, "\"/>\n");
    }
    std::fprintf(out, "</g>\n");
    // Squad alarms.
    std::fprintf(out, "<g fill=\"#e74c3c\" fill-opacity=\"0.18\" stroke=\"#e74c3c\" stroke-opacity=\"0.6\" stroke-width=\"%.2f\">\n",
                 route_w);
    for (const Squad& s : squads_)
        if (s.blackboard->get<bool>("alarm"))
            std::fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\"/>\n", X(s.alarm_pos.x), Y(s.alarm_pos.y), kSight * scale);
    std::fprintf(out, "</g>\n");
    // Guards by activity (one group per colour keeps the file small).
    const double gr = std::max(0.9, 0.6 * scale);
    for (int a = 0; a < 4; ++a) {
        std::fprintf(out, "<g fill=\"%s\">\n", legend[a].colour);
        for (const Guard& g : guards_)
            if (static_cast<int>(g.activity) == a)
                std::fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.2f\"/>\n", X(g.pos.x), Y(g.pos.y), gr);
        std::fprintf(out, "</g>\n");
    }
    // Intruders: black diamonds.
    const double ir = std::max(2.2, 1.1 * scale);
    std::fprintf(out, "<g fill=\"#000000\" stroke=\"#ffffff\" stroke-width=\"0.5\">\n");
    for (const Intruder& in : intruders_)
        if (in.active && in.health > 0)
            std::fprintf(out, "<polygon points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f\"/>\n", X(in.pos.x), Y(in.pos.y) - ir,
                         X(in.pos.x) + ir, Y(in.pos.y), X(in.pos.x), Y(in.pos.y) + ir, X(in.pos.x) - ir, Y(in.pos.y));
    std::fprintf(out, "</g>\n</svg>\n");
    const bool ok = std::ferror(out) == 0;
    if (std::fclose(out) != 0 || !ok) throw std::runtime_error("error writing '" + path + "'");
}

}  // namespace ebt::scenarios
