// The registry the XML fuzzer loads against (also used by tests/xml_save_test.cpp to check that every
// seed in fuzz/corpus/ loads). Its actions and conditions cover every port type and direction the
// loader handles, port defaults and parameter rules (range, one_of, required); Patrol, Attack and
// Runaway match the guard scenario's, so samples/guard.xml is a valid seed.
#pragma once

#include <ebt/ebt.hpp>

namespace ebt::fuzz {

inline Registry registry() {
    Registry reg;
    auto running = [](ActionContext&) { return Status::Running; };
    auto success = [](ActionContext&) { return Status::Success; };
    reg.add_action("Patrol", running);
    reg.add_action("Attack", running);
    reg.add_action("Runaway", [](ActionContext& ctx) { return ctx.in<bool>(0) ? Status::Running : Status::Success; },
                   {port<bool>("health_low")});
    reg.add_action("Strike", success, {input_port<int>("target")});
    reg.add_action("Fail", [](ActionContext&) { return Status::Failure; });
    reg.add_action("Shoot",
                   [](ActionContext& ctx) {
                       ctx.out<int>(1, ctx.in<int>(1) + 1);
                       return ctx.in<float>(0) > 1.0f ? Status::Success : Status::Running;
                   },
                   {input_port<float>("range"), output_port<int>("shots")});
    reg.add_action("Heal", success,
                   {inout_port<double>("hp"), input_port<long long>("budget"), input_port<unsigned>("level"),
                    input_port<long>("code"), input_port<bool>("loud")});
    reg.add_condition("InRange", [](const ConditionContext& ctx) { return ctx.in<float>(0) < 5.0f; },
                      {input_port<float>("distance")});
    reg.add_condition("IsSet", [](const ConditionContext& ctx) { return ctx.in<bool>(0); }, {port<bool>("flag")});
    reg.add_condition("Never", [](const ConditionContext&) { return false; });
    // Port defaults: a key of the port's name ({=}), another key, a literal.
    reg.add_condition("IsSeeEnemy", [](const ConditionContext& ctx) { return ctx.in<bool>(0); },
                      {input_port<bool>("enemy_seen").default_key()});
    reg.add_action("Aim", success, {input_port<float>("distance").default_key("range"), input_port<int>("power").default_value(3)});
    // Parameters (docs/parameters.md): a range with a default, a set of strings, a required port.
    reg.add_action("Look", success,
                   {input_port<float>("sight").describe("how far the guard sees").range(0, 50).default_value(10.f),
                    input_port<std::string>("mode").describe("what the guard does").one_of({"patrol", "guard"}).default_value("patrol"),
                    input_port<int>("burst").describe("bullets per burst").range(1, 5).required()});
    return reg;
}

}  // namespace ebt::fuzz
