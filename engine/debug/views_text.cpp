// The text views: definition_text and agent_text (<ebt/debug/views.hpp>).
#include "debug/tree_walk.hpp"

#include <ebt/debug/views.hpp>
#include <ebt/detail/engine_access.hpp>

namespace ebt::debug {

namespace {

/// The blackboard section: one line per key (private constants are shown at their ports).
std::string blackboard_lines(const BlackboardSchema& schema, const std::byte* values) {
    std::string out = "blackboard:\n";
    bool any = false;
    for (KeyId k = 0; k < schema.size(); ++k) {
        if (walk::is_private_constant(schema, k)) continue;
        out += "  " + walk::key_text(schema, k, values) + "\n";
        any = true;
    }
    if (!any) out += "  (no keys)\n";
    return out;
}

/// A node's line without indentation: its heading, then its parameters, guard, ports and condition,
/// each after "; " ("5 Wait; 2 s", "1 Sequence [guard, abort LowerPriority]; guard enemy_seen").
std::string node_line(const detail::TreeData& t, NodeIndex n) {
    std::string out = walk::heading(t, n);
    if (const std::string p = walk::parameters(t, n); !p.empty()) out += "; " + p;
    if (const std::string g = walk::guard_text(t, n); !g.empty()) out += "; guard " + g;
    if (const std::string c = walk::condition_text(t, n); !c.empty()) out += "; is " + c;
    const std::vector<walk::PortText> ports = walk::ports(t, n);
    for (std::size_t i = 0; i < ports.size(); ++i)
        out += (i == 0 ? "; ports " : ", ") + ports[i].port + "=" + ports[i].binding;
    return out;
}

std::string indent(const detail::TreeData& t, NodeIndex n) {
    return std::string(static_cast<std::size_t>(walk::depth(t, n)) * 2, ' ');
}

}  // namespace

std::string definition_text(const Tree& tree) {
    const detail::TreeData& t = walk::definition(tree, "definition_text()");
    std::string out = "tree '" + t.name + "', " + std::to_string(t.nodes.size()) + (t.nodes.size() == 1 ? " node\n" : " nodes\n");
    out += blackboard_lines(t.schema, t.schema.defaults());
    out += "nodes:\n";
    for (NodeIndex n = 0; n < t.nodes.size(); ++n) out += "  " + indent(t, n) + node_line(t, n) + "\n";
    return out;
}

std::string agent_text(const Agent& agent) {
    const detail::TreeData& t = walk::definition(agent.tree(), "agent_text()");
    std::string out = "agent of tree '" + t.name + "', tick " + std::to_string(agent.ticks()) + ", clock " +
                      (agent.now() == 0 ? std::string("0 s") : walk::duration_text(agent.now())) + "\n";
    out += blackboard_lines(t.schema, detail::EngineAccess::raw_values(agent.blackboard()));
    out += "nodes:\n";
    for (NodeIndex n = 0; n < t.nodes.size(); ++n) {
        const walk::NodeState s = walk::state(agent, n);
        std::string status = walk::status_text(s.status);
        status.resize(8, ' ');
        out += "  " + status + indent(t, n) + node_line(t, n);
        if (const std::string d = walk::state_details(t, n, s); !d.empty()) out += " -- " + d;
        out += "\n";
    }
    return out;
}

}  // namespace ebt::debug
