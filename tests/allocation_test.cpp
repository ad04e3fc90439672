// Allocation behaviour and the per-agent memory budget. This file is its own executable
// (ebt_alloc_tests): it replaces every replaceable global operator new/delete with counting versions
// that forward to malloc/free (aligned_alloc for over-aligned requests), so that it stays compatible
// with AddressSanitizer and UndefinedBehaviorSanitizer.
//
// Asserted:
//   - creating an agent makes a small constant number of allocations, whatever the tree's size;
//   - a steady-state tick of a quiet world allocates nothing, in both modes (running actions, waits,
//     suspended actions, and a steady cycle of timers);
//   - blackboard writes without listeners allocate nothing (and neither do the ticks that react to them);
//   - a World whose waiting agents are woken every frame allocates nothing per frame (its timer heap
//     keeps one entry per agent);
//   - the memory budget: the guard tree's agent fits in 256 bytes, 10 more nodes cost <= 160 bytes;
//   - running out of memory while loading XML is a LoadError, whichever allocation fails.
#include "guard_scenario.hpp"
#include "support/both_modes.hpp"
#include "support/trace_recorder.hpp"
#include "support/waiting_world.hpp"

#include <ebt/debug/trace_log.hpp>
#include <ebt/signals.hpp>
#if EBT_HAS_XML
#include <ebt/xml.hpp>
#endif

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <new>
#include <stdexcept>
#include <string>

#include "support/counting_new.hpp"  // this executable's counting operator new/delete

// ---- helpers ----------------------------------------------------------------------------------------------

using namespace ebt;
using namespace std::chrono_literals;

namespace {

template <class F> long long allocations_during(F&& f) {
    const long long before = ebt::test::allocations();
    f();
    return ebt::test::allocations() - before;
}

Registry make_registry() {
    Registry reg;
    for (const char* name : {"Runaway", "Attack", "Patrol", "E1", "E2", "E3", "E4", "E5"})
        reg.add_action(name, test::running_action());
    return reg;
}

// 10 more nodes: Sequence, check, E1, E2, E3, Wait, Repeat, E4, AlwaysSuccess, E5.
void ten_more_nodes(TreeBuilder& b) {
    b.sequence()
        .check("health_low")
        .action("E1")
        .action("E2")
        .action("E3")
        .wait(1s)
        .repeat().action("E4").back()
        .always_success()
        .action("E5")
    .back();
}

/// The seeds' guard tree (11 nodes) with `copies` fight branches of 9 nodes (copies = 6: 56 nodes, ~5x),
/// optionally with ten_more_nodes() before Patrol.
Tree guard_tree(const Registry& reg, int copies = 1, bool extra = false) {
    TreeBuilder b("guard", reg);
    b.key<bool>("enemy_seen").key<bool>("health_low").key<bool>("enemy_dead");
    b.active_selector();
    for (int i = 0; i < copies; ++i) scenarios::add_fight_branch(b);
    if (extra) ten_more_nodes(b);
    b.action("Patrol");
    return b.back().end();
}

}  // namespace

// ---- agent creation -----------------------------------------------------------------------------------------

TEST_CASE("allocations: creating an agent makes a small constant number of allocations") {
    const Registry reg = make_registry();
    const Tree small = guard_tree(reg);
    const Tree big = guard_tree(reg, 6);
    REQUIRE(small.size() == 11);
    REQUIRE(big.size() == 56);
    test::in_both_modes([&](Mode mode) {
        const AgentOptions options{.mode = mode};
        const long long n_small = allocations_during([&] { Agent agent(small, options); });
        const long long n_big = allocations_during([&] { Agent agent(big, options); });
        MESSAGE("agent creation allocations (", std::string(to_string(mode)), "): guard tree ", n_small, ", 56-node tree ", n_big);
        CHECK(n_small == n_big);
        CHECK(n_small >= 1);  // the counter works: the state block is allocated
        CHECK(n_small <= 2);
        // A moved agent keeps its block: no allocation.
        Agent source(small, options);
        const long long n_move = allocations_during([&] { Agent moved(std::move(source)); });
        CHECK(n_move == 0);
    });
}

TEST_CASE("allocations: a std::string key costs no allocation while its values stay short (SSO)") {
    const Registry reg = make_registry();
    auto tree_with = [&](bool string_key) {
        TreeBuilder b("barker", reg);
        b.key<bool>("enemy_seen");
        if (string_key) b.key<std::string>("bark", std::string("quiet"));
        return b.active_selector()
            .sequence().condition(string_key ? eq("bark", "alarm") : Predicate::is("enemy_seen")).action("Attack").back()
            .action("Patrol")
            .back()
            .end();
    };
    const Tree plain = tree_with(false);
    const Tree barker = tree_with(true);
    test::in_both_modes([&](Mode mode) {
        const long long n_plain = allocations_during([&] { Agent agent(plain, {.mode = mode}); });
        const long long n_barker = allocations_during([&] { Agent agent(barker, {.mode = mode}); });
        CHECK(n_barker == n_plain);  // the string is constructed in the block: one allocation in all
        CHECK(n_barker <= 2);
        Agent agent(barker, {.mode = mode});
        agent.tick(16ms);
        Blackboard& bb = agent.blackboard();
        const Key<std::string> bark = bb.key<std::string>("bark");
        const std::string alarm = "alarm", quiet = "quiet", longer = "a bark longer than fifteen characters";
        const long long short_writes = allocations_during([&] {
            for (int i = 0; i < 50; ++i) {
                bb.set(bark, i % 2 ? quiet : alarm);  // changes, each waking the guard
                agent.tick(16ms);
            }
        });
        CHECK(short_writes == 0);
        // A long value needs the heap once: the first write grows the buffer, later ones reuse it.
        CHECK(allocations_during([&] { bb.set(bark, longer); }) == 1);
        CHECK(allocations_during([&] { bb.set(bark, alarm); bb.set(bark, longer); }) == 0);
    });
}

// ---- steady state -------------------------------------------------------------------------------------------

TEST_CASE("allocations: a steady-state tick of a quiet world allocates nothing") {
    const Registry reg = make_registry();
    const Tree tree = guard_tree(reg);
    struct Scenario {
        const char* name;
        bool enemy_seen, health_low;
    };
    const Scenario scenarios[] = {{"patrol", false, false}, {"attack", true, false}, {"runaway", true, true}};
    for (const Scenario& sc : scenarios) {
        test::in_both_modes([&](Mode mode) {
            CAPTURE(std::string(sc.name));
            Agent agent(tree, {.mode = mode});
            agent.blackboard().set("enemy_seen", sc.enemy_seen);
            agent.blackboard().set("health_low", sc.health_low);
            for (int i = 0; i < 5; ++i) agent.tick(16ms);  // warm up
            REQUIRE(agent.status() == Status::Running);
            const long long n = allocations_during([&] {
                for (int i = 0; i < 200; ++i) agent.tick(16ms);
            });
            CHECK(n == 0);
            CHECK(agent.status() == Status::Running);
        });
    }
}

TEST_CASE("allocations: a quiet tick with waits and suspended actions allocates nothing") {
    ResumeHandle handle;
    ActionSpec sleeper;
    sleeper.on_initialize = [&handle](ActionContext& ctx) { handle = ctx.suspend(); };
    sleeper.update = [](ActionContext&) { return Status::Running; };
    ActionSpec counter = test::finishing_action(1000000, Status::Success);
    const Tree tree = TreeBuilder("waiting")
                          .key<bool>("k")
                          .parallel(Policy::RequireAll, Policy::RequireAll)
                              .wait(1h)
                              .action("Sleeper", sleeper)
                              .action("Sleeper2", sleeper)
                              .delay(1h).action("Late", test::running_action()).back()
                              .timeout(1h).action("Counter", counter).back()
                              .sequence().check("k", false).action("Runner", test::running_action()).back()
                          .back()
                          .end();
    test::in_both_modes([&](Mode mode) {
        Agent agent(tree, {.mode = mode});
        for (int i = 0; i < 5; ++i) agent.tick(16ms);
        REQUIRE(handle.valid());
        const long long n = allocations_during([&] {
            for (int i = 0; i < 200; ++i) agent.tick(16ms);
        });
        CHECK(n == 0);
        // Resuming and the tick that ends the suspended action allocate nothing either.
        const long long r = allocations_during([&] {
            agent.resume(handle, Status::Success);
            agent.tick(16ms);
            agent.tick(16ms);
        });
        CHECK(r == 0);
    });
}

TEST_CASE("allocations: a steady cycle of short waits and finishing actions allocates nothing") {
    // Every few ticks nodes end and start again: timers re-armed, nodes entered and terminated.
    const Tree tree = TreeBuilder("cycle")
                          .repeat()
                              .sequence()
                                  .wait(50ms)
                                  .action("Work", test::finishing_action(3, Status::Success))
                                  .selector()
                                      .always_failure()
                                      .always_success()
                                  .back()
                              .back()
                          .back()
                          .end();
    test::in_both_modes([&](Mode mode) {
        Agent agent(tree, {.mode = mode});
        for (int i = 0; i < 20; ++i) agent.tick(16ms);
        const AgentStats before = agent.stats();
        const long long n = allocations_during([&] {
            for (int i = 0; i < 300; ++i) agent.tick(16ms);
        });
        CHECK(n == 0);
        CHECK(agent.stats().timers_fired > before.timers_fired);  // the cycle really ran
    });
}

TEST_CASE("allocations: completed latent moves and the restarts after them allocate nothing") {
    // guard_b's transition (bench/transitions_bench.cpp, "move"): Patrol is a latent move; each round
    // resumes it with Success, the next tick ends Patrol and the root, and the one after restarts the
    // root (its guard evaluated, Patrol entered and suspended again, a new handle handed out).
    ResumeHandle move;
    int moves_started = 0;
    Registry reg;
    scenarios::register_fight_actions(reg);
    reg.add_latent_action("Patrol", [&](ActionContext&, const ResumeHandle& h) {
        move = h;
        ++moves_started;
    });
    const Tree tree = scenarios::guard_tree(reg);
    test::in_both_modes([&](Mode mode) {
        Agent agent(tree, {.mode = mode});
        for (int i = 0; i < 3; ++i) {  // warm up: a first move completed
            agent.tick(16ms);
            if (i == 0) agent.resume(move, Status::Success);
        }
        const int started_before = moves_started;
        const long long n = allocations_during([&] {
            for (int i = 0; i < 100; ++i) {
                REQUIRE(agent.resume(move, Status::Success));
                CHECK(agent.tick(16ms) == Status::Success);  // Patrol and the root end
                CHECK(agent.tick(16ms) == Status::Running);  // the root restarts, the next move begins
            }
        });
        CHECK(n == 0);
        CHECK(moves_started - started_before == 100);
    });
}

TEST_CASE("allocations: completed latent moves through a World (resume_all, the two steps, the sleep) allocate nothing") {
    // The same moves as above, through a World: the resumes of a frame in one World::resume_all (its
    // own wake and input-observer path), the step that ends the moves and the one that restarts the
    // roots (a move's own tick path and the sleep after it).
    std::vector<ResumeHandle> moves;
    std::vector<ResumeHandle> due;
    moves.reserve(64);
    due.reserve(64);
    Registry reg;
    scenarios::register_fight_actions(reg);
    reg.add_latent_action("Patrol", [&](ActionContext&, const ResumeHandle& h) { moves.push_back(h); });
    const Tree tree = scenarios::guard_tree(reg);
    test::in_both_modes([&](Mode mode) {
        constexpr std::size_t kAgents = 32;
        moves.clear();
        World world;
        for (std::size_t i = 0; i < kAgents; ++i) world.spawn(tree, {.mode = mode, .seed = i});
        world.step(16ms);  // every agent starts its first move
        const auto round = [&] {
            due.swap(moves);
            moves.clear();
            REQUIRE(world.resume_all(due, Status::Success) == kAgents);
            world.step(16ms);  // the moves and the roots end
            world.step(16ms);  // the roots restart, the next moves begin
            REQUIRE(moves.size() == kAgents);
        };
        for (int i = 0; i < 3; ++i) round();  // warm up
        const long long n = allocations_during([&] {
            for (int i = 0; i < 100; ++i) round();
        });
        CHECK(n == 0);
    });
}

TEST_CASE("allocations: bursts of latent moves on 2 threads (the workers called between frames) allocate nothing once warmed up") {
    // The bursty guard_b at a small scale: 1,024 guards, each frame's moves resumed in one resume_all,
    // which makes the next frame a parallel one and so calls the arena's worker (a standby task: TBB's
    // own allocator, not ebt's), then the step that ends the moves and the one that starts the next.
    struct Move {
        ResumeHandle handle;
        bool pending = false;
    };
    constexpr std::size_t kAgents = 1024;
    std::vector<Move> moves(kAgents);
    std::vector<ResumeHandle> due;
    due.reserve(kAgents);
    Registry reg;
    scenarios::register_fight_actions(reg);
    reg.add_latent_action("Patrol", [](ActionContext& ctx, const ResumeHandle& h) { ctx.user<Move>() = Move{h, true}; });
    const Tree tree = scenarios::guard_tree(reg);
    World world(WorldOptions{.threads = 2, .parallel = ParallelOptions{.worker_standby = std::chrono::milliseconds(2)}});
    for (std::size_t i = 0; i < kAgents; ++i) world.spawn(tree, {.seed = i, .user = &moves[i]});
    world.step(16ms);  // every guard starts its first move
    const auto round = [&] {
        due.clear();
        for (Move& m : moves)
            if (std::exchange(m.pending, false)) due.push_back(m.handle);
        REQUIRE(world.resume_all(due, Status::Success) == kAgents);
        CHECK(world.step(16ms).agents_stepped == kAgents);  // the moves and the roots end
        world.step(16ms);                                   // the roots restart, the next moves begin
    };
    for (int i = 0; i < 3; ++i) round();  // warm up
    const long long n = allocations_during([&] {
        for (int i = 0; i < 50; ++i) round();
    });
    CHECK(n == 0);
}

// ---- blackboard writes ----------------------------------------------------------------------------------------

TEST_CASE("allocations: blackboard writes without listeners allocate nothing") {
    const Registry reg = make_registry();
    const Tree tree = guard_tree(reg);
    ChangeBus empty_bus;  // a bus with no slot connected
    for (ChangeBus* bus : {static_cast<ChangeBus*>(nullptr), &empty_bus}) {
        test::in_both_modes([&](Mode mode) {
            CAPTURE(bus != nullptr);
            Agent agent(tree, {.mode = mode, .bus = bus});
            for (int i = 0; i < 5; ++i) agent.tick(16ms);
            Blackboard& bb = agent.blackboard();
            const Key<bool> seen = bb.key<bool>("enemy_seen");
            // Writes alone (by key and by name), between ticks: guards are woken, nothing allocated.
            const long long writes = allocations_during([&] {
                for (int i = 0; i < 100; ++i) {
                    bb.set(seen, i % 2 == 0);
                    bb.set("health_low", i % 3 == 0);
                    bb.set("enemy_dead", i % 5 == 0);
                    bb.set(seen, i % 2 == 0);  // equal: not a change
                }
            });
            CHECK(writes == 0);
            // Writes followed by the ticks that react to them: aborts, switches, entries.
            const long long reacting = allocations_during([&] {
                for (int i = 0; i < 100; ++i) {
                    bb.set(seen, i % 4 < 2);
                    bb.set("health_low", i % 8 < 3);
                    agent.tick(16ms);
                }
            });
            CHECK(reacting == 0);
        });
    }
}

TEST_CASE("allocations: actions writing the blackboard inside a tick allocate nothing") {
    ActionSpec toggler;
    toggler.ports = {port<bool>("enemy_seen")};
    toggler.update = [](ActionContext& ctx) {
        ctx.out<bool>(0, !ctx.in<bool>(0));
        return Status::Running;
    };
    Registry reg = make_registry();
    reg.add_action("Toggle", toggler);
    const Tree tree = TreeBuilder("toggle", reg)
                          .key<bool>("enemy_seen").key<bool>("health_low").key<bool>("enemy_dead")
                          .parallel(Policy::RequireAll, Policy::RequireAll)
                              .action("Toggle")
                              .active_selector()
                                  .sequence().check("enemy_seen").action("Attack").back()
                                  .action("Patrol")
                              .back()
                          .back()
                          .end();
    test::in_both_modes([&](Mode mode) {
        Agent agent(tree, {.mode = mode});
        for (int i = 0; i < 5; ++i) agent.tick(16ms);
        const long long n = allocations_during([&] {
            for (int i = 0; i < 200; ++i) agent.tick(16ms);
        });
        CHECK(n == 0);
    });
}

// ---- worlds ----------------------------------------------------------------------------------------------------

TEST_CASE("allocations: agents spawned into a World take their state blocks from its pool, 64 guard-tree blocks per allocation") {
    const Registry reg = make_registry();
    const Tree tree = guard_tree(reg);
    std::vector<Agent> alone;
    alone.reserve(640);
    const long long own = allocations_during([&] {
        for (int i = 0; i < 640; ++i) alone.emplace_back(tree);
    });
    CHECK(own == 640);  // an Agent of its own: one heap block each
    World world;
    const long long spawned = allocations_during([&] {
        for (int i = 0; i < 640; ++i) world.spawn(tree);
    });
    MESSAGE("allocations for 640 spawns: " << spawned);
    CHECK(spawned <= 640 / 64 + 40);  // 10 pages, and the World's own arrays growing (chunks, schedules, awake bits)
}

TEST_CASE("allocations: a world of waiting agents whose guards wake every frame allocates nothing per frame") {
    // Every frame a shared write wakes each agent's live guard; the agent goes back to its long Wait,
    // whose deadline is already in the timer heap: the heap does not grow, nothing is allocated.
    World world;
    SharedBlackboard& squad = test::create_sentry_squad(world);
    const Tree tree = test::sentry_tree(1h);
    for (int i = 0; i < 1000; ++i) world.spawn(tree, {.shared = {{"squad", &squad}}});
    bool noise = false;
    for (int frame = 0; frame < 5; ++frame) {
        squad.set("noise", noise = !noise);
        world.step(16ms);
    }
    std::uint32_t stepped = 0;
    const long long n = allocations_during([&] {
        for (int frame = 0; frame < 200; ++frame) {
            squad.set("noise", noise = !noise);
            stepped += world.step(16ms).agents_stepped;
        }
    });
    CHECK(stepped == 200 * 1000);  // every agent was woken every frame
    CHECK(n == 0);
    CHECK(world.timer_entries() == 1000);
}

TEST_CASE("allocations: a World frame with trace logging off allocates nothing, also after a log was detached") {
    const Registry reg = make_registry();
    const Tree tree = guard_tree(reg);
    test::in_both_modes([&](Mode mode) {
        World world;
        std::vector<AgentHandle> agents;
        for (int i = 0; i < 200; ++i) agents.push_back(world.spawn(tree, {.mode = mode}));
        const Key<bool> seen = tree.key<bool>("enemy_seen");
        bool value = false;
        const auto frame = [&] {  // a quarter of the agents switch between patrolling and attacking
            value = !value;
            for (std::size_t i = 0; i < agents.size(); i += 4) world.at(agents[i]).blackboard().set(seen, value);
            world.step(16ms);
        };
        for (int f = 0; f < 5; ++f) frame();
        CHECK(allocations_during([&] {
                  for (int f = 0; f < 100; ++f) frame();
              }) == 0);
        {
            debug::TraceLogWriter log;  // logged for a while, in memory, then detached
            log.attach(world);
            for (int f = 0; f < 5; ++f) frame();
            log.close();
            CHECK(log.records() > 0);
        }
        CHECK(allocations_during([&] {
                  for (int f = 0; f < 100; ++f) frame();
              }) == 0);
    });
}

TEST_CASE("allocations: logging every agent of a World to a file allocates nothing per frame once warmed up") {
    // The records are encoded into one buffer that keeps its capacity, blocks go to the file unbuffered,
    // and short values (bool, numbers) are formatted without the heap.
    const Registry reg = make_registry();
    const Tree tree = guard_tree(reg);
    const std::filesystem::path path = std::filesystem::temp_directory_path() / "ebt_allocation_test.ebtlog";
    {
        World world;
        std::vector<AgentHandle> agents;
        for (int i = 0; i < 100; ++i) agents.push_back(world.spawn(tree));
        const Key<bool> seen = tree.key<bool>("enemy_seen");
        debug::TraceLogWriter log(path.string(), {.block_bytes = 4096});
        log.attach(world);
        bool value = false;
        const auto frame = [&] {
            value = !value;
            for (std::size_t i = 0; i < agents.size(); i += 4) world.at(agents[i]).blackboard().set(seen, value);
            world.step(16ms);
        };
        for (int f = 0; f < 20; ++f) frame();
        const std::uint64_t before = log.bytes_written();
        CHECK(allocations_during([&] {
                  for (int f = 0; f < 100; ++f) frame();
              }) == 0);
        CHECK(log.bytes_written() > before + 4096);  // blocks were written meanwhile
        log.close();
    }
    std::filesystem::remove(path);
}

// ---- memory budget ----------------------------------------------------------------------------------------------

TEST_CASE("memory budget: the guard tree's agent fits in 256 bytes; 10 more nodes cost <= 160 bytes") {
    const Registry reg = make_registry();
    const Tree guard = guard_tree(reg);
    const Tree bigger = guard_tree(reg, 1, true);
    REQUIRE(guard.size() == 11);
    REQUIRE(bigger.size() == guard.size() + 10);
    Agent agent(guard);
    MESSAGE("guard tree: memory_bytes ", agent.memory_bytes(), " (sizeof(Agent) ", sizeof(Agent), ", state_bytes ",
            guard.state_bytes(), ", blackboard storage ", guard.schema().storage_size(), ")");
    MESSAGE("10 more nodes: state_bytes ", guard.state_bytes(), " -> ", bigger.state_bytes(), " (+",
            bigger.state_bytes() - guard.state_bytes(), ")");
    CHECK(agent.memory_bytes() <= 256);
    CHECK(agent.memory_bytes() >= sizeof(Agent) + guard.state_bytes());
    CHECK(bigger.state_bytes() > guard.state_bytes());
    CHECK(bigger.state_bytes() - guard.state_bytes() <= 160);
    // The same numbers for agents of the bigger tree: the growth is the state growth.
    Agent big_agent(bigger);
    CHECK(big_agent.memory_bytes() - agent.memory_bytes() <= 160 + 16);
}

#if EBT_HAS_XML
namespace {
/// A blackboard value whose copy or default construction throws while `refused` is set.
struct RefusingValue {
    static inline bool refused = false;
    std::string text = "a text too long for a short string's buffer";
    RefusingValue() { refuse_if_asked(); }
    RefusingValue(const RefusingValue& other) : text(other.text) { refuse_if_asked(); }
    RefusingValue& operator=(const RefusingValue&) = default;
    friend bool operator==(const RefusingValue&, const RefusingValue&) = default;
    static void refuse_if_asked() {
        if (refused) throw std::runtime_error("refused");
    }
};
}  // namespace

template <> struct ebt::BlackboardValue<RefusingValue> {
    static std::uint64_t hash(const RefusingValue& v) noexcept { return v.text.size(); }
};

TEST_CASE("allocations: a Value whose copy or construction throws frees the storage it had allocated") {
    // Value allocates the storage, then constructs the value in it: when that throws, no destructor
    // runs, and the Value itself must give the storage back (a spawn's initial value, a shared write).
    const RefusingValue original;
    const Value value = Value::of(original);
    const long long live = test::live_allocations();
    RefusingValue::refused = true;
    CHECK_THROWS_WITH_AS(Value(type_of<RefusingValue>(), &original), "refused", std::runtime_error);
    CHECK_THROWS_WITH_AS(Value{value}, "refused", std::runtime_error);
    CHECK_THROWS_WITH_AS(Value(type_of<RefusingValue>()), "refused", std::runtime_error);
    RefusingValue::refused = false;
    CHECK(test::live_allocations() == live);
    // (And the copies that succeed are as many allocations as frees.)
    { const Value copy{value}; }
    CHECK(test::live_allocations() == live);
}

TEST_CASE("allocations: running out of memory while loading XML is a LoadError, whichever allocation fails") {
    const Registry reg = make_registry();
    const std::string text = "<root><BehaviorTree ID=\"T\"><Sequence name=\"s\"><Patrol/><Attack _x=\"1\"/></Sequence></BehaviorTree></root>";
    const xml::Loader loader(reg);
    (void)loader.load_string(text, "t.xml");  // (first-use statics)
    const long long total = allocations_during([&] { (void)loader.load_string(text, "t.xml"); });
    REQUIRE(total > 10);
    long long refused = 0;
    for (long long n = 1; n <= total; ++n) {
        CAPTURE(n);
        ebt::test::g_fail_countdown = n;
        try {
            (void)loader.load_string(text, "t.xml");
        } catch (const xml::LoadError& e) {
            CHECK(std::string(e.what()) == "t.xml:1:1: out of memory while loading");
            ++refused;
        }
        ebt::test::g_fail_countdown = 0;
    }
    CHECK(refused == total);  // each load made the allocation that failed
}
#endif

TEST_CASE("allocations: a World stepping on 2 threads allocates nothing per frame once warmed up, shared writes included") {
    // 2,000 agents (the parallel phase splits frames of 512 agents and more); each Patrol update also
    // writes a shared bool, buffered during the phase and applied after it.
    Registry reg;
    ActionSpec patrol;
    patrol.ports = {port<bool>("squad.alarm")};
    patrol.update = [](ActionContext& ctx) {
        ctx.out("squad.alarm", ctx.tick() % 2 == 0);
        return Status::Running;
    };
    reg.add_action("Patrol", patrol);
    const Tree tree = TreeBuilder("patrol", reg).shared_key<bool>("squad", "alarm").sequence().action("Patrol").back().end();
    World world(WorldOptions{.threads = 2});
    SharedBlackboard& squad = world.create_shared("squad");
    for (int i = 0; i < 2000; ++i) world.spawn(tree, {.shared = {{"squad", &squad}}});
    for (int i = 0; i < 10; ++i) world.step(50ms);  // warm up: buffers and the arena's threads
    const long long n = allocations_during([&] {
        for (int i = 0; i < 50; ++i) CHECK(world.step(50ms).agents_stepped == 2000);
    });
    CHECK(n == 0);
    CHECK(squad.get<bool>("alarm"));            // frame 58 wrote true; frame 59 published it
    CHECK_FALSE(squad.pending<bool>("alarm"));  // frame 59 wrote false
}
