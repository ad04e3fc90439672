// Comparisons in XML expressions (docs/xml.md, "Expressions"): `enemy_dist < 5` in ScriptCondition
// code and _precondition-style attributes loads to the same tree as ebt::lt in the builder, runs the
// same in both modes, saves back to the same text, and bad comparisons are LoadErrors at their
// file:line:column.
#include "support/both_modes.hpp"
#include "support/xml_fixtures.hpp"

#include <string>

using namespace ebt;
using namespace ebt::test::xml_fixtures;
using test::Run;

namespace {

const char* const kChase =
    "<Blackboard>\n"
    "<Entry key=\"enemy_dist\" type=\"float\" default=\"10\"/>\n"
    "<Entry key=\"hp\" type=\"int\" default=\"100\"/>\n"
    "<Entry key=\"stunned\" type=\"bool\"/>\n"
    "</Blackboard>\n"
    "<ReactiveFallback>\n"
    "<Sequence>\n"
    "<ScriptCondition code=\"enemy_dist &lt; 5\"/>\n"
    "<Attack target=\"{hp}\"/>\n"
    "</Sequence>\n"
    "<Patrol _precondition=\"!stunned &amp;&amp; hp &gt; 0\"/>\n"
    "</ReactiveFallback>";

}  // namespace

TEST_CASE("xml compare: 'enemy_dist < 5' guards a branch that preempts Patrol when the key crosses 5") {
    const Registry reg = make_registry();
    const Tree tree = xml::Loader(reg).load_string(doc(kChase), "chase.xml");
    CHECK(tree.describe() ==
          "0 ActiveSelector [children abort LowerPriority]\n"
          "  1 Sequence [guard, abort LowerPriority]\n"
          "    2 Condition enemy_dist < 5\n"
          "    3 Action Attack\n"
          "  4 Action Patrol [guard, abort LowerPriority]\n");
    // The builder's spelling of the same tree lists the same.
    const Tree built = TreeBuilder("T", reg).key<float>("enemy_dist", 10.0f).key<int>("hp", 100).key<bool>("stunned")
                           .active_selector()
                               .sequence().condition(lt("enemy_dist", 5)).action("Attack", {{"target", "hp"}}).back()
                               .action("Patrol").precondition(!Predicate::is("stunned") && gt("hp", 0))
                           .back()
                           .end();
    CHECK(built.describe() == tree.describe());
    CHECK(xml::save(built, reg) == xml::save(tree, reg));
    test::in_both_modes(tree, [&](Run& r) {
        r.expect_ticks({"0:I 4:I 4:U"});
        r.agent.blackboard().set("enemy_dist", 5.0f);
        r.expect_ticks({"4:U"});
        r.agent.blackboard().set("enemy_dist", 4.5f);
        r.expect_ticks({"4:T(Aborted) 1:I 3:I 3:U"});
        r.agent.blackboard().set("enemy_dist", 9.0f);  // LowerPriority only: moving away does not cut Attack
        r.expect_ticks({"3:U"});
    });
}

TEST_CASE("xml compare: saved back as written; load(save(t)) is the same tree") {
    const Registry reg = make_registry();
    const Tree tree = xml::Loader(reg).load_string(doc(kChase), "chase.xml");
    const std::string saved = xml::save(tree, reg);
    const std::size_t from = saved.find("  <BehaviorTree"), to = saved.find("  <TreeNodesModel>");
    CHECK(saved.substr(from, to - from) ==
          "  <BehaviorTree ID=\"T\">\n"
          "    <Blackboard>\n"
          "      <Entry key=\"enemy_dist\" type=\"float\" default=\"10\" />\n"
          "      <Entry key=\"hp\" type=\"int\" default=\"100\" />\n"
          "      <Entry key=\"stunned\" type=\"bool\" />\n"
          "    </Blackboard>\n"
          "    <ReactiveFallback>\n"
          "      <Sequence>\n"
          "        <ScriptCondition code=\"enemy_dist &lt; 5\" />\n"
          "        <Attack target=\"{hp}\" />\n"
          "      </Sequence>\n"
          "      <Patrol _precondition=\"!stunned &amp;&amp; hp > 0\" />\n"
          "    </ReactiveFallback>\n"
          "  </BehaviorTree>\n");
    const Tree again = xml::Loader(reg).load_string(saved, "saved.xml");
    CHECK(xml::save(again, reg) == saved);
    check_same(tree, again, 6, [](Agent& a, int i) {
        if (i == 2) a.blackboard().set("enemy_dist", 1.5f);
    });
}

TEST_CASE("xml compare: a key against a key, {key} forms, and precedence with !, &&, ||, ^") {
    const Registry reg = make_registry();
    auto tree_of = [&](const std::string& code) {
        return xml::Loader(reg).load_string(doc("<Blackboard>\n<Entry key=\"a\" type=\"double\"/>\n<Entry key=\"b\" type=\"double\"/>\n"
                                                "<Entry key=\"f\" type=\"bool\"/>\n</Blackboard>\n<ScriptCondition code=\"" + code + "\"/>"),
                                            "p.xml");
    };
    auto saved_code = [&](const std::string& code) {
        const std::string s = xml::save(tree_of(code), reg);
        const std::size_t at = s.find("code=\"");
        return s.substr(at + 6, s.find('"', at + 6) - at - 6);
    };
    CHECK(saved_code("a &lt; b") == "a &lt; b");
    CHECK(saved_code("{a}&gt;={b}") == "a >= b");
    // '!' applies to the whole comparison: a comparison is one operand.
    CHECK(saved_code("!a == 2.5") == "!a == 2.5");
    CHECK(saved_code("!(a == 2.5)") == "!a == 2.5");
    CHECK(saved_code("!(a != -1e-3)") == "!a != -0.001");
    CHECK(saved_code("a &lt; 1 || b &gt; 2 &amp;&amp; f") == "a &lt; 1 || b > 2 &amp;&amp; f");
    CHECK(saved_code("(a &lt; 1 || f) ^ b &lt;= a") == "(a &lt; 1 || f) ^ b &lt;= a");
}

TEST_CASE("xml compare: LoadErrors for a comparison that cannot mean anything") {
    const Registry reg = make_registry();
    auto error = [&](const std::string& code) {
        return load_error(reg, doc("<Blackboard>\n<Entry key=\"d\" type=\"float\"/>\n<Entry key=\"n\" type=\"int\"/>\n"
                                   "<Entry key=\"f\" type=\"bool\"/>\n</Blackboard>\n<ScriptCondition code=\"" + code + "\"/>"));
    };
    CHECK(error("x &lt; 5") ==
          "t.xml:8:18: tree 'T', node /ScriptCondition: code=\"x < 5\": key 'x' is compared but its type is not known: declare it in the tree's <Blackboard> with a number type (at character 1)");
    CHECK(error("f &lt; 5") ==
          "t.xml:8:18: tree 'T', node /ScriptCondition: code=\"f < 5\": key 'f' is bool; a comparison needs a number key (int, unsigned, long, long long, float or double) or, for == and !=, a key of a type with literals (string, an enum added with add_enum) (at character 1)");
    CHECK(error("n &lt; 3.5") ==
          "t.xml:8:18: tree 'T', node /ScriptCondition: code=\"n < 3.5\": '3.5' is not a valid int (the type of key 'n') (at character 5)");
    CHECK(error("d &lt; 1e99") ==
          "t.xml:8:18: tree 'T', node /ScriptCondition: code=\"d < 1e99\": '1e99' is not a valid float (the type of key 'd') (at character 5)");
    CHECK(error("d &lt; n") ==
          "t.xml:8:18: tree 'T', node /ScriptCondition: code=\"d < n\": 'd' is float but 'n' is int: compare keys of one type (at character 5)");
    CHECK(error("d &lt; y") ==
          "t.xml:8:18: tree 'T', node /ScriptCondition: code=\"d < y\": key 'y' is compared but its type is not known: declare it in the tree's <Blackboard> as float (at character 5)");
    CHECK(error("d &lt;") ==
          "t.xml:8:18: tree 'T', node /ScriptCondition: code=\"d <\": expression ends where a number or a key was expected (at character 4)");
    CHECK(error("d &lt; (1)") ==
          "t.xml:8:18: tree 'T', node /ScriptCondition: code=\"d < (1)\": expected a number or a key after '<' (at character 5)");
    CHECK(error("IsSet &lt; 1") ==
          "t.xml:8:18: tree 'T', node /ScriptCondition: code=\"IsSet < 1\": 'IsSet' is a registered condition; write {IsSet} to compare the key (at character 1)");
    CHECK(error("d &lt; 0.1") == "");  // parsed as a float: no exactness to lose
}
