// Agent snapshots (<ebt/snapshot.hpp>): an agent saved between ticks and restored into a new agent of
// the same tree carries on exactly as the uninterrupted agent (traces, statuses, blackboard, stats),
// on random trees and the guard tree, in both modes; suspended actions are re-bound; what cannot be
// saved or restored is refused with a clear error.
#include "support/trace_recorder.hpp"

#include <ebt/debug/file_error.hpp>
#include <ebt/detail/hash.hpp>
#include <ebt/shared_blackboard.hpp>
#include <ebt/snapshot.hpp>

#include "../scenarios/guard_scenario.hpp"

#include <cstdio>
#include <random>
#include <string>
#include <vector>

using namespace ebt;
using namespace std::chrono_literals;

namespace {

constexpr int kKeys = 4;
const char* const kKeyNames[kKeys] = {"k0", "k1", "k2", "k3"};

/// The game side of a run: resumes it owes to suspended actions (the state a game keeps, and re-binds
/// after a restore).
struct Harness {
    struct Pending {
        ResumeHandle handle;
        std::uint64_t due_tick;
        Status status;
    };
    std::vector<Pending> pending;
    std::string save_error;  // what save_agent() said when called from inside a tick

    void resume_due(Agent& agent) {
        for (std::size_t i = 0; i < pending.size();) {
            if (pending[i].due_tick <= agent.ticks()) {
                agent.resume(pending[i].handle, pending[i].status);
                pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
            } else {
                ++i;
            }
        }
    }
};

/// A scripted action: counts its updates in its node memory; finishes, runs forever or suspends;
/// writes a bool key, the int key and the string key on the way.
ActionSpec scripted(int kind, int updates, Status result, int write_key) {
    ActionSpec spec;
    spec.memory_bytes = sizeof(int);
    spec.update = [=](ActionContext& ctx) -> Status {
        int& n = ctx.memory<int>();
        ++n;
        if (write_key >= 0 && n % 2 == 1) ctx.blackboard().set(kKeyNames[write_key], !ctx.blackboard().get<bool>(kKeyNames[write_key]));
        ctx.blackboard().set("count", ctx.blackboard().get<int>("count") + 1);
        if (n == 2) ctx.blackboard().set("bark", std::string(n * 9, 'a'));  // past the short-string buffer
        switch (kind) {
        case 0: return n >= updates ? result : Status::Running;
        case 1: return Status::Running;
        default:
            if (n == 1) ctx.user<Harness>().pending.push_back({ctx.suspend(), ctx.tick() + static_cast<std::uint64_t>(updates), result});
            return Status::Running;
        }
    };
    return spec;
}

/// Random trees over every composite and decorator kind, with preconditions on the bool keys.
struct Generator {
    std::mt19937_64 rng;
    int budget = 30;
    int actions = 0;

    int pick(int n) { return static_cast<int>(rng() % static_cast<std::uint64_t>(n)); }
    bool chance(int percent) { return pick(100) < percent; }
    Duration duration() { return Duration(50'000 * (1 + pick(5))); }

    NodeOptions options() {
        NodeOptions o;
        if (chance(25)) {
            o.precondition = Predicate::is(kKeyNames[pick(kKeys)], chance(50));
            o.abort = chance(50) ? AbortMode::Self : AbortMode::None;
        }
        return o;
    }

    void node(TreeBuilder& b, int depth) {
        --budget;
        const bool leaf = depth >= 5 || budget <= 0;
        const int choice = leaf ? 10 + pick(4) : (chance(30) ? 14 + pick(8) : pick(14));
        switch (choice) {
        case 0: b.sequence(options()); children(b, depth); break;
        case 1: b.selector(options()); children(b, depth); break;
        case 2: b.active_selector(options()); children(b, depth); break;
        case 3: b.reactive_sequence(options()); children(b, depth); break;
        case 4: b.parallel(Policy::RequireAll, Policy::RequireOne, options()); children(b, depth); break;
        case 5: b.random_selector(options()); children(b, depth); break;
        case 6: b.repeat(1 + pick(3), options()); node(b, depth + 1); b.back(); break;
        case 7: b.timeout(duration(), options()); node(b, depth + 1); b.back(); break;
        case 8: b.cooldown(duration(), options()); node(b, depth + 1); b.back(); break;
        case 9: (chance(50) ? b.inverter(options()) : b.delay(duration(), options())); node(b, depth + 1); b.back(); break;
        case 10: b.wait(duration()); break;
        case 11: b.check(kKeyNames[pick(kKeys)], chance(50)); break;
        case 14: b.filter(options()); children(b, depth); break;
        case 15: b.priority_selector(options()); children(b, depth); break;
        case 16: b.non_priority_selector(options()); children(b, depth); break;
        case 17: {
            const int n = 1 + pick(3);
            std::vector<double> weights;
            for (int i = 0; i < n; ++i) weights.push_back(1.0 + pick(4));
            b.weighted_selector(weights, options());
            children(b, depth, n);
            break;
        }
        case 18:
            b.monitor(Policy::RequireAll, Policy::RequireOne, options()).check(kKeyNames[pick(kKeys)], chance(50));
            children(b, depth);
            break;
        case 19: b.loop(1 + pick(3), options()); node(b, depth + 1); b.back(); break;
        case 20: b.retry(1 + pick(3), options()); node(b, depth + 1); b.back(); break;
        case 21: b.force_success(options()); node(b, depth + 1); b.back(); break;
        default: {
            const int kind = pick(3);
            b.action("A" + std::to_string(actions++),
                     scripted(kind, 1 + pick(4), chance(70) ? Status::Success : Status::Failure, chance(40) ? pick(kKeys) : -1));
            break;
        }
        }
    }
    void children(TreeBuilder& b, int depth, int n = 0) {
        if (n == 0) n = 1 + pick(3);
        for (int i = 0; i < n; ++i) node(b, depth + 1);
        b.back();
    }
};

Tree random_tree(std::uint64_t seed) {
    Generator g{std::mt19937_64(seed)};
    TreeBuilder b("random" + std::to_string(seed));
    for (const char* k : kKeyNames) b.key<bool>(k);
    b.key<int>("count").key<std::string>("bark");
    g.node(b, 0);
    return b.end();
}

/// Writes between ticks, the same for both runs.
void scripted_writes(Agent& agent, std::uint64_t seed) {
    const std::uint64_t r = detail::splitmix64(seed * 1000 + agent.ticks());
    if (r % 3 == 0) agent.blackboard().set(kKeyNames[(r >> 8) % kKeys], (r >> 16) % 2 == 0);
}

std::string statuses(const Agent& agent) {
    std::string s;
    for (NodeIndex n = 0; n < agent.tree().size(); ++n) s += static_cast<char>('0' + static_cast<int>(agent.status(n)));
    return s;
}

std::vector<std::string> events_from(const test::TraceRecorder& r, std::uint64_t tick) {
    std::vector<std::string> v;
    for (const auto& e : r.entries)
        if (e.event.tick >= tick) v.push_back(std::to_string(e.event.tick) + " " + test::TraceRecorder::render(e.event));
    return v;
}

/// Runs `tree` uninterrupted and, from tick `save_at` on, a restored copy beside it; both must agree
/// at every later tick. Returns the number of suspended actions re-bound.
int check_restore(const Tree& tree, Mode mode, std::uint64_t seed, int save_at, int more) {
    Harness game_a;
    test::TraceRecorder trace_a;
    Agent a(tree, {.mode = mode, .seed = seed, .listener = &trace_a, .user = &game_a});
    const auto step = [&](Agent& agent, Harness& game) {
        scripted_writes(agent, seed);
        game.resume_due(agent);
        agent.tick(50ms);
    };
    for (int i = 0; i < save_at; ++i) step(a, game_a);

    const std::vector<std::byte> bytes = save_agent(a);
    // The game's own state goes along; its resume handles are re-bound by node.
    Harness game_b = game_a;
    test::TraceRecorder trace_b;
    Agent b = restore_agent(tree, bytes, {.user = &game_b, .listener = &trace_b});
    const std::vector<SuspendedAction> suspended = suspended_actions(b);
    // Re-binding by node and run: a handle of a run that has ended since (aborted by a guard) stays
    // stale, as it is for the uninterrupted agent.
    std::size_t matched = 0;
    for (Harness::Pending& p : game_b.pending)
        for (const SuspendedAction& s : suspended)
            if (s.node == p.handle.node && s.handle.run == p.handle.run) {
                CHECK_FALSE(b.resume(p.handle, p.status));  // the old handle names the old agent
                p.handle = s.handle;
                ++matched;
            }
    CHECK(matched == suspended.size());  // every suspended action waits for one of the game's resumes

    CHECK(b.ticks() == a.ticks());
    CHECK(b.now() == a.now());
    CHECK(b.mode() == mode);
    CHECK(b.seed() == seed);
    CHECK(statuses(b) == statuses(a));
    const std::uint64_t from = a.ticks();
    for (int i = 0; i < more; ++i) {
        step(a, game_a);
        step(b, game_b);
        REQUIRE(statuses(b) == statuses(a));
        REQUIRE(b.next_deadline() == a.next_deadline());
        REQUIRE(b.has_pending_work() == a.has_pending_work());
    }
    CHECK(events_from(trace_b, from) == events_from(trace_a, from));
    for (const char* k : kKeyNames) CHECK(b.blackboard().get<bool>(k) == a.blackboard().get<bool>(k));
    CHECK(b.blackboard().get<int>("count") == a.blackboard().get<int>("count"));
    CHECK(b.blackboard().get<std::string>("bark") == a.blackboard().get<std::string>("bark"));
    CHECK(b.stats().updates == a.stats().updates);
    CHECK(b.stats().guards_evaluated == a.stats().guards_evaluated);
    CHECK(b.stats().nodes_visited == a.stats().nodes_visited);
    // A second save of each is the same bytes: nothing the restore set differs.
    CHECK(save_agent(b) == save_agent(a));
    return static_cast<int>(suspended.size());
}

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const std::exception& e) {
        return e.what();
    }
    return "no error";
}

std::string hex(std::uint64_t v) {
    char text[17];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(v));
    return text;
}

}  // namespace

TEST_CASE("snapshot: random trees saved mid-run and restored carry on exactly as the uninterrupted agent, both modes") {
    int trees = 0, rebound = 0;
    for (std::uint64_t seed = 1; seed <= 150; ++seed) {
        Tree tree;
        try {
            tree = random_tree(seed);
        } catch (const BuildError&) {
            continue;  // a random shape the builder refuses
        }
        ++trees;
        for (const Mode mode : {Mode::Polling, Mode::Event}) {
            CAPTURE(seed);
            CAPTURE(to_string(mode));
            const int save_at = 1 + static_cast<int>(detail::splitmix64(seed) % 30);
            rebound += check_restore(tree, mode, seed, save_at, 40);
        }
    }
    CHECK(trees >= 100);
    CHECK(rebound >= 15);  // suspended actions were re-bound and resumed in many runs
}

TEST_CASE("snapshot: the guard tree restored at every tick of a scripted fight continues like the original") {
    Registry registry;
    scenarios::register_guard_actions(registry);
    const Tree tree = scenarios::guard_tree(registry);
    for (const Mode mode : {Mode::Polling, Mode::Event}) {
        for (int save_at = 0; save_at < 24; save_at += 3) {
            CAPTURE(save_at);
            test::TraceRecorder trace_a, trace_b;
            Agent a(tree, {.mode = mode, .listener = &trace_a});
            const auto inputs = [](Agent& agent) {
                const std::uint64_t t = agent.ticks();
                if (t == 4) agent.blackboard().set(scenarios::kEnemySeen, true);
                if (t == 9) agent.blackboard().set(scenarios::kHealthLow, true);
                if (t == 14) agent.blackboard().set(scenarios::kHealthLow, false);
                if (t == 18) agent.blackboard().set(scenarios::kEnemyDead, true);
            };
            for (int i = 0; i < save_at; ++i) {
                inputs(a);
                a.tick(50ms);
            }
            Agent b = restore_agent(tree, save_agent(a), {.listener = &trace_b});
            const std::uint64_t from = a.ticks();
            for (int i = save_at; i < 30; ++i) {
                inputs(a);
                inputs(b);
                CHECK(a.tick(50ms) == b.tick(50ms));
                CHECK(statuses(b) == statuses(a));
            }
            CHECK(events_from(trace_b, from) == events_from(trace_a, from));
        }
    }
}

TEST_CASE("snapshot: a suspended action is resumed after restore through its re-bound handle; timers keep their time") {
    Registry registry;
    ResumeHandle given;
    registry.add_latent_action("MoveTo", [&](ActionContext&, const ResumeHandle& h) { given = h; });
    const Tree tree = TreeBuilder("mover", registry)
                          .parallel(Policy::RequireAll, Policy::RequireOne)
                              .action("MoveTo")
                              .sequence().wait(300ms).always_success().back()
                          .back()
                          .end();
    for (const Mode mode : {Mode::Polling, Mode::Event}) {
        test::TraceRecorder trace;
        Agent a(tree, {.mode = mode, .restart_on_end = false});
        a.tick(100ms);  // ticks 0 and 1: MoveTo suspended, the wait armed at 0.1 s for 0.3 s
        a.tick(100ms);
        REQUIRE(given.valid());
        Agent b = restore_agent(tree, save_agent(a), {.listener = &trace});
        CHECK_FALSE(b.resume(given, Status::Success));  // a handle of the saved agent
        const std::vector<SuspendedAction> suspended = suspended_actions(b);
        REQUIRE(suspended.size() == 1);
        CHECK(suspended[0].node == tree.find("MoveTo").index());
        CHECK(suspended[0].handle.run == given.run);
        CHECK(resume_handle(b, tree.find("MoveTo")).run == given.run);
        CHECK_FALSE(resume_handle(b, tree.find("Wait")).valid());
        CHECK(b.resume(suspended[0].handle, Status::Success));
        CHECK(suspended_actions(b).empty());  // resumed: nothing left to re-bind
        b.tick(100ms);  // tick 2, 0.3 s: MoveTo ends; the wait (due at 0.4 s) does not
        CHECK(trace.tick(2) == "1:T(Success)");
        CHECK(b.status() == Status::Running);
        b.tick(100ms);  // tick 3, 0.4 s: the wait is due, the sequence and the root succeed
        CHECK(trace.tick(3) == "3:T(Success) 4:I 4:U 4:T(Success) 2:T(Success) 0:T(Success)");
    }
}

TEST_CASE("snapshot: a key whose type has no binary form is refused at save time, naming the key") {
    struct Handle {
        int id;
        bool operator==(const Handle&) const = default;
    };
    const Tree tree = TreeBuilder("holder").key<int>("hp").key<Handle>("target").always_success().end();
    Agent agent(tree);
    CHECK(error_of([&] { (void)save_agent(agent); }) ==
          std::string("save_agent(): blackboard key 'target' of tree 'holder' is ") + type_of<Handle>()->name +
              ", which has no binary form: give ebt::BlackboardValue<" + type_of<Handle>()->name +
              "> save and load hooks (<ebt/value_type.hpp>)");
}

TEST_CASE("snapshot: saving inside a tick is a UsageError; the agent carries on") {
    Registry registry;
    std::string said;
    registry.add_action("Saver", [&](ActionContext& ctx) {
        said = error_of([&] { (void)save_agent(ctx.agent()); });
        return Status::Success;
    });
    const Tree tree = TreeBuilder("saver", registry).action("Saver").end();
    Agent agent(tree);
    CHECK(agent.tick(50ms) == Status::Success);
    CHECK(said == "save_agent() inside a tick of the agent: save it between ticks");
    CHECK(save_agent(agent).size() > 0);
}

TEST_CASE("snapshot: restoring into another tree definition is refused, naming both trees and hashes") {
    const Tree saved = TreeBuilder("patrol").key<bool>("alert").sequence().wait(1s).always_success().back().end();
    const Tree longer = TreeBuilder("patrol").key<bool>("alert").sequence().wait(1s).always_success().always_success().back().end();
    const Tree slower = TreeBuilder("patrol2").key<bool>("alert").sequence().wait(2s).always_success().back().end();
    const Tree same = TreeBuilder("patrol_from_xml").key<bool>("alert").sequence().wait(1s).always_success().back().end();
    Agent agent(saved);
    agent.tick(50ms);
    const std::vector<std::byte> bytes = save_agent(agent);
    CHECK(error_of([&] { (void)restore_agent(longer, bytes); }) ==
          "the snapshot's agent is of tree 'patrol' (structural hash " + hex(structural_hash(saved)) +
              "), not of tree 'patrol' (structural hash " + hex(structural_hash(longer)) + "): 3 nodes, not 4");
    CHECK(error_of([&] { (void)restore_agent(slower, bytes); }) ==
          "the snapshot's agent is of tree 'patrol' (structural hash " + hex(structural_hash(saved)) +
              "), not of tree 'patrol2' (structural hash " + hex(structural_hash(slower)) +
              "): same node and key counts, other kinds, parameters, keys or types");
    // The name is not part of the structure: the same tree under another name restores.
    CHECK(structural_hash(same) == structural_hash(saved));
    CHECK(restore_agent(same, bytes).status() == Status::Running);
}

TEST_CASE("snapshot: shared scopes are re-bound by name; the mirrors keep their saved values") {
    const Tree tree = TreeBuilder("squad_member").shared_key<bool>("squad", "alarm").check("squad.alarm").end();
    SharedBlackboard squad("squad");
    squad.declare<bool>("alarm", false);
    Agent a(tree, {.restart_on_end = false});
    a.bind("squad", squad);
    squad.set<bool>("alarm", true);
    squad.publish();
    const std::vector<std::byte> bytes = save_agent(a);
    CHECK(error_of([&] { (void)restore_agent(tree, bytes); }) ==
          "restore_agent(): the saved agent of tree 'squad_member' had shared scope 'squad' bound: give "
          "RestoreOptions::shared a blackboard for it");
    Agent b = restore_agent(tree, bytes, {.shared = {{"squad", &squad}}});
    CHECK(b.bound("squad") == &squad);
    CHECK(b.blackboard().get<bool>("squad.alarm") == a.blackboard().get<bool>("squad.alarm"));
    CHECK(save_agent(b) == bytes);
}

TEST_CASE("snapshot: a squad of agents of two trees saved together restores in order and carries on alike") {
    Registry registry;
    scenarios::register_guard_actions(registry);
    const Tree guard = scenarios::guard_tree(registry);
    const Tree walker = TreeBuilder("walker").key<int>("steps").sequence().wait(120ms).always_success().back().end();
    std::vector<test::TraceRecorder> traces_a(4), traces_b(4);
    std::vector<Agent> a;
    a.emplace_back(guard, AgentOptions{.seed = 1, .listener = &traces_a[0]});
    a.emplace_back(walker, AgentOptions{.mode = Mode::Polling, .listener = &traces_a[1]});
    a.emplace_back(guard, AgentOptions{.mode = Mode::Polling, .seed = 3, .listener = &traces_a[2]});
    a.emplace_back(walker, AgentOptions{.listener = &traces_a[3]});
    for (int i = 0; i < 5; ++i) {
        if (i == 3) a[0].blackboard().set(scenarios::kEnemySeen, true);
        for (Agent& agent : a) agent.tick(50ms);
    }
    a[3].blackboard().set("steps", 7);
    const std::vector<const Agent*> squad{&a[0], &a[1], &a[2], &a[3]};
    const std::vector<std::byte> bytes = save_agents(squad);
    const std::vector<Tree> trees{walker, guard};  // any order
    std::vector<Agent> b = restore_agents(trees, bytes, [&](std::size_t i) { return RestoreOptions{.listener = &traces_b[i]}; });
    REQUIRE(b.size() == 4);
    CHECK(b[3].blackboard().get<int>("steps") == 7);
    const std::uint64_t from = a[0].ticks();
    for (int i = 0; i < 20; ++i)
        for (std::size_t k = 0; k < 4; ++k) {
            a[k].tick(50ms);
            b[k].tick(50ms);
        }
    for (std::size_t k = 0; k < 4; ++k) {
        CAPTURE(k);
        CHECK(&b[k].tree().schema() == &a[k].tree().schema());
        CHECK(events_from(traces_b[k], from) == events_from(traces_a[k], from));
    }
    CHECK(error_of([&] { (void)restore_agents(std::vector<Tree>{walker}, bytes); }) ==
          "restore_agents(): the snapshot holds agents of tree 'guard', and none of the trees given has its structural hash");
    CHECK(error_of([&] { (void)restore_agent(walker, bytes); }) == "snapshot: byte 12: a snapshot of kind 2, not 1 (one agent)");
}
