// The arena: the seeds' guard scenario as a small game world, shared by the ebt_arena sample, its
// test and the benchmarks ("the sample's world").
//
// Guards patrol their squad's route on a 2D arena; intruders slip in at random breach points and
// wander. Every frame, before the AI runs, a perception step (on a uniform spatial grid of the
// intruders, so that the simulation's own cost stays small beside the AI's) writes each guard's
// blackboard: enemy_seen, health_low (with hysteresis), enemy_dead. Attacking hurts (the intruder
// fights back), fleeing heals slowly. A squad of ~12 guards shares a blackboard
// (World::create_shared) whose `alarm` is raised by any member that attacks; the others respond by
// running to the alarm position. The alarm clears a few seconds after the last raise.
//
// Passive requests (the seeds' "passive behaviour requests"): the game, not the AI, decides that a
// guard is stunned (an intruder in a fight flashes now and then, stunning the guards within a few
// units) or knocked back (an intruder that is hit pushes its attacker away now and then). It writes
// the request on the guard's blackboard (stun_request with stun_seconds, knockback_request with
// knockback_angle); the tree reads these keys and never writes them, and carries the request out at
// the highest priority, aborting whatever ran. Once the tree has taken a request up (its action
// started), the game clears the key (after World::step, in guard order). While a request runs the
// guard's other actions are aborted, so nothing else moves it. A stun ends when the game resumes
// the latent Stunned action; a knockback after a short push. Then the guard's tree picks its
// normal behaviour again.
//
// The guards' tree is the seeds' guard tree with the passive requests above it and one more branch
// (the squad response) below:
//
//   0 ActiveSelector
//     1 Sequence                        guard: stun_request (LowerPriority)
//       2 Condition stun_request
//       3 Action Stunned                latent: suspended until the game resumes it stun_seconds later
//     4 Sequence                        guard: knockback_request (LowerPriority)
//       5 Condition knockback_request
//       6 Action Knockback              pushed toward knockback_angle for 0.4 s, then Success
//     7 Sequence                        guard: enemy_seen (LowerPriority)
//       8 Condition enemy_seen
//       9 ActiveSelector
//         10 Sequence                   guard: health_low (LowerPriority)
//           11 Condition health_low
//           12 Action Runaway           flee and heal; Running while health is low, then Success
//         13 Monitor(RequireAll, RequireOne)   guard: !enemy_dead (Self, plus LowerPriority)
//           14 Condition !enemy_dead
//           15 Action Attack            close in and fight; raises squad.alarm; Failure if the target is lost
//     16 Sequence                       guard: squad.alarm && !health_low (LowerPriority)
//       17 Condition squad.alarm
//       18 Condition !health_low
//       19 Action Respond               run to the alarm; Running while the alarm is up, then Success
//     20 Action Patrol                  walk the squad's route; Running forever
//
// Actions reach their guard's simulation data through the agent's user pointer (the Guard, given at
// spawn: SpawnOptions::user) and a pointer to the Arena captured in the ActionSpec lambdas. Every action moves its guard by the
// time since the guard last moved (agent clock), so movement does not depend on how often a guard
// is ticked (AI LOD).
//
// Determinism: a seeded counter-based RNG, a fixed iteration order (guard index = agent slot), and
// actions that only depend on their own updates (identical in polling and event mode) and touch only
// their own guard: what they do to intruders, squads and the totals is applied after World::step in
// guard order, so a run is the same at any thread count (ArenaConfig::threads); perception
// writes every blackboard value every frame, but equal values are no-ops. Polling and event runs of
// the same configuration end with the same hash().
//
// Saving: Arena::save() writes the whole run between frames (its configuration, the simulation state
// kept outside the World and the World's snapshot, ebt::save_world) to one versioned file;
// ArenaSave::read() checks such a file and Arena(ArenaSave, ...) continues the run from it, ending
// in the same hash() as the run that was never interrupted (docs/snapshots.md, "In the arena").
//
// Sources, one per job: arena_world.cpp (the rules and perception: set-up, a frame, counts and the
// hash), arena_ai.cpp (the guards' actions and tree), arena_svg.cpp (the picture), arena_save.cpp
// (the save file), and arena_internal.hpp (the tuning and the simulation state they share; private
// to them).
#pragma once

#include <ebt/ebt.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace ebt::scenarios {

struct ArenaConfig {
    int agents = 10'000;          // guards
    double hz = 20.0;             // frames per simulated second
    std::uint64_t seed = 1;
    Mode mode = Mode::Event;
    bool lod = false;             // AI LOD: guards far from every intruder tick every `lod_interval` frames
    std::uint32_t lod_interval = 4;
    int squad_size = 12;          // guards per squad (squads get 8-16 when the count does not divide)
    int intruders = 0;            // 0: one per 40 guards (at least 2)
    /// Lifecycle listener attached to guard `listener_agent` only (not owned; must outlive the Arena).
    TraceListener* listener = nullptr;
    int listener_agent = -1;
    /// When set, the guards' tree is loaded from this BehaviorTree.CPP v4 XML file (ebt::xml::Loader
    /// over the arena's registered actions) instead of being built in code. It must declare the keys
    /// the perception writes (enemy_seen, health_low, enemy_dead: bool) and may read the shared key
    /// squad.alarm. samples/arena.xml is the built-in tree.
    std::string tree_file;
    /// Called once the actions are registered and the (empty) world exists, before the tree is built:
    /// returns the registry to build the guards' tree with (a debug::Recorder's, to record the run),
    /// or nullptr for the arena's own.
    std::function<const Registry*(const Registry& actions, World& world)> instrument;
    /// Threads that tick the guards (World::set_threads): every count gives the same run.
    std::uint32_t threads = 1;
};

/// What a guard is doing: the action its tree last updated.
enum class Activity : std::uint8_t { Patrol, Respond, Attack, Flee, Stunned, Knockback };
const char* to_string(Activity activity) noexcept;

struct ArenaCounts {
    int patrol = 0;
    int respond = 0;
    int attack = 0;
    int flee = 0;
    int stunned = 0;           // carrying out a stun request
    int knocked_back = 0;      // carrying out a knockback request
    int intruders_active = 0;  // in the arena and alive
    int squads_alarmed = 0;    // published squad.alarm == true
};

/// Totals since the start.
struct ArenaTotals {
    std::uint64_t intruders_killed = 0;
    std::uint64_t flights = 0;         // Runaway runs started
    std::uint64_t attacks = 0;         // Attack runs started
    std::uint64_t alarms_raised = 0;   // squad alarms going from clear to raised
    std::uint64_t stuns = 0;           // Stunned runs started
    std::uint64_t knockbacks = 0;      // Knockback runs started
};

/// One frame's cost: the AI (World::step) and the simulation around it (perception, intruders, LOD).
struct ArenaFrame {
    FrameMetrics ai;
    std::chrono::nanoseconds sim_time{0};
};

class Arena;

/// An arena save file read back and checked (Arena::save() writes one): the configuration the run was
/// made with, where it stopped, and its simulation state and World snapshot, which an Arena built from
/// it continues. Reading checks everything but the World snapshot's records (which restoring the
/// World checks): a file that is not a readable arena save (another kind of file, another version,
/// truncated, corrupt) throws debug::FileFormatError naming the file and the byte. A value type:
/// the caller owns it; it holds no pointer into the bytes read.
class ArenaSave {
public:
    /// `source` names the bytes in error messages (the file name).
    static ArenaSave read(std::span<const std::byte> bytes, const std::string& source);
    /// Reads the file at `path`; std::runtime_error when it cannot be opened or read.
    static ArenaSave read_file(const std::string& path);

    /// What the run is: agents, hz, seed, mode, lod, lod_interval, squad_size, intruders (the count
    /// the arena had) and tree_file. Its listener, instrument and threads are the defaults.
    const ArenaConfig& config() const noexcept;
    /// The simulated time and frame number the run was saved at.
    TimePoint time() const noexcept;
    std::uint64_t frame() const noexcept;

    struct State;  // defined in arena_internal.hpp

private:
    friend class Arena;
    std::shared_ptr<const State> state_;
};

class Arena {
public:
    explicit Arena(ArenaConfig config = {});
    /// Continues the run `save` holds: the arena as it was at its frame, with the World restored
    /// (ebt::restore_world): stepping it on gives the same hash() after every frame as the run that
    /// was saved. `runtime` gives what a save does not hold: listener, listener_agent, instrument
    /// (which must not observe the World's inputs: restore_world needs a World without an input
    /// observer) and threads (any count); its other fields are ignored (the save's are used). Throws
    /// debug::FileFormatError when the World snapshot is corrupt or does not fit the arena (naming
    /// the file and byte), SnapshotError when the saved tree is not the one built now (a tree_file
    /// that changed), and what Arena(ArenaConfig) throws (a tree_file that does not load).
    Arena(const ArenaSave& save, const ArenaConfig& runtime);
    ~Arena();
    Arena(const Arena&) = delete;
    Arena& operator=(const Arena&) = delete;

    /// Advances one frame (1 / hz seconds): intruders move and (re)appear, perception writes the
    /// guards' blackboards, squad alarms expire, LOD intervals are set, then the World steps.
    ArenaFrame step();

    ArenaCounts counts() const;
    const ArenaTotals& totals() const noexcept { return totals_; }
    /// World::state_hash() combined with a hash of the simulation state (positions, health, targets,
    /// intruders, squads, RNG).
    std::uint64_t hash() const;
    std::uint64_t sim_hash() const;
    /// Passive requests, as the game makes them (an intruder's flash, a hit): writes the request keys
    /// on guard `guard`'s blackboard between frames; its tree carries them out at the highest
    /// priority, aborting what it was doing, and the game clears the key once the tree has taken the
    /// request up (docs/patterns.md, "Passive requests"). A stun lasts `seconds`; a knockback pushes the
    /// guard toward `angle` (radians) for a moment.
    void request_stun(int guard, double seconds);
    void request_knockback(int guard, double angle);

    /// Hot reload (ebt_arena --tree FILE --watch; docs/hot_reload.md): loads the guards' tree again from
    /// `path` (a BehaviorTree.CPP v4 XML file, over the arena's actions) and gives it to every guard
    /// with World::reload, between frames: guards whose tree changed in structure end their runs
    /// (Aborted) and start the new tree in the next frame; a change of parameter values only keeps
    /// them running. The game's keys (enemy_seen, health_low, ...) are then taken from the new tree.
    /// Throws, changing nothing, xml::LoadError (file:line:column) for a file that does not load,
    /// UsageError for a tree without one of the keys the game writes (or of another type) and what
    /// World::reload refuses; std::invalid_argument in a build without XML.
    ReloadReport reload_tree_file(const std::string& path);

    /// The whole run now, as the bytes of an arena save file (ArenaSave::read reads them back):
    /// between frames only (World::step's UsageError otherwise). Throws what ebt::save_world throws.
    std::vector<std::byte> save() const;
    /// save() written to `path`; std::runtime_error when the file cannot be written.
    void save_file(const std::string& path) const;
    /// An SVG picture of the arena now: patrol routes, guards coloured by activity, intruders, alarms.
    /// Throws std::runtime_error when the file cannot be written.
    void write_svg(const std::string& path) const;

    const ArenaConfig& config() const noexcept { return config_; }
    World& world() noexcept { return *world_; }
    const World& world() const noexcept { return *world_; }
    const Tree& tree() const noexcept { return tree_; }
    /// The arena's tree as built in code (what samples/arena.xml holds).
    Tree builtin_tree() const;
    /// The registry of the arena's actions (for loading or saving its tree as XML).
    const Registry& registry() const noexcept { return *registry_; }
    std::uint64_t frame() const noexcept { return frame_; }
    TimePoint now() const noexcept { return now_; }
    int squads() const noexcept;
    int intruders() const noexcept;
    double width() const noexcept { return width_; }
    double height() const noexcept { return height_; }
    int guards() const noexcept { return config_.agents; }
    /// Guard `guard`'s agent handle, current activity and health (guard i is the World's slot i).
    AgentHandle handle(int guard) const;
    Activity activity(int guard) const;
    double health(int guard) const;

    struct Vec2 {
        double x = 0, y = 0;
    };

private:
    friend class ArenaSave;  // reads the simulation state of a save file into Guard, Intruder, Squad
    struct Guard;
    struct Intruder;
    struct Squad;

    void build_tree();
    void setup_world();
    void size_grid();
    void restore(const ArenaSave::State& saved);
    void update_intruders(double dt);
    void rebuild_grid();
    void perceive();
    void expire_alarms();
    void flash();        // intruders in a fight stun the guards near them, now and then
    void end_stuns();    // resumes the Stunned actions whose time is up
    void apply_guard_effects();  // after World::step: what the guards' actions did, in guard order
    void apply_lod();
    int nearest_intruder(Vec2 p, double radius) const;
    double move_dt(Guard& g, TimePoint now);

    ArenaConfig config_;
    Duration frame_dt_{0};
    std::unique_ptr<Registry> registry_;
    const Registry* tree_registry_ = nullptr;  // what the tree is built with: registry_ or ArenaConfig::instrument's
    std::unique_ptr<World> world_;
    Tree tree_;
    Key<bool> key_seen_, key_low_, key_dead_;
    Key<bool> key_stun_, key_knockback_;
    Key<double> key_stun_seconds_, key_knockback_angle_;
    std::vector<Guard> guards_;
    std::vector<Intruder> intruders_;
    std::vector<Squad> squads_;
    std::vector<std::uint8_t> alarm_before_;  // per squad: its pending alarm before World::step
    // Spatial grid of the active intruders: cell -> [begin, end) into grid_items_.
    double cell_ = 1;
    int grid_cols_ = 1, grid_rows_ = 1;
    std::vector<std::uint32_t> grid_start_;
    std::vector<std::int32_t> grid_items_;
    std::vector<std::uint32_t> grid_fill_;
    std::vector<std::uint8_t> hot_;  // LOD: cells within the LOD radius of an active intruder
    double width_ = 0, height_ = 0;
    std::uint64_t rng_ = 0;
    std::uint64_t frame_ = 0;
    TimePoint now_ = 0;
    ArenaTotals totals_;
};

}  // namespace ebt::scenarios
