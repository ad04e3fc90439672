// XML subtrees and includes: <SubTree> with key remapping, literals, {=}, _autoremap and model
// defaults; <include> relative to the including file; their errors with exact messages.
#include "support/xml_fixtures.hpp"

using namespace ebt;
using namespace ebt::test::xml_fixtures;
using namespace std::chrono_literals;
using test::TraceRecorder;

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
