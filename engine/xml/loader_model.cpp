// The XML loader's <TreeNodesModel>: reads the entries of a document's model, keeps the SubTree
// entries (their port defaults apply where the subtree is used), and checks the entries of
// registered actions and conditions against the registry (category, ports, types, defaults).
#include "xml/loader_session.hpp"

#include <algorithm>
#include <set>

namespace ebt::xml::detail {

// A registered port default as XML writes it: "{=}", "{key}" or the literal.
std::string port_default_text(const PortSpec& p) {
    switch (p.fallback.kind) {
    case PortDefault::Kind::Key: return p.fallback.key == p.name ? "{=}" : "{" + p.fallback.key + "}";
    case PortDefault::Kind::Value: return p.fallback.text;
    case PortDefault::Kind::None: break;
    }
    return {};
}

namespace {

// Whether a model's default="..." for port `p` means the registered default: the same key ({=} is
// the port's name) or a literal of the same value.
bool same_default(const PortSpec& p, std::string_view text) {
    const PortDefault& d = p.fallback;
    const bool key = text.size() >= 2 && text.front() == '{' && text.back() == '}';
    if (d.kind == PortDefault::Kind::Key) {
        if (!key) return false;
        const std::string_view name = text.substr(1, text.size() - 2);
        return name == "=" ? d.key == p.name : name == d.key;
    }
    if (d.kind == PortDefault::Kind::Value) {
        if (key) return false;
        Value value(p.type);
        return parse_value(p.type, text, value.data()) && value == d.value;
    }
    return false;
}

// Whether a model's ebt_min / ebt_max (`text`) is the registered bound `bound` (compared by value).
bool same_bound(const PortSpec& p, const Value& bound, std::string_view text) {
    if (!bound.type()) return false;
    Value value(p.type);
    return parse_value(p.type, text, value.data()) && value == bound;
}

// Whether a model's ebt_one_of list (`text`, ';'-separated) holds the registered values, in any order.
bool same_one_of(const PortSpec& p, std::string_view text) {
    std::vector<Value> listed;
    for (std::size_t start = 0;;) {
        const std::size_t end = std::min(text.find(';', start), text.size());
        Value value(p.type);
        if (!parse_value(p.type, text.substr(start, end - start), value.data())) return false;
        if (std::find(listed.begin(), listed.end(), value) == listed.end()) listed.push_back(std::move(value));
        if (end == text.size()) break;
        start = end + 1;
    }
    const std::vector<Value>& registered = p.allowed.one_of;
    if (listed.size() != registered.size()) return false;
    return std::all_of(listed.begin(), listed.end(),
                       [&](const Value& v) { return std::find(registered.begin(), registered.end(), v) != registered.end(); });
}

// What the registry says of `p`'s allowed values and required flag, as the model would write them.
std::string registered_rules(const PortSpec& p) {
    std::string s;
    const PortAllowed& a = p.allowed;
    if (a.min.type() && a.texts.size() == 2) s = "ebt_min=\"" + a.texts[0] + "\" ebt_max=\"" + a.texts[1] + "\"";
    else if (!a.one_of.empty()) {
        std::string list;
        for (const auto& t : a.texts) list += (list.empty() ? "" : ";") + t;
        s = "ebt_one_of=\"" + list + "\"";
    }
    if (p.must_be_given) s += std::string(s.empty() ? "" : " ") + "ebt_required=\"true\"";
    return s.empty() ? "no range, set or required flag" : s;
}

// Whether the ebt_* attributes a model gives port `p` (those present) agree with the registry.
bool same_rules(const PortSpec& p, const ModelPort& port) {
    const PortAllowed& a = p.allowed;
    if (port.min && !same_bound(p, a.min, *port.min)) return false;
    if (port.max && !same_bound(p, a.max, *port.max)) return false;
    if (port.one_of && (a.one_of.empty() || !same_one_of(p, *port.one_of))) return false;
    if (port.required && (*port.required == "true") != p.must_be_given) return false;
    return true;
}

}  // namespace

void Session::read_model(const Document& doc, const pugi::xml_node& model) {
    std::map<std::string, Site, std::less<>> seen;
    for (pugi::xml_node n : model.children()) {
        if (n.type() != pugi::node_element) continue;
        const std::string category = n.name();
        const Site site = element_site(doc, n);
        const std::string where_path = "TreeNodesModel/" + category;
        if (category != "Action" && category != "Condition" && category != "Control" && category != "Decorator" &&
            category != "SubTree")
            fail_at(site, "", "", "unexpected <" + category + "> in <TreeNodesModel> (expected Action, Condition, Control, Decorator or SubTree)");
        const std::string id = n.attribute("ID").value();
        if (id.empty()) fail_at(site, "", "", "<" + category + "> in <TreeNodesModel> needs an ID");
        if (auto [it, fresh] = seen.emplace(id, site); !fresh)
            fail_at(site, "", "", "duplicate ID '" + id + "' in <TreeNodesModel> (first at " + where(it->second) + ")");

        std::vector<ModelPort> ports;
        std::set<std::string> port_names;  // (a set: a model entry may list thousands of ports)
        for (pugi::xml_node p : n.children()) {
            if (p.type() != pugi::node_element) continue;
            const std::string kind = p.name();
            if (kind != "input_port" && kind != "output_port" && kind != "inout_port") continue;  // editor metadata
            ModelPort port;
            port.name = p.attribute("name").value();
            port.direction = kind;
            port.type = p.attribute("type").value();
            if (pugi::xml_attribute d = p.attribute("default")) port.default_value = d.value();
            if (pugi::xml_attribute a = p.attribute("ebt_min")) port.min = a.value();
            if (pugi::xml_attribute a = p.attribute("ebt_max")) port.max = a.value();
            if (pugi::xml_attribute a = p.attribute("ebt_one_of")) port.one_of = a.value();
            if (pugi::xml_attribute a = p.attribute("ebt_required")) port.required = a.value();
            port.site = element_site(doc, p);
            if (port.name.empty()) fail_at(port.site, "", "", "<" + kind + "> of '" + id + "' in <TreeNodesModel> needs a name");
            if (!port_names.insert(port.name).second)
                fail_at(port.site, "", "", "port '" + port.name + "' of '" + id + "' is listed twice in <TreeNodesModel>");
            ports.push_back(std::move(port));
        }

        if (category == "SubTree") {
            subtree_models_[id] = std::move(ports);
            continue;
        }
        // Registered nodes: the model must agree with the registry.
        if (category == "Action" || category == "Condition") model_ids_.emplace(id, site);
        const ActionSpec* action = reg_.find_action(id);
        const ConditionSpec* condition = reg_.find_condition(id);
        if (!action && !condition) continue;  // not ours: an editor palette entry
        if (category == "Action" && !action)
            fail_at(site, "", "", "<TreeNodesModel> declares '" + id + "' as an Action, but it is registered as a condition");
        if (category == "Condition" && !condition)
            fail_at(site, "", "", "<TreeNodesModel> declares '" + id + "' as a Condition, but it is registered as an action");
        if (category != "Action" && category != "Condition")
            fail_at(site, "", "", "<TreeNodesModel> declares '" + id + "' as a " + category + ", but it is a registered " +
                                      (action ? "action" : "condition"));
        const std::vector<PortSpec>& spec_ports = category == "Action" ? action->ports : condition->ports;
        for (const auto& port : ports) {
            auto it = std::find_if(spec_ports.begin(), spec_ports.end(), [&](const PortSpec& p) { return p.name == port.name; });
            if (it == spec_ports.end())
                fail_at(port.site, "", "", "<TreeNodesModel> lists port '" + port.name + "' of '" + id + "', which the registered " +
                                               (category == "Action" ? "action" : "condition") + " does not have");
            if (!port.type.empty() && port.type != it->type->name && port.type != xml_type_name(it->type))
                fail_at(port.site, "", "", "<TreeNodesModel> gives port '" + port.name + "' of '" + id + "' the type " + port.type +
                                               ", but it is registered as " + it->type->name);
            if (port.default_value && !same_default(*it, *port.default_value)) {
                const std::string registered = it->fallback.kind == PortDefault::Kind::None
                                                   ? "without a default"
                                                   : "with \"" + port_default_text(*it) + "\"";
                fail_at(port.site, "", "", "<TreeNodesModel> gives port '" + port.name + "' of '" + id + "' the default \"" +
                                               *port.default_value + "\", but it is registered " + registered);
            }
            // ebt's parameter rules, where the model gives them (a file from another tool has none).
            if (!same_rules(*it, port))
                fail_at(port.site, "", "", "<TreeNodesModel> gives port '" + port.name + "' of '" + id +
                                               "' other allowed values than the registry (registered: " + registered_rules(*it) + ")");
        }
    }
}

}  // namespace ebt::xml::detail
