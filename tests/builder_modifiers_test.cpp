// Builder modifiers (label, precondition, abort): which node they apply to (the node added last, or
// the one back() just closed), the same modifiers given as NodeOptions when a node is opened, and
// the abort modes refused at once where they cannot mean anything.
#include <ebt/detail/builder_access.hpp>
#include <ebt/ebt.hpp>

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace ebt;
using namespace std::chrono_literals;

namespace {

Status keep_running(ActionContext&) { return Status::Running; }

Registry make_registry() {
    Registry reg;
    reg.add_action("Attack", keep_running);
    reg.add_action("Patrol", keep_running);
    return reg;
}

/// The lifecycle events of one tick, formatted ("0 1:I", "0 2:U(Running)", ...).
class Lifecycle : public TraceListener {
public:
    void on_event(const TraceEvent& e) override {
        if (e.is_lifecycle()) events.push_back(format(e));
    }
    std::vector<std::string> take() { return std::exchange(events, {}); }
    std::vector<std::string> events;
};

std::string build_error(TreeBuilder& b, TreeBuilder& (*step)(TreeBuilder&)) {
    try {
        step(b);
    } catch (const BuildError& e) {
        return e.what();
    }
    return "(no error)";
}

}  // namespace

TEST_CASE("modifiers: after back() they apply to the node back() closed") {
    const Registry reg = make_registry();
    const Tree tree = TreeBuilder("guard", reg)
                          .key<bool>("enemy_seen")
                          .active_selector()
                              .sequence().check("enemy_seen").action("Attack").back()
                                  .label("engage").abort(AbortMode::Both)
                              .action("Patrol")
                          .back().label("root")
                          .end();
    CHECK(tree.path(1) == "/ActiveSelector 'root'/Sequence 'engage'[0]");
    CHECK(tree.abort_mode(tree.find("engage").index()) == AbortMode::Both);
    CHECK(tree.label(3) == "Attack");
    CHECK(tree.describe() ==
          "0 ActiveSelector root [children abort LowerPriority]\n"
          "  1 Sequence engage [guard, abort Both]\n"
          "    2 Condition enemy_seen\n"
          "    3 Action Attack\n"
          "  4 Action Patrol\n");
}

TEST_CASE("modifiers: given as NodeOptions when the node is opened") {
    const Registry reg = make_registry();
    const Tree with_options = TreeBuilder("guard", reg)
                                  .key<bool>("enemy_seen").key<bool>("awake")
                                  .active_selector({.label = "root"})
                                      .sequence({.label = "engage", .precondition = Predicate::is("awake"),
                                                 .abort = AbortMode::Both})
                                          .check("enemy_seen").action("Attack")
                                      .back()
                                      .action("Patrol")
                                  .back()
                                  .end();
    const Tree with_modifiers = TreeBuilder("guard", reg)
                                    .key<bool>("enemy_seen").key<bool>("awake")
                                    .active_selector().label("root")
                                        .sequence().check("enemy_seen").action("Attack").back()
                                            .label("engage").precondition(Predicate::is("awake")).abort(AbortMode::Both)
                                        .action("Patrol")
                                    .back()
                                    .end();
    CHECK(with_options.describe() == with_modifiers.describe());
    CHECK(with_options.describe() ==
          "0 ActiveSelector root [children abort LowerPriority]\n"
          "  1 Sequence engage [guard, abort Both]\n"
          "    2 Condition enemy_seen\n"
          "    3 Action Attack\n"
          "  4 Action Patrol\n");
    // Every opener takes them, decorators and the BehaviorTree.CPP aliases included.
    const Tree decorated = TreeBuilder("d", reg)
                               .fallback({.label = "top"})
                                   .repeat(2, {.label = "twice"}).action("Attack").back()
                                   .timeout(1s, {.label = "bounded"}).action("Patrol").back()
                               .back()
                               .end();
    CHECK(decorated.find("twice").index() == 1);
    CHECK(decorated.find("top/bounded/Patrol").index() == 4);
}

TEST_CASE("modifiers: an abort mode given as an option changes the run, in both modes") {
    const Registry reg = make_registry();
    // With the option, the engage branch aborts itself when enemy_seen turns false (Both); without
    // it, a child of an ActiveSelector only preempts lower priorities (LowerPriority), and keeps running.
    auto build = [&](NodeOptions engage) {
        return TreeBuilder("guard", reg)
            .key<bool>("enemy_seen")
            .active_selector()
                .sequence(engage).check("enemy_seen").action("Attack").back()
                .action("Patrol")
            .back()
            .end();
    };
    const Tree both = build({.abort = AbortMode::Both});
    const Tree lower = build({});
    CHECK(both.abort_mode(1) == AbortMode::Both);
    CHECK(lower.abort_mode(1) == AbortMode::LowerPriority);
    for (Mode mode : {Mode::Polling, Mode::Event}) {
        CAPTURE(std::string(to_string(mode)));
        Lifecycle trace;
        Agent a(both, {.mode = mode, .listener = &trace});
        a.blackboard().set("enemy_seen", true);
        a.tick(50ms);
        CHECK(trace.take() == std::vector<std::string>{"0 0:I", "0 1:I", "0 3:I", "0 3:U(Running)"});
        a.blackboard().set("enemy_seen", false);
        a.tick(50ms);
        // The branch cut by its own guard fails (docs/semantics.md); the selector goes on to Patrol.
        CHECK(trace.take() == std::vector<std::string>{"1 3:T(Aborted)", "1 1:T(Failure)", "1 4:I", "1 4:U(Running)"});

        Agent b(lower, {.mode = mode, .listener = &trace});
        b.blackboard().set("enemy_seen", true);
        b.tick(50ms);
        CHECK(trace.take() == std::vector<std::string>{"0 0:I", "0 1:I", "0 3:I", "0 3:U(Running)"});
        b.blackboard().set("enemy_seen", false);
        b.tick(50ms);
        CHECK(trace.take() == std::vector<std::string>{"1 3:U(Running)"});
    }
}

TEST_CASE("modifiers: an abort mode that cannot mean anything is refused at once, with the node's path") {
    const Registry reg = make_registry();
    SUBCASE("after a leaf it is the leaf's: LowerPriority under a Sequence") {
        TreeBuilder b("t", reg);
        b.key<bool>("a").active_selector().sequence().check("a").action("Attack");
        // Meant for the Sequence, but written before its back(): refused before anything else is added.
        CHECK(build_error(b, [](TreeBuilder& t) -> TreeBuilder& { return t.abort(AbortMode::Both); }) ==
              "tree 't', node /ActiveSelector/Sequence[0]/Action 'Attack'[1]: abort mode Both needs lower-priority "
              "siblings, but the parent is Sequence");
        CHECK(detail::BuilderAccess::last_error(b).node == 3);
    }
    SUBCASE("on a condition") {
        TreeBuilder b("t", reg);
        b.key<bool>("a").active_selector().sequence().check("a");
        CHECK(build_error(b, [](TreeBuilder& t) -> TreeBuilder& { return t.abort(AbortMode::Self); }) ==
              "tree 't', node /ActiveSelector/Sequence[0]/Condition 'a'[0]: an abort mode on a condition node has no "
              "effect; set it on the node the condition guards");
    }
    SUBCASE("LowerPriority on the root") {
        TreeBuilder b("t", reg);
        b.key<bool>("a").sequence();
        CHECK(build_error(b, [](TreeBuilder& t) -> TreeBuilder& { return t.abort(AbortMode::LowerPriority); }) ==
              "tree 't', node /Sequence: abort mode LowerPriority needs lower-priority siblings, but the parent is none "
              "(this is the root)");
    }
    SUBCASE("given as an option") {
        TreeBuilder b("t", reg);
        b.key<bool>("a").parallel(Policy::RequireAll, Policy::RequireOne).action("Patrol");
        CHECK(build_error(b, [](TreeBuilder& t) -> TreeBuilder& {
                  return t.sequence({.label = "engage", .abort = AbortMode::LowerPriority});
              }) == "tree 't', node /Parallel/Sequence 'engage'[1]: abort mode LowerPriority needs lower-priority "
                    "siblings, but the parent is Parallel");
    }
    SUBCASE("Self on a node that ends up without a guard: refused by end()") {
        TreeBuilder b("t", reg);
        b.key<bool>("a").selector().sequence({.abort = AbortMode::Self}).action("Attack").back().action("Patrol").back();
        CHECK(build_error(b, [](TreeBuilder& t) -> TreeBuilder& {
                  (void)t.end();
                  return t;
              }) == "tree 't', node /Selector/Sequence[0]: abort mode Self on a node without a guard (give it a "
                    "precondition or leading conditions)");
    }
}
