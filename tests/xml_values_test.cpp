// XML literals of std::string and enum values (docs/xml.md, "Literals"): <Blackboard> defaults, port
// values, port defaults in <TreeNodesModel>, `bark == 'alarm'` and `stance == Combat` in expressions;
// save() writes them back; a wrong enum name is a LoadError listing the names.
#include "support/both_modes.hpp"
#include "support/xml_fixtures.hpp"

#include <string>

using namespace ebt;
using namespace ebt::test::xml_fixtures;

namespace {

enum class Stance : std::uint8_t { Idle, Alert, Combat };

Registry values_registry(std::string* said = nullptr) {
    Registry reg = make_registry();
    reg.add_enum<Stance>("Stance", {{"Idle", Stance::Idle}, {"Alert", Stance::Alert}, {"Combat", Stance::Combat}});
    ActionSpec say;
    say.ports = {input_port<std::string>("text"), input_port<std::string>("voice").default_value("gruff"),
                 input_port<Stance>("as").default_value(Stance::Alert)};
    say.update = [said](ActionContext& ctx) {
        if (said) *said = ctx.in<std::string>("text") + "/" + ctx.in<std::string>("voice");
        return Status::Running;
    };
    reg.add_action("Say", say);
    return reg;
}

const char* const kBarks =
    "<Blackboard>\n"
    "<Entry key=\"bark\" type=\"string\" default=\"hold the line\"/>\n"
    "<Entry key=\"stance\" type=\"Stance\" default=\"Alert\"/>\n"
    "</Blackboard>\n"
    "<ReactiveFallback>\n"
    "<Sequence>\n"
    "<ScriptCondition code=\"bark == 'alarm' || stance == Combat\"/>\n"
    "<Say text=\"to arms!\"/>\n"
    "</Sequence>\n"
    "<Patrol/>\n"
    "</ReactiveFallback>";

}  // namespace

TEST_CASE("xml values: string and enum literals load, run the same in both modes, and save back") {
    std::string said;
    const Registry reg = values_registry(&said);
    const Tree tree = xml::Loader(reg).load_string(doc(kBarks), "barks.xml");
    CHECK(tree.describe() ==
          "0 ActiveSelector [children abort LowerPriority]\n"
          "  1 Sequence [guard, abort LowerPriority]\n"
          "    2 Condition predicate\n"
          "    3 Action Say\n"
          "  4 Action Patrol\n");
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        Agent agent(tree, {.mode = mode});
        CHECK(agent.blackboard().get<std::string>("bark") == "hold the line");
        CHECK(agent.blackboard().get<Stance>("stance") == Stance::Alert);
        agent.tick(0.05);
        CHECK(agent.status(tree.find("Patrol")) == Status::Running);
        agent.blackboard().set("stance", Stance::Combat);
        said.clear();
        agent.tick(0.05);
        CHECK(agent.status(tree.find("Say")) == Status::Running);
        CHECK(said == "to arms!/gruff");
    }
    const std::string saved = xml::save(tree, reg);
    CHECK(saved.find("<Entry key=\"bark\" type=\"string\" default=\"hold the line\" />") != std::string::npos);
    CHECK(saved.find("<Entry key=\"stance\" type=\"Stance\" default=\"Alert\" />") != std::string::npos);
    CHECK(saved.find("code=\"bark == 'alarm' || stance == Combat\"") != std::string::npos);
    CHECK(saved.find("<Say text=\"to arms!\" />") != std::string::npos);
    CHECK(saved.find("<input_port name=\"voice\" type=\"string\" default=\"gruff\" />") != std::string::npos);
    CHECK(saved.find("<input_port name=\"as\" type=\"Stance\" default=\"Alert\" />") != std::string::npos);
    const Tree again = xml::Loader(reg).load_string(saved, "saved.xml");
    check_same(tree, again, 4, [](Agent& a, int tick) {
        if (tick == 2) a.blackboard().set("bark", "alarm");
    });
}

TEST_CASE("xml values: a wrong enum name or string comparison is a LoadError at its place") {
    const Registry reg = values_registry();
    auto entry = [](const std::string& e) { return doc("<Blackboard>\n" + e + "\n</Blackboard>\n<Patrol/>"); };
    CHECK(load_error(reg, entry("<Entry key=\"stance\" type=\"Stance\" default=\"Alrt\"/>")) ==
          "t.xml:4:35: tree 'T', node /Blackboard/Entry[0]: default 'Alrt' of key 'stance' is not a valid Stance (one of "
          "Idle, Alert, Combat)");
    CHECK(load_error(reg, doc("<Say text=\"x\" as=\"Calm\"/>")) ==
          "t.xml:3:15: tree 'T', node /Say: action 'Say' port 'as': 'Calm' is not a valid Stance (one of Idle, Alert, Combat)");
    const std::string bb = "<Blackboard>\n<Entry key=\"bark\" type=\"string\"/>\n<Entry key=\"stance\" type=\"Stance\"/>\n</Blackboard>\n";
    CHECK(load_error(reg, doc(bb + "<ScriptCondition code=\"bark &lt; 'b'\"/>")) ==
          "t.xml:7:18: tree 'T', node /ScriptCondition: code=\"bark < 'b'\": key 'bark' is string, which has no order: compare it "
          "with == or != (at character 1)");
    CHECK(load_error(reg, doc(bb + "<ScriptCondition code=\"stance == Calm\"/>")) ==
          "t.xml:7:18: tree 'T', node /ScriptCondition: code=\"stance == Calm\": key 'Calm' is compared but its type is not "
          "known: declare it in the tree's <Blackboard> as Stance (at character 11)");
    CHECK(load_error(reg, doc(bb + "<ScriptCondition code=\"stance == 'Calm'\"/>")) ==
          "t.xml:7:18: tree 'T', node /ScriptCondition: code=\"stance == 'Calm'\": 'Calm' is not a valid Stance (one of Idle, "
          "Alert, Combat) (the type of key 'stance') (at character 11)");
    CHECK(load_error(reg, doc(bb + "<ScriptCondition code=\"bark == 'alarm\"/>")) ==
          "t.xml:7:18: tree 'T', node /ScriptCondition: code=\"bark == 'alarm\": missing the closing ' (at character 9)");
}
