// Blackboard::set and get by name with a number of another type than the key's (docs/architecture.md,
// "Blackboard conversions"): converted when the target type holds the value exactly, refused with a
// UsageError naming the key, both types and the value otherwise; the blackboard then stays unchanged.
#include "support/trace_recorder.hpp"

#include <ebt/signals.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

using namespace ebt;
using namespace std::chrono_literals;

namespace conversions_test {
struct Vec2 {
    float x = 0, y = 0;
    friend bool operator==(const Vec2&, const Vec2&) = default;
};
}  // namespace conversions_test
using conversions_test::Vec2;

namespace {

Tree numbers_tree() {
    return TreeBuilder("numbers")
        .key<float>("enemy_dist", 10.0f)
        .key<int>("hp", 100)
        .key<std::uint8_t>("ammo", 7)
        .key<long long>("gold", 1LL << 40)
        .key<unsigned>("kills", 3u)
        .key<double>("ratio", 0.25)
        .key<bool>("alert")
        .key<Vec2>("pos", Vec2{1, 2})
        .always_success()
        .end();
}

}  // namespace

TEST_CASE("blackboard conversions: set by name converts a number the key's type holds exactly") {
    Agent agent(numbers_tree());
    Blackboard& bb = agent.blackboard();
    CHECK(bb.set("enemy_dist", 4.0));  // double 4.0 -> float 4.0f
    CHECK(bb.get(bb.key<float>("enemy_dist")) == 4.0f);
    CHECK(bb.set("enemy_dist", 0.1f));  // the same type: stored as is
    CHECK(bb.set("enemy_dist", 16777216));  // 2^24: exact in a float
    CHECK(bb.get<float>("enemy_dist") == 16777216.0f);
    CHECK(bb.set("enemy_dist", 1 << 30));  // 2^30: one significant bit, exact in a float
    CHECK(bb.set("hp", 42.0));  // an integral double into an int
    CHECK(bb.get<int>("hp") == 42);
    CHECK(bb.set("hp", -7LL));
    CHECK(bb.get<int>("hp") == -7);
    CHECK(bb.set("ammo", 255));
    CHECK(bb.get<std::uint8_t>("ammo") == 255);
    CHECK(bb.set("gold", 5));  // int into long long
    CHECK(bb.get<long long>("gold") == 5);
    CHECK(bb.set("kills", 4));  // a non-negative int into unsigned
    CHECK(bb.get<unsigned>("kills") == 4u);
    CHECK(bb.set("ratio", 0.5f));  // float into double: always exact
    CHECK(bb.get<double>("ratio") == 0.5);
    // Equal after conversion: not a change.
    CHECK_FALSE(bb.set("hp", -7.0));
    CHECK_FALSE(bb.set("ratio", 0.5));
}

TEST_CASE("blackboard conversions: set by name refuses a value the key's type cannot hold exactly, changing nothing") {
    ChangeBus bus;
    int changes = 0;
    bus.subscribe([&](const BlackboardChange&) { ++changes; });
    Agent agent(numbers_tree(), {.bus = &bus});
    Blackboard& bb = agent.blackboard();
    CHECK_THROWS_WITH_AS(bb.set("enemy_dist", 4.1),
                         "blackboard key 'enemy_dist' is declared as float: the double 4.1 is not exactly representable "
                         "as float",
                         UsageError);
    CHECK_THROWS_WITH_AS(bb.set("enemy_dist", 16777217),
                         "blackboard key 'enemy_dist' is declared as float: the int 16777217 is not exactly "
                         "representable as float",
                         UsageError);
    CHECK_THROWS_WITH_AS(bb.set("enemy_dist", 1e300),
                         "blackboard key 'enemy_dist' is declared as float: the double 1e+300 is not exactly "
                         "representable as float",
                         UsageError);
    CHECK_THROWS_WITH_AS(bb.set("ammo", 300),
                         "blackboard key 'ammo' is declared as unsigned char: the int 300 is not exactly representable "
                         "as unsigned char",
                         UsageError);
    CHECK_THROWS_WITH_AS(bb.set("kills", -1),
                         "blackboard key 'kills' is declared as unsigned: the int -1 is not exactly representable as "
                         "unsigned",
                         UsageError);
    CHECK_THROWS_WITH_AS(bb.set("hp", 2.5f),
                         "blackboard key 'hp' is declared as int: the float 2.5 is not exactly representable as int",
                         UsageError);
    CHECK_THROWS_WITH_AS(bb.set("hp", 3e9),
                         "blackboard key 'hp' is declared as int: the double 3e+09 is not exactly representable "
                         "as int",
                         UsageError);
    CHECK_THROWS_WITH_AS(bb.set("hp", std::numeric_limits<double>::quiet_NaN()),
                         "blackboard key 'hp' is declared as int: the double nan is not exactly representable as int",
                         UsageError);
    CHECK_THROWS_WITH_AS(bb.set("kills", 5000000000LL),
                         "blackboard key 'kills' is declared as unsigned: the long long 5000000000 is not exactly "
                         "representable as unsigned",
                         UsageError);
    CHECK_THROWS_WITH_AS(bb.set("ratio", (1LL << 53) + 1),
                         "blackboard key 'ratio' is declared as double: the long long 9007199254740993 is not exactly "
                         "representable as double",
                         UsageError);
    // Not numbers: bool and structs are never converted, either way.
    CHECK_THROWS_WITH_AS(bb.set("alert", 1), "blackboard key 'alert' is declared as bool, not int", UsageError);
    CHECK_THROWS_WITH_AS(bb.set("hp", true), "blackboard key 'hp' is declared as int, not bool", UsageError);
    CHECK_THROWS_WITH_AS(bb.set("pos", 1.0), "blackboard key 'pos' is declared as conversions_test::Vec2, not double", UsageError);
    CHECK_THROWS_WITH_AS(bb.set("nope", 1.0), "blackboard has no key 'nope'", UsageError);

    CHECK(bb.get<float>("enemy_dist") == 10.0f);
    CHECK(bb.get<int>("hp") == 100);
    CHECK(bb.get<std::uint8_t>("ammo") == 7);
    CHECK(bb.get<unsigned>("kills") == 3u);
    CHECK(bb.get<long long>("gold") == (1LL << 40));
    CHECK(bb.get<double>("ratio") == 0.25);
    CHECK(changes == 0);
}

TEST_CASE("blackboard conversions: get by name converts when the asked type holds the value exactly") {
    Agent agent(numbers_tree());
    Blackboard& bb = agent.blackboard();
    CHECK(bb.get<double>("enemy_dist") == 10.0);
    CHECK(bb.get<int>("enemy_dist") == 10);
    CHECK(bb.get<float>("hp") == 100.0f);
    CHECK(bb.get<std::uint8_t>("hp") == 100);
    CHECK(bb.get<double>("gold") == 1099511627776.0);
    CHECK(bb.get<int>("ammo") == 7);
    bb.set("enemy_dist", 2.5f);
    CHECK_THROWS_WITH_AS(bb.get<int>("enemy_dist"),
                         "blackboard key 'enemy_dist' is declared as float: its value 2.5 is not exactly representable as "
                         "int",
                         UsageError);
    CHECK_THROWS_WITH_AS(bb.get<int>("gold"),
                         "blackboard key 'gold' is declared as long long: its value 1099511627776 is not exactly "
                         "representable as int",
                         UsageError);
    bb.set("hp", -3);
    CHECK_THROWS_WITH_AS(bb.get<unsigned>("hp"),
                         "blackboard key 'hp' is declared as int: its value -3 is not exactly representable as unsigned",
                         UsageError);
    CHECK_THROWS_WITH_AS(bb.get<int>("alert"), "blackboard key 'alert' is declared as bool, not int", UsageError);
    CHECK_THROWS_WITH_AS(bb.get<bool>("hp"), "blackboard key 'hp' is declared as int, not bool", UsageError);
    CHECK_THROWS_WITH_AS(bb.get<double>("nope"), "blackboard has no key 'nope'", UsageError);
}

TEST_CASE("blackboard conversions: a converted write wakes guards like any other write") {
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Registry registry;
        registry.add_condition(
            "Near", [](const ConditionContext& ctx) { return ctx.in<float>(0) < 5.0f; }, {input_port<float>("dist")});
        const Tree tree = TreeBuilder("near", registry)
                              .key<float>("enemy_dist", 10.0f)
                              .active_selector()
                                  .sequence().condition("Near", {{"dist", "enemy_dist"}}).action("Attack", test::running_action()).back()
                                  .action("Patrol", test::running_action())
                              .back()
                              .end();
        Agent agent(tree, {.mode = mode});
        agent.tick(10ms);
        CHECK(agent.status(4) == Status::Running);
        agent.blackboard().set("enemy_dist", 4.0);  // a double literal, stored as 4.0f
        agent.tick(10ms);
        CHECK(agent.status(3) == Status::Running);
        CHECK(agent.status(4) == Status::Aborted);
    }
}
