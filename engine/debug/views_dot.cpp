// The Graphviz views: definition_dot and agent_dot (<ebt/debug/views.hpp>).
//
// Every text that comes from the tree (names, labels, keys, values) goes through quoted(), so that a
// quote, a backslash or a line break in it cannot end a DOT string early or become a Graphviz escape
// ("\N", "\l"). Labels are plain quoted strings, never HTML-like ones, so '<' and '>' need nothing.
#include "debug/tree_walk.hpp"
#include "tree/builder_internal.hpp"

#include <ebt/debug/views.hpp>
#include <ebt/detail/engine_access.hpp>

#include <optional>

namespace ebt::debug {

namespace {

/// `text` as a DOT quoted string's contents: '"' and '\' escaped, a line break as "\n".
std::string escaped(const std::string& text) {
    std::string out;
    for (const char c : text) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            // dropped: a carriage return would only garble the label
        } else {
            out += c;
        }
    }
    return out;
}

/// Lines joined into one DOT quoted string, centred ("\n") or left-aligned ("\l" after each).
std::string quoted(const std::vector<std::string>& lines, bool left_aligned = false) {
    std::string out = "\"";
    for (std::size_t i = 0; i < lines.size(); ++i) {
        if (i > 0 && !left_aligned) out += "\\n";
        out += escaped(lines[i]);
        if (left_aligned) out += "\\l";
    }
    return out + "\"";
}
std::string quoted(const std::string& line) { return quoted(std::vector<std::string>{line}); }

const char* fill_colour(Status s) {
    switch (s) {
    case Status::Invalid: return "white";
    case Status::Running: return "#ffd966";
    case Status::Success: return "#b6d7a8";
    case Status::Failure: return "#ea9999";
    case Status::Aborted: return "#cccccc";
    }
    return "white";
}

/// The node's shape and style attributes by kind.
std::string shape(NodeKind k) {
    if (detail::is_composite(k)) return "shape=box, style=\"rounded,filled\"";
    if (detail::is_decorator(k)) return "shape=hexagon, style=filled";
    if (k == NodeKind::Action) return "shape=box, style=filled";
    if (k == NodeKind::Condition) return "shape=ellipse, style=filled";
    return "shape=octagon, style=filled";  // AlwaysSuccess, AlwaysFailure, Wait
}

/// The whole graph; `agent` null for a definition.
std::string graph(const detail::TreeData& t, const Agent* agent) {
    std::string out = "digraph " + quoted(t.name) + " {\n";
    std::string title = "tree '" + t.name + "'";
    if (agent)
        title += ", tick " + std::to_string(agent->ticks()) + ", clock " +
                 (agent->now() == 0 ? std::string("0 s") : walk::duration_text(agent->now()));
    out += "  graph [label=" + quoted(title) + ", labelloc=t, fontname=\"Helvetica\", fontsize=12];\n";
    out += "  node [fontname=\"Helvetica\", fontsize=10, fillcolor=white];\n";
    out += "  edge [fontname=\"Helvetica\", fontsize=9];\n";

    for (NodeIndex n = 0; n < t.nodes.size(); ++n) {
        const detail::NodeDef& d = t.nodes[n];
        std::vector<std::string> lines{std::to_string(n) + " " + to_string(d.kind)};
        if (!d.label.empty()) lines.push_back(d.label);
        if (const std::string p = walk::parameters(t, n); !p.empty()) lines.push_back(p);
        if (const std::string c = walk::condition_text(t, n); !c.empty()) lines.push_back("is " + c);
        for (const walk::PortText& p : walk::ports(t, n)) lines.push_back(p.port + "=" + p.binding);
        if (const AbortMode m = detail::default_child_abort(d.kind); m != AbortMode::None)
            lines.push_back(std::string("children abort ") + to_string(m));
        // The root's guard has no edge to sit on: it goes in its box.
        if (d.parent == kNoNode && d.guard != 0xFFFF)
            lines.push_back("guard " + walk::guard_text(t, n) + ", abort " + to_string(t.guards[d.guard].mode));
        std::string fill;
        if (agent) {
            const walk::NodeState s = walk::state(*agent, n);
            std::string status = walk::status_text(s.status);
            if (const std::string details = walk::state_details(t, n, s); !details.empty()) status += ": " + details;
            lines.push_back(status);
            fill = std::string(", fillcolor=\"") + fill_colour(s.status) + "\"";
        }
        out += "  n" + std::to_string(n) + " [label=" + quoted(lines) + ", " + shape(d.kind) + fill + "];\n";
    }
    for (NodeIndex n = 1; n < t.nodes.size(); ++n) {
        const detail::NodeDef& d = t.nodes[n];
        out += "  n" + std::to_string(d.parent) + " -> n" + std::to_string(n);
        if (d.guard != 0xFFFF)
            out += " [label=" +
                   quoted({"guard " + walk::guard_text(t, n), std::string("abort ") + to_string(t.guards[d.guard].mode)}) +
                   "]";
        out += ";\n";
    }

    // The blackboard: initial values for a definition, the agent's values for an agent.
    const std::byte* values = agent ? detail::EngineAccess::raw_values(agent->blackboard()) : t.schema.defaults();
    std::vector<std::string> keys{"blackboard"};
    for (KeyId k = 0; k < t.schema.size(); ++k)
        if (!walk::is_private_constant(t.schema, k)) keys.push_back(walk::key_text(t.schema, k, values));
    if (keys.size() == 1) keys.emplace_back("(no keys)");
    out += "  blackboard [label=" + quoted(keys, true) + ", shape=note];\n";

    if (agent) {
        out += "  subgraph cluster_legend {\n    label=\"status\";\n    fontname=\"Helvetica\";\n    fontsize=10;\n";
        const Status statuses[] = {Status::Invalid, Status::Running, Status::Success, Status::Failure, Status::Aborted};
        for (const Status s : statuses)
            out += std::string("    legend_") + walk::status_text(s) + " [label=\"" + walk::status_text(s) +
                   "\", shape=box, style=filled, fillcolor=\"" + fill_colour(s) + "\"];\n";
        // Invisible edges keep the legend in this order, left to right.
        out += "    legend_idle -> legend_Running -> legend_Success -> legend_Failure -> legend_Aborted [style=invis];\n";
        out += "    { rank=same; legend_idle; legend_Running; legend_Success; legend_Failure; legend_Aborted; }\n";
        out += "  }\n";
    }
    return out + "}\n";
}

}  // namespace

std::string definition_dot(const Tree& tree) { return graph(walk::definition(tree, "definition_dot()"), nullptr); }

std::string agent_dot(const Agent& agent) { return graph(walk::definition(agent.tree(), "agent_dot()"), &agent); }

}  // namespace ebt::debug
