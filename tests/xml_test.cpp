// Trees from files (ebt::xml): the BehaviorTree.CPP v4 format in and out, the guard tree loaded from
// samples/guard.xml against the one built in code, round trips, subtrees and includes, and every load
// error with its exact message.
#include "../fuzz/fuzz_registry.hpp"
#include "guard_scenario.hpp"
#include "support/trace_recorder.hpp"

#include <ebt/xml.hpp>

#include "tree/tree_data.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace ebt;
using namespace std::chrono_literals;
using test::TraceRecorder;

namespace xmltest {
struct Vec2 {
    float x, y;
    bool operator==(const Vec2&) const = default;
};
}  // namespace xmltest

namespace {

const std::filesystem::path kSource = EBT_SOURCE_DIR;
const std::filesystem::path kData = kSource / "tests" / "data" / "xml";

// Actions and conditions with ports of several types and directions.
Registry make_registry() {
    Registry reg;
    reg.add_action("Patrol", test::running_action());
    ActionSpec attack = test::running_action();
    attack.ports = {input_port<int>("target")};
    reg.add_action("Attack", attack);
    ActionSpec shoot = test::finishing_action(2, Status::Success);
    shoot.ports = {input_port<float>("range"), output_port<int>("shots")};
    auto update = shoot.update;
    shoot.update = [update](ActionContext& ctx) {
        ctx.out<int>(1, ctx.in<int>(1) + 1);
        return update(ctx);
    };
    reg.add_action("Shoot", shoot);
    reg.add_action("Fail", test::finishing_action(1, Status::Failure));
    reg.add_action("Succeed", test::finishing_action(1, Status::Success));
    reg.add_action("Work2", test::finishing_action(2, Status::Success));
    ActionSpec heal = test::finishing_action(3, Status::Success);
    heal.ports = {inout_port<double>("hp"), input_port<long long>("budget"), input_port<unsigned>("level"),
                  input_port<long>("code"), input_port<bool>("loud")};
    reg.add_action("Heal", heal);
    reg.add_condition(
        "InRange", [](const ConditionContext& ctx) { return ctx.in<float>(0) < 5.0f; }, {input_port<float>("distance")});
    reg.add_condition(
        "IsSet", [](const ConditionContext& ctx) { return ctx.in<bool>(0); }, {port<bool>("flag")});
    reg.add_condition("Never", [](const ConditionContext&) { return false; });
    return reg;
}

std::string slurp(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// A whole document around one tree body.
std::string doc(const std::string& body, const std::string& id = "T") {
    return "<root BTCPP_format=\"4\">\n<BehaviorTree ID=\"" + id + "\">\n" + body + "\n</BehaviorTree>\n</root>\n";
}

// The load error for `text` (named "t.xml"); "" when it loads.
std::string load_error(const Registry& reg, const std::string& text) {
    try {
        (void)xml::Loader(reg).load_string(text, "t.xml");
    } catch (const xml::LoadError& e) {
        return e.what();
    }
    return "";
}

using Script = std::function<void(Agent&, int)>;

// The lifecycle trace of `ticks` ticks of 10 ms, with `script` run before each tick.
std::vector<std::string> trace(const Tree& tree, Mode mode, int ticks, const Script& script = {}, std::uint64_t seed = 7) {
    TraceRecorder rec;
    Agent agent(tree, {.mode = mode, .seed = seed, .listener = &rec});
    for (int i = 0; i < ticks; ++i) {
        if (script) script(agent, i);
        agent.tick(10ms);
    }
    return rec.lifecycle();
}

// Same definition: listing, keys (names, types, initial values), and traces in both modes.
void check_same(const Tree& a, const Tree& b, int ticks, const Script& script = {}) {
    CHECK(a.describe() == b.describe());
    CHECK(a.name() == b.name());
    REQUIRE(a.schema().size() == b.schema().size());
    for (const auto& k : a.schema().keys()) {
        CAPTURE(k.name);
        const KeyId id = b.schema().find(k.name);
        REQUIRE(id != kNoKey);
        const KeyInfo& other = b.schema().info(id);
        CHECK(other.type == k.type);
        CHECK(other.scope == k.scope);
        CHECK(std::memcmp(a.schema().defaults() + k.offset, b.schema().defaults() + other.offset, k.type->size) == 0);
    }
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        for (std::uint64_t seed : {1u, 2u, 3u}) CHECK(trace(a, mode, ticks, script, seed) == trace(b, mode, ticks, script, seed));
    }
}

}  // namespace

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

TEST_CASE("xml: save(guard tree) is the compact v4 form plus a TreeNodesModel; it loads back the same") {
    Registry reg;
    scenarios::register_guard_actions(reg);
    const Tree code = scenarios::guard_tree(reg);
    const std::string saved = xml::save(code, reg);
    CHECK(saved ==
          "<?xml version=\"1.0\"?>\n"
          "<root BTCPP_format=\"4\" main_tree_to_execute=\"guard\">\n"
          "  <BehaviorTree ID=\"guard\">\n"
          "    <ReactiveFallback>\n"
          "      <Sequence>\n"
          "        <ScriptCondition code=\"enemy_seen\" />\n"
          "        <ReactiveFallback>\n"
          "          <Sequence>\n"
          "            <ScriptCondition code=\"health_low\" />\n"
          "            <Runaway health_low=\"{health_low}\" />\n"
          "          </Sequence>\n"
          "          <Monitor success_count=\"-1\" failure_count=\"1\">\n"
          "            <ScriptCondition code=\"!enemy_dead\" />\n"
          "            <Attack />\n"
          "          </Monitor>\n"
          "        </ReactiveFallback>\n"
          "      </Sequence>\n"
          "      <Patrol />\n"
          "    </ReactiveFallback>\n"
          "  </BehaviorTree>\n"
          "  <TreeNodesModel>\n"
          "    <Action ID=\"Attack\" />\n"
          "    <Action ID=\"Patrol\" />\n"
          "    <Action ID=\"Runaway\">\n"
          "      <inout_port name=\"health_low\" type=\"bool\" />\n"
          "    </Action>\n"
          "    <Control ID=\"Filter\" />\n"
          "    <Control ID=\"PrioritySelector\" />\n"
          "    <Control ID=\"NonPrioritySelector\" />\n"
          "    <Control ID=\"RandomSelector\" />\n"
          "    <Control ID=\"WeightedSelector\">\n"
          "      <input_port name=\"weights\" type=\"std::vector&lt;double>\" />\n"
          "    </Control>\n"
          "    <Control ID=\"Monitor\">\n"
          "      <input_port name=\"success_count\" type=\"int\" default=\"-1\" />\n"
          "      <input_port name=\"failure_count\" type=\"int\" default=\"1\" />\n"
          "    </Control>\n"
          "    <Decorator ID=\"Loop\">\n"
          "      <input_port name=\"num_cycles\" type=\"int\" />\n"
          "    </Decorator>\n"
          "    <Decorator ID=\"Cooldown\">\n"
          "      <input_port name=\"msec\" type=\"unsigned\" />\n"
          "    </Decorator>\n"
          "  </TreeNodesModel>\n"
          "</root>\n");
    const xml::Loader loader(reg);
    const Tree loaded = loader.load_string(saved, "saved.xml");
    check_same(code, loaded, 12, [](Agent& a, int frame) {
        if (frame == 2) a.blackboard().set(scenarios::kEnemySeen, true);
        if (frame == 4) a.blackboard().set(scenarios::kHealthLow, true);
        if (frame == 6) a.blackboard().set(scenarios::kHealthLow, false);
        if (frame == 9) a.blackboard().set(scenarios::kEnemyDead, true);
    });
    CHECK(xml::save(loaded, reg) == saved);  // a fixed point
    CHECK(xml::save(code, reg, {.nodes_model = false}).find("TreeNodesModel") == std::string::npos);
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
          "      29 ActiveSelector\n"
          "        30 Wait\n");
    const auto& d = t.data();
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

// ---- ebt's own nodes and attributes; round trips ------------------------------------------------------------

namespace {

// Every node kind and every ebt attribute, in one document.
const char* const kEverything = R"XML(<?xml version="1.0"?>
<root BTCPP_format="4" main_tree_to_execute="Everything">
  <BehaviorTree ID="Everything" _editor_note="kept">
    <Blackboard>
      <Entry key="alarm" type="bool" />
      <Entry key="calm" type="bool" default="true" />
      <Entry key="d" type="float" default="2.5" />
      <Entry key="enemy" type="int" default="-3" />
      <Entry key="shots" type="int" />
      <Entry key="hp" type="double" default="0.1" />
      <Entry key="cash" type="long long" default="9000000000" />
      <Entry key="alert" type="bool" scope="squad" />
      <Entry key="unused" type="unsigned" default="7" />
      <Entry key="flag" type="bool" />
    </Blackboard>
    <PrioritySelector name="root" editor:pos="10,20">
      <Sequence _precondition="alarm &amp;&amp; !calm" _abort="Both">
        <ScriptCondition code="InRange(distance={d})" />
        <Filter>
          <ScriptCondition code="!squad.alert" />
          <Shoot range="3.5" shots="{shots}" />
        </Filter>
      </Sequence>
      <NonPrioritySelector>
        <Monitor success_count="1" failure_count="-1">
          <ScriptCondition code="(alarm || calm) ^ IsSet(flag={=}) &amp;&amp; !Never" name="complex" />
          <Attack target="{enemy}" />
          <Attack target="42" name="forty-two" />
        </Monitor>
        <RandomSelector>
          <Fail />
          <Work2 />
        </RandomSelector>
        <Selector _precondition="true" _abort="Self">
          <WeightedSelector weights="3;1;0.5">
            <Fail />
            <Inverter><ScriptCondition code="calm" /></Inverter>
            <Succeed />
          </WeightedSelector>
        </Selector>
      </NonPrioritySelector>
      <Parallel success_count="-1" failure_count="2">
        <Loop num_cycles="3"><Succeed /></Loop>
        <Cooldown msec="30"><Work2 /></Cooldown>
        <Heal hp="{hp}" budget="{cash}" level="4294967295" code="-12" loud="true" />
      </Parallel>
      <ActiveSelector>
        <Sequence>
          <ScriptCondition code="!alarm" name="quiet" />
          <Timeout msec="0.25"><Patrol /></Timeout>
        </Sequence>
        <Delay delay_msec="12.125"><Wait msec="3" /></Delay>
      </ActiveSelector>
      <ForceFailure><ForceSuccess><IsSet flag="true" /></ForceSuccess></ForceFailure>
      <ReactiveSequence>
        <Repeat num_cycles="2"><Work2 /></Repeat>
        <ScriptCondition code="true" />
      </ReactiveSequence>
    </PrioritySelector>
  </BehaviorTree>
</root>
)XML";

}  // namespace

TEST_CASE("xml: every node kind and ebt attribute loads, saves and loads back the same (both modes)") {
    const Registry reg = make_registry();
    const xml::Loader loader(reg);
    const Tree a = loader.load_string(kEverything, "everything.xml");
    CHECK(a.describe() ==
          "0 PrioritySelector root\n"
          "  1 Sequence [guard, abort Both]\n"
          "    2 Condition predicate\n"
          "    3 Filter [guard, abort None]\n"
          "      4 Condition !squad.alert\n"
          "      5 Action Shoot\n"
          "  6 NonPrioritySelector\n"
          "    7 Monitor [guard, abort Self]\n"
          "      8 Condition complex\n"
          "      9 Action Attack\n"
          "      10 Action forty-two\n"
          "    11 RandomSelector\n"
          "      12 Action Fail\n"
          "      13 Action Work2\n"
          "    14 Selector [guard, abort Self]\n"
          "      15 WeightedSelector\n"
          "        16 Action Fail\n"
          "        17 Condition !calm\n"
          "        18 Action Succeed\n"
          "  19 Parallel\n"
          "    20 Loop\n"
          "      21 Action Succeed\n"
          "    22 Cooldown [guard, abort None]\n"
          "      23 Action Work2\n"
          "    24 Action Heal\n"
          "  25 ActiveSelector\n"
          "    26 Sequence [guard, abort LowerPriority]\n"
          "      27 Condition quiet\n"
          "      28 Timeout\n"
          "        29 Action Patrol\n"
          "    30 Delay\n"
          "      31 Wait\n"
          "  32 Condition ForceFailure(ForceSuccess(IsSet))\n"
          "  33 ReactiveSequence\n"
          "    34 Repeat\n"
          "      35 Action Work2\n"
          "    36 Condition predicate\n");
    // Literals became private constant keys holding the parsed values.
    const BlackboardSchema& s = a.schema();
    CHECK(s.size() == 9 + 7);
    auto value_of = [&](const std::string& name, auto tag) {
        using T = decltype(tag);
        const KeyInfo& k = s.info(s.find(name));
        REQUIRE(k.type == type_of<T>());
        T v;
        std::memcpy(&v, s.defaults() + k.offset, sizeof v);
        return v;
    };
    CHECK(value_of("=range#0", float{}) == 3.5f);
    CHECK(value_of("=target#1", int{}) == 42);
    CHECK(value_of("=level#2", unsigned{}) == 4294967295u);
    CHECK(value_of("=code#3", long{}) == -12);
    CHECK(value_of("=loud#4", bool{}) == true);
    CHECK(value_of("=flag#5", bool{}) == true);
    CHECK(value_of("cash", 0LL) == 9000000000LL);
    CHECK(value_of("calm", bool{}) == true);
    CHECK(value_of("unused", unsigned{}) == 7u);
    CHECK(s.info(s.find("squad.alert")).scope != kLocalScope);
    // Kept attributes are on the source nodes.
    CHECK(a.data().source[0].attributes == std::vector<std::pair<std::string, std::string>>{{"editor:pos", "10,20"}});

    const std::string saved = xml::save(a, reg);
    const Tree b = loader.load_string(saved, "saved.xml");
    check_same(a, b, 30, [](Agent& ag, int i) {
        if (i == 2) ag.blackboard().set("alarm", true);
        if (i == 4) ag.blackboard().set("calm", false);
        if (i == 9) ag.blackboard().set("d", 9.0f);
        if (i == 15) ag.blackboard().set("alarm", false);
    });
    CHECK(xml::save(b, reg) == saved);
    // Attributes ebt does not understand are written back.
    CHECK(saved.find("editor:pos=\"10,20\"") != std::string::npos);
    // ebt's attributes are written in ebt's syntax.
    CHECK(saved.find("<Sequence _precondition=\"alarm &amp;&amp; !calm\" _abort=\"Both\">") != std::string::npos);
    CHECK(saved.find("<WeightedSelector weights=\"3;1;0.5\">") != std::string::npos);
    CHECK(saved.find("<Shoot range=\"3.5\" shots=\"{shots}\" />") != std::string::npos);
    CHECK(saved.find("<Timeout msec=\"0.25\">") != std::string::npos);
    CHECK(saved.find("<Delay delay_msec=\"12.125\">") != std::string::npos);
    CHECK(saved.find("<Entry key=\"alert\" type=\"bool\" scope=\"squad\" />") != std::string::npos);
    CHECK(saved.find("<Entry key=\"cash\" type=\"long long\" default=\"9000000000\" />") != std::string::npos);
    CHECK(saved.find("<ScriptCondition code=\"(alarm || calm) ^ IsSet(flag={flag}) &amp;&amp; !Never\" name=\"complex\" />") !=
          std::string::npos);
}

TEST_CASE("xml: kept attributes round-trip, whatever their characters (fuzzer findings)") {
    const Registry reg = make_registry();
    const xml::Loader loader(reg);
    const Tree t = loader.load_string(doc("<Sequence _\xC3\xA9t\xC3\xA9=\"&lt;&amp;&gt;&quot;\" x:y=\"1\"><Patrol/></Sequence>"));
    CHECK(t.data().source[0].attributes ==
          std::vector<std::pair<std::string, std::string>>{{"_\xC3\xA9t\xC3\xA9", "<&>\""}, {"x:y", "1"}});
    const Tree again = loader.load_string(xml::save(t, reg));
    CHECK(again.data().source[0].attributes == t.data().source[0].attributes);
}

TEST_CASE("xml: a key named like a registered condition is written {key} and round-trips (fuzzer finding)") {
    // "Never" is a registered condition; here it is also a bool key (bound through a port). A bare
    // name in an expression is the condition, so the saver must write the key as {Never}.
    const Registry reg = make_registry();
    const xml::Loader loader(reg);
    const Tree t = loader.load_string(doc(R"xml(<Sequence>
        <IsSet flag="{Never}"/>
        <ScriptCondition code="{Never}"/>
        <ScriptCondition code="!{Never}"/>
        <ScriptCondition code="Never || ({Never} &amp;&amp; !Never)"/>
        <Patrol _precondition="{Never}"/>
      </Sequence>)xml"));
    CHECK(t.describe() ==
          "0 Sequence [guard, abort None]\n"
          "  1 Condition IsSet\n"
          "  2 Condition Never\n"
          "  3 Condition !Never\n"
          "  4 Condition predicate\n"
          "  5 Action Patrol [guard, abort None]\n");
    const std::string saved = xml::save(t, reg);
    CHECK(saved.find("<ScriptCondition code=\"{Never}\" />") != std::string::npos);
    CHECK(saved.find("<ScriptCondition code=\"!{Never}\" />") != std::string::npos);
    CHECK(saved.find("code=\"Never || {Never} &amp;&amp; !Never\"") != std::string::npos);
    CHECK(saved.find("_precondition=\"{Never}\"") != std::string::npos);
    const Tree again = loader.load_string(saved);
    CHECK(again.describe() == t.describe());
    check_same(t, again, 3, [](Agent& a, int tick) {
        if (tick == 1) a.blackboard().set("Never", true);
    });
    // Braces in an expression always name a key; a malformed one is an error with its position.
    CHECK(load_error(reg, doc(R"(<ScriptCondition code="{Never"/>)")).find("missing '}'") != std::string::npos);
    CHECK(load_error(reg, doc(R"(<ScriptCondition code="{}"/>)")).find("'{}' is not a valid key reference") !=
          std::string::npos);
}

TEST_CASE("xml: a tree built in code with every kind round-trips through save and load") {
    const Registry reg = make_registry();
    const Tree code = TreeBuilder("code", reg)
                          .key<bool>("a").key<bool>("b", true).key<float>("distance", 1.0f).key<int>("shots").key<float>("range")
                          .selector()
                              .sequence().precondition(Predicate::is("a") || !Predicate::condition("InRange")).abort(AbortMode::Self)
                                  .check("b", false)
                                  .action("Shoot")
                              .back()
                              .random_selector().action("Fail").action("Work2").back()
                              .weighted_selector({1.25, 1e-3}).action("Fail").action("Succeed").back()
                              .loop(kForever).action("Work2").back()
                              .cooldown(1500us).action("Succeed").back()
                              .monitor(Policy::RequireOne, Policy::RequireAll).check("a").action("Patrol").back()
                              .condition(Predicate::is("a") ^ Predicate::is("b")).label("xor")
                              .condition(Predicate::condition("IsSet", {{"flag", "a"}}))
                          .back()
                          .end();
    const std::string saved = xml::save(code, reg);
    const Tree loaded = xml::Loader(reg).load_string(saved);
    check_same(code, loaded, 20, [](Agent& ag, int i) {
        if (i == 3) ag.blackboard().set("a", true);
        if (i == 8) ag.blackboard().set("b", false);
    });
    CHECK(xml::save(loaded, reg) == saved);
    CHECK(saved.find("<Sequence _precondition=\"a || !InRange(distance={distance})\" _abort=\"Self\">") != std::string::npos);
    CHECK(saved.find("<Cooldown msec=\"1.5\">") != std::string::npos);
    CHECK(saved.find("<Loop num_cycles=\"-1\">") != std::string::npos);
    CHECK(saved.find("<Monitor success_count=\"1\" failure_count=\"-1\">") != std::string::npos);
    CHECK(saved.find("<ScriptCondition code=\"a ^ b\" name=\"xor\" />") != std::string::npos);
    CHECK(saved.find("<ScriptCondition code=\"IsSet(flag={a})\" />") != std::string::npos);
}

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

// ---- subtrees -----------------------------------------------------------------------------------------------

TEST_CASE("xml: SubTree with {key} remapping, literals, {=}, _autoremap and model defaults; private keys per use") {
    const Registry reg = make_registry();
    const std::string text = R"XML(<root BTCPP_format="4" main_tree_to_execute="Main">
  <TreeNodesModel>
    <SubTree ID="Fight">
      <input_port name="range" default="1.5" />
    </SubTree>
  </TreeNodesModel>
  <BehaviorTree ID="Main">
    <Parallel success_count="-1" failure_count="-1">
      <SubTree ID="Fight" go="{alarm}" target="{enemy}" shots="{total}" />
      <SubTree ID="Fight" go="true" target="7" shots="{=}" range="4" name="second" />
      <SubTree ID="Fight" _autoremap="true" />
    </Parallel>
  </BehaviorTree>
  <BehaviorTree ID="Fight">
    <Sequence>
      <ScriptCondition code="go" />
      <Shoot range="{range}" shots="{shots}" />
      <Attack target="{target}" />
    </Sequence>
  </BehaviorTree>
</root>)XML";
    const Tree t = xml::Loader(reg).load_string(text);
    CHECK(t.describe() ==
          "0 Parallel\n"
          "  1 Sequence Fight [guard, abort None]\n"
          "    2 Condition alarm\n"
          "    3 Action Shoot\n"
          "    4 Action Attack\n"
          "  5 Sequence second [guard, abort None]\n"
          "    6 Condition Fight#1.go\n"
          "    7 Action Shoot\n"
          "    8 Action Attack\n"
          "  9 Sequence Fight [guard, abort None]\n"
          "    10 Condition go\n"
          "    11 Action Shoot\n"
          "    12 Action Attack\n");
    std::vector<std::string> names;
    for (const auto& k : t.schema().keys()) names.push_back(k.name);
    std::string joined;
    for (const auto& n : names) joined += n + " ";
    CAPTURE(joined);
    // Main's keys (from the remaps, then _autoremap's), then each use's private keys.
    CHECK(names == std::vector<std::string>{"alarm", "enemy", "total", "shots", "go", "range", "target", "Fight#0.range",
                                            "Fight#1.go", "Fight#1.range", "Fight#1.target"});
    auto initial = [&](const std::string& name, auto tag) {
        decltype(tag) v;
        const KeyInfo& k = t.schema().info(t.schema().find(name));
        std::memcpy(&v, t.schema().defaults() + k.offset, sizeof v);
        return v;
    };
    CHECK(initial("Fight#0.range", float{}) == 1.5f);  // the model's default
    CHECK(initial("Fight#1.go", bool{}) == true);      // literals
    CHECK(initial("Fight#1.target", int{}) == 7);
    CHECK(initial("Fight#1.range", float{}) == 4.0f);
    CHECK(initial("range", float{}) == 0.0f);          // _autoremap shares Main's (new) key instead

    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        TraceRecorder rec;
        Agent agent(t, {.mode = mode, .listener = &rec});
        agent.tick(10ms);
        // Only the second use runs: its private go is true; the others read Main's alarm and go.
        CHECK(rec.tick(0) == "0:I 5:I 7:I 7:U");
        agent.abort();
        agent.blackboard().set("alarm", true);
        agent.blackboard().set("go", true);
        rec.clear();
        agent.tick(10ms);
        CHECK(rec.tick(1) == "0:I 1:I 3:I 3:U 5:I 7:I 7:U 9:I 11:I 11:U");
        agent.tick(10ms);
        CHECK(rec.tick(2) == "3:U 3:T(Success) 4:I 4:U 7:U 7:T(Success) 8:I 8:U 11:U 11:T(Success) 12:I 12:U");
        CHECK(agent.blackboard().get<int>("total") == 2);  // the first use's Shoot writes Main's total
        CHECK(agent.blackboard().get<int>("shots") == 5);  // the second's {=} and the third's _autoremap share Main's shots
    }
    const std::string saved = xml::save(t, reg);
    check_same(t, xml::Loader(reg).load_string(saved), 10, [](Agent& a, int i) {
        if (i == 2) a.blackboard().set("alarm", true);
        if (i == 5) a.blackboard().set("go", true);
    });
}

TEST_CASE("xml: subtree errors: unknown tree, unknown key, bad literal, cycle") {
    const Registry reg = make_registry();
    const std::string fight = "<BehaviorTree ID=\"Fight\"><Attack target=\"{target}\"/></BehaviorTree>\n";
    auto with = [&](const std::string& main) {
        return "<root BTCPP_format=\"4\" main_tree_to_execute=\"Main\">\n<BehaviorTree ID=\"Main\">\n" + main + "\n</BehaviorTree>\n" +
               fight + "</root>";
    };
    CHECK(load_error(reg, with("<SubTree ID=\"Figth\"/>")) ==
          "t.xml:3:1: tree 'Main', node /SubTree 'Figth': unknown BehaviorTree 'Figth' (defined: Main Fight)");
    CHECK(load_error(reg, with("<SubTree ID=\"Fight\" enemy=\"{e}\"/>")) ==
          "t.xml:3:21: tree 'Main', node /SubTree 'Fight': subtree 'Fight' has no key 'enemy' to remap (its keys: target)");
    CHECK(load_error(reg, with("<SubTree ID=\"Fight\" target=\"near\"/>")) ==
          "t.xml:3:21: tree 'Main', node /SubTree 'Fight': subtree 'Fight' key 'target': 'near' is not a valid int");
    CHECK(load_error(reg, with("<Sequence><Fight/></Sequence>")) ==
          "t.xml:3:11: tree 'Main', node /Sequence/Fight[0]: unknown node <Fight>: not a built-in node nor a registered "
          "action or condition (to use BehaviorTree 'Fight' write <SubTree ID=\"Fight\"/>)");
    CHECK(load_error(reg, with("<Sequence><SubTree ID=\"Fight\"><Patrol/></SubTree></Sequence>")) ==
          "t.xml:3:31: tree 'Main', node /Sequence/SubTree 'Fight'[0]: SubTree takes no children, got 1");
    // A cycle: A -> B -> A.
    const std::string cycle = R"XML(<root BTCPP_format="4" main_tree_to_execute="A">
<BehaviorTree ID="A"><Sequence><SubTree ID="B"/></Sequence></BehaviorTree>
<BehaviorTree ID="B"><Fallback><Patrol/><SubTree ID="A"/></Fallback></BehaviorTree>
</root>)XML";
    CHECK(load_error(reg, cycle) ==
          "t.xml:3:41: tree 'B', node /Fallback/SubTree 'A'[1]: subtree cycle: A -> B -> A");
    const std::string self = R"XML(<root BTCPP_format="4"><BehaviorTree ID="A"><SubTree ID="A"/></BehaviorTree></root>)XML";
    CHECK(load_error(reg, self) == "t.xml:1:45: tree 'A', node /SubTree 'A': subtree cycle: A -> A");
}

// ---- includes ---------------------------------------------------------------------------------------------

TEST_CASE("xml: <include> loads BehaviorTrees from other files, relative to the including file") {
    const Registry reg = make_registry();
    const xml::Loader loader(reg);
    const Tree t = loader.load_file(kData / "main_with_include.xml");
    CHECK(t.describe() ==
          "0 Selector\n"
          "  1 Sequence Fight [guard, abort None]\n"
          "    2 Condition close\n"
          "    3 Action Strike\n"
          "  4 Action Patrol\n");
    CHECK(t.key<int>("enemy").id != kNoKey);  // Fight's target -> Main's enemy, through Strike's _autoremap
    CHECK(loader.tree_ids(kData / "main_with_include.xml") == std::vector<std::string>{"Strike", "Fight", "Main"});
    // A tree of an included file can be loaded by ID through the including file.
    CHECK(loader.load_file(kData / "main_with_include.xml", "Strike").describe() == "0 Action Attack\n");

    // load_string resolves includes against LoaderOptions::include_base.
    const std::string text = "<root BTCPP_format=\"4\"><include path=\"lib/common.xml\"/></root>";
    CHECK(xml::Loader(reg, {.include_base = kData}).load_string(text).describe() == "0 Action Attack\n");
    try {
        (void)xml::Loader(reg, {.allow_includes = false}).load_string(text, "t.xml");
        FAIL("includes should be refused");
    } catch (const xml::LoadError& e) {
        CHECK(std::string(e.what()) == "t.xml:1:24: <include> is disabled (LoaderOptions::allow_includes)");
    }
}

TEST_CASE("xml: include errors: a cycle, a missing file, an error inside an included file") {
    const Registry reg = make_registry();
    const xml::Loader loader(reg);
    const std::string a = (kData / "include_cycle_a.xml").string();
    const std::string b = (kData / "include_cycle_b.xml").string();
    CHECK_THROWS_WITH_AS(loader.load_file(a), (b + ":3:3: include cycle: include_cycle_a.xml -> include_cycle_b.xml -> include_cycle_a.xml").c_str(),
                         xml::LoadError);
    const std::string missing = (kData / "missing_include.xml").string();
    CHECK_THROWS_WITH_AS(loader.load_file(missing),
                         (missing + ":3:3: cannot open '" + (kData / "lib/nope.xml").string() + "': no such file").c_str(),
                         xml::LoadError);
    CHECK_THROWS_WITH_AS(loader.load_file(kData / "nope.xml"),
                         ((kData / "nope.xml").string() + ":1:1: cannot open '" + (kData / "nope.xml").string() + "': no such file").c_str(),
                         xml::LoadError);
    const std::string bad = (kData / "lib" / "bad_strike.xml").string();
    CHECK_THROWS_WITH_AS(loader.load_file(kData / "bad_port_in_include.xml"),
                         (bad + ":5:15: tree 'BadStrike', node /Sequence/Attack[0]: action 'Attack' port 'target': 'twelve' is not a valid int").c_str(),
                         xml::LoadError);
    try {
        (void)loader.load_file(kData / "bad_port_in_include.xml");
    } catch (const xml::LoadError& e) {
        CHECK(e.file() == bad);
        CHECK(e.line() == 5);
        CHECK(e.column() == 15);
        CHECK(e.tree() == "BadStrike");
        CHECK(e.node_path() == "/Sequence/Attack[0]");
        CHECK(e.problem() == "action 'Attack' port 'target': 'twelve' is not a valid int");
    }
}

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

TEST_CASE("xml errors: expressions in ScriptCondition and _precondition") {
    const Registry reg = make_registry();
    CHECK(load_error(reg, doc("<ScriptCondition code=\"a &amp;&amp;\"/>")) ==
          "t.xml:3:18: tree 'T', node /ScriptCondition: code=\"a &&\": expression ends where an operand was expected (at "
          "character 5)");
    CHECK(load_error(reg, doc("<ScriptCondition code=\"a == 3\"/>")) ==
          "t.xml:3:18: tree 'T', node /ScriptCondition: code=\"a == 3\": unexpected '=' (at character 3)");
    CHECK(load_error(reg, doc("<ScriptCondition code=\"a &amp; b\"/>")) ==
          "t.xml:3:18: tree 'T', node /ScriptCondition: code=\"a & b\": '&' is not an operator here (use '&&') (at character 3)");
    CHECK(load_error(reg, doc("<Patrol _precondition=\"(a || b\"/>")) ==
          "t.xml:3:9: tree 'T', node /Patrol: _precondition=\"(a || b\": missing ')' (at character 8)");
    CHECK(load_error(reg, doc("<Patrol _precondition=\"InRange\"/>")) ==
          "t.xml:3:9: tree 'T', node /Patrol: _precondition=\"InRange\": condition 'InRange' port 'distance' (float) is not "
          "bound: write InRange(distance={key}) (at character 1)");
    CHECK(load_error(reg, doc("<Patrol _precondition=\"InRange(distance=3)\"/>")) ==
          "t.xml:3:9: tree 'T', node /Patrol: _precondition=\"InRange(distance=3)\": port 'distance' needs a {key} (literal "
          "values are not supported in expressions) (at character 18)");
    CHECK(load_error(reg, doc("<Patrol _precondition=\"Jump(x={y})\"/>")) ==
          "t.xml:3:9: tree 'T', node /Patrol: _precondition=\"Jump(x={y})\": 'Jump' is not a registered condition (at "
          "character 1)");
    CHECK(load_error(reg, doc("<Patrol _precondition=\"IsSet(flg={f})\"/>")) ==
          "t.xml:3:9: tree 'T', node /Patrol: _precondition=\"IsSet(flg={f})\": condition 'IsSet' has no port 'flg' (ports: "
          "flag) (at character 7)");
    CHECK(load_error(reg, doc("<ScriptCondition code=\"\"/>")) ==
          "t.xml:3:18: tree 'T', node /ScriptCondition: code=\"\": empty expression (at character 1)");
    std::string deep(40, '(');
    CHECK(load_error(reg, doc("<ScriptCondition code=\"" + deep + "a\"/>")) ==
          "t.xml:3:18: tree 'T', node /ScriptCondition: code=\"" + deep +
              "a\": expression nested too deeply (more than 32 levels) (at character 34)");
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
    CHECK(load_error(reg, bb("<Entry key=\"a\" type=\"string\"/>")) ==
          "t.xml:4:16: tree 'T', node /Blackboard/Entry[0]: unknown type 'string' (bool, int, unsigned, long, long long, "
          "float, double, or the type of a registered port)");
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

// ---- limits (include/ebt/limits.hpp): the same on load and save ---------------------------------------------

namespace {

// `levels` nested Sequences around `inner`.
std::string nested_sequences(int levels, const std::string& inner) {
    std::string s;
    for (int i = 0; i < levels; ++i) s += "<Sequence>";
    s += inner;
    for (int i = 0; i < levels; ++i) s += "</Sequence>";
    return s;
}

// `trees` BehaviorTrees T0, T1, ...: each `levels` nested Sequences around a <SubTree> of the next
// one (the last around a Patrol).
std::string subtree_chain(int trees, int levels) {
    std::string s = "<root BTCPP_format=\"4\" main_tree_to_execute=\"T0\">\n";
    for (int i = 0; i < trees; ++i) {
        const std::string inner = i + 1 < trees ? "<SubTree ID=\"T" + std::to_string(i + 1) + "\"/>" : "<Patrol/>";
        s += "<BehaviorTree ID=\"T" + std::to_string(i) + "\">\n" + nested_sequences(levels, inner) + "\n</BehaviorTree>\n";
    }
    return s + "</root>\n";
}

}  // namespace

TEST_CASE("xml limits: the depth limit holds for the whole tree, subtrees expanded (no stack overflow)") {
    const Registry reg = make_registry();
    // 40 trees of 199 nested Sequences chained by SubTree: every tree and the chain of 39 subtree
    // uses are within the limits, the expanded tree is 7,961 levels deep.
    const std::string chain = subtree_chain(40, 199);
    CHECK(load_error(reg, chain) ==
          "t.xml:6:11: tree 'T1': the tree is deeper than 200 levels with its subtrees expanded (limits::kMaxDepth): "
          "this node is at level 201 of tree 'T0'");
    // Exactly 200 levels load: A's 100 Sequences put B's root at level 101, B is 100 levels deep.
    auto two = [](int b_levels) {
        return "<root main_tree_to_execute=\"A\">\n<BehaviorTree ID=\"A\">" + nested_sequences(100, "<SubTree ID=\"B\"/>") +
               "</BehaviorTree>\n<BehaviorTree ID=\"B\">" + nested_sequences(b_levels, "<Patrol/>") + "</BehaviorTree>\n</root>";
    };
    CHECK(xml::Loader(reg).load_string(two(99)).data().source.size() == 200);
    // One more level does not.
    CHECK(load_error(reg, two(100)) ==
          "t.xml:3:1022: tree 'B': the tree is deeper than 200 levels with its subtrees expanded (limits::kMaxDepth): "
          "this node is at level 201 of tree 'A'");
    // One tree alone: its root is level 1.
    CHECK(xml::Loader(reg).load_string(doc(nested_sequences(199, "<Patrol/>"))).data().source.size() == 200);
    CHECK(load_error(reg, doc(nested_sequences(200, "<Patrol/>"))) ==
          "t.xml:3:2001: tree 'T': the tree is deeper than 200 levels with its subtrees expanded (limits::kMaxDepth): "
          "this node is at level 201 of tree 'T'");
}

TEST_CASE("xml limits: nodes are counted, subtrees expanded, before anything is built (doubling subtrees)") {
    const Registry reg = make_registry();
    // Each tree uses the next one twice: 2^60 nodes from a few KB.
    std::string s = "<root main_tree_to_execute=\"D0\">\n";
    for (int i = 0; i < 60; ++i) {
        const std::string next = "D" + std::to_string(i + 1);
        s += "<BehaviorTree ID=\"D" + std::to_string(i) + "\"><Sequence><SubTree ID=\"" + next + "\"/><SubTree ID=\"" + next +
             "\"/></Sequence></BehaviorTree>\n";
    }
    s += "<BehaviorTree ID=\"D60\"><Patrol/></BehaviorTree>\n</root>\n";
    CHECK(load_error(reg, s) ==
          "t.xml:59:24: tree 'D57': the tree has more than 32767 nodes with its subtrees expanded (limits::kMaxNodes): "
          "this node is number 32768 of tree 'D0'");
    // 200 trees (subtree uses nested past 64 levels, counts past 2^64): refused the same way.
    std::string s200 = "<root main_tree_to_execute=\"D0\">\n";
    for (int i = 0; i < 200; ++i) {
        const std::string next = "D" + std::to_string(i + 1);
        s200 += "<BehaviorTree ID=\"D" + std::to_string(i) + "\"><Sequence><SubTree ID=\"" + next + "\"/><SubTree ID=\"" + next +
                "\"/></Sequence></BehaviorTree>\n";
    }
    s200 += "<BehaviorTree ID=\"D200\"><Patrol/></BehaviorTree>\n</root>\n";
    CHECK(load_error(reg, s200).find("the tree has more than 32767 nodes with its subtrees expanded (limits::kMaxNodes): this node is "
                                     "number 32768 of tree 'D0'") != std::string::npos);
    // 32767 nodes load: a Sequence over two uses of a 16383-node subtree.
    std::string half;
    for (int i = 0; i < 16382; ++i) half += "<Patrol/>";
    const std::string two = "<root main_tree_to_execute=\"A\"><BehaviorTree ID=\"A\"><Sequence><SubTree ID=\"H\"/><SubTree ID=\"H\"/>"
                            "</Sequence></BehaviorTree><BehaviorTree ID=\"H\"><Sequence>" + half +
                            "</Sequence></BehaviorTree></root>";
    CHECK(xml::Loader(reg).load_string(two).data().source.size() == 32767);
}

TEST_CASE("xml limits: attributes and subtree remaps load in linear time (20,000 on one element)") {
    const Registry reg = make_registry();
    const int n = 20000;
    std::string attrs, entries, remaps;
    for (int i = 0; i < n; ++i) {
        const std::string k = std::to_string(i);
        attrs += " _a" + k + "=\"" + k + "\"";
        entries += "<Entry key=\"k" + k + "\" type=\"bool\"/>";
        remaps += " k" + k + "=\"{o" + k + "}\"";
    }
    const Tree kept = xml::Loader(reg).load_string(doc("<Patrol" + attrs + "/>"));
    REQUIRE(kept.data().source[0].attributes.size() == static_cast<std::size_t>(n));
    CHECK(kept.data().source[0].attributes.back() == std::pair<std::string, std::string>("_a19999", "19999"));
    CHECK(xml::Loader(reg).load_string(xml::save(kept, reg)).data().source[0].attributes == kept.data().source[0].attributes);
    const std::string remapped = "<root main_tree_to_execute=\"A\"><BehaviorTree ID=\"A\"><SubTree ID=\"S\"" + remaps +
                                 "/></BehaviorTree><BehaviorTree ID=\"S\"><Blackboard>" + entries +
                                 "</Blackboard><ScriptCondition code=\"k19999\"/></BehaviorTree></root>";
    const Tree t = xml::Loader(reg).load_string(remapped);
    CHECK(t.schema().size() == static_cast<std::size_t>(n));
    CHECK(t.schema().find("o19999") != kNoKey);
    // A SubTree's model entry with 20,000 ports (defaults for its remaps).
    std::string model_ports;
    for (int i = 0; i < n; ++i) model_ports += "<input_port name=\"k" + std::to_string(i) + "\" default=\"true\"/>";
    const std::string modelled = "<root main_tree_to_execute=\"A\"><TreeNodesModel><SubTree ID=\"S\">" + model_ports +
                                 "</SubTree></TreeNodesModel><BehaviorTree ID=\"A\"><SubTree ID=\"S\"/></BehaviorTree>"
                                 "<BehaviorTree ID=\"S\"><Blackboard>" + entries +
                                 "</Blackboard><ScriptCondition code=\"k19999\"/></BehaviorTree></root>";
    CHECK(xml::Loader(reg).load_string(modelled).schema().size() == static_cast<std::size_t>(n));
    // A refusal is as quick: the last attribute is unknown.
    CHECK(load_error(reg, doc("<Patrol" + attrs + " bogus=\"1\"/>")).find("action 'Patrol' has no port 'bogus'") != std::string::npos);
}

TEST_CASE("xml limits: save() refuses every tree load() would refuse, with the same limits") {
    const Registry reg = make_registry();
    // What save() writes loads back the same, or save() throws: check both on each tree.
    auto save_error = [&](const Tree& t) -> std::string {
        std::string saved;
        try {
            saved = xml::save(t, reg, {.nodes_model = false});
        } catch (const xml::SaveError& e) {
            return e.what();
        }
        CHECK(xml::Loader(reg).load_string(saved).describe() == t.describe());
        return "";
    };
    // Predicates: nested deeper than 32 levels as written, or more than 256 operands.
    // (a builder with the bool keys k0..k300 declared)
    auto with_keys = [&] {
        TreeBuilder b("t", reg);
        for (int i = 0; i <= 300; ++i) b.key<bool>("k" + std::to_string(i));
        return b;
    };
    // A tree built in code cannot pass these limits: the builder refuses it as it is composed
    // (builder_test.cpp), so save() never meets one; at the limits, it saves and loads back.
    Predicate deep = Predicate::is("k0");
    for (int i = 1; i <= 33; ++i) deep = Predicate::is("k" + std::to_string(i)) && deep;  // k33 && (k32 && (...)): 32 levels
    CHECK(save_error(with_keys().condition(deep).end()).empty());
    CHECK_THROWS_AS(deep = Predicate::is("k34") && deep, BuildError);
    Predicate wide = Predicate::is("k0");
    for (int i = 1; i <= 255; ++i) wide = wide || Predicate::is("k" + std::to_string(i));
    CHECK(save_error(with_keys().sequence().precondition(wide).action("Patrol").back().end()).empty());
    CHECK_THROWS_AS(wide = wide || Predicate::is("k256"), BuildError);
    // The tree: 200 levels save; the builder refuses a 201st.
    TreeBuilder tall("t", reg);
    for (int i = 0; i < 199; ++i) tall.sequence();
    tall.action("Patrol");
    for (int i = 0; i < 199; ++i) tall.back();
    CHECK(save_error(tall.end()).empty());
    // Durations: below 2^50 ms; the loader refuses exactly 2^50 ms too.
    const auto limit = std::chrono::milliseconds(std::int64_t{1} << 50);
    CHECK(save_error(TreeBuilder("t", reg).wait(limit - 1us).end()).empty());
    CHECK(save_error(TreeBuilder("t", reg).timeout(limit).action("Patrol").back().end()) ==
          "cannot save tree 't', node /Timeout: the duration 1125899906842624000 us is not below 2^50 ms, the longest XML can write");
    CHECK(load_error(reg, doc("<Wait msec=\"1125899906842624\"/>")) ==
          "t.xml:3:7: tree 'T', node /Wait: msec=\"1125899906842624\" is not a duration in milliseconds (a non-negative number below "
          "2^50, at most 3 decimals)");
    CHECK(xml::Loader(reg).load_string(doc("<Wait msec=\"1125899906842623.999\"/>")).data().source[0].duration ==
          (limit - 1us).count());
    // Values: NaN and infinities have no literal form.
    CHECK(save_error(TreeBuilder("t", reg).key<double>("hp", std::nan("")).action("Patrol").end()) ==
          "cannot save tree 't': key 'hp' has the value nan, which XML cannot express (it would not load back)");
    CHECK(save_error(TreeBuilder("t", reg).key<float>("r", -INFINITY).action("Patrol").end()) ==
          "cannot save tree 't': key 'r' has the value -inf, which XML cannot express (it would not load back)");
    CHECK(save_error(TreeBuilder("t", reg).weighted_selector({1.0, INFINITY}).action("Patrol").action("Patrol").back().end()) ==
          "cannot save tree 't', node /WeightedSelector: a weight has the value inf, which XML cannot express (it would not load back)");
    // Names: a BehaviorTree ID; a NUL in a text.
    CHECK(save_error(TreeBuilder("my tree", reg).action("Patrol").end()) ==
          "cannot save tree 'my tree': the tree's name is not a valid BehaviorTree ID (not empty, no blanks, none of ! & | ^ ( ) { } , = ; "
          "\" ' < >, not true or false)");
    CHECK(save_error(TreeBuilder("", reg).action("Patrol").end()).find("the tree's name is not a valid BehaviorTree ID") !=
          std::string::npos);
    CHECK(save_error(TreeBuilder("t", reg).action("Patrol").label(std::string("a\0b", 3)).end()) ==
          "cannot save tree 't', node /Action 'a\\0b': the label contains a NUL character, which XML cannot hold");
    // Ports: at most 255 per action or condition; the registry refuses more (builder_test.cpp), so
    // neither load nor save meets one.
    Registry wide_reg = make_registry();
    ActionSpec wide_action = test::running_action();
    for (int i = 0; i < 256; ++i) wide_action.ports.push_back(input_port<int>("p" + std::to_string(i)));
    CHECK_THROWS_AS(wide_reg.add_action("Wide", wide_action), BuildError);
    CHECK(save_error(TreeBuilder("t", reg).action("Patrol").attribute("_x", std::string("\0", 1)).end()) ==
          "cannot save tree 't', node /Action 'Patrol': kept attribute '_x' contains a NUL character, which XML cannot hold");
}

// ---- saving --------------------------------------------------------------------------------------------------

TEST_CASE("xml: save refuses what it cannot write") {
    const Registry reg = make_registry();
    const Tree inplace = TreeBuilder("t", reg).sequence().action("Local", test::running_action()).back().end();
    CHECK_THROWS_WITH_AS(xml::save(inplace, reg),
                         "cannot save tree 't', node /Sequence/Action 'Local'[0]: action 'Local' is not registered in the "
                         "registry given to save()",
                         xml::SaveError);
    Registry other;
    other.add_action("Attack", test::running_action());  // no ports
    const Tree attack = TreeBuilder("t", reg).key<int>("target").action("Attack").end();
    CHECK_THROWS_WITH_AS(xml::save(attack, other),
                         "cannot save tree 't', node /Action 'Attack': action 'Attack' has ports (target:int) in the tree but "
                         "() in the registry",
                         xml::SaveError);
    const Tree cond = TreeBuilder("t", reg).key<bool>("flag").condition("IsSet").end();
    CHECK_THROWS_WITH_AS(xml::save(cond, other),
                         "cannot save tree 't', node /Condition 'IsSet': condition 'IsSet' is not registered in the registry "
                         "given to save()",
                         xml::SaveError);
    const Tree vec = TreeBuilder("t", reg).key<xmltest::Vec2>("pos", xmltest::Vec2{1, 2}).action("Patrol").end();
    CHECK_THROWS_WITH_AS(xml::save(vec, reg), "cannot save tree 't': key 'pos' of type xmltest::Vec2 has an initial value XML cannot express",
                         xml::SaveError);
    CHECK_THROWS_WITH_AS(xml::save(Tree{}, reg), "save(): the tree is empty", xml::SaveError);
    // A registered name that is also a built-in name is written in the explicit form.
    Registry odd;
    odd.add_action("Sequence", test::running_action());
    odd.add_action("Both", test::running_action());
    odd.add_condition("Both", [](const ConditionContext&) { return true; });
    const Tree t = TreeBuilder("t", odd).selector().action("Sequence").action("Both").condition("Both").back().end();
    const std::string saved = xml::save(t, odd, {.nodes_model = false});
    CHECK(saved.find("<Action ID=\"Sequence\" />") != std::string::npos);
    CHECK(saved.find("<Action ID=\"Both\" />") != std::string::npos);
    CHECK(saved.find("<Condition ID=\"Both\" />") != std::string::npos);
    CHECK(xml::Loader(odd).load_string(saved).describe() == t.describe());
}

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

TEST_CASE("xml: literal values parse and format per type") {
    auto parse = [](const TypeInfo* t, std::string_view s) {
        alignas(8) unsigned char buf[8] = {};
        const bool ok = xml::parse_value(t, s, buf);
        return ok ? *xml::format_value(t, buf) : std::string("!");
    };
    CHECK(parse(type_of<bool>(), "true") == "true");
    CHECK(parse(type_of<bool>(), " FALSE ") == "false");
    CHECK(parse(type_of<bool>(), "1") == "true");
    CHECK(parse(type_of<bool>(), "yes") == "!");
    CHECK(parse(type_of<int>(), "-2147483648") == "-2147483648");
    CHECK(parse(type_of<int>(), "2147483648") == "!");
    CHECK(parse(type_of<int>(), "12abc") == "!");
    CHECK(parse(type_of<unsigned>(), "-1") == "!");
    CHECK(parse(type_of<long long>(), "-9223372036854775808") == "-9223372036854775808");
    CHECK(parse(type_of<float>(), "0.1") == "0.1");
    CHECK(parse(type_of<float>(), "1e39") == "!");
    CHECK(parse(type_of<double>(), "1e-300") == "1e-300");
    CHECK(parse(type_of<double>(), "nan") == "!");
    CHECK(parse(type_of<double>(), "") == "!");
    CHECK(xml::builtin_type("long long") == type_of<long long>());
    CHECK(xml::builtin_type("string") == nullptr);
    struct Other {
        int v;
    };
    Other o{1};
    CHECK_FALSE(xml::parse_value(type_of<Other>(), "1", &o));
    CHECK_FALSE(xml::format_value(type_of<Other>(), &o).has_value());
}

TEST_CASE("xml: every file of the fuzz seed corpus loads, and round-trips") {
    const Registry reg = fuzz::registry();  // the fuzzer's registry
    const std::filesystem::path corpus = kSource / "fuzz" / "corpus";
    int files = 0;
    for (const auto& entry : std::filesystem::directory_iterator(corpus)) {
        CAPTURE(entry.path().string());
        ++files;
        const std::string text = slurp(entry.path());
        const xml::Loader loader(reg, {.allow_includes = false});
        const Tree t = loader.load_string(text, entry.path().filename().string());
        const std::string saved = xml::save(t, reg);
        CHECK(loader.load_string(saved).describe() == t.describe());
    }
    CHECK(files >= 5);
}

// ---- the builder additions the loader uses -------------------------------------------------------------

TEST_CASE("builder: Threshold, declare_key, attribute, port_literal, last_error") {
    const Registry reg = make_registry();
    // Threshold mixes "all" and counts; Policy converts.
    const Tree t = TreeBuilder("t", reg)
                       .declare_key("target", type_of<int>())
                       .parallel(Threshold::all(), Threshold::count(2))
                           .action("Patrol").attribute("_note", "kept")
                           .action("Attack").port_literal("target", "3")
                           .monitor(Threshold::one(), Policy::RequireAll).action("Patrol").back()
                       .back()
                       .end();
    CHECK(t.data().node(0).count == 3);
    CHECK(t.data().node(0).count2 == 2);
    CHECK(t.data().node(3).count == 1);
    CHECK(t.data().node(3).count2 == 1);
    CHECK(t.data().source[1].attributes == std::vector<std::pair<std::string, std::string>>{{"_note", "kept"}});
    CHECK(t.data().source[2].literals == std::vector<std::pair<std::string, std::string>>{{"target", "3"}});
    CHECK_THROWS_WITH_AS(TreeBuilder("t").parallel(Threshold::count(0), Threshold::all()),
                         "tree 't', at /: Parallel thresholds must be >= 1", BuildError);
    CHECK_THROWS_WITH_AS(TreeBuilder("t", reg).key<int>("target").action("Attack").port_literal("tgt", "1"),
                         "tree 't', at /: Action 'Attack' has no port 'tgt'", BuildError);
    CHECK_THROWS_WITH_AS(TreeBuilder("t").always_success().port_literal("x", "1"),
                         "tree 't', at /: port_literal() applies to an action or a registered condition node", BuildError);
    // last_error: the node an error is about (in the order nodes were added) and the bare problem.
    TreeBuilder b("t");
    b.key<bool>("a").sequence().always_success().sequence().check("a").always_success().back();
    CHECK_THROWS_AS(b.abort(AbortMode::LowerPriority), BuildError);
    CHECK(b.last_error().node == 2);
    CHECK(b.last_error().problem == "abort mode LowerPriority needs lower-priority siblings, but the parent is Sequence");
    // Ports are InOut unless declared otherwise.
    CHECK(port<int>("p").direction == PortDirection::InOut);
    CHECK(input_port<int>("p").direction == PortDirection::In);
    CHECK(output_port<int>("p").direction == PortDirection::Out);
}

// ---- port defaults ---------------------------------------------------------------------------------------------

namespace {

// Nodes whose ports have defaults: a key of the same name ({=}), another key, a literal.
Registry defaults_registry() {
    Registry reg = make_registry();
    reg.add_condition(
        "IsSeeEnemy", [](const ConditionContext& c) { return c.in<bool>(0); }, {input_port<bool>("enemy_seen").default_key()});
    reg.add_condition(
        "Near", [](const ConditionContext& c) { return c.in<float>(0) < 5.0f; }, {input_port<float>("distance").default_key("dist")});
    ActionSpec aim = test::finishing_action(2, Status::Success);
    aim.ports = {input_port<int>("power").default_value(7), output_port<int>("hits").default_key()};
    reg.add_action("Aim", aim);
    return reg;
}

}  // namespace

TEST_CASE("xml: a port the element leaves out gets its registered default; without one it is still an error") {
    const Registry reg = defaults_registry();
    const Tree t = xml::Loader(reg).load_string(doc(R"(<Sequence _precondition="IsSeeEnemy">
  <IsSeeEnemy/>
  <Near/>
  <Aim/>
  <Aim power="3" hits="{other}"/>
  <ScriptCondition code="IsSeeEnemy &amp;&amp; Near"/>
</Sequence>)"));
    const auto& src = t.data().source;
    CHECK(src[0].precondition->bindings == Bindings{{"enemy_seen", "enemy_seen"}});
    CHECK(src[1].predicate->bindings == Bindings{{"enemy_seen", "enemy_seen"}});
    CHECK(src[2].predicate->bindings == Bindings{{"distance", "dist"}});
    CHECK(src[3].bindings == Bindings{{"power", "=power#0"}, {"hits", "hits"}});
    CHECK(src[3].literals == std::vector<std::pair<std::string, std::string>>{{"power", "7"}});
    CHECK(src[4].bindings == Bindings{{"power", "=power#1"}, {"hits", "other"}});
    CHECK(src[5].predicate->a->bindings == Bindings{{"enemy_seen", "enemy_seen"}});
    CHECK(src[5].predicate->b->bindings == Bindings{{"distance", "dist"}});
    // The keys are inferred from the defaults' uses.
    CHECK(t.schema().info(t.schema().find("enemy_seen")).type == type_of<bool>());
    CHECK(t.schema().info(t.schema().find("dist")).type == type_of<float>());
    CHECK(t.schema().info(t.schema().find("hits")).type == type_of<int>());
    int power = 0;
    std::memcpy(&power, t.schema().defaults() + t.schema().info(t.schema().find("=power#0")).offset, sizeof power);
    CHECK(power == 7);
    // A port without a default must still be given.
    CHECK(load_error(reg, doc("<Attack/>")) ==
          "t.xml:3:1: tree 'T', node /Attack: action 'Attack' port 'target' (int) is missing: write target=\"{key}\", "
          "target=\"{=}\" (the key 'target') or a literal value");
    // A literal default cannot be used in an expression, which has no literals.
    Registry lit = defaults_registry();
    lit.add_condition("Strong", [](const ConditionContext& c) { return c.in<int>(0) > 3; }, {input_port<int>("force").default_value(5)});
    CHECK(load_error(lit, doc("<ScriptCondition code=\"Strong\"/>")) ==
          "t.xml:3:18: tree 'T', node /ScriptCondition: code=\"Strong\": condition 'Strong' port 'force' (int) has a literal "
          "default, which an expression cannot use: write Strong(force={key}) (at character 1)");
    CHECK(load_error(lit, doc("<Strong/>")).empty());
}

TEST_CASE("xml: save() leaves out ports bound to their default, and the tree loads back the same") {
    const Registry reg = defaults_registry();
    const xml::Loader loader(reg);
    const Tree t = loader.load_string(doc(R"X(<ReactiveFallback>
  <Sequence _precondition="Near(distance={dist}) &amp;&amp; !IsSeeEnemy(enemy_seen={other})">
    <IsSeeEnemy enemy_seen="{=}"/>
    <Near distance="{dist}"/>
    <Aim power="7" hits="{hits}"/>
  </Sequence>
  <Sequence>
    <IsSeeEnemy enemy_seen="{other}"/>
    <Aim power="8"/>
  </Sequence>
</ReactiveFallback>)X"));
    const std::string saved = xml::save(t, reg, {.nodes_model = false});
    CHECK(saved.find("<IsSeeEnemy />") != std::string::npos);
    CHECK(saved.find("_precondition=\"Near &amp;&amp; !IsSeeEnemy(enemy_seen={other})\"") != std::string::npos);
    CHECK(saved.find("<Near />") != std::string::npos);
    CHECK(saved.find("<Aim />") != std::string::npos);
    CHECK(saved.find("<IsSeeEnemy enemy_seen=\"{other}\" />") != std::string::npos);
    CHECK(saved.find("<Aim power=\"8\" />") != std::string::npos);
    const Script script = [](Agent& a, int frame) {
        auto& bb = a.blackboard();
        if (frame == 1) bb.set(bb.key<bool>("other"), true);
        if (frame == 3) bb.set(bb.key<bool>("enemy_seen"), true);
        if (frame == 6) bb.set(bb.key<float>("dist"), 9.0f);
    };
    check_same(t, loader.load_string(saved), 10, script);
    CHECK(xml::save(loader.load_string(saved), reg, {.nodes_model = false}) == saved);
    // A tree built in code with defaults round-trips too.
    const Tree code = TreeBuilder("C", reg)
                          .key<bool>("enemy_seen").key<float>("dist").key<int>("hits")
                          .sequence().condition("IsSeeEnemy").condition("Near").action("Aim").back()
                          .end();
    const std::string code_saved = xml::save(code, reg);
    CHECK(code_saved.find("<Sequence>\n      <IsSeeEnemy />\n      <Near />\n      <Aim />\n    </Sequence>") != std::string::npos);
    const Script code_script = [](Agent& a, int frame) {
        auto& bb = a.blackboard();
        if (frame == 1) bb.set(bb.key<bool>("enemy_seen"), true);
        if (frame == 3) bb.set(bb.key<float>("dist"), 9.0f);
    };
    check_same(code, loader.load_string(code_saved), 6, code_script);
    // A literal default inside a predicate built in code has no XML form (expressions have no literals).
    Registry lit = defaults_registry();
    lit.add_condition("Strong", [](const ConditionContext& c) { return c.in<int>(0) > 3; }, {input_port<int>("force").default_value(5)});
    const Tree strong = TreeBuilder("S", lit).sequence().always_success().precondition(Predicate::condition("Strong")).back().end();
    CHECK_THROWS_WITH_AS((void)xml::save(strong, lit),
                         "cannot save tree 'S', node /Sequence/AlwaysSuccess[0]: condition 'Strong' port 'force' is bound to a "
                         "constant (its literal default), which an expression cannot write",
                         xml::SaveError);
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

TEST_CASE("xml: a BehaviorTree.CPP file whose condition reads a key through a {=} default port is event-driven") {
    int evaluations = 0;
    Registry reg;
    reg.add_condition(
        "IsSeeEnemy",
        [&evaluations](const ConditionContext& c) {
            ++evaluations;
            return c.in<bool>(0);
        },
        {input_port<bool>("enemy_seen").default_key()});
    reg.add_action("Attack", test::running_action());
    reg.add_action("Patrol", test::running_action());
    // As written for BehaviorTree.CPP v4: InputPort<bool>("enemy_seen", "{=}", ...), used without attributes.
    const std::string text = R"(<root BTCPP_format="4" main_tree_to_execute="Guard">
  <BehaviorTree ID="Guard">
    <ReactiveFallback>
      <Sequence>
        <IsSeeEnemy/>
        <Attack/>
      </Sequence>
      <Patrol/>
    </ReactiveFallback>
  </BehaviorTree>
  <TreeNodesModel>
    <Condition ID="IsSeeEnemy">
      <input_port name="enemy_seen" type="bool" default="{=}"/>
    </Condition>
    <Action ID="Attack"/>
    <Action ID="Patrol"/>
  </TreeNodesModel>
</root>)";
    const Tree t = xml::Loader(reg).load_string(text, "guard.xml");
    CHECK(t.describe() == xml::Loader(reg).load_string(doc("<ReactiveFallback><Sequence><IsSeeEnemy enemy_seen=\"{enemy_seen}\"/>"
                                                           "<Attack/></Sequence><Patrol/></ReactiveFallback>"))
                              .describe());
    const Script script = [](Agent& a, int frame) {
        auto& bb = a.blackboard();
        const Key<bool> seen = bb.key<bool>("enemy_seen");
        if (frame == 2) bb.set(seen, false);  // no change
        if (frame == 6) bb.set(seen, true);
        if (frame == 8) bb.set(seen, false);
    };
    CHECK(trace(t, Mode::Polling, 10, script) == trace(t, Mode::Event, 10, script));
    CHECK(trace(t, Mode::Event, 10, script) ==
          std::vector<std::string>{"0 0:I", "0 4:I", "0 4:U", "1 4:U", "2 4:U", "3 4:U", "4 4:U", "5 4:U", "6 4:T(Aborted)", "6 1:I",
                                   "6 3:I", "6 3:U", "7 3:U", "8 3:U", "9 3:U"});
    // Evaluations of IsSeeEnemy per tick. Its guard (the Sequence's leading condition) is live while
    // Patrol runs. Event mode evaluates it on entry (tick 0; not again when it becomes live at tick 1,
    // nothing it reads changed) and when enemy_seen changes (tick 6: Attack preempts Patrol); the write of
    // an unchanged value (tick 2) and the change at tick 8 (the guard is no longer live) cost nothing.
    // Polling evaluates it every tick it is live.
    auto evaluations_per_tick = [&](Mode mode) {
        Agent agent(t, {.mode = mode});
        std::vector<int> counts;
        for (int i = 0; i < 10; ++i) {
            script(agent, i);
            evaluations = 0;
            agent.tick(10ms);
            counts.push_back(evaluations);
        }
        return counts;
    };
    CHECK(evaluations_per_tick(Mode::Event) == std::vector<int>{1, 0, 0, 0, 0, 0, 1, 0, 0, 0});
    CHECK(evaluations_per_tick(Mode::Polling) == std::vector<int>{1, 1, 1, 1, 1, 1, 1, 0, 0, 0});
}
