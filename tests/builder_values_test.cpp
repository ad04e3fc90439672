// Port values in the builder: TreeBuilder::port_value gives a port a C++ constant (a private constant
// key, as a literal in an XML file), converts numbers only when exact, and xml::save writes it back.
#include <ebt/ebt.hpp>
#if EBT_HAS_XML
#include <ebt/xml.hpp>
#endif

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace ebt;
using namespace std::chrono_literals;

namespace {

/// MoveTo reads its ports (speed: float, steps: int) into `seen` on each update.
struct Seen {
    std::vector<float> speeds;
    std::vector<int> steps;
};

Registry make_registry(Seen& seen) {
    Registry reg;
    ActionSpec move;
    move.ports = {input_port<float>("speed"), input_port<int>("steps")};
    move.update = [&seen](ActionContext& ctx) {
        seen.speeds.push_back(ctx.in<float>(0));
        seen.steps.push_back(ctx.in<int>(1));
        return Status::Running;
    };
    reg.add_action("MoveTo", move);
    reg.add_condition(
        "InRange", [](const ConditionContext& ctx) { return ctx.in<float>(0) < 5.0f; }, {input_port<float>("distance")});
    return reg;
}

/// Sequence(InRange with distance 2.5, MoveTo with speed 3.5; steps read from the key, 4).
Tree in_range_then_move(const Registry& reg, const std::string& name) {
    return TreeBuilder(name, reg)
        .key<int>("steps", 4)
        .sequence()
            .condition("InRange").port_value("distance", 2.5f)
            .action("MoveTo").port_value("speed", 3.5f)
        .back()
        .end();
}

std::string build_error(const std::function<void()>& build) {
    try {
        build();
    } catch (const BuildError& e) {
        return e.what();
    }
    return "(no error)";
}

}  // namespace

TEST_CASE("port_value: an action's port reads the constant given in C++") {
    Seen seen;
    const Registry reg = make_registry(seen);
    const Tree tree = in_range_then_move(reg, "t");
    Agent agent(tree);
    agent.tick(50ms);
    CHECK(agent.status() == Status::Running);
    CHECK(seen.speeds == std::vector<float>{3.5f});
    CHECK(seen.steps == std::vector<int>{4});  // the other port still reads its key
    // The constant is not a key anyone can name.
    CHECK(tree.schema().find("speed") == kNoKey);
}

TEST_CASE("port_value: numbers convert to the port's type only when exact") {
    Seen seen;
    const Registry reg = make_registry(seen);
    const Tree tree = TreeBuilder("t", reg).action("MoveTo").port_value("speed", 5).port_value("steps", 2.0).end();
    Agent agent(tree);
    agent.tick(50ms);
    CHECK(seen.speeds == std::vector<float>{5.0f});
    CHECK(seen.steps == std::vector<int>{2});

    CHECK(build_error([&] { TreeBuilder("t", reg).action("MoveTo").port_value("steps", 2.5); }) ==
          "tree 't', node /Action 'MoveTo': port 'steps' of Action 'MoveTo' is int; the value given (2.5) is double and "
          "does not convert to it exactly");
    CHECK(build_error([&] { TreeBuilder("t", reg).action("MoveTo").port_value("speed", true); }) ==
          "tree 't', node /Action 'MoveTo': port 'speed' of Action 'MoveTo' is float; the value given (true) is bool");
    CHECK(build_error([&] { TreeBuilder("t", reg).action("MoveTo").port_value("sped", 1.0f); }) ==
          "tree 't', node /Action 'MoveTo': Action 'MoveTo' has no port 'sped' (ports: speed steps)");
    CHECK(build_error([&] { TreeBuilder("t", reg).sequence().always_success().port_value("speed", 1.0f); }) ==
          "tree 't', node /Sequence/AlwaysSuccess[0]: port_value() applies to an action or a registered condition node");
}

#if EBT_HAS_XML  // the XML parts need the loader and the saver (-DEBT_XML=OFF leaves them out)
TEST_CASE("port_value: xml::save writes the value as the port's literal, and loading it gives the same tree") {
    Seen seen;
    const Registry reg = make_registry(seen);
    const Tree tree = in_range_then_move(reg, "T");
    const std::string saved = xml::save(tree, reg);
    CAPTURE(saved);
    CHECK(saved.find("<InRange distance=\"2.5\"") != std::string::npos);
    CHECK(saved.find("<MoveTo speed=\"3.5\"") != std::string::npos);
    const Tree again = xml::Loader(reg).load_string(saved);
    CHECK(again.describe() == tree.describe());
    CHECK(xml::save(again, reg) == saved);
    Agent agent(again);
    agent.tick(50ms);
    CHECK(seen.speeds == std::vector<float>{3.5f});
}
#endif

TEST_CASE("port_value: a port with a value default takes the value given instead, saved and loaded back") {
    Registry reg;
    float seen = 0;
    ActionSpec walk;
    walk.ports = {input_port<float>("speed").default_value(1.5f)};
    walk.update = [&seen](ActionContext& ctx) {
        seen = ctx.in<float>(0);
        return Status::Running;
    };
    reg.add_action("Walk", walk);
    const Tree tree = TreeBuilder("T", reg).action("Walk").port_value("speed", 4.0f).end();
    Agent agent(tree);
    agent.tick(50ms);
    CHECK(seen == 4.0f);
#if EBT_HAS_XML
    const std::string saved = xml::save(tree, reg);
    CAPTURE(saved);
    CHECK(saved.find("<Walk speed=\"4\"") != std::string::npos);
    Agent again(xml::Loader(reg).load_string(saved));
    again.tick(50ms);
    CHECK(seen == 4.0f);
#endif
}
