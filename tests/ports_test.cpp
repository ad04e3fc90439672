// Ports by name (issue 10, item 5): ctx.in<T>("range") / ctx.out("range", v) in actions and
// conditions, found by a name hash computed at compile time and at registration; unknown names,
// duplicate names and hash collisions are errors.
#include "support/trace_recorder.hpp"

#include <ebt/ebt.hpp>

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace ebt;
using namespace std::chrono_literals;

static_assert(PortName("range").hash == detail::port_hash("range"));
static_assert(PortName("range").text == "range");

TEST_CASE("ports by name: reads and writes reach the keys the node bound, whatever the port order") {
    Registry r;
    // The same action twice, with its ports declared in the two orders: by name, both read the same.
    for (const bool reversed : {false, true}) {
        ActionSpec aim;
        aim.ports = {input_port<float>("range"), output_port<int>("shots")};
        if (reversed) std::swap(aim.ports[0], aim.ports[1]);
        aim.update = [](ActionContext& ctx) {
            ctx.out("shots", static_cast<int>(ctx.in<float>("range") / 10.0f));
            return Status::Success;
        };
        r.add_action(reversed ? "AimReversed" : "Aim", std::move(aim));
    }
    r.add_condition("InRange", [](const ConditionContext& ctx) { return ctx.in<float>("range") < ctx.in<float>("reach"); },
                    {input_port<float>("reach"), input_port<float>("range")});
    const Tree tree = TreeBuilder("aim", r)
                          .key<float>("distance", 35.0f)
                          .key<float>("arm", 50.0f)
                          .key<int>("a")
                          .key<int>("b")
                          .sequence()
                              .condition("InRange", {{"range", "distance"}, {"reach", "arm"}})
                              .action("Aim", {{"range", "distance"}, {"shots", "a"}})
                              .action("AimReversed", {{"range", "distance"}, {"shots", "b"}})
                          .back()
                          .end();
    for (Mode mode : test::both_modes()) {
        Agent agent(tree, {.mode = mode});
        CHECK(agent.tick(50ms) == Status::Success);
        CHECK(agent.blackboard().get<int>("a") == 3);
        CHECK(agent.blackboard().get<int>("b") == 3);
        Agent far(tree, {.mode = mode, .blackboard = {{"distance", 60.0f}}});  // out of reach: the condition fails
        far.tick(50ms);
        CHECK(far.status(2) == Status::Invalid);  // the leading condition (the sequence's guard) failed: Aim never ran
        CHECK(far.blackboard().get<int>("a") == 0);
    }
}

TEST_CASE("ports by name: an unknown name is an error inside the tick, naming the action and its ports") {
    Registry r;
    r.add_action("Shoot", [](ActionContext& ctx) { return ctx.in<float>("rnage") > 0 ? Status::Success : Status::Failure; },
                 {input_port<float>("range"), output_port<int>("shots")});
    r.add_condition("Far", [](const ConditionContext& ctx) { return ctx.in<float>(PortName(std::string_view("far"))) > 0; },
                    {input_port<float>("range")});
    r.add_action("Bare", [](ActionContext& ctx) {
        static_cast<void>(ctx.in<int>("x"));
        return Status::Success;
    });
    const Tree tree = TreeBuilder("shoot", r)
                          .key<float>("range", 1.0f)
                          .key<int>("shots")
                          .selector()
                              .condition("Far")
                              .action("Shoot")
                              .action("Bare")
                          .back()
                          .end();
    test::TraceRecorder rec;
    Agent agent(tree, {.listener = &rec});
    CHECK(agent.tick(50ms) == Status::Failure);
    CHECK(rec.errors() == std::vector<std::string>{
                              "1: condition has no port 'far' (its ports: 'range' (float))",
                              "2: action 'Shoot' has no port 'rnage' (its ports: 'range' (float), 'shots' (int))",
                              "3: action 'Bare' has no port 'x' (it has no ports)"});
    CHECK(agent.blackboard().get<float>("range") == 1.0f);  // the agent stays usable
    CHECK(agent.tick(50ms) == Status::Failure);
}

TEST_CASE("ports by name: a type other than the port's is the blackboard's usual error") {
    Registry r;
    r.add_action("Count", [](ActionContext& ctx) { return ctx.out("n", 1.5) ? Status::Success : Status::Failure; },
                 {output_port<int>("n")});
    test::TraceRecorder rec;
    Agent agent(TreeBuilder("count", r).key<int>("n").action("Count").end(), {.listener = &rec});
    agent.tick(50ms);
    REQUIRE(rec.errors().size() == 1);
    CHECK(rec.errors()[0].find("'n'") != std::string::npos);
    CHECK(agent.blackboard().get<int>("n") == 0);
}

TEST_CASE("ports by name: two ports with one name are refused at registration") {
    Registry r;
    CHECK_THROWS_WITH_AS(r.add_action("Twice", [](ActionContext&) { return Status::Success; },
                                      {input_port<int>("a"), input_port<int>("b"), output_port<int>("a")}),
                         "action 'Twice' declares port 'a' twice (ports 0 and 2)", BuildError);
    CHECK_THROWS_WITH_AS(r.add_condition("Twice", [](const ConditionContext&) { return true; }, {port<int>("a"), port<int>("a")}),
                         "condition 'Twice' declares port 'a' twice (ports 0 and 1)", BuildError);
    ActionSpec inline_spec;
    inline_spec.update = [](ActionContext&) { return Status::Success; };
    inline_spec.ports = {port<int>("a"), port<int>("a")};
    CHECK_THROWS_WITH_AS(TreeBuilder("t", r).key<int>("a").action("Inline", inline_spec),
                         "tree 't', at /: action 'Inline' declares port 'a' twice (ports 0 and 1)", BuildError);
    // Names that differ are told apart (their FNV-1a hashes differ).
    CHECK(detail::port_hash("range") != detail::port_hash("rangf"));
    CHECK_NOTHROW(r.add_action("Pair", [](ActionContext&) { return Status::Success; }, {port<int>("range"), port<int>("rangf")}));
}
