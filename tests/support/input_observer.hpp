// A WorldInputObserver that hears everything and does nothing: tests that need one or two of its
// calls (a throw from after_publish, a count of on_step_end) derive from it and override only those.
#pragma once

#include <ebt/world.hpp>

namespace ebt::test {

struct SilentInputObserver : WorldInputObserver {
    void on_step(Duration) override {}
    void on_publish() override {}
    void on_step_end(const FrameMetrics&) override {}
    void on_spawn(AgentHandle, const Tree&, const SpawnOptions&) override {}
    void on_despawn(AgentHandle) override {}
    void on_resume(const ResumeHandle&, Status, bool) override {}
    void on_abort(AgentHandle) override {}
    void on_tick_interval(AgentHandle, std::uint32_t) override {}
    void on_agent_budget(std::uint32_t) override {}
    void on_create_shared(SharedBlackboard&) override {}
};

}  // namespace ebt::test
