// Comparisons in the builder (ebt::lt/le/gt/ge/eq/ne, docs/builder.md "Comparisons"): what they
// evaluate to for every number type, how they compose with !, &&, ||, ^, that a guard over one
// watches exactly the keys it compares (event mode), and the BuildErrors of a comparison that
// cannot mean anything. Node indices in comments are pre-order (root = 0).
#include "support/both_modes.hpp"

#include <ebt/limits.hpp>

#include <string>
#include <vector>

using namespace ebt;
using test::Run;

namespace {

// The message of the BuildError `make` throws ("" when it does not throw).
template <class Make> std::string build_error(Make make) {
    try {
        (void)make();
    } catch (const BuildError& e) {
        return e.what();
    }
    return "";
}

// 0 ActiveSelector, 1 Sequence (guard: 2), 2 Condition enemy_dist < 5, 3 Attack, 4 Patrol.
Tree chase_tree() {
    return TreeBuilder("chase").key<float>("enemy_dist", 10.0f).key<bool>("noise")
        .active_selector()
            .sequence()
                .condition(lt("enemy_dist", 5.0f))
                .action("Attack", test::running_action())
            .back()
            .action("Patrol", test::running_action())
            .back()
        .end();
}

// Whether `p` holds on a fresh agent of a tree with keys x (= x_value) and y (= y_value) of type T.
template <class T> bool holds(const Predicate& p, T x_value, T y_value) {
    const Tree tree = TreeBuilder("holds").template key<T>("x", x_value).template key<T>("y", y_value).sequence().condition(p).back().end();
    Agent agent(tree);
    return agent.tick(std::chrono::milliseconds(1)) == Status::Success;
}

template <class T> void check_operators(T small, T big) {
    const std::string type = type_of<T>()->name;
    CAPTURE(type);
    // against a literal of the key's own type
    CHECK(holds(lt("x", big), small, small));
    CHECK_FALSE(holds(lt("x", small), small, small));
    CHECK(holds(le("x", small), small, small));
    CHECK_FALSE(holds(le("x", small), big, small));
    CHECK(holds(gt("x", small), big, small));
    CHECK_FALSE(holds(gt("x", big), big, small));
    CHECK(holds(ge("x", big), big, small));
    CHECK_FALSE(holds(ge("x", big), small, small));
    CHECK(holds(eq("x", big), big, small));
    CHECK_FALSE(holds(eq("x", big), small, small));
    CHECK(holds(ne("x", big), small, small));
    CHECK_FALSE(holds(ne("x", big), big, small));
    // against another key
    CHECK(holds(lt("x", KeyRef{"y"}), small, big));
    CHECK_FALSE(holds(lt("x", KeyRef{"y"}), big, big));
    CHECK(holds(le("x", KeyRef{"y"}), big, big));
    CHECK(holds(gt("x", KeyRef{"y"}), big, small));
    CHECK_FALSE(holds(ge("x", KeyRef{"y"}), small, big));
    CHECK(holds(eq("x", KeyRef{"y"}), small, small));
    CHECK(holds(ne("x", KeyRef{"y"}), small, big));
}

}  // namespace

TEST_CASE("compare: each operator against a literal and another key, for every number type") {
    check_operators<int>(-3, 7);
    check_operators<unsigned>(3u, 4000000000u);
    check_operators<long>(-5L, 5L);
    check_operators<long long>(-(1LL << 40), 1LL << 40);
    check_operators<float>(0.25f, 4.5f);
    check_operators<double>(-1e300, 1e300);
    // A literal of another number type converts when it does so exactly.
    CHECK(holds(lt("x", 5), 4.5f, 0.0f));       // int literal, float key
    CHECK(holds(eq("x", 2.0), 2, 0));          // double literal, int key
}

TEST_CASE("compare: composes with !, &&, ||, ^ as a precondition") {
    // 0 Selector, 1 Succeed (precondition), 2 AlwaysFailure
    auto enters = [](const Predicate& p, int hp, bool stunned) {
        const Tree tree = TreeBuilder("pre").key<int>("hp", hp).key<bool>("stunned", stunned)
                              .selector()
                                  .action("Succeed", test::finishing_action(1, Status::Success)).precondition(p)
                                  .always_failure()
                              .back()
                              .end();
        Agent agent(tree);
        return agent.tick(std::chrono::milliseconds(1)) == Status::Success;
    };
    const Predicate healthy = ge("hp", 50) && !Predicate::is("stunned");
    CHECK(enters(healthy, 50, false));
    CHECK_FALSE(enters(healthy, 49, false));
    CHECK_FALSE(enters(healthy, 80, true));
    CHECK(enters(!lt("hp", 10), 10, false));
    CHECK_FALSE(enters(!lt("hp", 10), 9, false));
    CHECK(enters(lt("hp", 10) || Predicate::is("stunned"), 90, true));
    CHECK_FALSE(enters(lt("hp", 10) ^ gt("hp", 5), 7, false));
    CHECK(enters(lt("hp", 10) ^ gt("hp", 5), 3, false));
}

TEST_CASE("compare: a guard with a comparison aborts the lower-priority branch when a float key crosses") {
    const Tree tree = chase_tree();
    CHECK(tree.describe() ==
          "0 ActiveSelector [children abort LowerPriority]\n"
          "  1 Sequence [guard, abort LowerPriority]\n"
          "    2 Condition enemy_dist < 5\n"
          "    3 Action Attack\n"
          "  4 Action Patrol\n");
    test::in_both_modes(tree, [&](Run& r) {
        r.expect_ticks({"0:I 4:I 4:U"});
        r.agent.blackboard().set("enemy_dist", 5.0f);  // not below 5: Patrol goes on
        r.expect_ticks({"4:U"});
        r.agent.blackboard().set("enemy_dist", 4.75f);  // crosses: Attack preempts Patrol
        r.expect_ticks({"4:T(Aborted) 1:I 3:I 3:U"});
        r.agent.blackboard().set("enemy_dist", 4.0f);  // still below: Attack goes on
        r.expect_ticks({"3:U"});
    });
}

TEST_CASE("compare: in event mode the guard wakes for a write of its key, and for nothing else") {
    const Tree tree = chase_tree();
    Run r(tree, Mode::Event);
    r.tick();
    const std::uint32_t before = r.agent.stats().guards_evaluated;
    r.agent.blackboard().set("noise", true);  // a key the comparison does not read
    r.tick();
    CHECK(r.agent.stats().guards_evaluated == before);
    r.agent.blackboard().set("enemy_dist", 9.0f);  // its key, still not below 5
    r.tick();
    CHECK(r.agent.stats().guards_evaluated == before + 1);
    CHECK(r.status(4) == Status::Running);
}

TEST_CASE("compare: a key compared with another key wakes the guard for either") {
    // 0 ActiveSelector, 1 Sequence (guard: 2), 2 ammo >= clip, 3 Fire, 4 Reload
    const Tree tree = TreeBuilder("reload").key<int>("ammo", 0).key<int>("clip", 6)
                          .active_selector()
                              .sequence()
                                  .condition(ge("ammo", KeyRef{"clip"}))
                                  .action("Fire", test::running_action())
                              .back()
                              .action("Reload", test::running_action())
                              .back()
                          .end();
    test::in_both_modes(tree, [&](Run& r) {
        r.expect_ticks({"0:I 4:I 4:U"});
        r.agent.blackboard().set("clip", 0);  // the right side moves: 0 >= 0
        r.expect_ticks({"4:T(Aborted) 1:I 3:I 3:U"});
    });
}

TEST_CASE("compare: BuildErrors name the node and the problem") {
    auto with = [](const Predicate& p) {
        return [p] {
            return TreeBuilder("t").key<float>("dist").key<int>("hp").key<bool>("seen")
                .sequence().condition(p).back().end();
        };
    };
    CHECK(build_error(with(lt("range", 5.0f))) ==
          "tree 't', node /Sequence/Condition 'range < 5'[0]: comparison 'range < 5' uses undeclared blackboard key 'range' (declare it with key<T>(\"range\"))");
    CHECK(build_error(with(lt("seen", 1))) ==
          "tree 't', node /Sequence/Condition 'seen < 1'[0]: comparison 'seen < 1' orders values, which only number keys (int, unsigned, long, long long, float or double) have; 'seen' is declared as bool: compare it with == or !=");
    CHECK(build_error(with(lt("dist", 0.1))) ==
          "tree 't', node /Sequence/Condition 'dist < 0.1'[0]: comparison 'dist < 0.1': the value is double and does not convert exactly to float, the type of key 'dist'");
    CHECK(build_error(with(lt("hp", 3.5))) ==
          "tree 't', node /Sequence/Condition 'hp < 3.5'[0]: comparison 'hp < 3.5': the value is double and does not convert exactly to int, the type of key 'hp'");
    CHECK(build_error(with(lt("dist", KeyRef{"hp"}))) ==
          "tree 't', node /Sequence/Condition 'dist < hp'[0]: comparison 'dist < hp' compares keys of different types: 'dist' is float, 'hp' is int (compare keys of one type)");
    CHECK(build_error(with(lt("dist", KeyRef{"range"}))) ==
          "tree 't', node /Sequence/Condition 'dist < range'[0]: comparison 'dist < range' uses undeclared blackboard key 'range' (declare it with key<T>(\"range\"))");
    CHECK(build_error([] { return TreeBuilder("t").key<unsigned>("n").condition(gt("n", -1)).end(); }) ==
          "tree 't', node /Condition 'n > -1': comparison 'n > -1': the value is int and does not convert exactly to unsigned, the "
          "type of key 'n'");
    // A literal that converts exactly is fine: 0.5 is a float.
    CHECK(build_error(with(lt("dist", 0.5))) == "");
}

TEST_CASE("compare: a comparison is one operand of the predicate limits") {
    Predicate p = lt("x", 1);
    for (std::uint32_t i = 1; i < limits::kMaxPredicateOperands; ++i) p = p || lt("x", static_cast<int>(i) + 1);
    CHECK(build_error([&] { return TreeBuilder("t").key<int>("x").condition(p).end(); }) == "");
    CHECK(build_error([&] { return p || lt("x", 0); }) ==
          "predicate has too many operands: '||' would give it 257 (at most 256)");
}

TEST_CASE("compare: an inlined subtree's comparison reads the keys it is remapped to") {
    const Tree near = TreeBuilder("near").key<float>("dist").key<float>("reach", 2.0f)
                          .sequence().condition(le("dist", KeyRef{"reach"})).action("Hit", test::running_action()).back()
                          .end();
    // 0 ActiveSelector, 1 near (guard: 2), 2 enemy_dist <= reach, 3 Hit, 4 Patrol
    const Tree tree = TreeBuilder("outer").key<float>("enemy_dist", 9.0f)
                          .active_selector()
                              .subtree(near, {{"dist", "enemy_dist"}})
                              .action("Patrol", test::running_action())
                          .back()
                          .end();
    CHECK(tree.describe() ==
          "0 ActiveSelector [children abort LowerPriority]\n"
          "  1 Sequence near [guard, abort LowerPriority]\n"
          "    2 Condition enemy_dist <= near#0.reach\n"  // reach stays private to this use
          "    3 Action Hit\n"
          "  4 Action Patrol\n");
    test::in_both_modes(tree, [&](Run& r) {
        r.expect_ticks({"0:I 4:I 4:U"});
        r.agent.blackboard().set("enemy_dist", 2.0f);
        r.expect_ticks({"4:T(Aborted) 1:I 3:I 3:U"});
    });
}
