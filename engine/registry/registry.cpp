// Registry of named actions and conditions.
#include <ebt/limits.hpp>
#include <ebt/registry.hpp>
#include <ebt/xml.hpp>

#include "xml/xml_internal.hpp"

namespace ebt {

namespace {
/// The end of the error for more than limits::kMaxPorts ports (node bindings count ports in 16 bits
/// and more would be cut silently): "70000 ports (at most 255)".
std::string too_many_ports(const std::vector<PortSpec>& ports) {
    return std::to_string(ports.size()) + " ports (at most " + std::to_string(limits::kMaxPorts) + ")";
}
}  // namespace

// A port default must be usable everywhere a port is bound: in code and in XML files (where a key
// default is written {key} and a value default as a literal, see docs/xml.md).
void detail::check_port_defaults(const std::string& what, std::vector<PortSpec>& ports, bool is_condition) {
    // Ports are found by name hash (ctx.in<T>("name")): names and hashes must be unique in a spec.
    for (std::size_t i = 0; i < ports.size(); ++i) {
        ports[i].name_hash = port_hash(ports[i].name);
        for (std::size_t j = 0; j < i; ++j) {
            if (ports[j].name == ports[i].name)
                throw BuildError(what + " declares port '" + ports[i].name + "' twice (ports " + std::to_string(j) +
                                 " and " + std::to_string(i) + ")");
            if (ports[j].name_hash == ports[i].name_hash)
                throw BuildError(what + ": ports '" + ports[j].name + "' and '" + ports[i].name +
                                 "' have the same name hash; rename one of them");
        }
    }
    for (auto& p : ports) {
        PortDefault& d = p.fallback;
        const std::string port = what + " port '" + p.name + "'";
        if (d.kind == PortDefault::Kind::Key) {
            if (!xml::detail::is_identifier(d.key))
                throw BuildError(port + " has the default key '" + d.key + "', which is not a valid key name");
        } else if (d.kind == PortDefault::Kind::Value) {
            if (!is_condition && p.direction == PortDirection::Out)
                throw BuildError(port + " is an output: its default must be a key (default_key), not a value");
            if (!p.type || d.type != p.type || d.value.type() != p.type)
                throw BuildError(port + " (" + (p.type ? p.type->name : "?") + ") has a default value of type " +
                                 (d.type ? d.type->name : "?"));
            if (!xml::has_literal_form(p.type))
                throw BuildError(port + " (" + p.type->name +
                                 ") has a default value of a type without a literal form (bool, int, unsigned, long, long long, "
                                 "float, double, std::string, an enum added with add_enum, a user type with format/parse): "
                                 "give it a default key instead");
            // The text must read back as the same value (not so for NaN or infinities).
            const std::optional<std::string> text = xml::format_value(p.type, d.value.data());
            Value back(p.type);
            if (!text || !xml::parse_value(p.type, *text, back.data()) || back != d.value)
                throw BuildError(port + " has a default value with no literal form (" + text.value_or("?") + ")");
            d.text = *text;
        }
    }
}

Registry& Registry::add_action(std::string name, ActionSpec spec) {
    if (name.empty()) throw BuildError("an action needs a name");
    if (!spec.update) throw BuildError("action '" + name + "' has no update function");
    if (spec.ports.size() > limits::kMaxPorts) throw BuildError("action '" + name + "' has " + too_many_ports(spec.ports));
    if (spec.memory_bytes > 64) throw BuildError("action '" + name + "' asks for more than 64 bytes of memory");
    if (actions_.count(name)) throw BuildError("action '" + name + "' is registered twice");
    detail::check_port_defaults("action '" + name + "'", spec.ports, false);
    actions_.emplace(std::move(name), std::move(spec));
    return *this;
}

Registry& Registry::add_condition(std::string name, ConditionSpec spec) {
    if (name.empty()) throw BuildError("a condition needs a name");
    if (!spec.evaluate) throw BuildError("condition '" + name + "' has no evaluate function");
    if (spec.ports.size() > limits::kMaxPorts) throw BuildError("condition '" + name + "' has " + too_many_ports(spec.ports));
    if (conditions_.count(name)) throw BuildError("condition '" + name + "' is registered twice");
    detail::check_port_defaults("condition '" + name + "'", spec.ports, true);
    conditions_.emplace(std::move(name), std::move(spec));
    return *this;
}

Registry& Registry::add_action(std::string name, std::function<Status(ActionContext&)> update, std::vector<PortSpec> ports) {
    ActionSpec spec;
    spec.update = std::move(update);
    spec.ports = std::move(ports);
    return add_action(std::move(name), std::move(spec));
}

Registry& Registry::add_latent_action(std::string name, LatentActionSpec latent) {
    if (!latent.start) throw BuildError("latent action '" + name + "' has no start function");
    ActionSpec spec;
    spec.on_initialize = [start = std::move(latent.start)](ActionContext& ctx) { start(ctx, ctx.suspend()); };
    // Never called while the run is suspended; a resume ends the run without an update.
    spec.update = [](ActionContext&) { return Status::Running; };
    spec.on_terminate = std::move(latent.on_terminate);
    spec.ports = std::move(latent.ports);
    spec.memory_bytes = latent.memory_bytes;
    return add_action(std::move(name), std::move(spec));
}

Registry& Registry::add_latent_action(std::string name, std::function<void(ActionContext&, const ResumeHandle&)> start,
                                      std::vector<PortSpec> ports) {
    LatentActionSpec spec;
    spec.start = std::move(start);
    spec.ports = std::move(ports);
    return add_latent_action(std::move(name), std::move(spec));
}

Registry& Registry::add_condition(std::string name, std::function<bool(const ConditionContext&)> evaluate,
                                  std::vector<PortSpec> ports) {
    ConditionSpec spec;
    spec.evaluate = std::move(evaluate);
    spec.ports = std::move(ports);
    return add_condition(std::move(name), std::move(spec));
}

const ActionSpec* Registry::find_action(std::string_view name) const {
    auto it = actions_.find(name);
    return it == actions_.end() ? nullptr : &it->second;
}

const ConditionSpec* Registry::find_condition(std::string_view name) const {
    auto it = conditions_.find(name);
    return it == conditions_.end() ? nullptr : &it->second;
}

std::vector<std::string> Registry::action_names() const {
    std::vector<std::string> v;
    for (auto& [k, _] : actions_) v.push_back(k);
    return v;
}

std::vector<std::string> Registry::condition_names() const {
    std::vector<std::string> v;
    for (auto& [k, _] : conditions_) v.push_back(k);
    return v;
}

}  // namespace ebt
