// The mover tree of the resume tests: ActiveSelector(Sequence(check(alarm), Shout), Move), with Move a
// latent action that keeps each agent's latest move handle by the agent's seed, and Shout an action
// that runs for ever. An agent sleeps in its move until the move is resumed or "alarm" is written
// true. Test code only.
#pragma once

#include <ebt/ebt.hpp>

#include <vector>

namespace ebt::test {

/// Registers Move and Shout in `registry` and builds the mover tree. Move stores its handle in
/// `moves[seed]`: spawn each agent with a seed below moves.size(). `registry` and `moves` must outlive
/// the tree's agents.
inline Tree mover_tree(Registry& registry, std::vector<ResumeHandle>& moves) {
    registry.add_latent_action("Move", [&moves](ActionContext& ctx, const ResumeHandle& move) { moves.at(ctx.agent().seed()) = move; });
    registry.add_action("Shout", [](ActionContext&) { return Status::Running; });
    return TreeBuilder("mover", registry)
        .key<bool>("alarm")
        .active_selector()
            .sequence()
                .check("alarm")
                .action("Shout")
            .back()
            .action("Move")
        .back()
        .end();
}

}  // namespace ebt::test
