// Node parameters in XML files (docs/parameters.md): attribute values checked at load against the
// registered declaration (each error with file:line:column and its exact message), what an action
// reads in both modes, and the <TreeNodesModel>: what the export writes (BehaviorTree.CPP v4's
// type/default/description plus ebt's rules), that a saved file loads back against the same
// registry, and what a model that disagrees with the registry gives.
#include <ebt/config.hpp>
#if EBT_HAS_XML

#include "support/xml_fixtures.hpp"

using namespace ebt;
using namespace ebt::test::xml_fixtures;

namespace {

/// What Look read from its parameters on each update.
struct Reads {
    std::vector<float> ranges;
    std::vector<std::string> modes;
    std::vector<int> shots;
};

/// As tests/params_builder_test.cpp: Look(range: float in [0, 50], default 10; mode: "patrol" or
/// "guard", default "patrol"; shots: int in [1, 5], required); CanSee(distance: float in [0, 20]).
Registry make_params_registry(Reads& reads, const std::string& range_description = "how far the guard sees") {
    Registry reg;
    ActionSpec look;
    look.ports = {input_port<float>("range").describe(range_description).range(0, 50).default_value(10.f),
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
                      {input_port<float>("distance").range(0, 20)});
    return reg;
}

const char* const kLookModel =
    "  <TreeNodesModel>\n"
    "    <Action ID=\"Look\">\n"
    "      <input_port name=\"range\" type=\"float\" default=\"10\" ebt_min=\"0\" ebt_max=\"50\">how far the guard sees</input_port>\n"
    "      <input_port name=\"mode\" type=\"string\" default=\"patrol\" ebt_one_of=\"patrol;guard\">what the guard does</input_port>\n"
    "      <input_port name=\"shots\" type=\"int\" ebt_min=\"1\" ebt_max=\"5\" ebt_required=\"true\">bullets per burst</input_port>\n"
    "    </Action>\n"
    "    <Condition ID=\"CanSee\">\n"
    "      <input_port name=\"distance\" type=\"float\" ebt_min=\"0\" ebt_max=\"20\" />\n"
    "    </Condition>\n";

/// A document with the tree `body` and, after it, the <TreeNodesModel> `model` (its whole element).
std::string with_model(const std::string& body, const std::string& model) {
    return "<root BTCPP_format=\"4\">\n<BehaviorTree ID=\"T\">\n" + body + "\n</BehaviorTree>\n" + model + "</root>\n";
}

}  // namespace

TEST_CASE("params xml: an action reads the literal, the key's value or the default, in both modes") {
    for (const Mode mode : {Mode::Polling, Mode::Event}) {
        CAPTURE(mode);
        Reads reads;
        const Registry reg = make_params_registry(reads);
        const Tree tree = xml::Loader(reg).load_string(doc("<Sequence>\n"
                                                           "  <CanSee distance=\"5\"/>\n"
                                                           "  <Look range=\"20.5\" mode=\"guard\" shots=\"3\"/>\n"
                                                           "  <Look range=\"{sight}\" shots=\"{burst}\"/>\n"
                                                           "</Sequence>"),
                                                       "t.xml");
        Agent agent(tree, {.mode = mode, .blackboard = {{"sight", 42.f}, {"burst", 2}}});
        CHECK(agent.tick(std::chrono::milliseconds(100)) == Status::Success);
        CHECK(reads.ranges == std::vector<float>{20.5f, 42.f});
        CHECK(reads.modes == std::vector<std::string>{"guard", "patrol"});
        CHECK(reads.shots == std::vector<int>{3, 2});
    }
}

TEST_CASE("params xml: a literal outside the allowed values, of the wrong type or for no parameter") {
    Reads reads;
    const Registry reg = make_params_registry(reads);
    CHECK(load_error(reg, doc("<Look shots=\"3\" range=\"60\"/>")) ==
          "t.xml:3:17: tree 'T', node /Look: action 'Look' port 'range': 60 is outside the allowed range 0 to 50");
    CHECK(load_error(reg, doc("<Look shots=\"9\"/>")) ==
          "t.xml:3:7: tree 'T', node /Look: action 'Look' port 'shots': 9 is outside the allowed range 1 to 5");
    CHECK(load_error(reg, doc("<Look shots=\"1\" mode=\"flee\"/>")) ==
          "t.xml:3:17: tree 'T', node /Look: action 'Look' port 'mode': 'flee' is not one of the allowed values: patrol, guard");
    CHECK(load_error(reg, doc("<Sequence>\n  <CanSee distance=\"-1\"/>\n  <Look shots=\"1\"/>\n</Sequence>")) ==
          "t.xml:4:11: tree 'T', node /Sequence/CanSee[0]: condition 'CanSee' port 'distance': -1 is outside the allowed range 0 to 20");
    CHECK(load_error(reg, doc("<Look shots=\"1\" range=\"far\"/>")) ==
          "t.xml:3:17: tree 'T', node /Look: action 'Look' port 'range': 'far' is not a valid float (allowed: 0 to 50)");
    CHECK(load_error(reg, doc("<Look shots=\"1\" rnage=\"3\"/>")) ==
          "t.xml:3:17: tree 'T', node /Look: action 'Look' has no port 'rnage' (ports: range mode shots)");
    // A required parameter must be written (a literal or a {key}).
    CHECK(load_error(reg, doc("<Look range=\"3\"/>")) ==
          "t.xml:3:1: tree 'T', node /Look: action 'Look' port 'shots' (int) is missing: write shots=\"{key}\", shots=\"{=}\" (the key "
          "'shots') or a literal value (allowed: 1 to 5)");
    // A {key} of another type than the parameter's.
    CHECK(load_error(reg, doc("<Blackboard><Entry key=\"n\" type=\"float\"/></Blackboard>\n<Look shots=\"{n}\"/>")) ==
          "t.xml:4:7: tree 'T', node /Look: action 'Look' port 'shots' expects key 'n' of type int, but it is declared as float (at t.xml:3:13)");
    // The bounds themselves are allowed.
    CHECK(load_error(reg, doc("<Sequence><CanSee distance=\"20\"/><Look shots=\"5\" range=\"0\" mode=\"patrol\"/></Sequence>")) == "");
}

namespace {
/// Type names are process-wide (Registry::add_enum): this one is not tests/xml_values_test.cpp's Stance.
enum class GuardStance : std::uint8_t { Idle, Alert, Combat };
}

TEST_CASE("params xml: an enum parameter with a set of allowed values, in a file and in code") {
    Registry reg;
    reg.add_enum<GuardStance>("GuardStance", {{"Idle", GuardStance::Idle}, {"Alert", GuardStance::Alert}, {"Combat", GuardStance::Combat}});
    std::vector<GuardStance> seen;
    reg.add_action("Hold",
                   [&seen](ActionContext& ctx) {
                       seen.push_back(ctx.in<GuardStance>("stance"));
                       return Status::Success;
                   },
                   {input_port<GuardStance>("stance").describe("how the guard stands").one_of({GuardStance::Idle, GuardStance::Alert})});
    CHECK(load_error(reg, doc("<Hold stance=\"Combat\"/>")) ==
          "t.xml:3:7: tree 'T', node /Hold: action 'Hold' port 'stance': 'Combat' is not one of the allowed values: Idle, Alert");
    CHECK(load_error(reg, doc("<Hold stance=\"Calm\"/>")) ==
          "t.xml:3:7: tree 'T', node /Hold: action 'Hold' port 'stance': 'Calm' is not a valid GuardStance (one of Idle, Alert, Combat) (allowed: "
          "Idle, Alert)");
    CHECK_THROWS_WITH_AS(TreeBuilder("t", reg).action("Hold").port_value("stance", GuardStance::Combat),
                         "tree 't', node /Action 'Hold': action 'Hold' port 'stance': 'Combat' is not one of the allowed values: Idle, Alert",
                         BuildError);
    CHECK(xml::nodes_model(reg).find("<input_port name=\"stance\" type=\"GuardStance\" ebt_one_of=\"Idle;Alert\">how the guard stands</input_port>") !=
          std::string::npos);
    for (const Mode mode : {Mode::Polling, Mode::Event}) {
        CAPTURE(mode);
        seen.clear();
        const Tree tree = xml::Loader(reg).load_string(doc("<Hold stance=\"Alert\"/>"), "t.xml");
        Agent agent(tree, {.mode = mode});
        CHECK(agent.tick(std::chrono::milliseconds(100)) == Status::Success);
        CHECK(seen == std::vector<GuardStance>{GuardStance::Alert});
    }
}

TEST_CASE("params xml: the model export carries each parameter's type, default, description and rules") {
    Reads reads;
    const Registry reg = make_params_registry(reads);
    const std::string model = xml::nodes_model(reg);
    CAPTURE(model);
    CHECK(model.find(kLookModel) != std::string::npos);
    // save() writes the same model after the tree; the tree writes its literals back.
    const Tree tree = xml::Loader(reg).load_string(doc("<Sequence><CanSee distance=\"5\"/><Look range=\"20.5\" shots=\"3\"/></Sequence>"), "t.xml");
    const std::string saved = xml::save(tree, reg);
    CHECK(saved.find(kLookModel) != std::string::npos);
    CHECK(saved.find("<Look range=\"20.5\" shots=\"3\" />") != std::string::npos);
    // It loads back against the registry that wrote it: the same tree, the same file again.
    const Tree back = xml::Loader(reg).load_string(saved, "saved.xml");
    check_same(tree, back, 3);
    CHECK(xml::save(back, reg) == saved);
    // A description is the registry's to say: a model with another one (an older file) still loads.
    Reads other_reads;
    const Registry reworded = make_params_registry(other_reads, "sight distance in metres");
    CHECK_NOTHROW(xml::Loader(reworded).load_string(saved, "saved.xml"));
}

TEST_CASE("params xml: a BehaviorTree.CPP model with descriptions and defaults loads and is checked against the registry") {
    Reads reads;
    const Registry reg = make_params_registry(reads);
    const std::string body = "<Look shots=\"2\"/>";
    // BehaviorTree.CPP v4's form (no ebt_* attributes): descriptions are not compared.
    CHECK(load_error(reg, with_model(body, "<TreeNodesModel>\n"
                                           "  <Action ID=\"Look\">\n"
                                           "    <input_port name=\"range\" type=\"float\" default=\"10.0\">view distance</input_port>\n"
                                           "    <input_port name=\"shots\" type=\"int\">burst</input_port>\n"
                                           "  </Action>\n"
                                           "</TreeNodesModel>\n")) == "");
    // A default other than the registered one.
    CHECK(load_error(reg, with_model(body, "<TreeNodesModel>\n<Action ID=\"Look\">\n"
                                           "<input_port name=\"range\" type=\"float\" default=\"12\">view distance</input_port>\n"
                                           "</Action>\n</TreeNodesModel>\n")) ==
          "t.xml:7:1: <TreeNodesModel> gives port 'range' of 'Look' the default \"12\", but it is registered with \"10\"");
    // ebt's rules, where a model gives them, must be the registered ones.
    CHECK(load_error(reg, with_model(body, "<TreeNodesModel>\n<Action ID=\"Look\">\n"
                                           "<input_port name=\"range\" type=\"float\" ebt_min=\"0\" ebt_max=\"40\"/>\n"
                                           "</Action>\n</TreeNodesModel>\n")) ==
          "t.xml:7:1: <TreeNodesModel> gives port 'range' of 'Look' other allowed values than the registry (registered: ebt_min=\"0\" "
          "ebt_max=\"50\")");
    CHECK(load_error(reg, with_model(body, "<TreeNodesModel>\n<Action ID=\"Look\">\n"
                                           "<input_port name=\"mode\" type=\"string\" ebt_one_of=\"patrol;flee\"/>\n"
                                           "</Action>\n</TreeNodesModel>\n")) ==
          "t.xml:7:1: <TreeNodesModel> gives port 'mode' of 'Look' other allowed values than the registry (registered: "
          "ebt_one_of=\"patrol;guard\")");
    CHECK(load_error(reg, with_model(body, "<TreeNodesModel>\n<Action ID=\"Look\">\n"
                                           "<input_port name=\"range\" type=\"float\" ebt_required=\"true\"/>\n"
                                           "</Action>\n</TreeNodesModel>\n")) ==
          "t.xml:7:1: <TreeNodesModel> gives port 'range' of 'Look' other allowed values than the registry (registered: ebt_min=\"0\" "
          "ebt_max=\"50\")");
    // The same values in another order are the same set.
    CHECK(load_error(reg, with_model(body, "<TreeNodesModel>\n<Action ID=\"Look\">\n"
                                           "<input_port name=\"mode\" type=\"string\" ebt_one_of=\"guard;patrol\"/>\n"
                                           "</Action>\n</TreeNodesModel>\n")) == "");
}

#endif  // EBT_HAS_XML
