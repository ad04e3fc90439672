// The blackboard: typed declared keys with initial values, typed access by name and by Key<T>, exact
// UsageError messages for missing and mistyped keys and keys of another tree, change semantics (equal
// writes are not changes), the ChangeBus, user struct values, and per-agent independence.
#include "support/both_modes.hpp"
#include "support/trace_recorder.hpp"

#include <ebt/signals.hpp>

#include <string>
#include <vector>

using namespace ebt;
using namespace std::chrono_literals;
using test::Run;
using test::TraceRecorder;

namespace game {
/// A user value type: trivially copyable and equality-comparable.
struct Vec2 {
    float x = 0;
    float y = 0;
    friend bool operator==(const Vec2&, const Vec2&) = default;
};
}  // namespace game

using game::Vec2;

namespace {

// 0 Selector, 1 AlwaysSuccess: a tree that exists only for its blackboard.
Tree values_tree() {
    return TreeBuilder("values")
        .key<int>("hp", 100)
        .key<float>("speed", 2.5f)
        .key<bool>("alert")
        .key<double>("ratio", 0.25)
        .key<Vec2>("pos", Vec2{1, 2})
        .key<long long>("gold", 1LL << 40)
        .always_success()
        .end();
}

/// Records every change a bus delivers.
struct ChangeLog {
    struct Entry {
        KeyId key;
        std::string name;
        Agent* agent;
        const Blackboard* blackboard;
    };
    std::vector<Entry> entries;
    boost::signals2::scoped_connection connection;

    explicit ChangeLog(ChangeBus& bus)
        : connection(bus.subscribe([this](const BlackboardChange& c) {
              entries.push_back({c.key, std::string(c.name), c.agent, &c.blackboard});
          })) {}
    std::vector<std::string> names() const {
        std::vector<std::string> v;
        for (const auto& e : entries) v.push_back(e.name);
        return v;
    }
};

/// 0 Hurt: a running action that takes 10 from the int key hp (100 at the start) on every update.
Tree hurt_tree() {
    ActionSpec hurt;
    hurt.ports = {port<int>("hp")};
    hurt.update = [](ActionContext& ctx) {
        ctx.out<int>(0, ctx.in<int>(0) - 10);
        return Status::Running;
    };
    return TreeBuilder("hurt").key<int>("hp", 100).action("Hurt", hurt).end();
}

}  // namespace

TEST_CASE("blackboard: declared keys have their types and initial values") {
    const Tree tree = values_tree();
    const BlackboardSchema& schema = tree.schema();
    REQUIRE(schema.size() == 6);
    CHECK(schema.info(0).name == "hp");
    CHECK(schema.info(0).type == type_of<int>());
    CHECK(std::string(schema.info(0).type->name) == "int");
    CHECK(schema.info(1).type == type_of<float>());
    CHECK(schema.info(2).type == type_of<bool>());
    CHECK(schema.info(3).type == type_of<double>());
    CHECK(schema.info(4).type == type_of<Vec2>());
    CHECK(schema.info(5).type == type_of<long long>());
    CHECK(schema.find("ratio") == 3);
    CHECK(schema.find("nope") == kNoKey);
    // Storage ends with the last value (no tail padding) and starts at the widest alignment.
    CHECK(schema.storage_size() == schema.keys().back().offset + schema.keys().back().type->size);
    CHECK(schema.max_align() == 8);
    for (const auto& k : schema.keys()) {
        CAPTURE(k.name);
        CHECK(k.offset % k.type->align == 0);
        CHECK(k.offset + k.type->size <= schema.storage_size());
    }

    test::in_both_modes([&](Mode mode) {
        Agent agent(tree, {.mode = mode});
        const Blackboard& bb = agent.blackboard();
        CHECK(bb.agent() == &agent);
        CHECK(&bb.schema() == &tree.schema());
        CHECK(bb.get<int>("hp") == 100);
        CHECK(bb.get<float>("speed") == 2.5f);
        CHECK(bb.get<bool>("alert") == false);
        CHECK(bb.get<double>("ratio") == 0.25);
        CHECK(bb.get<Vec2>("pos") == Vec2{1, 2});
        CHECK(bb.get<long long>("gold") == (1LL << 40));
        // Values survive ticks.
        agent.tick(10ms);
        agent.tick(10ms);
        CHECK(bb.get<int>("hp") == 100);
        CHECK(bb.get<Vec2>("pos") == Vec2{1, 2});
    });
}

namespace {
/// Whether code outside the engine can call BlackboardSchema::checked_info (the inline key check of
/// Blackboard::get and set by key): it is private, reached by Blackboard as a friend.
template <class Schema>
constexpr bool checked_info_callable = requires(const Schema& schema) { schema.checked_info(KeyId{0}, 0u, nullptr); };
static_assert(!checked_info_callable<BlackboardSchema>, "BlackboardSchema::checked_info is not API: use require()");
}  // namespace

TEST_CASE("blackboard: get and set by name and by Key<T>") {
    const Tree tree = values_tree();
    Agent agent(tree);
    Blackboard& bb = agent.blackboard();

    const Key<int> hp = tree.key<int>("hp");
    CHECK(hp.id == 0);
    CHECK(bb.key<int>("hp") == hp);
    const Key<Vec2> pos = bb.key<Vec2>("pos");
    CHECK(pos.id == 4);

    CHECK(bb.set(hp, 50));
    CHECK(bb.get(hp) == 50);
    CHECK(bb.get<int>("hp") == 50);
    CHECK(bb.set("hp", 75));
    CHECK(bb.get(hp) == 75);
    CHECK(bb.set<float>("speed", 4.0f));
    CHECK(bb.get<float>("speed") == 4.0f);
    CHECK(bb.set("alert", true));
    CHECK(bb.get<bool>("alert"));
    CHECK(bb.set(pos, Vec2{3, 4}));
    CHECK(bb.get(pos) == Vec2{3, 4});
    CHECK(bb.get<Vec2>("pos").y == 4.0f);
    CHECK(bb.set<long long>("gold", -7));
    CHECK(bb.get<long long>("gold") == -7);

    // get() returns a reference to the stored value: it sees later writes.
    const int& ref = bb.get(hp);
    bb.set(hp, 9);
    CHECK(ref == 9);
}

TEST_CASE("blackboard: missing and mistyped keys throw UsageError with exact messages, changing nothing") {
    const Tree tree = values_tree();
    ChangeBus bus;
    ChangeLog log(bus);
    Agent agent(tree, {.bus = &bus});
    Blackboard& bb = agent.blackboard();

    CHECK_THROWS_WITH_AS(bb.get<int>("nope"), "blackboard has no key 'nope'", UsageError);
    CHECK_THROWS_WITH_AS(bb.set<int>("nope", 1), "blackboard has no key 'nope'", UsageError);
    CHECK_THROWS_WITH_AS(bb.key<int>("nope"), "blackboard has no key 'nope'", UsageError);
    CHECK_THROWS_WITH_AS(tree.key<bool>("nope"), "blackboard has no key 'nope'", UsageError);

    CHECK_THROWS_WITH_AS(bb.get<bool>("hp"), "blackboard key 'hp' is declared as int, not bool", UsageError);
    CHECK_THROWS_WITH_AS(bb.set<bool>("hp", true), "blackboard key 'hp' is declared as int, not bool", UsageError);
    // A number of another type is converted only when nothing is lost (tests/blackboard_conversions_test.cpp).
    CHECK_THROWS_WITH_AS(bb.set("hp", 1.5),
                         "blackboard key 'hp' is declared as int: the double 1.5 is not exactly representable as int",
                         UsageError);
    CHECK_THROWS_WITH_AS(tree.key<bool>("hp"), "blackboard key 'hp' is declared as int, not bool", UsageError);

    // By Key<T>: a key of the wrong type or an id the schema does not have.
    const KeyId hp = tree.key<int>("hp").id;
    CHECK_THROWS_WITH_AS(bb.get(Key<float>{hp}), "blackboard key 'hp' is declared as int, not float", UsageError);
    CHECK_THROWS_WITH_AS(bb.set(Key<unsigned>{hp}, 3u), "blackboard key 'hp' is declared as int, not unsigned", UsageError);
    CHECK_THROWS_WITH_AS(bb.get(Key<int>{99}), "blackboard key id 99 is not declared in this schema", UsageError);
    CHECK_THROWS_WITH_AS(bb.set(Key<int>{}, 1), "blackboard key id 65535 is not declared in this schema", UsageError);

    // Nothing changed, nothing was emitted.
    CHECK(bb.get<int>("hp") == 100);
    CHECK(bb.get<float>("speed") == 2.5f);
    CHECK(bb.get<long long>("gold") == (1LL << 40));
    CHECK(log.entries.empty());
}

TEST_CASE("blackboard: a mistyped user struct key names the declared type") {
    const Tree tree = values_tree();
    Agent agent(tree);
    std::string message;
    try {
        (void)agent.blackboard().get<int>("pos");
    } catch (const UsageError& e) {
        message = e.what();
    }
    const std::string prefix = "blackboard key 'pos' is declared as ";
    const std::string suffix = ", not int";
    REQUIRE(message.size() > prefix.size() + suffix.size());
    CHECK(message.substr(0, prefix.size()) == prefix);
    CHECK(message.substr(message.size() - suffix.size()) == suffix);
    CHECK(message.find("Vec2") != std::string::npos);
}

// Regression: user types used to be named by typeid(T).name(), which GCC/Clang mangle.
TEST_CASE("blackboard: a user struct type has a readable name in error messages") {
    const Tree tree = values_tree();
    Agent agent(tree);
    CHECK_THROWS_WITH_AS(agent.blackboard().get<int>("pos"), "blackboard key 'pos' is declared as game::Vec2, not int",
                         UsageError);
    CHECK_THROWS_WITH_AS(agent.blackboard().get<Vec2>("hp"), "blackboard key 'hp' is declared as int, not game::Vec2",
                         UsageError);
}

TEST_CASE("blackboard: set() returns false for an equal value and emits no change") {
    const Tree tree = values_tree();
    test::in_both_modes([&](Mode mode) {
        ChangeBus bus;
        ChangeLog log(bus);
        Agent agent(tree, {.mode = mode, .bus = &bus});
        Blackboard& bb = agent.blackboard();

        CHECK_FALSE(bb.set("hp", 100));  // the initial value
        CHECK_FALSE(bb.set<float>("speed", 2.5f));
        CHECK_FALSE(bb.set("alert", false));
        CHECK_FALSE(bb.set("pos", Vec2{1, 2}));
        CHECK(log.entries.empty());

        CHECK(bb.set("hp", 1));
        CHECK_FALSE(bb.set("hp", 1));
        CHECK(bb.set("pos", Vec2{1, 3}));
        CHECK_FALSE(bb.set("pos", Vec2{1, 3}));
        CHECK(bb.set("hp", 100));  // back to the initial value is a change too
        CHECK(log.names() == std::vector<std::string>{"hp", "pos", "hp"});
    });
}

TEST_CASE("blackboard: ChangeBus slots receive key, name, blackboard and agent of every real change") {
    const Tree tree = values_tree();
    test::in_both_modes([&](Mode mode) {
        ChangeBus bus;
        ChangeLog log(bus);
        Agent a(tree, {.mode = mode, .bus = &bus});
        Agent b(tree, {.mode = mode, .bus = &bus});
        Agent quiet(tree, {.mode = mode});  // no bus

        // The slot sees the new value already stored.
        int seen_hp = -1;
        boost::signals2::scoped_connection value_probe = bus.subscribe([&](const BlackboardChange& c) {
            if (c.name == "hp") seen_hp = c.blackboard.get<int>(Key<int>{c.key});
        });

        a.blackboard().set("hp", 5);
        b.blackboard().set("alert", true);
        quiet.blackboard().set("hp", 6);
        a.blackboard().set("hp", 5);  // not a change

        REQUIRE(log.entries.size() == 2);
        CHECK(log.entries[0].key == tree.key<int>("hp").id);
        CHECK(log.entries[0].name == "hp");
        CHECK(log.entries[0].agent == &a);
        CHECK(log.entries[0].blackboard == &a.blackboard());
        CHECK(log.entries[1].key == tree.key<bool>("alert").id);
        CHECK(log.entries[1].name == "alert");
        CHECK(log.entries[1].agent == &b);
        CHECK(log.entries[1].blackboard == &b.blackboard());
        CHECK(seen_hp == 5);

        // A disconnected slot receives nothing more.
        log.connection.disconnect();
        a.blackboard().set("hp", 7);
        CHECK(log.entries.size() == 2);
        CHECK(seen_hp == 7);
    });
}

TEST_CASE("blackboard: a slot connected through ChangeBus::changes() receives changes like subscribe()") {
    // The bus skips the signal until someone subscribes or takes changes(): a slot connected
    // directly on the signal (here with a group) must still be called.
    const Tree tree = values_tree();
    ChangeBus bus;
    Agent agent(tree, {.bus = &bus});
    agent.blackboard().set("hp", 1);  // nobody listens yet
    std::vector<std::string> seen;
    ChangeBus::Signal& signal = bus.changes();
    boost::signals2::scoped_connection late = signal.connect(1, [&](const BlackboardChange& c) { seen.push_back("late " + std::string(c.name)); });
    boost::signals2::scoped_connection early = signal.connect(0, [&](const BlackboardChange& c) { seen.push_back("early " + std::string(c.name)); });
    agent.blackboard().set("hp", 2);
    CHECK(seen == std::vector<std::string>{"early hp", "late hp"});
    late.disconnect();
    early.disconnect();
    agent.blackboard().set("hp", 3);  // no slot left: nothing is called, the write still lands
    CHECK(seen.size() == 2);
    CHECK(agent.blackboard().get<int>("hp") == 3);
}

TEST_CASE("blackboard: changes made by actions during a tick reach the bus with their agent") {
    const Tree tree = hurt_tree();
    test::in_both_modes([&](Mode mode) {
        ChangeBus bus;
        std::vector<std::pair<Agent*, int>> seen;
        boost::signals2::scoped_connection c = bus.subscribe([&](const BlackboardChange& ch) {
            CHECK(ch.agent->in_tick());
            seen.emplace_back(ch.agent, ch.blackboard.get<int>(Key<int>{ch.key}));
        });
        Agent agent(tree, {.mode = mode, .bus = &bus});
        agent.tick(10ms);
        agent.tick(10ms);
        REQUIRE(seen.size() == 2);
        CHECK(seen[0] == std::pair<Agent*, int>{&agent, 90});
        CHECK(seen[1] == std::pair<Agent*, int>{&agent, 80});
    });
}

TEST_CASE("blackboard: a moved agent's blackboard and changes belong to the new agent") {
    const Tree tree = values_tree();
    ChangeBus bus;
    ChangeLog log(bus);
    Agent first(tree, {.bus = &bus});
    first.blackboard().set("hp", 1);
    Agent moved(std::move(first));
    CHECK(moved.blackboard().agent() == &moved);
    CHECK(moved.blackboard().get<int>("hp") == 1);
    moved.blackboard().set("hp", 2);
    REQUIRE(log.entries.size() == 2);
    CHECK(log.entries[1].agent == &moved);
}

// Regression: a moved-from agent's blackboard used to alias the moved-to agent's values.
TEST_CASE("blackboard: a moved-from agent's blackboard does not alias the moved-to agent") {
    ActionSpec run = test::running_action();
    const Tree tree = TreeBuilder("alias")
                          .key<bool>("k")
                          .active_selector()
                              .sequence().check("k").action("A", run).back()
                              .action("B", run)
                          .back()
                          .end();
    test::in_both_modes([&](Mode mode) {
        Agent first(tree, {.mode = mode});
        first.tick(10ms);
        Agent moved(std::move(first));
        CHECK_THROWS_AS(first.tick(10ms), UsageError);  // NOLINT(bugprone-use-after-move)
        CHECK_THROWS_AS(first.blackboard().set("k", true), UsageError);  // NOLINT(bugprone-use-after-move)
        CHECK_FALSE(moved.blackboard().get<bool>("k"));
    });
}

TEST_CASE("blackboard: a user struct value drives guards in both modes") {
    Registry reg;
    reg.add_condition(
        "Near", [](const ConditionContext& ctx) { return ctx.in<Vec2>(0).x < 1.0f; }, {port<Vec2>("pos")});
    ActionSpec step;
    step.ports = {port<Vec2>("pos")};
    step.update = [](ActionContext& ctx) {
        Vec2 p = ctx.in<Vec2>(0);
        p.x -= 2.0f;
        ctx.out<Vec2>(0, p);
        return Status::Running;
    };
    // 0 ActiveSelector, 1 Sequence [Near(pos)], 2 Near, 3 Arrive, 4 Walk (moves pos.x by -2 per update)
    const Tree tree = TreeBuilder("walk", reg)
                          .key<Vec2>("pos", Vec2{4.5f, 7})
                          .active_selector()
                              .sequence()
                                  .condition("Near")
                                  .action("Arrive", test::running_action())
                              .back()
                              .action("Walk", step)
                          .back()
                          .end();
    test::in_both_modes(tree, [&](Run& r) {
        r.tick(10ms);  // 4.5 -> 2.5
        r.tick(10ms);  // 2.5 -> 0.5 (the guard is at a position already passed)
        r.tick(10ms);  // Near now true: Walk is aborted
        CHECK(r.rec.tick(0) == "0:I 4:I 4:U");
        CHECK(r.rec.tick(1) == "4:U");
        CHECK(r.rec.tick(2) == "4:T(Aborted) 1:I 3:I 3:U");
        CHECK(r.agent.blackboard().get<Vec2>("pos") == Vec2{0.5f, 7});
    });
}

TEST_CASE("blackboard: agents of one tree have independent blackboards") {
    ActionSpec inc;
    inc.ports = {port<int>("n")};
    inc.update = [](ActionContext& ctx) {
        ctx.out<int>(0, ctx.in<int>(0) + 1);
        return Status::Running;
    };
    const Tree tree = TreeBuilder("count").key<int>("n", 10).key<Vec2>("pos", Vec2{1, 1}).action("Inc", inc).end();
    test::in_both_modes([&](Mode mode) {
        Agent a(tree, {.mode = mode});
        Agent b(tree, {.mode = mode});
        a.blackboard().set("pos", Vec2{5, 5});
        a.tick(10ms);
        a.tick(10ms);
        a.tick(10ms);
        b.tick(10ms);
        CHECK(a.blackboard().get<int>("n") == 13);
        CHECK(b.blackboard().get<int>("n") == 11);
        CHECK(a.blackboard().get<Vec2>("pos") == Vec2{5, 5});
        CHECK(b.blackboard().get<Vec2>("pos") == Vec2{1, 1});
        // An agent created later starts from the declared initial values, not from another agent's.
        Agent c(tree, {.mode = mode});
        CHECK(c.blackboard().get<int>("n") == 10);
        CHECK(c.blackboard().get<Vec2>("pos") == Vec2{1, 1});
        const Key<int> n = tree.key<int>("n");
        CHECK(&a.blackboard().get(n) != &b.blackboard().get(n));  // separate storage
    });
}

TEST_CASE("blackboard: a Key<T> obtained from another tree is refused with UsageError, changing nothing") {
    // Key<T> stays small: its id and a 32-bit tag of the tree (schema) it came from.
    static_assert(sizeof(Key<int>) <= 8);
    const Tree a = TreeBuilder("a").key<int>("k").key<int>("x").always_success().end();
    const Tree b = TreeBuilder("b").key<int>("m", 7).key<int>("k", 1).always_success().end();
    const Key<int> from_a = a.key<int>("k");  // id 0, which is 'm' in b
    REQUIRE(from_a.id == b.key<int>("m").id);
    ChangeBus bus;
    ChangeLog log(bus);
    Agent agent(b, {.bus = &bus});
    Blackboard& bb = agent.blackboard();
    const std::string message =
        "blackboard key 'k' was obtained from another tree ('a') than 'b'; get the key from this agent's tree or blackboard";
    CHECK_THROWS_WITH_AS(bb.set(from_a, 5), message.c_str(), UsageError);
    CHECK_THROWS_WITH_AS(bb.get(from_a), message.c_str(), UsageError);
    // Through the other tree's agent's blackboard, too.
    Agent agent_a(a);
    const Key<int> from_agent_a = agent_a.blackboard().key<int>("k");
    CHECK_THROWS_WITH_AS(bb.set(from_agent_a, 5), message.c_str(), UsageError);
    CHECK(bb.get<int>("m") == 7);
    CHECK(bb.get<int>("k") == 1);
    CHECK(log.entries.empty());

    // The same key through its own tree's agents, or a copy of the tree, works.
    CHECK(agent_a.blackboard().set(from_a, 5));
    const Tree copy_of_a = a;
    Agent other_a(copy_of_a);
    CHECK(other_a.blackboard().set(from_a, 6));
    CHECK(other_a.blackboard().get(from_a) == 6);
    CHECK(bb.set(b.key<int>("k"), 2));
    CHECK(bb.get(bb.key<int>("k")) == 2);
    // A key made from a raw id (a ChangeBus slot's BlackboardChange::key) is checked by id and type only.
    CHECK(bb.get(Key<int>{b.key<int>("k").id}) == 2);

    // A tree built again from the same source is another tree.
    auto make = [] { return TreeBuilder("same").key<int>("k").always_success().end(); };
    const Tree first = make();
    Agent second(make());
    CHECK_THROWS_WITH_AS(second.blackboard().get(first.key<int>("k")),
                         "blackboard key 'k' was obtained from another tree ('same') than 'same'; get the key from this "
                         "agent's tree or blackboard",
                         UsageError);
    // A key whose tree is gone is still refused.
    Key<int> orphan;
    {
        const Tree gone = TreeBuilder("gone").key<int>("k").always_success().end();
        orphan = gone.key<int>("k");
    }
    CHECK_THROWS_WITH_AS(bb.get(orphan),
                         "blackboard key id 0 was obtained from another tree than 'b' (one that no longer exists); get "
                         "the key from this agent's tree or blackboard",
                         UsageError);
}

TEST_CASE("blackboard: a ChangeBus slot that throws is contained: later slots run, the write stands, it is counted") {
    const Tree tree = hurt_tree();
    test::in_both_modes([&](Mode mode) {
        ChangeBus bus;
        std::vector<int> seen;
        boost::signals2::scoped_connection thrower =
            bus.subscribe([](const BlackboardChange&) { throw std::runtime_error("slot failed"); });
        boost::signals2::scoped_connection observer =
            bus.subscribe([&](const BlackboardChange& ch) { seen.push_back(ch.blackboard.get<int>(Key<int>{ch.key})); });
        TraceRecorder rec;
        Agent agent(tree, {.mode = mode, .listener = &rec, .bus = &bus});
        // A write by game code: set() returns normally.
        CHECK(agent.blackboard().set("hp", 50));
        // A write by an action inside a tick: the action does not fail.
        agent.tick(10ms);
        CHECK(seen == std::vector<int>{50, 40});
        CHECK(bus.slot_errors() == 2);
        CHECK(agent.status() == Status::Running);
        CHECK(rec.tick(0) == "0:I 0:U");
        CHECK(agent.blackboard().get<int>("hp") == 40);
    });
}
