// Port defaults in XML (BehaviorTree.CPP v4's default ports): a port an element leaves out takes its
// registered default, save() leaves out ports bound to their default, and a {=} default keeps a
// BehaviorTree.CPP file event-driven.
#include "support/xml_fixtures.hpp"

using namespace ebt;
using namespace ebt::test::xml_fixtures;
using namespace std::chrono_literals;

TEST_CASE("xml: a port the element leaves out gets its registered default; without one it is still an error") {
    const Registry reg = defaults_registry();
    const Tree t = xml::Loader(reg).load_string(doc(R"(<Sequence _precondition="IsSeeEnemy">
  <IsSeeEnemy/>
  <Near/>
  <Aim/>
  <Aim power="3" hits="{other}"/>
  <ScriptCondition code="IsSeeEnemy &amp;&amp; Near"/>
</Sequence>)"));
    const auto& src = data_of(t).source;
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
