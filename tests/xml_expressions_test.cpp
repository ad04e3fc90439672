// XML expressions (ScriptCondition code, _precondition): their load errors, and a key named like a
// registered condition written {key} so that it round-trips.
#include "support/xml_fixtures.hpp"

using namespace ebt;
using namespace ebt::test::xml_fixtures;
using namespace std::chrono_literals;

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

TEST_CASE("xml errors: expressions in ScriptCondition and _precondition") {
    const Registry reg = make_registry();
    CHECK(load_error(reg, doc("<ScriptCondition code=\"a &amp;&amp;\"/>")) ==
          "t.xml:3:18: tree 'T', node /ScriptCondition: code=\"a &&\": expression ends where an operand was expected (at "
          "character 5)");
    CHECK(load_error(reg, doc("<ScriptCondition code=\"a = 3\"/>")) ==
          "t.xml:3:18: tree 'T', node /ScriptCondition: code=\"a = 3\": unexpected '=' (at character 3)");
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
