// The monster game's world: set-up, a frame (player, inputs, brain, physics), counts and the hash.
// The physics reads only the brain's outputs (MonsterOutputs), never the brain itself.
#include "monster_scenario.hpp"

#include <ebt/detail/hash.hpp>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace ebt::scenarios {

namespace {

// ---- the game's tuning (units and seconds); the brains' thresholds are in MonsterTuning ----------
constexpr double kPlayerSpeed = 3.5;
constexpr double kPlayerStandChance = 0.2;   // at each walk draw, the player stands still this often
constexpr std::uint64_t kWalkDrawFrames = 40;  // the player draws a new walk every this many frames
constexpr double kPatrolHalfSide = 4.0;      // a patrol is a square of corners home +/- this
constexpr double kPatrolSpeed = 1.5;
constexpr double kFollowSpeed = 1.8;          // slower than a walking player: it can get away
constexpr double kFollowKeep = 1.0;          // a following monster stops this close to the player
constexpr double kReturnSpeed = 2.5;
constexpr double kFleeSpeed = 3.0;
constexpr double kClawReach = 2.0;           // claws out and the player this close: it is hurt
constexpr double kClawDps = 20.0;
constexpr double kPlayerReach = 2.0;         // the player hurts every monster this close
constexpr double kPlayerDps = 30.0;
constexpr double kFleeRegen = 15.0;          // health per second while fleeing ...
constexpr double kRestRegen = 2.0;           // ... and otherwise
constexpr double kMaxHealth = 100.0;
constexpr double kPi = 3.14159265358979323846;

double uniform(std::uint64_t& state, double lo, double hi) {
    return lo + (hi - lo) * static_cast<double>(detail::splitmix64_next(state) >> 11) * 0x1.0p-53;
}

double dist(MonsterWorld::Vec2 a, MonsterWorld::Vec2 b) { return std::hypot(a.x - b.x, a.y - b.y); }

/// Moves `p` toward `to` by at most `step`, stopping `keep` short of it.
void move_toward(MonsterWorld::Vec2& p, MonsterWorld::Vec2 to, double step, double keep = 0.0) {
    const double dx = to.x - p.x, dy = to.y - p.y;
    const double d = std::hypot(dx, dy);
    if (d <= keep) return;
    const double k = std::min(step, d - keep) / d;
    p.x += dx * k;
    p.y += dy * k;
}

void clamp_to_field(MonsterWorld::Vec2& p) {
    p.x = std::clamp(p.x, 0.0, MonsterWorld::kWidth);
    p.y = std::clamp(p.y, 0.0, MonsterWorld::kHeight);
}

MonsterWorld::Vec2 corner(MonsterWorld::Vec2 home, int waypoint) {
    static constexpr int kSx[4] = {-1, 1, 1, -1};
    static constexpr int kSy[4] = {-1, -1, 1, 1};
    return {home.x + kSx[waypoint] * kPatrolHalfSide, home.y + kSy[waypoint] * kPatrolHalfSide};
}

}  // namespace

const char* to_string(MonsterState state) noexcept {
    switch (state) {
        case MonsterState::Patrol: return "Patrol";
        case MonsterState::Follow: return "Follow";
        case MonsterState::Attack: return "Attack";
        case MonsterState::Flee: return "Flee";
        case MonsterState::Return: return "Return";
    }
    return "?";
}

MonsterWorld::MonsterWorld(MonsterConfig config, MonsterBrain& brain) : config_(config), brain_(&brain) {
    if (config_.monsters < 1) throw std::invalid_argument("MonsterConfig::monsters must be at least 1");
    if (!(config_.hz > 0.0) || config_.hz > 1000.0)
        throw std::invalid_argument("MonsterConfig::hz must be in (0, 1000]");
    frame_dt_ = duration_from_seconds(1.0 / config_.hz, "MonsterConfig::hz");
    rng_ = detail::splitmix64(config_.seed ^ 0x6d6f6e7374657231ull);  // "monster1"
    player_ = {kWidth / 2, kHeight / 2};
    const auto n = static_cast<std::size_t>(config_.monsters);
    monsters_.resize(n);
    inputs_.resize(n);
    outputs_.resize(n);
    // Homes lie around the centre, where the player starts: closer together when there are few
    // monsters, so that a single one meets the player too.
    const double spawn_radius = std::min(25.0, 6.0 + 3.0 * std::sqrt(static_cast<double>(n)));
    for (Monster& m : monsters_) {
        const double angle = uniform(rng_, 0.0, 2 * kPi);
        const double radius = spawn_radius * std::sqrt(uniform(rng_, 0.0, 1.0));
        m.home = {kWidth / 2 + radius * std::cos(angle), kHeight / 2 + radius * std::sin(angle)};
        m.waypoint = static_cast<int>(detail::splitmix64_next(rng_) % 4);
        m.pos = corner(m.home, m.waypoint);
    }
}

void MonsterWorld::move_player(double dt) {
    if (frame_ % kWalkDrawFrames == 0) {
        if (uniform(rng_, 0.0, 1.0) < kPlayerStandChance) {
            player_velocity_ = {};
        } else {
            const double angle = uniform(rng_, 0.0, 2 * kPi);
            player_velocity_ = {kPlayerSpeed * std::cos(angle), kPlayerSpeed * std::sin(angle)};
        }
    }
    player_.x += player_velocity_.x * dt;
    player_.y += player_velocity_.y * dt;
    // Bounce off the field's edges.
    if (player_.x < 0 || player_.x > kWidth) player_velocity_.x = -player_velocity_.x;
    if (player_.y < 0 || player_.y > kHeight) player_velocity_.y = -player_velocity_.y;
    clamp_to_field(player_);
}

void MonsterWorld::measure() {
    for (std::size_t i = 0; i < monsters_.size(); ++i) {
        const Monster& m = monsters_[i];
        inputs_[i].health = static_cast<float>(m.health);
        inputs_[i].player_dist = static_cast<float>(dist(m.pos, player_));
        inputs_[i].home_dist = static_cast<float>(dist(m.pos, m.home));
    }
}

void MonsterWorld::act(double dt) {
    for (std::size_t i = 0; i < monsters_.size(); ++i) {
        Monster& m = monsters_[i];
        MonsterOutputs& out = outputs_[i];
        if (out.restart_patrol) {
            // Patrol's entry action asked to resume the patrol at the nearest corner.
            out.restart_patrol = false;
            int best = 0;
            for (int w = 1; w < 4; ++w)
                if (dist(m.pos, corner(m.home, w)) < dist(m.pos, corner(m.home, best))) best = w;
            m.waypoint = best;
        }
        switch (out.state) {
            case MonsterState::Patrol: {
                const Vec2 to = corner(m.home, m.waypoint);
                move_toward(m.pos, to, kPatrolSpeed * dt);
                if (dist(m.pos, to) < 1e-9) m.waypoint = (m.waypoint + 1) % 4;
                break;
            }
            case MonsterState::Follow: move_toward(m.pos, player_, kFollowSpeed * dt, kFollowKeep); break;
            case MonsterState::Attack: break;  // stands and strikes (below)
            case MonsterState::Flee: {
                double dx = m.pos.x - player_.x, dy = m.pos.y - player_.y;
                const double d = std::hypot(dx, dy);
                if (d > 1e-9) {
                    dx /= d;
                    dy /= d;
                } else {
                    dx = 1.0;
                    dy = 0.0;
                }
                m.pos.x += dx * kFleeSpeed * dt;
                m.pos.y += dy * kFleeSpeed * dt;
                clamp_to_field(m.pos);
                break;
            }
            case MonsterState::Return: move_toward(m.pos, m.home, kReturnSpeed * dt); break;
        }
        const double d = dist(m.pos, player_);
        if (out.claws_out && d <= kClawReach) player_damage_ += kClawDps * dt;
        if (d <= kPlayerReach) m.health = std::max(1.0, m.health - kPlayerDps * dt);
        const double regen = out.state == MonsterState::Flee ? kFleeRegen : kRestRegen;
        m.health = std::min(kMaxHealth, m.health + regen * dt);
    }
}

void MonsterWorld::step() {
    const double dt = static_cast<double>(frame_dt_.count()) * 1e-6;
    move_player(dt);
    measure();
    brain_->think(frame_dt_, inputs_, outputs_);
    act(dt);
    ++frame_;
}

std::vector<int> MonsterWorld::counts() const {
    std::vector<int> counts(kMonsterStates, 0);
    for (const MonsterOutputs& out : outputs_) ++counts[static_cast<std::size_t>(out.state)];
    return counts;
}

std::uint64_t MonsterWorld::hash() const {
    detail::Fnv1a h;
    h(frame_);
    h(rng_);
    h(player_.x);
    h(player_.y);
    h(player_velocity_.x);
    h(player_velocity_.y);
    h(player_damage_);
    for (std::size_t i = 0; i < monsters_.size(); ++i) {
        const Monster& m = monsters_[i];
        const MonsterOutputs& out = outputs_[i];
        h(m.pos.x);
        h(m.pos.y);
        h(m.health);
        h(m.waypoint);
        h(out.state);
        h(out.claws_out);
        h(out.restart_patrol);
        for (std::uint32_t e : out.entries) h(e);
    }
    return h.value();
}

}  // namespace ebt::scenarios
