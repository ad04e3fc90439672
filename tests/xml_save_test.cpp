// Saving trees as XML (ebt::xml::save) and loading them back: the guard tree's compact v4 form, every
// node kind and ebt attribute, trees built in code, kept attributes, what save() refuses, literal
// values per type, and the fuzz seed corpus.
#include "support/xml_fixtures.hpp"
#include "../fuzz/fuzz_registry.hpp"
#include "guard_scenario.hpp"

using namespace ebt;
using namespace ebt::test::xml_fixtures;
using namespace std::chrono_literals;

namespace xmltest {
struct Vec2 {
    float x, y;
    bool operator==(const Vec2&) const = default;
};
}  // namespace xmltest

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
          "0 PrioritySelector root [children abort Both]\n"
          "  1 Sequence [guard, abort Both]\n"
          "    2 Condition predicate\n"
          "    3 Filter [guard, abort None]\n"
          "      4 Condition !squad.alert\n"
          "      5 Action Shoot\n"
          "  6 NonPrioritySelector [children abort Self]\n"
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
          "  25 ActiveSelector [children abort LowerPriority]\n"
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
    CHECK(data_of(a).source[0].attributes == std::vector<std::pair<std::string, std::string>>{{"editor:pos", "10,20"}});

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
    CHECK(data_of(t).source[0].attributes ==
          std::vector<std::pair<std::string, std::string>>{{"_\xC3\xA9t\xC3\xA9", "<&>\""}, {"x:y", "1"}});
    const Tree again = loader.load_string(xml::save(t, reg));
    CHECK(data_of(again).source[0].attributes == data_of(t).source[0].attributes);
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
    CHECK(xml::builtin_type("string") == type_of<std::string>());
    CHECK(xml::builtin_type("text") == nullptr);
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
