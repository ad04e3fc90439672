// Loading BehaviorTree.CPP v4 files (ebt::xml::Loader): samples/guard.xml against the guard tree
// built in code, BehaviorTree.CPP's built-in nodes mapped onto ebt's (and those ebt refuses), blackboard
// keys inferred from their uses or declared, and the builder additions the loader uses.
#include "support/xml_fixtures.hpp"
#include "guard_scenario.hpp"

using namespace ebt;
using namespace ebt::test::xml_fixtures;
using namespace std::chrono_literals;
using test::TraceRecorder;

// ---- the guard tree -----------------------------------------------------------------------------------------

TEST_CASE("xml: samples/guard.xml is the guard tree built in code (same listing, same traces in both modes)") {
    Registry reg;
    scenarios::register_guard_actions(reg);
    const Tree code = scenarios::guard_tree(reg);
    const Tree file = xml::Loader(reg).load_file(kSource / "samples" / "guard.xml");
    CHECK(file.name() == "guard");
    CHECK(file.describe() == code.describe());
    CHECK(file.schema().size() == 3);
    CHECK(file.key<bool>(scenarios::kEnemySeen).id != kNoKey);
    // The frame-by-frame guard scenario of tests/guard_scenario_test.cpp.
    const Script script = [](Agent& a, int frame) {
        auto& bb = a.blackboard();
        if (frame == 3) bb.set(scenarios::kEnemySeen, true);
        if (frame == 5) bb.set(scenarios::kHealthLow, true);
        if (frame == 7) bb.set(scenarios::kHealthLow, false);
        if (frame == 10) bb.set(scenarios::kEnemyDead, true);
    };
    check_same(code, file, 12, script);
    for (Mode mode : test::both_modes()) {
        TraceRecorder rec;
        Agent guard(file, {.mode = mode, .listener = &rec});
        for (int frame = 0; frame < 12; ++frame) {
            script(guard, frame);
            guard.tick(50ms);
        }
        CHECK(rec.tick(3) == "10:T(Aborted) 1:I 3:I 7:I 9:I 9:U");
        CHECK(rec.tick(10) == "9:T(Aborted) 7:T(Failure) 3:T(Failure) 1:T(Failure) 10:I 10:U");
    }
}

// ---- the mapping of BehaviorTree.CPP's nodes -------------------------------------------------------------------

TEST_CASE("xml: BehaviorTree.CPP built-in nodes map onto ebt's; compact and explicit forms") {
    const Registry reg = make_registry();
    const std::string text = R"XML(<?xml version="1.0"?>
<root BTCPP_format="4" main_tree_to_execute="Main">
  <BehaviorTree ID="Main">
    <ReactiveSequence name="top">
      <IsSet flag="{alarm}" />
      <Fallback>
        <Condition ID="InRange" distance="{d}" />
        <RetryUntilSuccessful num_attempts="3"><Fail /></RetryUntilSuccessful>
        <Repeat num_cycles="-1"><Succeed /></Repeat>
        <Timeout msec="250"><Patrol /></Timeout>
        <Delay delay_msec="1.5"><AlwaysSuccess /></Delay>
        <ForceSuccess><AlwaysFailure /></ForceSuccess>
        <ForceFailure><Action ID="Succeed" /></ForceFailure>
        <Inverter><Fail /></Inverter>
        <Sleep msec="20" />
        <Parallel success_count="2" failure_count="-1"><Succeed /><Fail /><Patrol /></Parallel>
        <Control ID="Sequence"><Decorator ID="Inverter"><Action ID="AlwaysFailure" /></Decorator></Control>
        <Selector><Retry num_attempts="2"><Fail /></Retry><ActiveSelector><Wait msec="1" /></ActiveSelector></Selector>
      </Fallback>
    </ReactiveSequence>
  </BehaviorTree>
</root>)XML";
    const Tree t = xml::Loader(reg).load_string(text);
    CHECK(t.describe() ==
          "0 ReactiveSequence top [guard, abort Self]\n"
          "  1 Condition IsSet\n"
          "  2 Selector\n"
          "    3 Condition InRange\n"
          "    4 Retry\n"
          "      5 Action Fail\n"
          "    6 Repeat\n"
          "      7 Action Succeed\n"
          "    8 Timeout\n"
          "      9 Action Patrol\n"
          "    10 Delay\n"
          "      11 AlwaysSuccess\n"
          "    12 ForceSuccess\n"
          "      13 AlwaysFailure\n"
          "    14 ForceFailure\n"
          "      15 Action Succeed\n"
          "    16 Inverter\n"
          "      17 Action Fail\n"
          "    18 Wait\n"
          "    19 Parallel\n"
          "      20 Action Succeed\n"
          "      21 Action Fail\n"
          "      22 Action Patrol\n"
          "    23 Sequence\n"
          "      24 Inverter\n"
          "        25 AlwaysFailure\n"
          "    26 Selector\n"
          "      27 Retry\n"
          "        28 Action Fail\n"
          "      29 ActiveSelector [children abort LowerPriority]\n"
          "        30 Wait\n");
    const auto& d = data_of(t);
    CHECK(d.node(4).count == 3);
    CHECK(d.node(6).count == kForever);
    CHECK(d.node(8).duration == 250'000);
    CHECK(d.node(10).duration == 1'500);
    CHECK(d.node(18).duration == 20'000);
    CHECK(d.node(19).count == 2);   // success_count
    CHECK(d.node(19).count2 == 3);  // failure_count -1: all children
    CHECK(t.key<bool>("alarm").id != kNoKey);
    CHECK(t.key<float>("d").id != kNoKey);

    // The same tree built in code behaves the same (BehaviorTree.CPP names are builder aliases).
    const Tree code = TreeBuilder("Main", reg)
                          .key<bool>("alarm").key<float>("d")
                          .reactive_sequence().label("top")
                              .condition("IsSet", {{"flag", "alarm"}})
                              .fallback()
                                  .condition("InRange", {{"distance", "d"}})
                                  .retry_until_successful(3).action("Fail").back()
                                  .repeat(kForever).action("Succeed").back()
                                  .timeout(250ms).action("Patrol").back()
                                  .delay(1500us).always_success().back()
                                  .force_success().always_failure().back()
                                  .force_failure().action("Succeed").back()
                                  .inverter().action("Fail").back()
                                  .sleep(20ms)
                                  .parallel(Threshold::count(2), Threshold::all()).action("Succeed").action("Fail").action("Patrol").back()
                                  .sequence().inverter().always_failure().back().back()
                                  .selector().retry(2).action("Fail").back().active_selector().wait(1ms).back().back()
                              .back()
                          .back()
                          .end();
    check_same(code, t, 40, [](Agent& a, int i) {
        if (i == 1) a.blackboard().set("alarm", true);
        if (i == 3) a.blackboard().set("d", 9.0f);
        if (i == 30) a.blackboard().set("alarm", false);
    });
}

TEST_CASE("xml: BehaviorTree.CPP nodes ebt lacks, and its scripting attributes, are load errors") {
    const Registry reg = make_registry();
    CHECK(load_error(reg, doc("<SequenceWithMemory><Patrol/></SequenceWithMemory>")) ==
          "t.xml:3:1: tree 'T', node /SequenceWithMemory: BehaviorTree.CPP node 'SequenceWithMemory' is not supported by "
          "ebt: ebt's sequences restart from their first child after a failure; there is no sequence with memory");
    CHECK(load_error(reg, doc("<Sequence>\n  <SetBlackboard output_key=\"a\" value=\"1\"/>\n</Sequence>")) ==
          "t.xml:4:3: tree 'T', node /Sequence/SetBlackboard[0]: BehaviorTree.CPP node 'SetBlackboard' is not supported by "
          "ebt: ebt trees do not write the blackboard by themselves; write it from an action");
    CHECK(load_error(reg, doc("<Sequence><Switch2 variable=\"{x}\"><Patrol/><Patrol/><Patrol/></Switch2></Sequence>")) ==
          "t.xml:3:11: tree 'T', node /Sequence/Switch2[0]: BehaviorTree.CPP node 'Switch2' is not supported by ebt: ebt "
          "has no Switch nodes; use a Fallback of Sequences guarded by conditions");
    CHECK(load_error(reg, doc("<KeepRunningUntilFailure><Patrol/></KeepRunningUntilFailure>")) ==
          "t.xml:3:1: tree 'T', node /KeepRunningUntilFailure: BehaviorTree.CPP node 'KeepRunningUntilFailure' is not "
          "supported by ebt: ebt has no KeepRunningUntilFailure; <Repeat num_cycles=\"-1\"> behaves the same");
    CHECK(load_error(reg, doc("<Sequence>\n  <Patrol _skipIf=\"alarm\"/>\n</Sequence>")) ==
          "t.xml:4:11: tree 'T', node /Sequence/Patrol[0]: BehaviorTree.CPP's scripting attribute _skipIf is not supported "
          "(ebt has no scripting; see _precondition)");
    CHECK(load_error(reg, doc("<Patrol _while=\"alarm\"/>")) ==
          "t.xml:3:9: tree 'T', node /Patrol: BehaviorTree.CPP's scripting attribute _while is not supported (ebt has no "
          "scripting; see _precondition)");
    CHECK(load_error(reg, doc("<RetryUntilSuccessful num_attempts=\"-1\"><Patrol/></RetryUntilSuccessful>")) ==
          "t.xml:3:23: tree 'T', node /RetryUntilSuccessful: num_attempts=\"-1\" (retry forever) is not supported: ebt's "
          "Retry needs a finite number of attempts");
    CHECK(load_error(reg, doc("<Repeat num_cycles=\"{n}\"><Patrol/></Repeat>")) ==
          "t.xml:3:9: tree 'T', node /Repeat: num_cycles=\"{n}\": ebt fixes this parameter when the tree is built; give a "
          "value, not a blackboard key");
    CHECK(load_error(reg, "<root BTCPP_format=\"3\"><BehaviorTree ID=\"T\"><Patrol/></BehaviorTree></root>") ==
          "t.xml:1:7: BTCPP_format=\"3\" is not supported (ebt reads version 4)");
    CHECK(load_error(reg, doc("<Patrol name=\"{@global}\"/><!-- a name is free text -->")) == "");
    CHECK(load_error(reg, doc("<Attack target=\"{@enemy}\"/>")) ==
          "t.xml:3:9: tree 'T', node /Attack: action 'Attack' port 'target': '{@enemy}' refers to BehaviorTree.CPP's root "
          "blackboard, which ebt does not have (declare a shared key instead)");
}

// ---- blackboard keys -------------------------------------------------------------------------------------

TEST_CASE("xml: keys are inferred from their uses unless a <Blackboard> declares them") {
    const Registry reg = make_registry();
    const xml::Loader loader(reg);
    // Inferred: types from the ports and from the checks.
    const Tree t = loader.load_string(doc("<Sequence><ScriptCondition code=\"go\"/><Attack target=\"{enemy}\"/>"
                                          "<Shoot range=\"{r}\" shots=\"{=}\"/></Sequence>"));
    REQUIRE(t.schema().size() == 4);
    CHECK(t.schema().info(t.schema().find("go")).type == type_of<bool>());
    CHECK(t.schema().info(t.schema().find("enemy")).type == type_of<int>());
    CHECK(t.schema().info(t.schema().find("r")).type == type_of<float>());
    CHECK(t.schema().info(t.schema().find("shots")).type == type_of<int>());
    // Two uses that disagree.
    CHECK(load_error(reg, doc("<Sequence>\n<Attack target=\"{x}\"/>\n<Shoot range=\"{x}\" shots=\"{s}\"/>\n</Sequence>")) ==
          "t.xml:5:8: tree 'T', node /Sequence/Shoot[1]: action 'Shoot' port 'range' expects key 'x' of type float, but it "
          "is used as int at t.xml:4:9");
    // With a <Blackboard>, every key must be declared.
    CHECK(load_error(reg, doc("<Blackboard><Entry key=\"enemy\" type=\"int\"/></Blackboard>\n"
                              "<Sequence><Attack target=\"{enemy}\"/><Attack target=\"{enmy}\"/></Sequence>")) ==
          "t.xml:4:45: tree 'T', node /Sequence/Attack[1]: action 'Attack' port 'target' uses unknown key 'enmy' (not "
          "declared in this tree's <Blackboard>)");
    CHECK(load_error(reg, doc("<Blackboard><Entry key=\"enemy\" type=\"float\"/></Blackboard>\n<Attack target=\"{enemy}\"/>")) ==
          "t.xml:4:9: tree 'T', node /Attack: action 'Attack' port 'target' expects key 'enemy' of type int, but it is "
          "declared as float (at t.xml:3:13)");
    CHECK(load_error(reg, doc("<Blackboard><Entry key=\"go\" type=\"int\"/></Blackboard>\n<ScriptCondition code=\"go\"/>")) ==
          "t.xml:4:18: tree 'T', node /ScriptCondition: check expects key 'go' of type bool, but it is declared as int (at "
          "t.xml:3:13)");
}

// ---- the builder additions the loader uses -------------------------------------------------------------

TEST_CASE("builder: Threshold, and the loader's hooks: declare_key, attribute, port_literal, last_error") {
    using detail::BuilderAccess;
    const Registry reg = make_registry();
    // Threshold mixes "all" and counts; Policy converts.
    TreeBuilder tb("t", reg);
    BuilderAccess::declare_key(tb, "target", type_of<int>());
    tb.parallel(Threshold::all(), Threshold::count(2)).action("Patrol");
    BuilderAccess::attribute(tb, "_note", "kept");
    tb.action("Attack");
    BuilderAccess::port_literal(tb, "target", "3");
    tb.monitor(Threshold::one(), Policy::RequireAll).action("Patrol").back().back();
    const Tree t = tb.end();
    CHECK(data_of(t).node(0).count == 3);
    CHECK(data_of(t).node(0).count2 == 2);
    CHECK(data_of(t).node(3).count == 1);
    CHECK(data_of(t).node(3).count2 == 1);
    CHECK(data_of(t).source[1].attributes == std::vector<std::pair<std::string, std::string>>{{"_note", "kept"}});
    CHECK(data_of(t).source[2].literals == std::vector<std::pair<std::string, std::string>>{{"target", "3"}});
    CHECK_THROWS_WITH_AS(TreeBuilder("t").parallel(Threshold::count(0), Threshold::all()),
                         "tree 't', at /: Parallel thresholds must be >= 1", BuildError);
    TreeBuilder attack("t", reg);
    attack.key<int>("target").action("Attack");
    CHECK_THROWS_WITH_AS(BuilderAccess::port_literal(attack, "tgt", "1"), "tree 't', at /: Action 'Attack' has no port 'tgt'",
                         BuildError);
    TreeBuilder leaf("t");
    leaf.always_success();
    CHECK_THROWS_WITH_AS(BuilderAccess::port_literal(leaf, "x", "1"),
                         "tree 't', at /: port_literal() applies to an action or a registered condition node", BuildError);
    // last_error: the node an error is about (in the order nodes were added) and the bare problem.
    TreeBuilder b("t");
    b.key<bool>("a").sequence().always_success().sequence().check("a").always_success().back();
    CHECK_THROWS_AS(b.abort(AbortMode::LowerPriority), BuildError);
    CHECK(BuilderAccess::last_error(b).node == 2);
    CHECK(BuilderAccess::last_error(b).problem == "abort mode LowerPriority needs lower-priority siblings, but the parent is Sequence");
    // Ports are InOut unless declared otherwise.
    CHECK(port<int>("p").direction == PortDirection::InOut);
    CHECK(input_port<int>("p").direction == PortDirection::In);
    CHECK(output_port<int>("p").direction == PortDirection::Out);
}
