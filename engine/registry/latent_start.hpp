// LatentStart: the onInitialize that Registry::add_latent_action gives a latent action.
//
// It suspends the run and calls the action's start with the suspension's handle. It has a type of
// its own (not a lambda's) so that the tree compiler can recognise it inside the spec's
// std::function (std::function::target) and record it in the node's ActionCall: the engine then
// calls `start` itself, with the suspension made in place (Runtime::enter), instead of calling the
// std::function that calls this that calls `start` (docs/benchmarks.md, "A move through a World,
// fourth pass"). A spec whose on_initialize is anything else (a copy of a latent spec with its
// onInitialize wrapped, as a recorder wraps it) is not recognised and runs as any other action.
#pragma once

#include <ebt/registry.hpp>

#include <functional>

namespace ebt::detail {

struct LatentStart {
    std::function<void(ActionContext&, const ResumeHandle&)> start;
    /// The general path's call (a spec the compiler did not record, or a call outside a tick).
    void operator()(ActionContext& ctx) const { start(ctx, ctx.suspend()); }
};

}  // namespace ebt::detail
