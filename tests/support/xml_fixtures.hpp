// Shared by the XML test files (tests/xml_*_test.cpp): the registries their trees use, documents
// around a tree body, the exact load error of a text, and the comparison of two trees (listing, keys,
// traces in both modes). Header-only; each test file includes it and says
// `using namespace ebt::test::xml_fixtures;`.
#pragma once

#include "support/trace_recorder.hpp"

#include <ebt/detail/builder_access.hpp>
#include <ebt/xml.hpp>

#include "support/tree_data.hpp"

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace ebt::test::xml_fixtures {
using test::data_of;

using namespace std::chrono_literals;

inline const std::filesystem::path kSource = EBT_SOURCE_DIR;
inline const std::filesystem::path kData = kSource / "tests" / "data" / "xml";

// Actions and conditions with ports of several types and directions.
inline Registry make_registry() {
    Registry reg;
    reg.add_action("Patrol", test::running_action());
    ActionSpec attack = test::running_action();
    attack.ports = {input_port<int>("target")};
    reg.add_action("Attack", attack);
    ActionSpec shoot = test::finishing_action(2, Status::Success);
    shoot.ports = {input_port<float>("range"), output_port<int>("shots")};
    auto update = shoot.update;
    shoot.update = [update](ActionContext& ctx) {
        ctx.out<int>(1, ctx.in<int>(1) + 1);
        return update(ctx);
    };
    reg.add_action("Shoot", shoot);
    reg.add_action("Fail", test::finishing_action(1, Status::Failure));
    reg.add_action("Succeed", test::finishing_action(1, Status::Success));
    reg.add_action("Work2", test::finishing_action(2, Status::Success));
    ActionSpec heal = test::finishing_action(3, Status::Success);
    heal.ports = {inout_port<double>("hp"), input_port<long long>("budget"), input_port<unsigned>("level"),
                  input_port<long>("code"), input_port<bool>("loud")};
    reg.add_action("Heal", heal);
    reg.add_condition(
        "InRange", [](const ConditionContext& ctx) { return ctx.in<float>(0) < 5.0f; }, {input_port<float>("distance")});
    reg.add_condition(
        "IsSet", [](const ConditionContext& ctx) { return ctx.in<bool>(0); }, {port<bool>("flag")});
    reg.add_condition("Never", [](const ConditionContext&) { return false; });
    return reg;
}

inline std::string slurp(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// A whole document around one tree body.
inline std::string doc(const std::string& body, const std::string& id = "T") {
    return "<root BTCPP_format=\"4\">\n<BehaviorTree ID=\"" + id + "\">\n" + body + "\n</BehaviorTree>\n</root>\n";
}

// The load error for `text` (named "t.xml"); "" when it loads.
inline std::string load_error(const Registry& reg, const std::string& text) {
    try {
        (void)xml::Loader(reg).load_string(text, "t.xml");
    } catch (const xml::LoadError& e) {
        return e.what();
    }
    return "";
}

using Script = std::function<void(Agent&, int)>;

// The lifecycle trace of `ticks` ticks of 10 ms, with `script` run before each tick.
inline std::vector<std::string> trace(const Tree& tree, Mode mode, int ticks, const Script& script = {}, std::uint64_t seed = 7) {
    TraceRecorder rec;
    Agent agent(tree, {.mode = mode, .seed = seed, .listener = &rec});
    for (int i = 0; i < ticks; ++i) {
        if (script) script(agent, i);
        agent.tick(10ms);
    }
    return rec.lifecycle();
}

// Same definition: listing, keys (names, types, initial values), and traces in both modes.
inline void check_same(const Tree& a, const Tree& b, int ticks, const Script& script = {}) {
    CHECK(a.describe() == b.describe());
    CHECK(a.name() == b.name());
    REQUIRE(a.schema().size() == b.schema().size());
    for (const auto& k : a.schema().keys()) {
        CAPTURE(k.name);
        const KeyId id = b.schema().find(k.name);
        REQUIRE(id != kNoKey);
        const KeyInfo& other = b.schema().info(id);
        CHECK(other.type == k.type);
        CHECK(other.scope == k.scope);
        CHECK(std::memcmp(a.schema().defaults() + k.offset, b.schema().defaults() + other.offset, k.type->size) == 0);
    }
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        for (std::uint64_t seed : {1u, 2u, 3u}) CHECK(trace(a, mode, ticks, script, seed) == trace(b, mode, ticks, script, seed));
    }
}

// Nodes whose ports have defaults: a key of the same name ({=}), another key, a literal.
inline Registry defaults_registry() {
    Registry reg = make_registry();
    reg.add_condition(
        "IsSeeEnemy", [](const ConditionContext& c) { return c.in<bool>(0); }, {input_port<bool>("enemy_seen").default_key()});
    reg.add_condition(
        "Near", [](const ConditionContext& c) { return c.in<float>(0) < 5.0f; }, {input_port<float>("distance").default_key("dist")});
    ActionSpec aim = test::finishing_action(2, Status::Success);
    aim.ports = {input_port<int>("power").default_value(7), output_port<int>("hits").default_key()};
    reg.add_action("Aim", aim);
    return reg;
}

}  // namespace ebt::test::xml_fixtures
