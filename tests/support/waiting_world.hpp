// The waiting world of the World tests: sentries that sit in a long Wait while a squad-wide guard
// reads two shared keys, "noise" and "never". Writing noise wakes every sentry's live guard, which
// stays false (never is never set), so each sentry goes back to its Wait. Test code only.
#pragma once

#include "support/trace_recorder.hpp"

namespace ebt::test {

/// Creates the shared blackboard "squad" in `world` with the bool keys noise and never.
inline SharedBlackboard& create_sentry_squad(World& world) {
    SharedBlackboard& squad = world.create_shared("squad");
    squad.declare<bool>("noise").declare<bool>("never");
    return squad;
}

/// 0 ActiveSelector, 1 Sequence [squad.noise && squad.never, LowerPriority], 2 Alarm (running),
/// 3 Wait(`wait`). Spawn it with `.shared = {{"squad", &squad}}`.
inline Tree sentry_tree(Duration wait) {
    return TreeBuilder("sentry")
        .shared_key<bool>("squad", "noise")
        .shared_key<bool>("squad", "never")
        .active_selector()
            .sequence()
                .precondition(Predicate::is("squad.noise") && Predicate::is("squad.never"))
                .abort(AbortMode::LowerPriority)
                .action("Alarm", running_action())
            .back()
            .wait(wait)
        .back()
        .end();
}

}  // namespace ebt::test
