// Node parameters in code (docs/parameters.md): a port declared with a description, a range or a
// set of allowed values and a required flag; the checks made when it is registered and when a tree
// is built (each error with its exact message); what an action reads (the literal, the key's value,
// the default) in both modes.
#include <ebt/ebt.hpp>

#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <vector>

using namespace ebt;

namespace {

/// What Look read from its parameters on each update.
struct Reads {
    std::vector<float> ranges;
    std::vector<std::string> modes;
    std::vector<int> shots;
};

/// Look(range: float in [0, 50], default 10; mode: "patrol" or "guard", default "patrol"; shots: int
/// in [1, 5], required) reads its parameters by name and succeeds. CanSee(distance: float in [0, 20],
/// required) is true below 10.
Registry make_registry(Reads& reads) {
    Registry reg;
    ActionSpec look;
    look.ports = {input_port<float>("range").describe("how far the guard sees").range(0, 50).default_value(10.f),
                  input_port<std::string>("mode").describe("what the guard does").one_of({"patrol", "guard"}).default_value("patrol"),
                  input_port<int>("shots").describe("bullets per burst").range(1, 5).required()};
    look.update = [&reads](ActionContext& ctx) {
        reads.ranges.push_back(ctx.in<float>("range"));
        reads.modes.push_back(ctx.in<std::string>("mode"));
        reads.shots.push_back(ctx.in<int>("shots"));
        return Status::Success;
    };
    reg.add_action("Look", look);
    reg.add_condition("CanSee", [](const ConditionContext& ctx) { return ctx.in<float>("distance") < 10.f; },
                      {input_port<float>("distance").range(0, 20).required()});
    return reg;
}

std::string build_error(const std::function<void()>& build) {
    try {
        build();
    } catch (const BuildError& e) {
        return e.what();
    }
    return "(no error)";
}

/// The message of registering action 'Bad' with the single port `port`.
std::string register_error(PortSpec port) {
    return build_error([&] {
        Registry reg;
        reg.add_action("Bad", [](ActionContext&) { return Status::Success; }, {std::move(port)});
    });
}

}  // namespace

TEST_CASE("params builder: the declaration is kept as registered, its values converted to the port's type") {
    Reads reads;
    const Registry reg = make_registry(reads);
    const PortSpec& range = reg.find_action("Look")->ports[0];
    CHECK(range.description == "how far the guard sees");
    CHECK(range.allowed.min == Value::of(0.f));  // range(0, 50): ints converted to float
    CHECK(range.allowed.max == Value::of(50.f));
    CHECK(range.allowed.texts == std::vector<std::string>{"0", "50"});
    CHECK(detail::port_allowed_text(range) == "0 to 50");
    CHECK_FALSE(range.must_be_given);
    const PortSpec& mode = reg.find_action("Look")->ports[1];
    CHECK(mode.allowed.one_of == std::vector<Value>{Value::of(std::string("patrol")), Value::of(std::string("guard"))});
    CHECK(detail::port_allowed_text(mode) == "patrol, guard");
    CHECK(reg.find_action("Look")->ports[2].must_be_given);
    CHECK(reg.find_condition("CanSee")->ports[0].must_be_given);
}

TEST_CASE("params builder: registration refuses rules that cannot hold") {
    CHECK(register_error(input_port<std::string>("mode").range(0, 1)) ==
          "action 'Bad' port 'mode' (std::string) has a range, which only number ports (int, unsigned, long, long long, float, double) can "
          "have: use one_of()");
    CHECK(register_error(input_port<int>("n").range(0.5, 2)) ==
          "action 'Bad' port 'n' (int) has the range bound 0.5 (double), which does not convert exactly to int");
    CHECK(register_error(input_port<int>("n").range(5, 1)) == "action 'Bad' port 'n' has the range 5 to 1, whose low end is above its high end");
    CHECK(register_error(input_port<float>("range").range(0, 50).default_value(60.f)) ==
          "action 'Bad' port 'range' has a default value that is not allowed: 60 is outside the allowed range 0 to 50");
    CHECK(register_error(input_port<std::string>("mode").one_of({"patrol", "guard"}).default_value("flee")) ==
          "action 'Bad' port 'mode' has a default value that is not allowed: 'flee' is not one of the allowed values: patrol, guard");
    CHECK(register_error(input_port<int>("n").required().default_value(3)) ==
          "action 'Bad' port 'n' is required and has a default: a required port has none (drop one of them)");
    CHECK(register_error(input_port<std::string>("mode").one_of({1, 2})) ==
          "action 'Bad' port 'mode' (std::string) lists 1 (int) in one_of(), which is not a std::string");
    CHECK(register_error(input_port<std::string>("mode").one_of({"a", "a"})) == "action 'Bad' port 'mode' lists 'a' twice in one_of()");
    CHECK(register_error(input_port<std::string>("mode").one_of({"a;b"})) ==
          "action 'Bad' port 'mode' lists 'a;b' in one_of(): an allowed value cannot contain ';'");
    CHECK(register_error(input_port<int>("n").range(0, 1).one_of({0, 1})) == "action 'Bad' port 'n' has both range() and one_of(): give one of them");
    CHECK(register_error(output_port<int>("n").range(0, 1)) ==
          "action 'Bad' port 'n' is an output: range() and one_of() constrain values given to a node, an output's are written by it");
    // A condition's ports are inputs: a range is fine there.
    Registry reg;
    CHECK_NOTHROW(reg.add_condition("Near", [](const ConditionContext&) { return true; }, {output_port<int>("n").range(0, 1)}));
}

TEST_CASE("params builder: an action reads the literal, the key's value or the default, in both modes") {
    for (const Mode mode : {Mode::Polling, Mode::Event}) {
        CAPTURE(mode);
        Reads reads;
        const Registry reg = make_registry(reads);
        const Tree tree = TreeBuilder("t", reg)
                              .key<float>("sight", 42.f)
                              .key<int>("burst", 2)
                              .sequence()
                                  .condition("CanSee").port_value("distance", 5)
                                  .action("Look").port_value("range", 20.5f).port_value("mode", "guard").port_value("shots", 3)
                                  .action("Look", {{"range", "sight"}, {"shots", "burst"}})
                              .back()
                              .end();
        Agent agent(tree, {.mode = mode});
        CHECK(agent.tick(std::chrono::milliseconds(100)) == Status::Success);
        CHECK(reads.ranges == std::vector<float>{20.5f, 42.f});
        CHECK(reads.modes == std::vector<std::string>{"guard", "patrol"});
        CHECK(reads.shots == std::vector<int>{3, 2});
        // A key's value is not checked against the range (docs/parameters.md): 99 is read as it is.
        agent.blackboard().set("sight", 99.f);
        CHECK(agent.tick(std::chrono::milliseconds(100)) == Status::Success);
        CHECK(reads.ranges.back() == 99.f);
    }
}

TEST_CASE("params builder: a literal outside the allowed values is refused with the node path") {
    Reads reads;
    const Registry reg = make_registry(reads);
    CHECK(build_error([&] {
              TreeBuilder("t", reg).sequence().action("Look").port_value("shots", 3).port_value("range", 60.f).back().end();
          }) == "tree 't', node /Sequence/Action 'Look'[0]: action 'Look' port 'range': 60 is outside the allowed range 0 to 50");
    CHECK(build_error([&] {
              TreeBuilder("t", reg).sequence().action("Look").port_value("shots", 0).back().end();
          }) == "tree 't', node /Sequence/Action 'Look'[0]: action 'Look' port 'shots': 0 is outside the allowed range 1 to 5");
    CHECK(build_error([&] {
              TreeBuilder("t", reg).sequence().action("Look").port_value("shots", 1).port_value("mode", "flee").back().end();
          }) == "tree 't', node /Sequence/Action 'Look'[0]: action 'Look' port 'mode': 'flee' is not one of the allowed values: patrol, guard");
    CHECK(build_error([&] {
              TreeBuilder("t", reg).sequence().condition("CanSee").port_value("distance", 25.f).back().end();
          }) == "tree 't', node /Sequence/Condition 'CanSee'[0]: condition 'CanSee' port 'distance': 25 is outside the allowed range 0 to 20");
}

TEST_CASE("params builder: wrong type, unknown parameter and a key of another type name the parameter") {
    Reads reads;
    const Registry reg = make_registry(reads);
    CHECK(build_error([&] { TreeBuilder("t", reg).sequence().action("Look").port_value("shots", 2.5).back().end(); }) ==
          "tree 't', node /Sequence/Action 'Look'[0]: port 'shots' of Action 'Look' is int; the value given (2.5) is double and does not convert to "
          "it exactly (allowed: 1 to 5)");
    CHECK(build_error([&] { TreeBuilder("t", reg).sequence().action("Look").port_value("mode", 3).back().end(); }) ==
          "tree 't', node /Sequence/Action 'Look'[0]: port 'mode' of Action 'Look' is std::string; the value given (3) is int (allowed: patrol, guard)");
    CHECK(build_error([&] { TreeBuilder("t", reg).sequence().action("Look").port_value("rnage", 3.f).back().end(); }) ==
          "tree 't', node /Sequence/Action 'Look'[0]: Action 'Look' has no port 'rnage' (ports: range mode shots)");
    CHECK(build_error([&] { TreeBuilder("t", reg).sequence().action("Look", {{"rnage", "sight"}}).back().end(); }) ==
          "tree 't', at /Sequence: action 'Look' has no port 'rnage' (ports: range mode shots)");
    // A {key} binding is checked for its type when the tree is built.
    CHECK(build_error([&] {
              TreeBuilder("t", reg).key<int>("sight").sequence().action("Look", {{"range", "sight"}}).port_value("shots", 1).back().end();
          }) == "tree 't', node /Sequence/Action 'Look'[0]: action 'Look' port 'range' expects key 'sight' of type float, but it is declared as int");
}

TEST_CASE("params builder: a required parameter left without a value") {
    Reads reads;
    const Registry reg = make_registry(reads);
    // The builder does not fall back to the key named like the port: end() names the node.
    CHECK(build_error([&] { TreeBuilder("t", reg).key<int>("shots").sequence().action("Look").action("Look").port_value("shots", 1).back().end(); }) ==
          "tree 't', node /Sequence/Action 'Look'[0]: action 'Look' port 'shots' (int) is required: give it a literal with port_value(\"shots\", ...) or a "
          "key in the node's bindings (allowed: 1 to 5)");
    CHECK(build_error([&] { TreeBuilder("t", reg).sequence().condition("CanSee").action("Look", {{"shots", "n"}}).back().end(); }) ==
          "tree 't', node /Sequence/Condition 'CanSee'[0]: condition 'CanSee' port 'distance' (float) is required: give it a literal with "
          "port_value(\"distance\", ...) or a key in the node's bindings (allowed: 0 to 20)");
    // In a predicate no port_value() can follow: refused at once.
    CHECK(build_error([&] {
              TreeBuilder("t", reg).sequence().action("Look").port_value("shots", 1).precondition(Predicate::condition("CanSee")).back().end();
          }) == "tree 't', at /Sequence: condition 'CanSee' port 'distance' (float) is required: give it a literal with port_value(\"distance\", "
                "...) or a key in the node's bindings (allowed: 0 to 20)");
    // Given by a binding or a literal, it builds.
    CHECK_NOTHROW(TreeBuilder("t", reg)
                      .key<float>("d")
                      .key<int>("n")
                      .sequence()
                          .action("Look", {{"shots", "n"}})
                          .action("Look").port_value("shots", 5)
                          .condition("CanSee", {{"distance", "d"}})
                      .back()
                      .precondition(Predicate::condition("CanSee", {{"distance", "d"}}))
                      .end());
}
