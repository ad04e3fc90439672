// Private to the arena's sources (scenarios/arena_*.cpp), not to be included elsewhere: the game's
// tuning, its random numbers and geometry, and the simulation state behind Arena's private members.
// The rules and perception (arena_world.cpp), the guards' AI (arena_ai.cpp) and the picture
// (arena_svg.cpp) all read and write this state; the Arena owns it.
#pragma once

#include "arena_scenario.hpp"

#include <ebt/detail/hash.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ebt::scenarios::arena_internal {

// ---- the game's tuning (units are arena units and seconds) ----------------------------------------
inline constexpr double kSquadCell = 30.0;        // each squad guards a cell of this size
inline constexpr double kSight = 8.0;             // a guard sees intruders this close
inline constexpr double kLoseSight = 12.0;        // ... and keeps a target it has until it is this far
inline constexpr double kAttackRange = 1.5;
inline constexpr double kPatrolSpeed = 1.5;
inline constexpr double kRunSpeed = 4.5;          // attacking and responding guards
inline constexpr double kFleeSpeed = 4.0;
inline constexpr double kIntruderSpeed = 2.0;
inline constexpr double kIntruderRoam = 40.0;     // an intruder's next goal is at most this far
inline constexpr double kGuardDps = 10.0;         // damage a guard deals per second
inline constexpr double kIntruderDpsMin = 10.0;    // damage an intruder deals back, per attacker and second
inline constexpr double kIntruderDpsMax = 22.0;
inline constexpr double kHealRate = 3.0;          // health per second while fleeing
inline constexpr double kLowHealth = 30.0;        // health_low turns on below this ...
inline constexpr double kHealthyAgain = 70.0;     // ... and off again at this
inline constexpr double kMaxHealth = 100.0;
inline constexpr double kIntruderHealth = 160.0;
inline constexpr double kLodRadius = 24.0;        // LOD: guards within this of an active intruder tick every frame
inline constexpr TimePoint kAlarmDuration = 5'000'000;   // an alarm clears this long after its last raise
inline constexpr TimePoint kEngagedFor = 500'000;        // an intruder in a fight stands still this long
inline constexpr TimePoint kFirstAppearMin = 1'000'000, kFirstAppearMax = 12'000'000;
inline constexpr TimePoint kRespawnMin = 2'000'000, kRespawnMax = 6'000'000;
// Passive requests (the game's, not the AI's): an intruder in a fight flashes now and then, stunning
// the guards near it; an intruder that is hit knocks its attacker back now and then.
inline constexpr double kFlashRadius = 6.0;
inline constexpr double kStunTime = 2.0;            // seconds a flash stuns
inline constexpr TimePoint kFlashMin = 6'000'000, kFlashMax = 14'000'000;  // between an intruder's flashes
inline constexpr TimePoint kKnockEvery = 2'500'000;   // at most one knockback per intruder this often
inline constexpr TimePoint kKnockbackTime = 400'000;  // a knockback pushes the guard this long ...
inline constexpr double kKnockbackSpeed = 8.0;        // ... at this speed

// The guards' request keys: written by the game, read (never written) by the tree.
inline constexpr const char* kStunRequest = "stun_request";          // bool: be stunned
inline constexpr const char* kStunSeconds = "stun_seconds";          // double: for this long
inline constexpr const char* kKnockbackRequest = "knockback_request";  // bool: be knocked back
inline constexpr const char* kKnockbackAngle = "knockback_angle";      // double: toward this direction (radians)

inline constexpr double kPi = 3.14159265358979323846;

inline double uniform(std::uint64_t& state, double lo, double hi) {
    return lo + (hi - lo) * static_cast<double>(detail::splitmix64_next(state) >> 11) * 0x1.0p-53;
}
inline TimePoint uniform_time(std::uint64_t& state, TimePoint lo, TimePoint hi) {
    return lo + static_cast<TimePoint>(detail::splitmix64_next(state) % static_cast<std::uint64_t>(hi - lo + 1));
}

inline double seconds(TimePoint us) { return static_cast<double>(us) * 1e-6; }

inline double dist(Arena::Vec2 a, Arena::Vec2 b) { return std::hypot(a.x - b.x, a.y - b.y); }

/// Moves `p` toward `to` by at most `step`; true when it arrived (within `stop`).
inline bool move_toward(Arena::Vec2& p, Arena::Vec2 to, double step, double stop = 0.0) {
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

}  // namespace ebt::scenarios::arena_internal

namespace ebt::scenarios {

struct Arena::Guard {
    AgentHandle handle;
    Vec2 pos;
    double health = arena_internal::kMaxHealth;
    TimePoint last_move = 0;    // agent-clock time the guard last moved (its actions move it)
    int squad = 0;
    int waypoint = 0;           // next waypoint of the squad's route
    int target = -1;            // intruder it perceives as its enemy
    std::uint32_t interval = 1; // LOD tick interval given to the World
    bool seen = false;          // enemy_seen as last perceived
    bool low = false;           // health_low as last perceived (hysteresis)
    bool dead = false;          // enemy_dead as last perceived
    Activity activity = Activity::Patrol;
    // What its actions did this frame to the rest of the arena, applied after World::step in guard
    // order (Arena::apply_guard_effects): an action touches only its own guard, so that the world
    // may tick the guards on several threads (docs/world.md, "Threads").
    int attacks_started = 0;    // Attack runs started
    int flights_started = 0;    // Runaway runs started
    bool raised_alarm = false;  // called its squad to alarm_at, at alarm_time
    Vec2 alarm_at;
    TimePoint alarm_time = 0;
    bool struck = false;        // dealt `damage` to intruder `target` at hit_time
    double damage = 0;
    TimePoint hit_time = 0;
    bool took_stun = false;       // its Stunned action started: the game clears stun_request
    bool took_knockback = false;  // its Knockback action started: the game clears knockback_request
    // The passive requests being carried out.
    bool stunned = false;         // its Stunned action runs (suspended until the game resumes it)
    TimePoint stunned_until = 0;  // when the game resumes it
    ResumeHandle stun_handle;     // how (not saved: suspended_actions() gives it again after a restore)
    bool stun_resumed = false;    // only in a save file read back: the game had resumed it already
    double knock_angle = 0;       // its Knockback action pushes it this way ...
    TimePoint knock_until = 0;    // ... until then
};

struct Arena::Intruder {
    Vec2 pos, goal;
    double health = 0;
    double dps = 0;
    TimePoint appear_at = 0;       // when inactive: when it slips in (again)
    TimePoint engaged_until = 0;   // stands and fights until then
    TimePoint next_flash = 0;      // flashes (when in a fight) at or after this
    TimePoint next_knock = 0;      // knocks an attacker back at or after this
    bool active = false;
};

struct Arena::Squad {
    Vec2 center;
    std::vector<Vec2> route;        // closed loop
    int direction = 1;              // +1 or -1 along the route
    SharedBlackboard* blackboard = nullptr;
    KeyId alarm_key = kNoKey;       // its "alarm" (looked up once: the game reads it every frame)
    Vec2 alarm_pos;
    TimePoint raised_at = 0;
    int first = 0, count = 0;       // its guards
    /// The alarm's pending value: what the squad's guards wrote this frame (or the game), else the published one.
    bool alarm_pending() const { return *static_cast<const bool*>(blackboard->pending_value(alarm_key)); }
};

/// An arena save file's content, as ArenaSave::read found and checked it (arena_save.cpp); what
/// Arena::restore puts back. The guards' handles and the squads' blackboards are not in it: they
/// come from the restored World.
struct ArenaSave::State {
    std::string source;           // the file name, for errors
    ArenaConfig config;
    std::uint64_t frame = 0;
    TimePoint now = 0;
    std::uint64_t rng = 0;
    ArenaTotals totals;
    double width = 0, height = 0;
    std::vector<Arena::Guard> guards;
    std::vector<Arena::Intruder> intruders;
    std::vector<Arena::Squad> squads;
    std::vector<std::byte> world;  // the World's snapshot (ebt::save_world)
    std::uint64_t world_offset = 0;  // where it starts in the file (for errors)
};

}  // namespace ebt::scenarios
