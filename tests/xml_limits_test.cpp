// XML and the size limits of include/ebt/limits.hpp: depth and node count with subtrees expanded,
// checked before anything is built; linear time on huge elements; save() refuses exactly what
// load() would.
#include "support/xml_fixtures.hpp"

#include <cmath>

using namespace ebt;
using namespace ebt::test::xml_fixtures;
using namespace std::chrono_literals;

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
    CHECK(data_of(xml::Loader(reg).load_string(two(99))).source.size() == 200);
    // One more level does not.
    CHECK(load_error(reg, two(100)) ==
          "t.xml:3:1022: tree 'B': the tree is deeper than 200 levels with its subtrees expanded (limits::kMaxDepth): "
          "this node is at level 201 of tree 'A'");
    // One tree alone: its root is level 1.
    CHECK(data_of(xml::Loader(reg).load_string(doc(nested_sequences(199, "<Patrol/>")))).source.size() == 200);
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
    CHECK(data_of(xml::Loader(reg).load_string(two)).source.size() == 32767);
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
    REQUIRE(data_of(kept).source[0].attributes.size() == static_cast<std::size_t>(n));
    CHECK(data_of(kept).source[0].attributes.back() == std::pair<std::string, std::string>("_a19999", "19999"));
    CHECK(data_of(xml::Loader(reg).load_string(xml::save(kept, reg))).source[0].attributes == data_of(kept).source[0].attributes);
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
    CHECK(data_of(xml::Loader(reg).load_string(doc("<Wait msec=\"1125899906842623.999\"/>"))).source[0].duration ==
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
    TreeBuilder nul("t", reg);
    detail::BuilderAccess::attribute(nul.action("Patrol"), "_x", std::string("\0", 1));
    CHECK(save_error(nul.end()) ==
          "cannot save tree 't', node /Action 'Patrol': kept attribute '_x' contains a NUL character, which XML cannot hold");
}
