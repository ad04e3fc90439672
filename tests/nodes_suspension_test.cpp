// Node contract tests (docs/semantics.md): suspension and resume. Each case runs in both modes
// (support/both_modes.hpp) and asserts exact per-tick lifecycle traces and statuses. Node indices in
// the comments are pre-order (root = 0). Every agent ticks by 100 ms unless a test says otherwise;
// the first tick brings the clock to 100 ms.
#include "support/both_modes.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <vector>

using namespace ebt;
using namespace std::chrono_literals;
using test::Run;

constexpr Status kS = Status::Success;
constexpr Status kF = Status::Failure;

TEST_CASE("Suspension: no updates while suspended; a resume between ticks ends it next tick without update") {
    test::in_both_modes([&](Mode mode) {
        for (Status given : {kS, kF}) {
            CAPTURE(std::string(to_string(given)));
            ResumeHandle handle;
            // 0 Sequence, 1 Suspend, 2 AlwaysSuccess
            const Tree tree = TreeBuilder("suspend").sequence().action("Suspend", test::suspending_action(handle)).always_success().back().end();
            Run r(tree, mode);
            r.tick();
            r.tick();
            CHECK(r.rec.tick(0) == "0:I 1:I 1:U");
            CHECK(r.rec.tick(1) == "");
            CHECK(r.status(1) == Status::Running);
            REQUIRE(handle.valid());
            CHECK(r.agent.resume(handle, given));
            CHECK_FALSE(r.agent.resume(handle, given));  // already resumed
            CHECK(r.rec.tick(2) == "");                  // nothing happens before the tick
            r.tick();
            if (given == kS) CHECK(r.rec.tick(2) == "1:T(Success) 2:I 2:U 2:T(Success) 0:T(Success)");
            else CHECK(r.rec.tick(2) == "1:T(Failure) 0:T(Failure)");
            CHECK(r.agent.stats().updates == (given == kS ? 2u : 1u));
            CHECK_FALSE(r.agent.resume(handle, given));  // the run has ended
        }
    });
}

TEST_CASE("Suspension: suspending in onInitialize means no update at all") {
    test::in_both_modes([&](Mode mode) {
        ResumeHandle handle;
        int updates = 0;
        ActionSpec spec;
        spec.on_initialize = [&](ActionContext& ctx) { handle = ctx.suspend(); };
        spec.update = [&](ActionContext&) {
            ++updates;
            return Status::Running;
        };
        const Tree tree = TreeBuilder("suspend").sequence().action("Suspend", spec).back().end();
        Run r(tree, mode);
        r.expect_ticks({"0:I 1:I", ""});
        CHECK(r.agent.resume(handle, kS));
        r.expect_ticks({"1:T(Success) 0:T(Success)"});
        CHECK(updates == 0);
    });
}

TEST_CASE("Suspension: a stale handle (aborted run, older run, other agent) is refused and changes nothing") {
    test::in_both_modes([&](Mode mode) {
        ResumeHandle handle;
        const Tree tree = TreeBuilder("suspend").sequence().action("Suspend", test::suspending_action(handle)).back().end();
        Run r(tree, mode);
        Run other(tree, mode);
        r.tick();
        const ResumeHandle first = handle;
        const std::size_t m = r.mark();
        r.agent.abort();
        CHECK(r.since(m) == "1:T(Aborted) 0:T(Aborted)");
        CHECK_FALSE(r.agent.resume(first, kS));  // aborted run
        r.tick();                                // the tree starts afresh; a new suspension
        CHECK(r.since(m) == "1:T(Aborted) 0:T(Aborted) 0:I 1:I 1:U");
        CHECK_FALSE(r.agent.resume(first, kS));  // an older run of the same node
        CHECK_FALSE(other.agent.resume(handle, kS));  // another agent
        CHECK_THROWS_AS(r.agent.resume(handle, Status::Running), UsageError);
        r.tick();
        CHECK(r.rec.tick(2) == "");  // nothing changed
        CHECK(r.agent.resume(handle, kF));
        r.tick();
        CHECK(r.rec.tick(3) == "1:T(Failure) 0:T(Failure)");
    });
}

TEST_CASE("Suspension: resumed from inside a tick, a node the walk has not passed ends this tick") {
    test::in_both_modes([&](Mode mode) {
        ResumeHandle handle;
        bool accepted = false;
        ActionSpec resumer;
        resumer.update = [&](ActionContext& ctx) {
            if (ctx.tick() != 1) return Status::Running;
            accepted = ctx.agent().resume(handle, kS);
            return kS;
        };
        // 0 Parallel(RequireAll, RequireOne), 1 Resumer, 2 Suspend
        const Tree tree = TreeBuilder("resume")
                              .parallel(Policy::RequireAll, Policy::RequireOne)
                                  .action("Resumer", resumer)
                                  .action("Suspend", test::suspending_action(handle))
                              .back()
                              .end();
        Run r(tree, mode);
        r.tick();
        CHECK(r.tick() == kS);
        CHECK(accepted);
        CHECK(r.rec.tick(0) == "0:I 1:I 1:U 2:I 2:U");
        CHECK(r.rec.tick(1) == "1:U 1:T(Success) 2:T(Success) 0:T(Success)");
    });
}

TEST_CASE("Suspension: resumed from inside a tick, a node the walk has passed ends next tick") {
    test::in_both_modes([&](Mode mode) {
        ResumeHandle handle;
        bool accepted = false;
        ActionSpec resumer;
        resumer.update = [&](ActionContext& ctx) {
            if (ctx.tick() == 1) accepted = ctx.agent().resume(handle, kS);
            return Status::Running;
        };
        // 0 Parallel(RequireOne, RequireAll), 1 Suspend, 2 Resumer (running)
        const Tree tree = TreeBuilder("resume")
                              .parallel(Policy::RequireOne, Policy::RequireAll)
                                  .action("Suspend", test::suspending_action(handle))
                                  .action("Resumer", resumer)
                              .back()
                              .end();
        Run r(tree, mode);
        r.tick();
        CHECK(r.tick() == Status::Running);
        CHECK(accepted);
        CHECK(r.tick() == kS);
        CHECK(r.rec.tick(0) == "0:I 1:I 1:U 2:I 2:U");
        CHECK(r.rec.tick(1) == "2:U");
        CHECK(r.rec.tick(2) == "1:T(Success) 2:T(Aborted) 0:T(Success)");
    });
}
