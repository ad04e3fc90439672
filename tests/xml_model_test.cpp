// The <TreeNodesModel>: nodes_model() lists the registry (port directions, ebt's own nodes, port
// defaults), and a file's model must agree with the registry.
#include "support/xml_fixtures.hpp"

using namespace ebt;
using namespace ebt::test::xml_fixtures;
using namespace std::chrono_literals;

TEST_CASE("xml: nodes_model lists the registry with port directions, and ebt's own nodes") {
    const Registry reg = make_registry();
    const std::string m = xml::nodes_model(reg);
    CHECK(m.find("<Action ID=\"Shoot\">\n      <input_port name=\"range\" type=\"float\" />\n      <output_port name=\"shots\" "
                 "type=\"int\" />\n    </Action>") != std::string::npos);
    CHECK(m.find("<inout_port name=\"hp\" type=\"double\" />") != std::string::npos);
    CHECK(m.find("<Condition ID=\"IsSet\">\n      <input_port name=\"flag\" type=\"bool\" />") != std::string::npos);
    CHECK(m.find("<Decorator ID=\"Cooldown\">") != std::string::npos);
    // It is itself a loadable document's model (with no tree to load).
    CHECK(load_error(reg, m) == "t.xml:2:1: the document defines no <BehaviorTree>");
}

TEST_CASE("xml: the TreeNodesModel carries port defaults; a file's model must agree with the registry") {
    const Registry reg = defaults_registry();
    const std::string m = xml::nodes_model(reg);
    CHECK(m.find("<Condition ID=\"IsSeeEnemy\">\n      <input_port name=\"enemy_seen\" type=\"bool\" default=\"{=}\" />") !=
          std::string::npos);
    CHECK(m.find("<input_port name=\"distance\" type=\"float\" default=\"{dist}\" />") != std::string::npos);
    CHECK(m.find("<Action ID=\"Aim\">\n      <input_port name=\"power\" type=\"int\" default=\"7\" />\n      <output_port "
                 "name=\"hits\" type=\"int\" default=\"{=}\" />") != std::string::npos);
    CHECK(m.find("<input_port name=\"target\" type=\"int\" />") != std::string::npos);  // no default: none written

    auto with_model = [](const std::string& ports) {
        return "<root BTCPP_format=\"4\">\n<BehaviorTree ID=\"T\"><IsSeeEnemy/></BehaviorTree>\n<TreeNodesModel>\n" + ports +
               "\n</TreeNodesModel>\n</root>\n";
    };
    // Agreeing models load: the same default, spelt {=} or {name}, or no default given.
    CHECK(load_error(reg, with_model("<Condition ID=\"IsSeeEnemy\"><input_port name=\"enemy_seen\" default=\"{=}\"/></Condition>")).empty());
    CHECK(load_error(reg, with_model("<Condition ID=\"IsSeeEnemy\"><input_port name=\"enemy_seen\" default=\"{enemy_seen}\"/></Condition>"))
              .empty());
    CHECK(load_error(reg, with_model("<Condition ID=\"IsSeeEnemy\"><input_port name=\"enemy_seen\"/></Condition>")).empty());
    CHECK(load_error(reg, with_model("<Action ID=\"Aim\"><input_port name=\"power\" default=\" 7\"/></Action>")).empty());
    // Disagreeing ones are errors at the port.
    CHECK(load_error(reg, with_model("<Condition ID=\"IsSeeEnemy\"><input_port name=\"enemy_seen\" default=\"{other}\"/></Condition>")) ==
          "t.xml:4:28: <TreeNodesModel> gives port 'enemy_seen' of 'IsSeeEnemy' the default \"{other}\", but it is registered "
          "with \"{=}\"");
    CHECK(load_error(reg, with_model("<Action ID=\"Aim\"><input_port name=\"power\" default=\"8\"/></Action>")) ==
          "t.xml:4:18: <TreeNodesModel> gives port 'power' of 'Aim' the default \"8\", but it is registered with \"7\"");
    CHECK(load_error(reg, with_model("<Action ID=\"Aim\"><input_port name=\"power\" default=\"{power}\"/></Action>")) ==
          "t.xml:4:18: <TreeNodesModel> gives port 'power' of 'Aim' the default \"{power}\", but it is registered with \"7\"");
    CHECK(load_error(reg, with_model("<Action ID=\"Attack\"><input_port name=\"target\" default=\"{=}\"/></Action>")) ==
          "t.xml:4:21: <TreeNodesModel> gives port 'target' of 'Attack' the default \"{=}\", but it is registered without a "
          "default");
    CHECK(load_error(reg, with_model("<Action ID=\"Aim\"><input_port name=\"power\" default=\"7.0e0\"/></Action>")) ==
          "t.xml:4:18: <TreeNodesModel> gives port 'power' of 'Aim' the default \"7.0e0\", but it is registered with \"7\"");
}
