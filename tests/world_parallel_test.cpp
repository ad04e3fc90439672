// Parallel stepping (World::set_threads; docs/world.md, "Threads"): the same world gives the same
// answer at 1, 2, 4 and 8 threads and in polling mode (every agent's trace, the state hash after
// every frame, the FrameMetrics counters), for random worlds and for the arena; a world breaking the
// threading rule gets the documented UsageError; the bus's slots and the world's listeners are called
// on the thread that called step().
//
// EBT_PARALLEL_THREADS (e.g. 4, as the ThreadSanitizer step of .ci/run sets) adds a thread count to
// the ones every case runs.
#include "support/random_world.hpp"
#include "support/trace_recorder.hpp"

#include "arena_scenario.hpp"
#include "guard_scenario.hpp"
#include "world/parallel_state.hpp"

#include <ebt/detail/engine_access.hpp>
#include <ebt/detail/hash.hpp>
#include <ebt/signals.hpp>
#include <ebt/snapshot.hpp>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using namespace ebt;
using namespace std::chrono_literals;

struct ebt::WorldParallelTestAccess {
    /// Small worlds tick in parallel too: `grain` agents per task.
    static void set_grain(World& world, std::uint32_t grain) { world.set_parallel_grain_for_test(grain); }
    /// The default rule at a smaller scale: ranges of at least `grain` slots, holding about
    /// `awake_per_task` awake agents in a sparse frame; frames of fewer than 2 * grain awake agents inline.
    static void split_by_awake(World& world, std::size_t grain, std::size_t awake_per_task) {
        world.parallel_->grain = grain;
        world.parallel_->awake_per_task = awake_per_task;
        world.parallel_->inline_below = 2 * grain;
    }
    /// The grain the last phase on the threads cut its slots by.
    static std::size_t last_grain(const World& world) { return world.parallel_->last_grain; }
    /// Sets last_grain to 0, so that a frame whose phase runs on the threads can be told (it sets it).
    static void clear_last_grain(World& world) { world.parallel_->last_grain = 0; }
    /// What is wrong with the world's awake set, or "": its count must be the number of bits set, and a
    /// word's summary bit must be set exactly when the word is not zero (as one thread keeps them).
    static std::string awake_set_errors(const World& world) {
        std::string errors;
        std::uint64_t bits = 0;
        for (std::size_t w = 0; w < world.awake_.size(); ++w) {
            bits += static_cast<std::uint64_t>(std::popcount(world.awake_[w]));
            const bool summary = w / 64 < world.awake_words_.size() && (world.awake_words_[w / 64] >> (w % 64)) & 1;
            if (summary != (world.awake_[w] != 0)) errors += "word " + std::to_string(w) + "'s summary bit is " + (summary ? "set; " : "clear; ");
        }
        if (bits != world.awake_count_)
            errors += "count " + std::to_string(world.awake_count_) + " for " + std::to_string(bits) + " bits set; ";
        return errors;
    }
    /// The world's move hints (World::SlotSchedule::move_hint: none, "ends a move", "restarts the root"),
    /// one per slot, as the loops left them.
    static std::vector<std::uint8_t> move_hints(const World& world) {
        std::vector<std::uint8_t> hints;
        for (std::uint32_t i = 0; i < world.slot_count_; ++i) hints.push_back(static_cast<std::uint8_t>(world.schedule(i).move_hint));
        return hints;
    }
    /// Awake bits the last phase's tasks cleared themselves (put_to_sleep_in_task), 0 with one thread.
    static std::uint64_t cleared_in_tasks(const World& world) {
        std::uint64_t n = 0;
        if (world.parallel_)
            for (const auto& buffer : world.parallel_->buffers) n += buffer.awake_cleared;
        return n;
    }
};

namespace {

std::vector<std::uint32_t> thread_counts() {
    std::vector<std::uint32_t> counts{1, 2, 4, 8};
    if (const char* extra = std::getenv("EBT_PARALLEL_THREADS")) {
        const auto n = static_cast<std::uint32_t>(std::strtoul(extra, nullptr, 10));
        if (n >= 1 && std::find(counts.begin(), counts.end(), n) == counts.end()) counts.push_back(n);
    }
    return counts;
}

using test::mix;
using test::random_world_registry;
using Npc = test::RandomNpc;

Tree random_tree(std::uint64_t seed) { return test::random_world_tree(seed); }

/// A tree whose agents fall asleep often (event mode): with a deadline (a Wait; a Timeout around a
/// suspended action) and without one (the suspended action alone, or a failed Work), woken by their
/// timers, by the game's resumes and by its key writes.
Tree sleepy_tree(std::uint64_t seed) {
    TreeBuilder b("sleepy-" + std::to_string(seed), random_world_registry());
    b.key<bool>("k0").key<bool>("k1").key<bool>("k2").shared_key<bool>("team", "flag").shared_key<int>("team", "count");
    const auto ms = [seed](int base) { return std::chrono::milliseconds(base * (1 + static_cast<int>(seed % 3))); };
    b.selector()
        .sequence()
            .check("k0", true)
            .wait(ms(50))
            .timeout(ms(150)).action("Latent").back()
        .back()
        .sequence()
            .action("Work")
            .wait(ms(100))
            .action("Latent")
        .back()
    .back();
    return b.end();
}

/// An agent's lifecycle events and errors, each with its frame.
std::string lifecycle(const test::TraceRecorder& recorder) {
    std::string out;
    for (const auto& entry : recorder.entries) {
        if (!entry.event.is_lifecycle() && entry.event.kind != TraceKind::Error) continue;
        out += std::to_string(entry.event.tick) + ":" + test::TraceRecorder::render(entry.event) + " ";
    }
    return out;
}

/// What a run of a world must reproduce at every thread count.
struct Outcome {
    std::vector<std::uint64_t> hashes;   // state_hash() after every frame
    std::vector<std::string> traces;     // each NPC's lifecycle trace
    std::uint64_t stepped = 0, updated = 0, guards = 0, events = 0, timers = 0, waiting = 0;
    std::vector<std::uint64_t> snapshots;  // save_world() after every frame, hashed (when asked for)
    std::size_t most_timer_entries = 0;    // the largest timer heap seen after a frame
    std::uint64_t cleared_in_tasks = 0;    // awake bits the phases' tasks cleared themselves (not compared)
};

/// Checks that a run at several threads (`many`) gave everything the run at one thread (`one`) gave.
void check_same_run(const Outcome& many, const Outcome& one) {
    CHECK(many.snapshots == one.snapshots);  // (empty for both unless saved every frame)
    CHECK(many.hashes == one.hashes);
    CHECK(many.traces == one.traces);
    CHECK(many.stepped == one.stepped);
    CHECK(many.waiting == one.waiting);
    CHECK(many.updated == one.updated);
    CHECK(many.guards == one.guards);
    CHECK(many.events == one.events);
    CHECK(many.timers == one.timers);
}

/// A random world: `agents` agents of 3 random trees on 2 teams; between frames the game writes
/// keys, resumes suspended runs, despawns and spawns, all from the seed.
/// With `sleepy`, its trees are sleepy_tree()s, and with `save_every_frame` the world is saved after
/// every frame. With a `budget`, the world steps at most that many agents a frame (round robin), but
/// none from frame 10 to 14, which steps them all. With several threads, the phase's tasks are ranges
/// of `grain` slots (or places), and frames of fewer than 2 * grain awake agents tick on the calling
/// thread; the awake set is checked after every frame.
Outcome run_random_world(std::uint64_t seed, Mode mode, std::uint32_t threads, int agents, int frames,
                         bool save_every_frame = false, bool sleepy = false, std::uint32_t budget = 0,
                         std::uint32_t grain = 4) {
    World world(WorldOptions{.threads = threads});
    world.set_agent_budget(budget);
    if (threads > 1) WorldParallelTestAccess::set_grain(world, grain);
    SharedBlackboard* teams[2] = {&world.create_shared("red"), &world.create_shared("blue")};
    const auto make_tree = [sleepy](std::uint64_t s) { return sleepy ? sleepy_tree(s) : random_tree(s); };
    const Tree trees[3] = {make_tree(seed * 3), make_tree(seed * 3 + 1), make_tree(seed * 3 + 2)};
    std::vector<std::unique_ptr<Npc>> npcs;
    std::vector<AgentHandle> handles;
    const auto spawn = [&](std::size_t i) {
        npcs[i] = std::make_unique<Npc>();
        npcs[i]->seed = mix(seed, i, 99);
        handles[i] = world.spawn(trees[i % 3], {.mode = mode,
                                                .seed = npcs[i]->seed,
                                                .listener = &npcs[i]->trace,
                                                .user = npcs[i].get(),
                                                .tick_interval = i % 5 == 0 ? 2u : 1u,
                                                .shared = {{"team", teams[i % 2]}}});
    };
    npcs.resize(static_cast<std::size_t>(agents));
    handles.resize(static_cast<std::size_t>(agents));
    for (std::size_t i = 0; i < npcs.size(); ++i) spawn(i);
    Outcome out;
    std::vector<std::string> finished;  // traces of despawned NPCs
    for (int f = 0; f < frames; ++f) {
        for (std::size_t i = 0; i < npcs.size(); ++i) {
            const std::uint64_t x = mix(seed, static_cast<std::uint64_t>(f), i);
            test::poke_random_npc(world, handles[i], *npcs[i], x);
            if ((x >> 20) % 97 == 0) {
                CHECK(world.despawn(handles[i]));
                finished.push_back(std::to_string(i) + ": " + lifecycle(npcs[i]->trace));
                spawn(i);
            }
        }
        if (f % 4 == 0) teams[f % 8 == 0 ? 0 : 1]->set("flag", f % 8 == 0);
        if (budget != 0) world.set_agent_budget(f >= 10 && f < 15 ? 0 : budget);
        const FrameMetrics m = world.step(50ms);
        out.waiting += m.agents_waiting;
        out.stepped += m.agents_stepped;
        out.updated += m.behaviors_updated;
        out.guards += m.guards_evaluated;
        out.events += m.events_handled;
        out.timers += m.timers_fired;
        out.hashes.push_back(world.state_hash());
        out.most_timer_entries = std::max(out.most_timer_entries, world.timer_entries());
        out.cleared_in_tasks += WorldParallelTestAccess::cleared_in_tasks(world);
        CHECK(WorldParallelTestAccess::awake_set_errors(world) == "");
        if (save_every_frame) {
            const std::vector<std::byte> bytes = save_world(world);
            detail::Fnv1a h;
            h.bytes(bytes.data(), bytes.size());
            out.snapshots.push_back(h.value());
        }
    }
    out.traces = finished;
    for (std::size_t i = 0; i < npcs.size(); ++i) out.traces.push_back(std::to_string(i) + ": " + lifecycle(npcs[i]->trace));
    return out;
}

}  // namespace

TEST_CASE("world parallel: random worlds give the same traces, hashes and metrics at 1, 2, 4 and 8 threads, in both modes") {
    const int seeds = 8;
    for (std::uint64_t seed = 1; seed <= seeds; ++seed) {
        CAPTURE(seed);
        const Outcome polling = run_random_world(seed, Mode::Polling, 1, 48, 30);
        const Outcome event = run_random_world(seed, Mode::Event, 1, 48, 30);
        REQUIRE(event.hashes == polling.hashes);  // the modes agree (docs/world.md, "Determinism")
        REQUIRE(event.traces == polling.traces);
        for (const std::uint32_t threads : thread_counts()) {
            CAPTURE(threads);
            for (const Mode mode : {Mode::Polling, Mode::Event}) {
                CAPTURE(mode == Mode::Event);
                const Outcome& one = mode == Mode::Event ? event : polling;
                const Outcome many = run_random_world(seed, mode, threads, 48, 30);
                check_same_run(many, one);
            }
        }
    }
}

TEST_CASE("world parallel: agents going to sleep after their tick get the same awake bits and timers at 1, 2, 4 and 8 threads") {
    // The threads settle the timer record of each agent they put to sleep (a Wait, a Timeout, a
    // suspended Latent action) and the apply merges the heap entries in slot order: the world's
    // snapshot, which holds every slot's awake bit and armed timer, is the same byte for byte after
    // every frame, and the heap keeps within twice the agents (its live count is right).
    const int agents = 300;
    for (std::uint64_t seed = 11; seed <= 13; ++seed) {
        CAPTURE(seed);
        for (const Mode mode : {Mode::Polling, Mode::Event}) {
            CAPTURE(mode == Mode::Event);
            const Outcome one = run_random_world(seed, mode, 1, agents, 40, true, true);
            if (mode == Mode::Event) CHECK(one.most_timer_entries > 0);  // agents slept with a deadline armed
            CHECK(one.most_timer_entries <= 2 * agents + 64);
            for (const std::uint32_t threads : thread_counts()) {
                if (threads == 1) continue;
                CAPTURE(threads);
                const Outcome many = run_random_world(seed, mode, threads, agents, 40, true, true);
                check_same_run(many, one);
                CHECK(many.most_timer_entries <= 2 * agents + 64);
            }
        }
    }
}

TEST_CASE("world parallel: tasks holding whole words of awake bits put their sleepers out themselves, with the same answer as one thread") {
    // A grain that is a multiple of 64 (the default's 256 is) cuts the slots into ranges of whole words
    // of awake bits: each task clears the bits of the agents it puts to sleep, and the apply only
    // corrects the count and the words' summary bits. A grain of 96 splits words between tasks:
    // the words a range holds whole go the first way, the others through the apply. Either way the
    // awake set (checked after every frame), the snapshots, traces and hashes are one thread's.
    const int agents = 300;
    for (const std::uint32_t grain : {64u, 96u}) {
        CAPTURE(grain);
        for (std::uint64_t seed = 31; seed <= 32; ++seed) {
            CAPTURE(seed);
            for (const Mode mode : {Mode::Polling, Mode::Event}) {
                CAPTURE(mode == Mode::Event);
                const Outcome one = run_random_world(seed, mode, 1, agents, 40, true, true);
                CHECK(one.cleared_in_tasks == 0);
                for (const std::uint32_t threads : thread_counts()) {
                    if (threads == 1) continue;
                    CAPTURE(threads);
                    const Outcome many = run_random_world(seed, mode, threads, agents, 40, true, true, 0, grain);
                    check_same_run(many, one);
                    // The tasks' own path was taken (polling agents never sleep: they stay awake).
                    if (mode == Mode::Event) CHECK(many.cleared_in_tasks > 0);
                    else CHECK(many.cleared_in_tasks == 0);
                }
            }
        }
    }
}

TEST_CASE("world parallel: with a budget and LOD, the same agents are stepped, round robin, at 1, 2, 4 and 8 threads") {
    // A budget makes the calling thread choose the frame's agents (a list, from where the last frame
    // stopped) before the phase; without one the phase's tasks find their own. The random world
    // switches between the two (no budget in frames 10-14); a fifth of its agents tick every other
    // frame (LOD). A budget makes the set of agents stepped depend on the mode (docs/world.md,
    // "Frame budget"), so each mode is compared with itself at one thread.
    for (std::uint64_t seed = 21; seed <= 23; ++seed) {
        CAPTURE(seed);
        for (const Mode mode : {Mode::Polling, Mode::Event}) {
            CAPTURE(mode == Mode::Event);
            const Outcome one = run_random_world(seed, mode, 1, 64, 30, true, seed == 23, 13);
            CHECK(one.waiting > 0);  // the budget left agents over
            for (const std::uint32_t threads : thread_counts()) {
                if (threads == 1) continue;
                CAPTURE(threads);
                const Outcome many = run_random_world(seed, mode, threads, 64, 30, true, seed == 23, 13);
                check_same_run(many, one);
            }
        }
    }
}

namespace {

/// The arena (samples/arena) at `threads` threads, every guard traced by a listener of its own.
Outcome run_arena(std::uint64_t seed, Mode mode, bool lod, std::uint32_t threads) {
    scenarios::ArenaConfig config;
    config.agents = 240;
    config.seed = seed;
    config.mode = mode;
    config.lod = lod;
    config.threads = threads;
    scenarios::Arena arena(config);
    if (threads > 1) WorldParallelTestAccess::set_grain(arena.world(), 8);
    std::vector<test::TraceRecorder> traces(static_cast<std::size_t>(config.agents));
    for (int g = 0; g < config.agents; ++g) arena.world().set_listener(arena.handle(g), &traces[static_cast<std::size_t>(g)]);
    Outcome out;
    for (int f = 0; f < 100; ++f) {
        const FrameMetrics m = arena.step().ai;
        out.stepped += m.agents_stepped;
        out.updated += m.behaviors_updated;
        out.guards += m.guards_evaluated;
        out.events += m.events_handled;
        out.timers += m.timers_fired;
        out.hashes.push_back(arena.hash());
    }
    for (const auto& t : traces) out.traces.push_back(lifecycle(t));
    return out;
}

}  // namespace

TEST_CASE("world parallel: the arena gives the same traces, hashes and metrics at 1, 2, 4 and 8 threads, in both modes") {
    for (std::uint64_t seed = 1; seed <= 2; ++seed) {
        const bool lod = seed == 2;
        CAPTURE(seed);
        const Outcome polling = run_arena(seed, Mode::Polling, lod, 1);
        const Outcome event = run_arena(seed, Mode::Event, lod, 1);
        REQUIRE(event.hashes == polling.hashes);
        REQUIRE(event.traces == polling.traces);
        CHECK(event.updated > 0);
        for (const std::uint32_t threads : thread_counts()) {
            if (threads == 1) continue;
            CAPTURE(threads);
            for (const Mode mode : {Mode::Polling, Mode::Event}) {
                CAPTURE(mode == Mode::Event);
                const Outcome& one = mode == Mode::Event ? event : polling;
                const Outcome many = run_arena(seed, mode, lod, threads);
                check_same_run(many, one);
            }
        }
    }
}

namespace {

/// A world of `agents` agents of one tree whose action is `spec`, on `threads` threads (small frames
/// in parallel too).
struct OneActionWorld {
    World world;
    Tree tree;
    std::vector<AgentHandle> handles;
    std::vector<test::TraceRecorder> traces;
    OneActionWorld(ActionSpec spec, std::uint32_t threads, int agents, SharedBlackboard** team = nullptr)
        : world(WorldOptions{.threads = threads}), traces(static_cast<std::size_t>(agents)) {
        if (threads > 1) WorldParallelTestAccess::set_grain(world, 2);
        static Registry registry;  // (one per test process is enough: the action is given per tree)
        SharedBlackboard& shared = world.create_shared("team");
        if (team) *team = &shared;
        tree = TreeBuilder("one-action", registry).shared_key<int>("team", "last").sequence().action("Act", std::move(spec)).back().end();
        for (int i = 0; i < agents; ++i)
            handles.push_back(world.spawn(tree, {.listener = &traces[static_cast<std::size_t>(i)], .shared = {{"team", &shared}}}));
    }
};

}  // namespace

TEST_CASE("world parallel: shared blackboard writes are applied after the ticks in slot order: the last agent's write wins") {
    for (const std::uint32_t threads : thread_counts()) {
        CAPTURE(threads);
        ActionSpec spec;
        spec.ports = {port<int>("team.last")};
        std::vector<int> seen(16, -1);
        spec.update = [&seen](ActionContext& ctx) {
            // Reads the published value (last frame's), writes its own slot number.
            seen[ctx.agent_handle().index] = ctx.in<int>("team.last");
            ctx.out("team.last", static_cast<int>(ctx.agent_handle().index) * 10);
            return Status::Running;
        };
        SharedBlackboard* team = nullptr;
        OneActionWorld w(spec, threads, 16, &team);
        w.world.step(50ms);
        CHECK(team->pending<int>("last") == 150);  // agent 15 wrote last
        CHECK(team->get<int>("last") == 0);                 // published at the next step
        CHECK(seen == std::vector<int>(16, 0));
        w.world.step(50ms);
        CHECK(team->get<int>("last") == 150);
        CHECK(seen == std::vector<int>(16, 150));
    }
}

TEST_CASE("world parallel: an action reaching beyond its agent gets a UsageError, the node fails, the world goes on") {
    std::vector<std::string> messages;
    for (const std::string call : {"spawn", "despawn", "resume", "abort", "other agent", "own agent", "set_tick_interval"}) {
        CAPTURE(call);
        World* world_ptr = nullptr;
        std::vector<AgentHandle>* handles = nullptr;
        ActionSpec spec;
        spec.update = [&](ActionContext& ctx) {
            World& world = *world_ptr;
            const AgentHandle self = ctx.agent_handle();
            const AgentHandle other{(self.index + 1) % 4, 1};
            if (call == "spawn") world.spawn(ctx.agent().tree());
            if (call == "despawn") world.despawn(self);
            if (call == "resume") world.resume(ResumeHandle{}, Status::Success);
            if (call == "abort") world.abort(other);
            if (call == "other agent") world.at(other);
            if (call == "own agent") CHECK(&world.at(self) == &ctx.agent());
            if (call == "set_tick_interval") world.set_tick_interval(self, 2);
            return Status::Running;
        };
        OneActionWorld w(spec, 2, 4);
        world_ptr = &w.world;
        handles = &w.handles;
        static_cast<void>(handles);
        w.world.step(50ms);
        CHECK(w.world.size() == 4);
        for (auto& t : w.traces) {
            if (call == "own agent") {
                CHECK(t.all(0) == "0:I 1:I 1:U");
                continue;
            }
            CHECK(t.all(0) == "0:I 1:I 1:E 1:U 1:T(Failure) 0:T(Failure)");
        }
        if (call != "own agent") {
            REQUIRE(w.traces[0].entries.at(2).event.kind == TraceKind::Error);
            const std::string message = w.traces[0].entries[2].message;
            CHECK(message.find("while the world ticks its agents on 2 threads: an action may touch only its own agent then "
                               "(docs/world.md, \"Threads\")") != std::string::npos);
            messages.push_back(message.substr(0, message.find(" while")));
        }
        w.world.step(50ms);  // still usable
    }
    CHECK(messages == std::vector<std::string>{"World::spawn()", "World::despawn()", "World::resume()", "World::abort()",
                                               "World::agent() of another agent", "World::set_tick_interval()"});
}

TEST_CASE("world parallel: ChangeBus slots and world listeners are called on the thread that called step(), in slot order") {
    for (const std::uint32_t threads : thread_counts()) {
        CAPTURE(threads);
        ActionSpec spec;
        spec.update = [](ActionContext& ctx) {
            ctx.blackboard().set("mine", static_cast<int>(ctx.tick()) + 1);
            return Status::Running;
        };
        static Registry registry;
        World world(WorldOptions{.threads = threads});
        if (threads > 1) WorldParallelTestAccess::set_grain(world, 2);
        const Tree tree = TreeBuilder("writer", registry).key<int>("mine").sequence().action("Write", spec).back().end();
        std::vector<AgentHandle> handles;
        for (int i = 0; i < 32; ++i) handles.push_back(world.spawn(tree));
        std::vector<std::uint32_t> order;
        bool other_thread = false;
        const auto caller = std::this_thread::get_id();
        // (A slot runs inside the writing agent's tick, under the same rule: it may not ask the world
        // for other agents then. The agents' addresses are taken before.)
        std::vector<const Agent*> agents;
        for (const AgentHandle h : handles) agents.push_back(world.agent(h));
        boost::signals2::scoped_connection c = world.bus().subscribe([&](const BlackboardChange& change) {
            other_thread = other_thread || std::this_thread::get_id() != caller;
            order.push_back(static_cast<std::uint32_t>(std::find(agents.begin(), agents.end(), change.agent) - agents.begin()));
        });
        world.step(50ms);  // the bus has a slot
        CHECK_FALSE(other_thread);
        std::vector<std::uint32_t> slots(32);
        for (std::uint32_t i = 0; i < 32; ++i) slots[i] = i;
        CHECK(order == slots);
        c.disconnect();
        struct Listener : WorldListener {
            std::thread::id caller;
            bool other_thread = false;
            int events = 0;
            void on_event(AgentHandle, const Agent&, const TraceEvent&) override {
                other_thread = other_thread || std::this_thread::get_id() != caller;
                ++events;
            }
        } listener;
        listener.caller = caller;
        world.add_listener(&listener);
        world.step(50ms);  // a world listener
        CHECK_FALSE(listener.other_thread);
        CHECK(listener.events == 32);  // Patrol's update
        world.remove_listener(&listener);
    }
}

TEST_CASE("world parallel: set_threads is refused for 0, more than 256 and during a frame; threads() reports it") {
    World world;
    CHECK(world.threads() == 1);
    CHECK_THROWS_WITH_AS(world.set_threads(0), "World::set_threads(0): the thread count must be 1 to 256", UsageError);
    CHECK_THROWS_WITH_AS(world.set_threads(257), "World::set_threads(257): the thread count must be 1 to 256", UsageError);
    static Registry registry;
    std::string error;
    ActionSpec spec;
    spec.update = [&](ActionContext&) {
        try {
            world.set_threads(2);
        } catch (const UsageError& e) {
            error = e.what();
        }
        return Status::Running;
    };
    world.spawn(TreeBuilder("t", registry).sequence().action("A", spec).back().end());
    world.step(50ms);
    CHECK(error == "World::set_threads() during a frame: change it between frames");
    world.set_threads(4);
    CHECK(world.threads() == 4);
    world.step(50ms);
    world.set_threads(1);
    CHECK(world.threads() == 1);
    world.step(50ms);
}

TEST_CASE("world parallel: phase timing is off by default; on, a step's phases add up to at most its wall time") {
    for (const std::uint32_t threads : thread_counts()) {
        CAPTURE(threads);
        ActionSpec spec;
        spec.update = [](ActionContext&) { return Status::Running; };
        OneActionWorld w(spec, threads, 16);
        const auto total = [](const StepPhaseTimes& t) { return t.before + t.choose + t.tick + t.apply + t.after; };
        w.world.step(50ms);
        CHECK(total(w.world.last_phase_times()) == std::chrono::nanoseconds{0});  // off: nothing measured
        w.world.set_phase_timing(true);
        const FrameMetrics m = w.world.step(50ms);
        const StepPhaseTimes& t = w.world.last_phase_times();
        CHECK(m.agents_stepped == 16);
        CHECK(total(t) <= m.wall_time);
        if (threads == 1) {
            // One thread chooses, ticks and schedules in one loop: all of it is `tick`.
            CHECK(t.choose == std::chrono::nanoseconds{0});
            CHECK(t.apply == std::chrono::nanoseconds{0});
        }
        w.world.set_phase_timing(false);
        w.world.step(50ms);
        CHECK(total(w.world.last_phase_times()) == std::chrono::nanoseconds{0});
    }
}

namespace {

/// What a frame of the shared-writes world left: the blackboards' published and pending values, the
/// changes their publishes emitted so far, the state hash and the world's snapshot (hashed).
struct SharedWritesFrame {
    int team_published = 0, team_pending = 0, early_published = 0, early_pending = 0;
    std::string name_published, name_pending;
    int team_changes = 0, early_changes = 0;
    std::uint64_t hash = 0, snapshot = 0, stepped = 0, updated = 0;
    bool operator==(const SharedWritesFrame&) const = default;
};

/// 40 agents writing the same shared keys in the same frames, by a fixed script (the agent's slot and
/// the frame say what each writes), on `threads` threads with 2 agents per task: consecutive writes
/// to one key, within a task and across tasks, writes of the pending value, an agent writing a key
/// twice, and writes to a blackboard whose pending value differs from its published one during the
/// phase (a change slot of `trigger` writes `early`, which publishes before it: the write waits for
/// the next frame).
std::vector<SharedWritesFrame> run_shared_writes(std::uint32_t threads) {
    static Registry registry;
    World world(WorldOptions{.threads = threads});
    if (threads > 1) WorldParallelTestAccess::set_grain(world, 2);
    SharedBlackboard& early = world.create_shared("early");
    SharedBlackboard& team = world.create_shared("team");
    SharedBlackboard& trigger = world.create_shared("trigger");
    early.declare<int>("v", 0);
    team.declare<int>("v", 0).declare<std::string>("name", std::string("none"));
    trigger.declare<bool>("go", false);
    int team_changes = 0, early_changes = 0;
    team.changes().connect([&](const SharedBlackboard&, KeyId) { ++team_changes; });
    early.changes().connect([&](const SharedBlackboard&, KeyId) { ++early_changes; });
    trigger.changes().connect([&](const SharedBlackboard&, KeyId) { early.set("v", 9); });
    ActionSpec spec;
    spec.ports = {port<int>("team.v"), port<std::string>("team.name"), port<int>("early.v")};
    spec.update = [](ActionContext& ctx) {
        const int i = static_cast<int>(ctx.agent_handle().index);
        switch (ctx.tick()) {
        case 0: ctx.out("team.v", 1); break;  // all the same value: 0 -> 1
        case 1: ctx.out("team.v", 1); break;  // all the pending value: no change
        case 2:                               // ascending: the last agent's wins
            ctx.out("team.v", i);
            ctx.out("team.name", std::string("agent-") + std::to_string(i));
            break;
        case 3:  // all but the last change it, the last writes it back (and agent 20 writes twice)
            ctx.out("team.v", i == 39 ? 39 : 100 + i);
            if (i == 20) ctx.out("team.v", 8);
            ctx.out("team.name", std::string(i == 39 ? "agent-39" : "other"));
            break;
        case 4: ctx.out("team.v", i % 2 == 0 ? 5 : 39); break;  // the last (odd) writes the pending value
        case 5:
            if (i == 0) ctx.out("team.v", 3);
            break;
        case 6:  // early's pending value is 9 here (the trigger's slot), its published one 0
            if (i == 5) ctx.out("early.v", 9);
            if (i == 6) ctx.out("early.v", 0);
            break;
        case 7:  // early's pending value is 9 again: a write of 9 after a write of 0 must count
            if (i == 6) ctx.out("early.v", 0);
            if (i == 30) ctx.out("early.v", 9);
            break;
        default: break;
        }
        return Status::Running;
    };
    const Tree tree = TreeBuilder("writers", registry)
                          .shared_key<int>("team", "v")
                          .shared_key<std::string>("team", "name", std::string("none"))
                          .shared_key<int>("early", "v")
                          .sequence()
                          .action("Write", spec)
                          .back()
                          .end();
    for (int i = 0; i < 40; ++i) world.spawn(tree, {.shared = {{"team", &team}, {"early", &early}}});
    std::vector<SharedWritesFrame> frames;
    for (int f = 0; f < 10; ++f) {
        if (f == 6) trigger.set("go", true);
        if (f == 7) trigger.set("go", false);
        const FrameMetrics m = world.step(50ms);
        SharedWritesFrame out;
        out.team_published = team.get<int>("v");
        out.team_pending = team.pending<int>("v");
        out.early_published = early.get<int>("v");
        out.early_pending = early.pending<int>("v");
        out.name_published = team.get<std::string>("name");
        out.name_pending = team.pending<std::string>("name");
        out.team_changes = team_changes;
        out.early_changes = early_changes;
        out.hash = world.state_hash();
        const std::vector<std::byte> bytes = save_world(world);
        detail::Fnv1a h;
        h.bytes(bytes.data(), bytes.size());
        out.snapshot = h.value();
        out.stepped = m.agents_stepped;
        out.updated = m.behaviors_updated;
        frames.push_back(out);
    }
    return frames;
}

}  // namespace

TEST_CASE("world parallel: many agents writing one shared key in a frame: the last write in slot order wins, writes of the pending value change nothing") {
    const std::vector<SharedWritesFrame> one = run_shared_writes(1);
    // The script's outcome with one thread (an agent's tick number is the world's frame number; each
    // line is the value after each of the 10 frames).
    std::vector<int> team_pending, team_published, team_changes, early_pending, early_published, early_changes;
    std::vector<std::string> name_pending;
    for (const SharedWritesFrame& f : one) {
        team_pending.push_back(f.team_pending);
        team_published.push_back(f.team_published);
        team_changes.push_back(f.team_changes);
        early_pending.push_back(f.early_pending);
        early_published.push_back(f.early_published);
        early_changes.push_back(f.early_changes);
        name_pending.push_back(f.name_pending);
    }
    CHECK(team_pending == std::vector<int>{1, 1, 39, 39, 39, 3, 3, 3, 3, 3});
    CHECK(team_published == std::vector<int>{0, 1, 1, 39, 39, 39, 3, 3, 3, 3});
    CHECK(team_changes == std::vector<int>{0, 1, 1, 3, 3, 3, 4, 4, 4, 4});  // frame 3: v and name
    CHECK(name_pending == std::vector<std::string>{"none", "none", "agent-39", "agent-39", "agent-39", "agent-39", "agent-39",
                                                   "agent-39", "agent-39", "agent-39"});
    CHECK(early_pending == std::vector<int>{0, 0, 0, 0, 0, 0, 0, 9, 9, 9});
    CHECK(early_published == std::vector<int>{0, 0, 0, 0, 0, 0, 0, 0, 9, 9});
    CHECK(early_changes == std::vector<int>{0, 0, 0, 0, 0, 0, 0, 0, 1, 1});
    for (const std::uint32_t threads : thread_counts()) {
        if (threads == 1) continue;
        CAPTURE(threads);
        const std::vector<SharedWritesFrame> many = run_shared_writes(threads);
        REQUIRE(many.size() == one.size());
        for (std::size_t f = 0; f < one.size(); ++f) {
            CAPTURE(f);
            CHECK(many[f] == one[f]);
        }
    }
}

namespace {

/// What an agent of the wake worlds does: `busy` agents run Work for ever (and at `poke_tick` write
/// the `poked` key of each agent in `poke`, at `shout_tick` their team's alarm); the others finish
/// Work at tick `work_until` and then sleep in a suspended action that nobody resumes, until a guard
/// (their own `poked`, the team's alarm) wakes them to Respond.
struct WakeRole {
    bool busy = false;
    std::uint64_t work_until = 0;
    std::uint64_t poke_tick = ~std::uint64_t{0}, shout_tick = ~std::uint64_t{0};
    std::vector<Agent*> poke;
};

struct WakeWorld {
    World world;
    Tree tree;
    std::vector<WakeRole> roles;
    std::vector<AgentHandle> handles;
    std::vector<test::TraceRecorder> traces;
    std::vector<std::uint64_t> hashes;  // after every frame

    WakeWorld(std::uint32_t threads, std::size_t agents) : world(WorldOptions{.threads = threads}), roles(agents), traces(agents) {
        if (threads > 1) WorldParallelTestAccess::set_grain(world, 2);  // tasks of 2 slots
        static const Registry registry = [] {
            Registry r;
            ActionSpec work;
            work.ports = {port<bool>("team.alarm")};
            work.update = [](ActionContext& ctx) {
                const WakeRole& role = ctx.user<WakeRole>();
                if (ctx.tick() == role.poke_tick)
                    for (Agent* other : role.poke) other->blackboard().set("poked", true);  // breaks the rule on purpose
                if (ctx.tick() == role.shout_tick) ctx.out("team.alarm", true);
                return role.busy || ctx.tick() < role.work_until ? Status::Running : Status::Success;
            };
            r.add_action("Work", work);
            r.add_action("Respond", [](ActionContext&) { return Status::Running; });
            r.add_latent_action("Sleep", [](ActionContext&, const ResumeHandle&) {});
            return r;
        }();
        SharedBlackboard& team = world.create_shared("team");
        tree = TreeBuilder("waker", registry)
                   .key<bool>("poked")
                   .shared_key<bool>("team", "alarm")
                   .active_selector()
                       .sequence().label("alarm").check("team.alarm", true).action("Respond").back()
                       .sequence().label("poked").check("poked", true).action("Respond").back()
                       .sequence().label("work").action("Work").action("Sleep").back()
                   .back()
                   .end();
        for (std::size_t i = 0; i < agents; ++i)
            handles.push_back(world.spawn(tree, {.listener = &traces[i], .user = &roles[i], .shared = {{"team", &team}}}));
    }
    Agent* agent(std::size_t i) { return world.agent(handles[i]); }
    void run(int frames) {
        for (int f = 0; f < frames; ++f) {
            world.step(50ms);
            hashes.push_back(world.state_hash());
        }
    }
};

}  // namespace

TEST_CASE("world parallel: wakes across task ranges: a shared write wakes other tasks' agents next frame, a direct wake after the phase") {
    // 64 agents in tasks of 2 slots; 8 of them busy (slots 5, 13, ..., 61), the rest asleep from their
    // first tick. Slot 45's agent writes the `poked` key of slot 2 (asleep, an earlier slot) and of slot
    // 60 (asleep, a later slot) at tick 2, breaking the threading rule (the two sleep in other tasks'
    // ranges, so no tick races with the writes), and its team's alarm at tick 4. The alarm is
    // published at the next step and wakes every agent, whatever task ticks it, in frame 5. Slot 2 is
    // woken after its slot's turn at any thread count: it responds in frame 3. Slot 60 is stepped in
    // frame 2 by one thread (a later slot woken during the frame); with several the wake waits for the
    // end of the phase, so it responds in frame 3 (docs/world.md, "Threads").
    const auto run = [](std::uint32_t threads) {
        auto w = std::make_unique<WakeWorld>(threads, 64);
        for (std::size_t i = 5; i < 64; i += 8) w->roles[i].busy = true;
        w->roles[45].poke = {w->agent(2), w->agent(60)};
        w->roles[45].poke_tick = 2;
        w->roles[45].shout_tick = 4;
        w->run(8);
        return w;
    };
    const auto one = run(1);
    const auto lifecycle_of = [](const WakeWorld& w, std::size_t i) { return lifecycle(w.traces[i]); };
    // Nodes: 0 the active selector; 1 "alarm", 3 its Respond; 4 "poked", 6 its Respond; 7 "work", 8
    // Work, 9 Sleep.
    const std::string asleep = "0:0:I 0:7:I 0:8:I 0:8:U 0:8:T(Success) 0:9:I ";
    const std::string alarm = "5:6:T(Aborted) 5:4:T(Aborted) 5:1:I 5:3:I 5:3:U 6:3:U 7:3:U ";
    CHECK(lifecycle_of(*one, 2) == asleep + "3:9:T(Aborted) 3:7:T(Aborted) 3:4:I 3:6:I 3:6:U 4:6:U " + alarm);
    CHECK(lifecycle_of(*one, 60) == asleep + "2:9:T(Aborted) 2:7:T(Aborted) 2:4:I 2:6:I 2:6:U 3:6:U 4:6:U " + alarm);
    CHECK(lifecycle_of(*one, 7) == asleep + "5:9:T(Aborted) 5:7:T(Aborted) 5:1:I 5:3:I 5:3:U 6:3:U 7:3:U ");
    for (const std::uint32_t threads : thread_counts()) {
        if (threads == 1) continue;
        CAPTURE(threads);
        const auto many = run(threads);
        for (std::size_t i = 0; i < 64; ++i) {
            CAPTURE(i);
            if (i == 60) CHECK(lifecycle_of(*many, i) == asleep + "3:9:T(Aborted) 3:7:T(Aborted) 3:4:I 3:6:I 3:6:U 4:6:U " + alarm);
            else CHECK(lifecycle_of(*many, i) == lifecycle_of(*one, i));
        }
        // From frame 3 on, slot 60 is where it is with one thread: the same world.
        CHECK(std::vector<std::uint64_t>(many->hashes.begin() + 3, many->hashes.end()) ==
              std::vector<std::uint64_t>(one->hashes.begin() + 3, one->hashes.end()));
    }
}

TEST_CASE("world parallel: an agent woken by another's tick after its own tick put it to sleep stays awake (wakes are applied after sleeps)") {
    // Slot 0 finishes Work at tick 2 and goes to sleep (Sleep suspends); slot 1, later in the same frame,
    // writes slot 0's `poked` key. With one thread the wake comes after slot 0's sleep and slot 0
    // responds in frame 3; with several, the apply must put slot 0 to sleep first and then wake it.
    // (Three agents: the phase runs on the calling thread, so that the write does not race with slot
    // 0's tick.)
    for (const std::uint32_t threads : thread_counts()) {
        CAPTURE(threads);
        WakeWorld w(threads, 3);
        w.roles[0].work_until = 2;
        w.roles[1].busy = true;
        w.roles[2].busy = true;
        w.roles[1].poke = {w.agent(0)};
        w.roles[1].poke_tick = 2;
        w.run(5);
        // (Nodes as in the case above.)
        CHECK(lifecycle(w.traces[0]) == "0:0:I 0:7:I 0:8:I 0:8:U 1:8:U 2:8:U 2:8:T(Success) 2:9:I 3:9:T(Aborted) 3:7:T(Aborted) 3:4:I 3:6:I 3:6:U 4:6:U ");
    }
}

namespace {

/// Squads of guards that fall asleep at once (Work, then a Sleep that never ends) and respond when
/// their squad's alarm or the whole camp's alarm is raised: `squads` squads of `per_squad` agents in
/// consecutive slots, each bound to its squad's blackboard and to one "camp" blackboard all share.
/// Default task sizes (256 slots): a squad's alarm is routed by the tasks whose ranges hold its
/// slots; the camp's alarm spreads over every slot and is routed before the phase.
struct AlarmWorld {
    World world;
    Tree tree;
    std::vector<SharedBlackboard*> squads;
    SharedBlackboard* camp;
    std::vector<test::TraceRecorder> traces;
    std::vector<AgentHandle> handles;   // slot order
    std::vector<std::uint64_t> hashes;  // after every frame
    std::uint64_t stepped = 0, guards = 0, events = 0;

    AlarmWorld(std::uint32_t threads, int squad_count, int per_squad)
        : world(WorldOptions{.threads = threads}), traces(static_cast<std::size_t>(squad_count * per_squad)) {
        static const Registry registry = [] {
            Registry r;
            r.add_action("Work", [](ActionContext&) { return Status::Success; });
            r.add_action("Respond", [](ActionContext&) { return Status::Running; });
            r.add_latent_action("Sleep", [](ActionContext&, const ResumeHandle&) {});
            return r;
        }();
        camp = &world.create_shared("camp");
        for (int s = 0; s < squad_count; ++s) squads.push_back(&world.create_shared("squad-" + std::to_string(s)));
        tree = TreeBuilder("alarmed", registry)
                   .shared_key<bool>("camp", "alarm")
                   .shared_key<bool>("squad", "alarm")
                   .active_selector()
                       .sequence().check("camp.alarm", true).action("Respond").back()
                       .sequence().check("squad.alarm", true).action("Respond").back()
                       .sequence().action("Work").action("Sleep").back()
                   .back()
                   .end();
        for (int i = 0; i < squad_count * per_squad; ++i)
            handles.push_back(world.spawn(tree, {.listener = &traces[static_cast<std::size_t>(i)],
                               .shared = {{"camp", camp}, {"squad", squads[static_cast<std::size_t>(i / per_squad)]}}}));
    }
    void step() {
        const FrameMetrics m = world.step(50ms);
        stepped += m.agents_stepped;
        guards += m.guards_evaluated;
        events += m.events_handled;
        hashes.push_back(world.state_hash());
        CHECK(WorldParallelTestAccess::awake_set_errors(world) == "");  // (every agent falls asleep at once in frame 0)
    }
};

}  // namespace

TEST_CASE("world parallel: published squad alarms are routed by the tasks into their own agents, which respond in the frame of the publish") {
    // 24 squads of 220 guards (5,280 slots). Frame 1: squad 3's alarm (220 agents woken: few enough
    // that the phase runs on the calling thread). Frame 2: squads 5, 6, 7 and 20 (880 woken, on the
    // threads; squads 5-7 lie across task ranges). Frame 3: squad 3's alarm ends, squad 21's and
    // the camp's alarm rise together (the camp's subscribers spread over every slot: this frame
    // routes before the phase). Frame 5: the camp's alarm ends. An agent of slot i is bound to squad
    // i / 220.
    const auto run = [](std::uint32_t threads) {
        auto w = std::make_unique<AlarmWorld>(threads, 24, 220);
        for (int f = 0; f < 7; ++f) {
            if (f == 1) w->squads[3]->set("alarm", true);
            if (f == 2)
                for (const int s : {5, 6, 7, 20}) w->squads[static_cast<std::size_t>(s)]->set("alarm", true);
            if (f == 3) {
                w->squads[3]->set("alarm", false);
                w->squads[21]->set("alarm", true);
                w->camp->set("alarm", true);
            }
            if (f == 5) w->camp->set("alarm", false);
            w->step();
        }
        return w;
    };
    // Nodes: 0 the active selector; 1 the camp's branch, 3 its Respond; 4 the squad's branch, 6 its
    // Respond; 7 the work branch, 8 Work, 9 Sleep.
    const std::string asleep = "0:0:I 0:7:I 0:8:I 0:8:U 0:8:T(Success) 0:9:I ";
    // (A running branch is not left when its own guard turns false: only a branch before it interrupts.)
    const std::string camp = "3:1:I 3:3:I 3:3:U 4:3:U 5:3:U 6:3:U ";
    for (const std::uint32_t threads : thread_counts()) {
        CAPTURE(threads);
        const auto w = run(threads);
        // A guard of squad 3 (slot 700), of squad 6 (slot 1,400, in the middle of a task's range), of
        // squad 21 (slot 4,700) and of a squad never alarmed (slot 0).
        CHECK(lifecycle(w->traces[700]) == asleep + "1:9:T(Aborted) 1:7:T(Aborted) 1:4:I 1:6:I 1:6:U 2:6:U 3:6:T(Aborted) 3:4:T(Aborted) " + camp);
        CHECK(lifecycle(w->traces[1400]) == asleep + "2:9:T(Aborted) 2:7:T(Aborted) 2:4:I 2:6:I 2:6:U 3:6:T(Aborted) 3:4:T(Aborted) " + camp);
        CHECK(lifecycle(w->traces[4700]) == asleep + "3:9:T(Aborted) 3:7:T(Aborted) " + camp);
        CHECK(lifecycle(w->traces[0]) == asleep + "3:9:T(Aborted) 3:7:T(Aborted) " + camp);
        if (threads == 1) continue;
        const auto one = run(1);
        CHECK(w->hashes == one->hashes);
        CHECK(w->stepped == one->stepped);
        CHECK(w->guards == one->guards);
        CHECK(w->events == one->events);
        for (std::size_t i = 0; i < w->traces.size(); i += 37) {
            CAPTURE(i);
            CHECK(lifecycle(w->traces[i]) == lifecycle(one->traces[i]));
        }
    }
}

TEST_CASE("world parallel: an agent its task's routing wakes and that falls asleep again in the same tick ends the frame asleep") {
    // 1,024 agents in 4 squads of 256 (default ranges: whole words of awake bits), asleep in a Sleep
    // that never ends, each watching whether its squad's "mode" is 2. Frame 1 sets every squad's mode
    // to 1: the tasks route it (the agents were asleep: woken by the routing, their bits set by the
    // apply), the guards fail again and the agents go back to sleep in that tick. Frame 2 steps none.
    // Frame 3 sets squad 2's mode to 2: its 256 agents switch to Respond and stay awake.
    static const Registry registry = [] {
        Registry r;
        r.add_action("Respond", [](ActionContext&) { return Status::Running; });
        r.add_latent_action("Sleep", [](ActionContext&, const ResumeHandle&) {});
        return r;
    }();
    struct Run {
        std::vector<std::uint64_t> stepped, hashes;
        std::vector<std::string> traces;  // slots 0, 300, 600, 1,023
    };
    const auto run = [](std::uint32_t threads) {
        World world(WorldOptions{.threads = threads});
        std::vector<SharedBlackboard*> squads;
        for (int s = 0; s < 4; ++s) squads.push_back(&world.create_shared("squad-" + std::to_string(s)));
        const Tree tree = TreeBuilder("watchful", registry)
                              .shared_key<int>("squad", "mode")
                              .active_selector()
                                  .sequence().condition(eq("squad.mode", 2)).action("Respond").back()
                                  .action("Sleep")
                              .back()
                              .end();
        std::vector<test::TraceRecorder> traces(1024);
        for (std::size_t i = 0; i < 1024; ++i)
            world.spawn(tree, {.listener = &traces[i], .shared = {{"squad", squads[i / 256]}}});
        Run out;
        for (int f = 0; f < 5; ++f) {
            if (f == 1)
                for (SharedBlackboard* squad : squads) squad->set("mode", 1);
            if (f == 3) squads[2]->set("mode", 2);
            out.stepped.push_back(world.step(50ms).agents_stepped);
            out.hashes.push_back(world.state_hash());
            CHECK(WorldParallelTestAccess::awake_set_errors(world) == "");
        }
        for (const std::size_t i : {0u, 300u, 600u, 1023u}) out.traces.push_back(lifecycle(traces[i]));
        return out;
    };
    const Run one = run(1);
    CHECK(one.stepped == std::vector<std::uint64_t>{1024, 1024, 0, 256, 256});
    // Nodes: 0 the active selector; 1 the sequence, 2 its condition, 3 Respond; 4 Sleep.
    const std::string asleep = "0:0:I 0:4:I ";
    CHECK(one.traces == std::vector<std::string>{asleep, asleep, asleep + "3:4:T(Aborted) 3:1:I 3:3:I 3:3:U 4:3:U ", asleep});
    for (const std::uint32_t threads : thread_counts()) {
        if (threads == 1) continue;
        CAPTURE(threads);
        const Run many = run(threads);
        CHECK(many.stepped == one.stepped);
        CHECK(many.hashes == one.hashes);
        CHECK(many.traces == one.traces);
    }
}

TEST_CASE("world parallel: when a tick throws out of the phase, the published changes the tasks had not routed reach their agents all the same") {
    // Squads 5, 6, 7 and 20 are alarmed in one frame (880 agents: on the threads, routed by the
    // tasks). One guard of squad 5 was ticked by hand ahead of the world's frame, so its tick in the
    // phase throws (docs/world.md: "tick numbers must not go backwards") and the phase ends with some
    // tasks not run. The step throws; every change is then routed on the calling thread, so after the
    // bad guard is despawned the next frame finds every other alarmed guard responding, and every
    // mirror of an alarmed squad holds true, as with one thread.
    for (const std::uint32_t threads : thread_counts()) {
        CAPTURE(threads);
        AlarmWorld w(threads, 24, 220);
        w.step();
        const AgentHandle bad = w.handles[1100];  // squad 5
        detail::EngineAccess::tick_numbered(*w.world.agent(bad), 100, 0ms);
        for (const int s : {5, 6, 7, 20}) w.squads[static_cast<std::size_t>(s)]->set("alarm", true);
        CHECK_THROWS_WITH_AS(w.world.step(50ms), "Agent::tick_numbered(): tick numbers must not go backwards", UsageError);
        CHECK_FALSE(w.world.in_step());
        REQUIRE(w.world.despawn(bad));
        w.step();
        for (std::size_t i = 0; i < w.handles.size(); ++i) {
            if (i == 1100) continue;
            const std::size_t squad = i / 220;
            const bool alarmed = squad == 5 || squad == 6 || squad == 7 || squad == 20;
            const Agent& agent = w.world.at(w.handles[i]);
            const NodeIndex running = alarmed ? NodeIndex{6} : NodeIndex{9};  // the squad's Respond, or Sleep
            if (agent.blackboard().get<bool>("squad.alarm") != alarmed || agent.status(running) != Status::Running) {
                FAIL_CHECK("guard " << i << " of squad " << squad << ": mirror " << agent.blackboard().get<bool>("squad.alarm")
                                    << ", node " << running << " " << std::string(to_string(agent.status(running))));
                break;
            }
        }
    }
}

TEST_CASE("world parallel: a step whose phase throws on the threads finishes its frame (frees, joins) before it throws") {
    // 600 running agents (enough awake for the phase to run on the threads). In frame 1 a change
    // slot of a shared blackboard (run while the step publishes, before the phase) spawns an agent and
    // despawns slot 10; slot 300 was ticked by hand ahead of the world, so its tick throws in the phase.
    // Which other agents the phase ticked depends on the threads; what the frame's end does does not.
    for (const std::uint32_t threads : thread_counts()) {
        CAPTURE(threads);
        std::vector<std::string> log;  // (outlives the world: its end aborts the agents' actions)
        World world(WorldOptions{.threads = threads});
        SharedBlackboard& orders = world.create_shared("orders");
        orders.declare<bool>("go");
        ActionSpec spec = test::running_action();
        spec.on_terminate = [&](ActionContext& ctx, Status s) {
            log.push_back("slot " + std::to_string(ctx.agent_handle().index) + " " + to_string(s));
        };
        const Tree tree = TreeBuilder("runner").action("Run", spec).end();
        std::vector<AgentHandle> h;
        for (int i = 0; i < 600; ++i) h.push_back(world.spawn(tree));
        AgentHandle spawned;
        const auto connection = orders.changes().connect([&](const SharedBlackboard&, KeyId) {
            spawned = world.spawn(tree);
            CHECK(world.despawn(h[10]));
        });
        CHECK(world.step(10ms).agents_stepped == 600);
        orders.set("go", true);
        detail::EngineAccess::tick_numbered(*world.agent(h[300]), 100, 0ms);
        CHECK_THROWS_WITH_AS(world.step(10ms), "Agent::tick_numbered(): tick numbers must not go backwards", UsageError);
        CHECK_FALSE(world.in_step());
        CHECK(world.frame() == 2);
        CHECK(log == std::vector<std::string>{"slot 10 Aborted"});
        CHECK(world.size() == 600);
        REQUIRE(world.agent(spawned) != nullptr);
        CHECK(spawned.index == 600);
        CHECK(world.despawn(h[300]));
        CHECK(log.size() == 2);
        const FrameMetrics m = world.step(10ms);  // frame 2: every live agent (all are running)
        CHECK(m.frame == 2);
        CHECK(m.agents_stepped == 599);
    }
}

TEST_CASE("world parallel: a change slot of a shared blackboard sees the agents' mirrors already updated at any thread count") {
    // Game code on a shared blackboard's changes() runs after the World's own routing, as with one
    // thread: a frame whose publish such a slot hears routes on the calling thread, before the phase.
    for (const std::uint32_t threads : thread_counts()) {
        CAPTURE(threads);
        AlarmWorld w(threads, 4, 200);
        std::vector<int> seen;
        const auto connection = w.squads[2]->changes().connect([&](const SharedBlackboard&, KeyId) {
            seen.push_back(w.world.agent(w.world.handles()[450])->blackboard().get<bool>("squad.alarm") ? 1 : 0);
        });
        w.step();
        w.squads[2]->set("alarm", true);
        w.step();
        w.squads[2]->set("alarm", false);
        w.step();
        CHECK(seen == std::vector<int>{1, 0});
        CHECK(lifecycle(w.traces[450]) == "0:0:I 0:7:I 0:8:I 0:8:U 0:8:T(Success) 0:9:I 1:9:T(Aborted) 1:7:T(Aborted) 1:4:I 1:6:I "
                                          "1:6:U 2:6:U ");
    }
}

TEST_CASE("world parallel: a sparse frame is cut into ranges of about as many awake agents as a dense one's slots, with the same answer") {
    // 8192 agents, ranges of at least 16 slots and about 16 awake agents (the default rule, 256 and
    // 256, made small). The first frame (tick 0) enters every tree (8192 awake: ranges of 16 slots);
    // then only the busy agents, every 64th slot, stay awake: 128 of 8192, so ranges of
    // 8192 * 16 / 128 = 1024 slots. Slot 6400 shouts the team's alarm at tick 5: it is published and
    // routed at the start of tick 6, where every agent responds (8192 awake and 8192 routed: ranges of
    // 16 again), and they stay awake. The traces and the state hash after every frame are the
    // one-thread run's.
    const std::size_t agents = 8192;
    const auto run = [agents](std::uint32_t threads, std::string* grains) {
        auto w = std::make_unique<WakeWorld>(threads, agents);
        if (threads > 1) WorldParallelTestAccess::split_by_awake(w->world, 16, 16);
        for (std::size_t i = 0; i < agents; i += 64) w->roles[i].busy = true;
        w->roles[6400].shout_tick = 5;
        for (int f = 0; f < 8; ++f) {
            w->run(1);
            if (grains) *grains += std::to_string(WorldParallelTestAccess::last_grain(w->world)) + " ";
        }
        return w;
    };
    const auto one = run(1, nullptr);
    for (const std::uint32_t threads : thread_counts()) {
        if (threads == 1) continue;
        CAPTURE(threads);
        std::string grains;  // each frame's
        const auto many = run(threads, &grains);
        CHECK(grains == "16 1024 1024 1024 1024 1024 16 16 ");
        CHECK(many->hashes == one->hashes);
        for (std::size_t i = 0; i < agents; i += 97) {
            CAPTURE(i);
            CHECK(lifecycle(many->traces[i]) == lifecycle(one->traces[i]));
        }
    }
}

namespace {

/// guard_b's world, small (the worker standby's tests): `agents` guards whose Patrol is a latent move,
/// its handle kept in the agent's own Move (the threading rule), stepped on `threads` threads with `options`.
struct MoveWorld {
    struct Move {
        ResumeHandle handle;
        bool pending = false;
    };
    Registry registry;
    Tree tree;
    std::vector<Move> moves;  // per agent
    std::unique_ptr<World> world = std::make_unique<World>();
    MoveWorld(std::uint32_t threads, std::size_t agents, ParallelOptions options) : moves(agents) {
        scenarios::register_fight_actions(registry);
        registry.add_latent_action("Patrol", [](ActionContext& ctx, const ResumeHandle& h) { ctx.user<Move>() = Move{h, true}; });
        tree = scenarios::guard_tree(registry);
        world->set_threads(threads, options);
        for (std::size_t i = 0; i < agents; ++i) world->spawn(tree, {.seed = i, .user = &moves[i]});
    }
    std::size_t pending() const {
        return static_cast<std::size_t>(std::count_if(moves.begin(), moves.end(), [](const Move& m) { return m.pending; }));
    }
    /// The handles of the moves started since the last call, in slot order.
    std::vector<ResumeHandle> take_moves() {
        std::vector<ResumeHandle> due;
        for (Move& m : moves)
            if (std::exchange(m.pending, false)) due.push_back(m.handle);
        return due;
    }
    std::uint64_t hash() const {
        const std::vector<std::byte> bytes = save_world(*world);
        detail::Fnv1a h;
        h.bytes(bytes.data(), bytes.size());
        return h.value();
    }
};

/// Whether every standby task handed to an arena has finished within `limit`.
bool standbys_finish_within(std::chrono::milliseconds limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (detail::standby_counters().unfinished.load() != 0) {
        if (std::chrono::steady_clock::now() > until) return false;
        std::this_thread::yield();
    }
    return true;
}

std::uint64_t standbys_handed() { return detail::standby_counters().handed.load(); }

}  // namespace

TEST_CASE("world parallel: between frames, wakes that make the next frame parallel call the workers; one thread never does") {
    // 1,024 guards on a latent move. A standby of 60 s (only the phase's start can end it within the
    // test's 30 s: a loaded machine may take seconds to run a worker). The resumes of a frame call the workers once, as the awake count reaches 512 (the
    // frame's phase will run on the threads), one standby per worker, and the phase ends them; fewer
    // resumes, one thread, a World set back to one thread and the default options (a standby of 0) call nothing. The state is
    // the one-thread run's after every frame.
    constexpr std::size_t kAgents = 1024;
    const ParallelOptions standby{.worker_standby = std::chrono::seconds(60)};
    std::vector<std::uint64_t> one_thread_hashes;
    std::vector<std::uint32_t> counts = thread_counts();
    counts.push_back(0);  // (2 threads, then back to 1)
    for (const std::uint32_t count : counts) {
        CAPTURE(count);
        const std::uint32_t threads = count == 0 ? 2 : count;
        MoveWorld w(threads, kAgents, standby);
        w.world->step(50ms);  // every guard starts its move and sleeps
        REQUIRE(w.pending() == kAgents);
        if (count == 0) w.world->set_threads(1, standby);
        const std::uint32_t workers = w.world->threads() - 1;
        CHECK(standbys_finish_within(std::chrono::seconds(30)));  // the spawns' call, ended by the first phase
        std::vector<std::uint64_t> hashes;
        // resume_all: 100 (the next frame inline, no call), then 924 (the awake count reaches 1,024).
        std::vector<ResumeHandle> due = w.take_moves();
        const std::uint64_t before = standbys_handed();
        CHECK(w.world->resume_all(std::span(due).first(100), Status::Success) == 100);
        CHECK(standbys_handed() == before);
        CHECK(w.world->resume_all(std::span(due).subspan(100), Status::Success) == kAgents - 100);
        CHECK(standbys_handed() == before + workers);
        w.world->step(50ms);  // the moves end (the phase ends the standbys)
        CHECK(standbys_finish_within(std::chrono::seconds(30)));
        w.world->step(50ms);  // the next moves start
        REQUIRE(w.pending() == kAgents);
        hashes.push_back(w.hash());
        // One resume at a time: the 512th calls the workers, no other does.
        due = w.take_moves();
        for (std::size_t i = 0; i < due.size(); ++i) {
            CHECK(w.world->resume(due[i], Status::Success));
            if (i == 510) CHECK(standbys_handed() == before + workers);
            if (i == 511) CHECK(standbys_handed() == before + 2 * workers);
        }
        CHECK(standbys_handed() == before + 2 * workers);
        w.world->step(50ms);
        CHECK(standbys_finish_within(std::chrono::seconds(30)));
        w.world->step(50ms);
        hashes.push_back(w.hash());
        // The default options (a standby of 0, off): nothing called.
        if (w.world->threads() > 1) w.world->set_threads(threads, ParallelOptions{});
        due = w.take_moves();
        CHECK(w.world->resume_all(due, Status::Success) == kAgents);
        CHECK(standbys_handed() == before + 2 * workers);
        w.world->step(50ms);
        w.world->step(50ms);
        hashes.push_back(w.hash());
        if (count == 1) one_thread_hashes = hashes;
        else CHECK(hashes == one_thread_hashes);
    }
}

TEST_CASE("world parallel: no standby task is left running when the World is destroyed or set back to one thread") {
    // Right after a resume_all that called the workers (a standby of 60 s each), the World goes: its
    // standbys have all finished when its destructor (or set_threads(1)) returns, without waiting for
    // their deadline; one no worker had taken yet included.
    constexpr std::size_t kAgents = 1024;
    const ParallelOptions standby{.worker_standby = std::chrono::seconds(60)};
    for (const std::uint32_t threads : thread_counts()) {
        if (threads == 1) continue;
        CAPTURE(threads);
        for (const bool destroy : {true, false}) {
            CAPTURE(destroy);
            MoveWorld w(threads, kAgents, standby);
            w.world->step(50ms);
            REQUIRE(standbys_finish_within(std::chrono::seconds(30)));
            const std::vector<ResumeHandle> due = w.take_moves();
            const std::uint64_t before = standbys_handed();
            const auto start = std::chrono::steady_clock::now();
            CHECK(w.world->resume_all(due, Status::Success) == kAgents);
            REQUIRE(standbys_handed() == before + threads - 1);
            if (destroy) w.world.reset();
            else w.world->set_threads(1);
            CHECK(detail::standby_counters().unfinished.load() == 0);
            CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));
            if (!destroy) CHECK(w.world->step(50ms).agents_stepped == kAgents);  // the moves end, on one thread
        }
    }
}

namespace {

/// What a run of hinted_move_world gives, frame by frame: what every thread count must give alike.
struct MoveOutcome {
    std::vector<std::uint64_t> snapshots;  // save_world() after every frame, hashed
    std::vector<std::string> metrics;      // each frame's FrameMetrics counters
    std::vector<std::string> traces;       // the traced agents' events (they take the general path)
    std::vector<std::vector<std::uint8_t>> hints;  // the move hints after every frame
    std::size_t frames_on_threads = 0;     // frames whose phase ran on the threads (not on the calling one)
};

/// A world of latent moves whose move hints (World::SlotSchedule::move_hint) send most ticks into the lean move
/// entries (the bench's bursty guard_b, small), with what turns those entries away mixed in: moves
/// resumed with Failure, guards written so that the root's restart fights instead of moving, agents
/// that do not restart, moves under a Timeout (a deadline while they sleep: timers), a despawn with a
/// new agent in the reused slot, and every 50th agent traced (a listener: the general tick). Spawned
/// and driven the same way at every thread count; with several threads the tasks are ranges of
/// `grain` slots (multiples of 64: whole words of awake bits; others split words between tasks).
MoveOutcome run_hinted_move_world(std::uint32_t threads, std::uint32_t grain, Mode mode) {
    constexpr std::size_t kAgents = 1500;
    constexpr int kFrames = 45;
    Registry registry;
    registry.add_latent_action("Walk", [](ActionContext&, const ResumeHandle&) {});
    registry.add_action("Fight", [](ActionContext&) { return Status::Running; });
    const Tree moves = TreeBuilder("moves", registry)
                           .key<bool>("enemy")
                           .active_selector()
                               .sequence().check("enemy").action("Fight").back()
                               .action("Walk")
                           .back()
                           .end();
    const Tree timed = TreeBuilder("timed", registry).key<bool>("enemy").timeout(700ms).action("Walk").back().end();
    World world(WorldOptions{.threads = threads});
    if (threads > 1) WorldParallelTestAccess::set_grain(world, grain);
    std::vector<test::TraceRecorder> recorders(kAgents);
    std::vector<AgentHandle> handles(kAgents);
    const auto spawn = [&](std::size_t i) {
        handles[i] = world.spawn(i % 5 == 4 ? timed : moves, {.mode = mode,
                                                             .seed = i,
                                                             .restart_on_end = i % 7 != 3,
                                                             .listener = i % 50 == 0 ? &recorders[i] : nullptr});
    };
    for (std::size_t i = 0; i < kAgents; ++i) spawn(i);
    MoveOutcome out;
    for (int f = 0; f < kFrames; ++f) {
        std::vector<ResumeHandle> successes;
        for (std::size_t i = 0; i < kAgents; ++i) {
            const std::uint64_t x = mix(7, static_cast<std::uint64_t>(f), i);
            Agent* a = world.agent(handles[i]);
            if (a == nullptr) continue;
            if (x % 23 == 0) a->blackboard().set("enemy", true);
            else if (x % 5 == 0 && a->blackboard().get<bool>("enemy")) a->blackboard().set("enemy", false);
            // Most moves end in bursts (every third frame a third of them), as the bench's do.
            for (const SuspendedAction& s : suspended_actions(*a)) {
                if ((f + i) % 3 == 0 && x % 11 != 0) successes.push_back(s.handle);
                else if (x % 31 == 1) world.resume(s.handle, Status::Failure);
            }
        }
        world.resume_all(successes, Status::Success);
        if (f == 20)
            for (std::size_t i = 1; i < kAgents; i += 41) {
                CHECK(world.despawn(handles[i]));
                spawn(i);  // (joins after the next frame, in the slot freed)
            }
        if (threads > 1) WorldParallelTestAccess::clear_last_grain(world);
        const FrameMetrics m = world.step(50ms);
        if (threads > 1 && WorldParallelTestAccess::last_grain(world) != 0) ++out.frames_on_threads;
        out.metrics.push_back(std::to_string(m.agents_stepped) + " " + std::to_string(m.events_handled) + " " +
                              std::to_string(m.behaviors_updated) + " " + std::to_string(m.guards_evaluated) + " " +
                              std::to_string(m.timers_fired));
        const std::vector<std::byte> bytes = save_world(world);
        detail::Fnv1a h;
        h.bytes(bytes.data(), bytes.size());
        out.snapshots.push_back(h.value());
        out.hints.push_back(WorldParallelTestAccess::move_hints(world));
        CHECK(WorldParallelTestAccess::awake_set_errors(world) == "");
    }
    for (std::size_t i = 0; i < kAgents; i += 50) out.traces.push_back(std::to_string(i) + ": " + lifecycle(recorders[i]));
    return out;
}

}  // namespace

TEST_CASE("world parallel: the tasks take the move entries their hints name and give one thread's frames, hints included") {
    // The serial loop ticks a slot whose move hint is set through that entry (World::step_hinted_slot);
    // a task does the same for the slots of the words it holds whole (tick_move_in_task), and leaves
    // the hints as the serial loop leaves them. In ranges that split words (a grain of 96 or 160) the
    // split words' slots take the general tick and their hints are left alone (they may differ from
    // one thread's then, which changes no result): the snapshots, counts and traces are one thread's.
    for (const Mode mode : {Mode::Event, Mode::Polling}) {
        CAPTURE(mode == Mode::Event);
        const MoveOutcome one = run_hinted_move_world(1, 0, mode);
        for (const std::uint32_t threads : thread_counts()) {
            if (threads == 1) continue;
            CAPTURE(threads);
            for (const std::uint32_t grain : {64u, 128u, 96u, 160u}) {
                CAPTURE(grain);
                const MoveOutcome many = run_hinted_move_world(threads, grain, mode);
                CHECK(many.snapshots == one.snapshots);
                CHECK(many.metrics == one.metrics);
                CHECK(many.traces == one.traces);
                if (grain % 64 == 0) CHECK(many.hints == one.hints);
                CHECK(many.frames_on_threads > 0);
            }
        }
    }
}
