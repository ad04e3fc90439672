// XML load errors with their exact messages (file:line:column, tree, node path, problem): malformed
// documents, unknown nodes, child counts, attributes, ports and literals, builder errors at the
// node's position, <Blackboard> entries and <TreeNodesModel>, nesting.
#include "support/xml_fixtures.hpp"

using namespace ebt;
using namespace ebt::test::xml_fixtures;
using namespace std::chrono_literals;

// ---- bad input --------------------------------------------------------------------------------------------------

TEST_CASE("xml errors: malformed XML and document structure") {
    const Registry reg = make_registry();
    CHECK(load_error(reg, "<root BTCPP_format=\"4\">\n  <BehaviorTree ID=\"T\">\n    <Patrol>\n  </BehaviorTree>\n</root>") ==
          "t.xml:3:5: malformed XML: <Patrol> is not closed (</BehaviorTree> at line 4, column 3 ends its parent)");
    CHECK(load_error(reg, "<root>\n  <BehaviorTree ID=\"T\"><Sequence><Patrol/>\n</root>") ==
          "t.xml:2:24: malformed XML: <Sequence> is not closed (</root> at line 3, column 1 does not match it)");
    CHECK(load_error(reg, "<root>\n<!-- <a> --><BehaviorTree ID=\"T\" x='>'>") ==
          "t.xml:2:13: malformed XML: <BehaviorTree> is not closed (the document ends at line 2, column 40)");
    CHECK(load_error(reg, "") == "t.xml:1:1: malformed XML: No document element found");
    CHECK(load_error(reg, "<root attr=\"x></root>") == "t.xml:1:13: malformed XML: Error parsing element attribute");
    CHECK(load_error(reg, doc("<Sequence>\n  <Patrol _x=\"1\" _x=\"2\"/>\n</Sequence>")) ==
          "t.xml:4:11: malformed XML: attribute '_x' appears twice in <Patrol>");
    CHECK(load_error(reg, "<root/><root/>") == "t.xml:1:8: a second top-level element <root> (a document has one <root>)");
    CHECK(load_error(reg, "<tree/>") == "t.xml:1:1: the top-level element must be <root>, not <tree>");
    CHECK(load_error(reg, "<root><Tree/></root>") ==
          "t.xml:1:7: unexpected element <Tree> in <root> (expected BehaviorTree, TreeNodesModel or include)");
    CHECK(load_error(reg, "<root/>") == "t.xml:1:1: the document defines no <BehaviorTree>");
    CHECK(load_error(reg, "<root><BehaviorTree ID=\"A\"><Patrol/></BehaviorTree><BehaviorTree ID=\"B\"><Patrol/></BehaviorTree></root>") ==
          "t.xml:1:1: several BehaviorTrees (A B) and no main_tree_to_execute: name the tree to load");
    CHECK(load_error(reg, "<root main_tree_to_execute=\"C\"><BehaviorTree ID=\"A\"><Patrol/></BehaviorTree></root>") ==
          "t.xml:1:7: no BehaviorTree with ID 'C' (defined: A)");
    CHECK(load_error(reg, "<root>\n<BehaviorTree ID=\"A\"><Patrol/></BehaviorTree>\n<BehaviorTree ID=\"A\"><Patrol/></BehaviorTree>\n</root>") ==
          "t.xml:3:1: duplicate BehaviorTree ID 'A' (first defined at t.xml:2:1)");
    CHECK(load_error(reg, "<root><BehaviorTree><Patrol/></BehaviorTree><BehaviorTree ID=\"B\"><Patrol/></BehaviorTree></root>") ==
          "t.xml:1:7: <BehaviorTree> needs a non-empty ID attribute");
    CHECK(load_error(reg, doc("<Patrol/>\n<Patrol/>")) == "t.xml:4:1: tree 'T': <BehaviorTree> must have exactly one root node, got 2");
    CHECK(load_error(reg, "<root><BehaviorTree ID=\"T\"/></root>") ==
          "t.xml:1:7: tree 'T': <BehaviorTree> must have exactly one root node, got 0");
    CHECK(load_error(reg, doc("<Sequence>hello<Patrol/></Sequence>")) ==
          "t.xml:3:11: tree 'T', node /Sequence: unexpected text inside <Sequence>");
    // A tree with no ID is fine when it is the only one.
    CHECK(xml::Loader(reg).load_string("<root><BehaviorTree><Patrol/></BehaviorTree></root>").name() == "MainTree");
    // Columns count characters, not bytes.
    CHECK(load_error(reg, doc("<Sequence name=\"é\"><Bogus/></Sequence>")) ==
          "t.xml:3:20: tree 'T', node /Sequence/Bogus[0]: unknown node <Bogus>: not a built-in node nor a registered action "
          "or condition (registered actions: Attack Fail Heal Patrol Shoot Succeed Work2; conditions: InRange IsSet Never)");
}

TEST_CASE("xml errors: unknown nodes, wrong child counts, attributes") {
    const Registry reg = make_registry();
    CHECK(load_error(reg, doc("<Action ID=\"Jump\"/>")) == "t.xml:3:1: tree 'T', node /Action 'Jump': unknown action 'Jump'");
    CHECK(load_error(reg, doc("<Action ID=\"IsSet\" flag=\"{f}\"/>")) ==
          "t.xml:3:1: tree 'T', node /Action 'IsSet': unknown action 'IsSet' (it is a registered condition: write <Condition ID=\"IsSet\">)");
    CHECK(load_error(reg, doc("<Condition ID=\"Patrol\"/>")) ==
          "t.xml:3:1: tree 'T', node /Condition 'Patrol': unknown condition 'Patrol' (it is a registered action: write <Action ID=\"Patrol\">)");
    CHECK(load_error(reg, doc("<Action/>")) == "t.xml:3:1: tree 'T', node /Action '': <Action> needs an ID attribute");
    CHECK(load_error(reg, doc("<Patrol ID=\"Patrol\"/>")) ==
          "t.xml:3:9: tree 'T', node /Patrol: <Patrol> takes no ID attribute (only <Action>, <Condition>, <Control>, "
          "<Decorator> and <SubTree> do)");
    CHECK(load_error(reg, doc("<Decorator ID=\"Sequence\"><Patrol/></Decorator>")) ==
          "t.xml:3:1: tree 'T', node /Decorator 'Sequence': 'Sequence' is a Control, not a Decorator (write <Sequence> or "
          "<Control ID=\"Sequence\">)");
    // Child counts.
    CHECK(load_error(reg, doc("<Sequence>\n<Inverter><Patrol/><Patrol/></Inverter>\n</Sequence>")) ==
          "t.xml:4:1: tree 'T', node /Sequence/Inverter[0]: Inverter takes exactly one child, got 2");
    CHECK(load_error(reg, doc("<Sequence><Inverter/></Sequence>")) ==
          "t.xml:3:11: tree 'T', node /Sequence/Inverter[0]: Inverter takes exactly one child, got 0");
    CHECK(load_error(reg, doc("<Sequence><Fallback></Fallback></Sequence>")) ==
          "t.xml:3:11: tree 'T', node /Sequence/Fallback[0]: Fallback has no children");
    CHECK(load_error(reg, doc("<Sequence><Patrol><Patrol/></Patrol></Sequence>")) ==
          "t.xml:3:19: tree 'T', node /Sequence/Patrol[0]: action 'Patrol' takes no children, got 1");
    CHECK(load_error(reg, doc("<Sleep msec=\"5\"><Patrol/></Sleep>")) ==
          "t.xml:3:17: tree 'T', node /Sleep: Sleep takes no children, got 1");
    // Attributes of built-in nodes.
    CHECK(load_error(reg, doc("<Repeat num_cycle=\"3\"><Patrol/></Repeat>")) ==
          "t.xml:3:9: tree 'T', node /Repeat: Repeat has no attribute 'num_cycle' (it takes num_cycles)");
    CHECK(load_error(reg, doc("<Sequence foo=\"1\"><Patrol/></Sequence>")) ==
          "t.xml:3:11: tree 'T', node /Sequence: Sequence has no attribute 'foo'");
    CHECK(load_error(reg, doc("<Repeat><Patrol/></Repeat>")) == "t.xml:3:1: tree 'T', node /Repeat: Repeat needs the attribute num_cycles");
    CHECK(load_error(reg, doc("<Repeat num_cycles=\"three\"><Patrol/></Repeat>")) ==
          "t.xml:3:9: tree 'T', node /Repeat: num_cycles=\"three\" is not a count (a positive integer, or -1 for forever)");
    CHECK(load_error(reg, doc("<Timeout msec=\"-5\"><Patrol/></Timeout>")) ==
          "t.xml:3:10: tree 'T', node /Timeout: msec=\"-5\" is not a duration in milliseconds (a non-negative number below "
          "2^50, at most 3 decimals)");
    CHECK(load_error(reg, doc("<Sleep msec=\"1.2345\"/>")) ==
          "t.xml:3:8: tree 'T', node /Sleep: msec=\"1.2345\" is not a duration in milliseconds (a non-negative number below "
          "2^50, at most 3 decimals)");
    CHECK(load_error(reg, doc("<WeightedSelector weights=\"1;x\"><Patrol/><Patrol/></WeightedSelector>")) ==
          "t.xml:3:19: tree 'T', node /WeightedSelector: weights=\"1;x\": 'x' is not a positive number");
    CHECK(load_error(reg, doc("<WeightedSelector weights=\"1;2;3\"><Patrol/><Patrol/></WeightedSelector>")) ==
          "t.xml:3:19: tree 'T', node /WeightedSelector: WeightedSelector has 3 weight(s) for 2 children");
    CHECK(load_error(reg, doc("<Parallel success_count=\"-4\"><Patrol/><Patrol/></Parallel>")) ==
          "t.xml:3:11: tree 'T', node /Parallel: success_count=\"-4\" leaves no child to count (2 children)");
    CHECK(load_error(reg, doc("<Parallel success_count=\"3\"><Patrol/><Patrol/></Parallel>")) ==
          "t.xml:3:1: tree 'T', node /Parallel: Parallel success threshold 3 is outside 1..2 (its number of children)");
    CHECK(load_error(reg, doc("<Monitor failure_count=\"-2\"><Patrol/><Patrol/></Monitor>")) ==
          "t.xml:3:10: tree 'T', node /Monitor: failure_count=\"-2\" leaves no child to count (2 children); a Monitor takes "
          "-1 (all) or a positive count");
    CHECK(load_error(reg, doc("<Sequence _abort=\"Sometimes\"><Patrol/></Sequence>")) ==
          "t.xml:3:11: tree 'T', node /Sequence: _abort=\"Sometimes\" is not an abort mode (None, Self, LowerPriority, Both)");
    CHECK(load_error(reg, doc("<Sequence _autoremap=\"true\"><Patrol/></Sequence>")) ==
          "t.xml:3:11: tree 'T', node /Sequence: _autoremap applies only to <SubTree>");
}

TEST_CASE("xml errors: missing and mistyped ports, literals") {
    const Registry reg = make_registry();
    CHECK(load_error(reg, doc("<Sequence>\n  <Attack/>\n</Sequence>")) ==
          "t.xml:4:3: tree 'T', node /Sequence/Attack[0]: action 'Attack' port 'target' (int) is missing: write "
          "target=\"{key}\", target=\"{=}\" (the key 'target') or a literal value");
    CHECK(load_error(reg, doc("<Attack target=\"{enemy}\" tagret=\"1\"/>")) ==
          "t.xml:3:26: tree 'T', node /Attack: action 'Attack' has no port 'tagret' (ports: target)");
    CHECK(load_error(reg, doc("<Patrol speed=\"1\"/>")) ==
          "t.xml:3:9: tree 'T', node /Patrol: action 'Patrol' has no port 'speed' (it has no ports)");
    CHECK(load_error(reg, doc("<Attack target=\"3.5\"/>")) ==
          "t.xml:3:9: tree 'T', node /Attack: action 'Attack' port 'target': '3.5' is not a valid int");
    CHECK(load_error(reg, doc("<Attack target=\"99999999999\"/>")) ==
          "t.xml:3:9: tree 'T', node /Attack: action 'Attack' port 'target': '99999999999' is not a valid int");
    CHECK(load_error(reg, doc("<InRange distance=\"near\"/>")) ==
          "t.xml:3:10: tree 'T', node /InRange: condition 'InRange' port 'distance': 'near' is not a valid float");
    CHECK(load_error(reg, doc("<Shoot range=\"1\" shots=\"3\"/>")) ==
          "t.xml:3:18: tree 'T', node /Shoot: action 'Shoot' port 'shots' is an output: it needs a {key}, not the literal '3'");
    CHECK(load_error(reg, doc("<Attack target=\"{}\"/>")) == "t.xml:3:9: tree 'T', node /Attack: action 'Attack' port 'target': '{}' names no key");
    CHECK(load_error(reg, doc("<Attack target=\"{a b}\"/>")) ==
          "t.xml:3:9: tree 'T', node /Attack: action 'Attack' port 'target': 'a b' is not a valid key name");
}

TEST_CASE("xml errors: builder errors are reported at the node's position") {
    const Registry reg = make_registry();
    CHECK(load_error(reg, doc("<Sequence>\n  <Sequence _abort=\"LowerPriority\"><ScriptCondition code=\"a\"/><Patrol/></Sequence>\n"
                              "  <Patrol/>\n</Sequence>")) ==
          "t.xml:4:3: tree 'T', node /Sequence/Sequence[0]: abort mode LowerPriority needs lower-priority siblings, but the "
          "parent is Sequence");
    CHECK(load_error(reg, doc("<Fallback>\n  <Patrol _abort=\"Self\"/>\n</Fallback>")) ==
          "t.xml:4:3: tree 'T', node /Fallback/Patrol[0]: abort mode Self on a node without a guard (give it a precondition "
          "or leading conditions)");
    CHECK(load_error(reg, doc("<Sequence>\n<Monitor><ScriptCondition code=\"a\"/></Monitor>\n</Sequence>")) ==
          "t.xml:4:1: tree 'T', node /Sequence/Monitor[0]: Monitor needs at least one child that is not a condition");
    // Inside a subtree: at the SubTree element that inlined it.
    const std::string sub = R"XML(<root main_tree_to_execute="Main">
<BehaviorTree ID="Main"><Sequence><Patrol/>
  <SubTree ID="Guarded"/></Sequence></BehaviorTree>
<BehaviorTree ID="Guarded"><Sequence _abort="LowerPriority"><ScriptCondition code="a"/><Patrol/></Sequence></BehaviorTree>
</root>)XML";
    CHECK(load_error(reg, sub) ==
          "t.xml:3:3: tree 'Main', node /Sequence/SubTree 'Guarded'[1]: abort mode LowerPriority needs lower-priority "
          "siblings, but the parent is Sequence");
}

TEST_CASE("xml errors: <Blackboard> entries and <TreeNodesModel>") {
    const Registry reg = make_registry();
    auto bb = [](const std::string& entries) { return doc("<Blackboard>\n" + entries + "\n</Blackboard>\n<Patrol/>"); };
    CHECK(load_error(reg, bb("<Entry key=\"a\" type=\"bool\"/>\n<Entry key=\"a\" type=\"int\"/>")) ==
          "t.xml:5:1: tree 'T', node /Blackboard/Entry[1]: key 'a' is declared twice (first at t.xml:4:1)");
    CHECK(load_error(reg, bb("<Entry key=\"a\" type=\"text\"/>")) ==
          "t.xml:4:16: tree 'T', node /Blackboard/Entry[0]: unknown type 'text' (bool, int, unsigned, long, long long, "
          "float, double, string, an enum or type named with Registry::add_enum / add_type, or the type of a registered port)");
    CHECK(load_error(reg, bb("<Entry key=\"a\" type=\"int\" default=\"x\"/>")) ==
          "t.xml:4:27: tree 'T', node /Blackboard/Entry[0]: default 'x' of key 'a' is not a valid int");
    CHECK(load_error(reg, bb("<Entry key=\"a\"/>")) == "t.xml:4:1: tree 'T', node /Blackboard/Entry[0]: <Entry key=\"a\"> needs a type");
    CHECK(load_error(reg, bb("<Entry key=\"a\" type=\"int\" value=\"1\"/>")) ==
          "t.xml:4:27: tree 'T', node /Blackboard/Entry[0]: <Entry> has no attribute 'value' (it takes key, type, default, scope)");
    CHECK(load_error(reg, doc("<Patrol/>\n<Blackboard/>")) == "t.xml:4:1: tree 'T': <Blackboard> must come first in <BehaviorTree>, once");

    auto model = [](const std::string& entries) {
        return "<root>\n<TreeNodesModel>\n" + entries + "\n</TreeNodesModel>\n<BehaviorTree ID=\"T\"><Patrol/></BehaviorTree>\n</root>";
    };
    CHECK(load_error(reg, model("<Action ID=\"Attack\"><input_port name=\"target\" type=\"float\"/></Action>")) ==
          "t.xml:3:21: <TreeNodesModel> gives port 'target' of 'Attack' the type float, but it is registered as int");
    CHECK(load_error(reg, model("<Action ID=\"Attack\"><input_port name=\"tgt\"/></Action>")) ==
          "t.xml:3:21: <TreeNodesModel> lists port 'tgt' of 'Attack', which the registered action does not have");
    CHECK(load_error(reg, model("<Condition ID=\"Attack\"/>")) ==
          "t.xml:3:1: <TreeNodesModel> declares 'Attack' as a Condition, but it is registered as an action");
    CHECK(load_error(reg, model("<Action ID=\"Jump\"/>\n<Action ID=\"Jump\"/>")) ==
          "t.xml:4:1: duplicate ID 'Jump' in <TreeNodesModel> (first at t.xml:3:1)");
    CHECK(load_error(reg, model("<Action/>")) == "t.xml:3:1: <Action> in <TreeNodesModel> needs an ID");
    // A model entry for a node the registry lacks is fine (an editor palette), until the tree uses it.
    CHECK(load_error(reg, model("<Action ID=\"Jump\"><input_port name=\"height\"/></Action>")) == "");
    CHECK(load_error(reg, "<root>\n<TreeNodesModel><Action ID=\"Jump\"/></TreeNodesModel>\n<BehaviorTree ID=\"T\"><Jump/></BehaviorTree>\n</root>") ==
          "t.xml:3:22: tree 'T', node /Jump: unknown node <Jump>: not a built-in node nor a registered action or condition "
          "(<TreeNodesModel> at t.xml:2:17 declares it, but it is not registered)");
}

TEST_CASE("xml errors: nesting limits") {
    const Registry reg = make_registry();
    std::string open, close;
    for (int i = 0; i < 250; ++i) {
        open += "<Inverter>";
        close += "</Inverter>";
    }
    const std::string e = load_error(reg, doc(open + "<Patrol/>" + close));
    CHECK(e.find("the tree is deeper than 200 levels with its subtrees expanded (limits::kMaxDepth): this node is at level 201") !=
          std::string::npos);
}
