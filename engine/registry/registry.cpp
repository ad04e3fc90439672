// Registry of named actions and conditions.
#include <ebt/limits.hpp>
#include <ebt/registry.hpp>
#include <ebt/xml.hpp>

#include "registry/latent_start.hpp"
#include "tree/builder_internal.hpp"
#include "xml/xml_internal.hpp"

namespace ebt {

namespace {
/// The end of the error for more than limits::kMaxPorts ports (node bindings count ports in 16 bits
/// and more would be cut silently): "70000 ports (at most 255)".
std::string too_many_ports(const std::vector<PortSpec>& ports) {
    return std::to_string(ports.size()) + " ports (at most " + std::to_string(limits::kMaxPorts) + ")";
}
/// A number value as a long double (exact for every number type ebt has), or nullopt for another type.
std::optional<long double> number_of(const TypeInfo* type, const void* value) {
    if (type == type_of<int>()) return *static_cast<const int*>(value);
    if (type == type_of<unsigned>()) return *static_cast<const unsigned*>(value);
    if (type == type_of<long>()) return static_cast<long double>(*static_cast<const long*>(value));
    if (type == type_of<long long>()) return static_cast<long double>(*static_cast<const long long*>(value));
    if (type == type_of<float>()) return *static_cast<const float*>(value);
    if (type == type_of<double>()) return *static_cast<const double*>(value);
    return std::nullopt;
}

/// `v` as a value of the port's type `to`: itself when it has that type, a number converted exactly,
/// else nullopt.
std::optional<Value> as_port_type(const Value& v, const TypeInfo* to) {
    if (v.type() == to) return v;
    if (auto bytes = detail::convert_number(v.type(), v.data(), to)) return Value(to, bytes->data());
    return std::nullopt;
}

/// The literal text of `v` (of a type with a literal form), or "?" when it has none.
std::string text_of(const Value& v) { return xml::format_value(v.type(), v.data()).value_or("?"); }

/// Checks port `p`'s parameter rules (range, one_of, required) and converts their values to its type,
/// filling their texts. `port` is "action 'X' port 'p'" for messages.
void check_allowed(const std::string& port, PortSpec& p, bool is_condition) {
    PortAllowed& a = p.allowed;
    const std::string type = p.type ? p.type->name : "?";
    if (p.must_be_given && p.fallback.kind != PortDefault::Kind::None)
        throw BuildError(port + " is required and has a default: a required port has none (drop one of them)");
    if (p.description.find('\0') != std::string::npos)
        throw BuildError(port + " has a description with a NUL character (XML cannot hold one)");
    if (!a.any()) return;
    if (!is_condition && p.direction == PortDirection::Out)
        throw BuildError(port + " is an output: range() and one_of() constrain values given to a node, an output's are written by it");
    if (a.min.type() && !a.one_of.empty()) throw BuildError(port + " has both range() and one_of(): give one of them");
    a.texts.clear();
    if (a.min.type()) {
        if (!detail::is_number(p.type))
            throw BuildError(port + " (" + type + ") has a range, which only number ports (int, unsigned, long, long long, float, double) "
                             "can have: use one_of()");
        for (Value* bound : {&a.min, &a.max}) {
            std::optional<Value> converted = bound->type() ? as_port_type(*bound, p.type) : std::nullopt;
            if (!converted)
                throw BuildError(port + " (" + type + ") has the range bound " + (bound->type() ? text_of(*bound) : "?") + " (" +
                                 (bound->type() ? bound->type()->name : "?") + "), which does not convert exactly to " + type);
            *bound = std::move(*converted);
            // A bound must read back as itself (not so for NaN or infinities).
            Value back(p.type);
            const std::optional<std::string> text = xml::format_value(p.type, bound->data());
            if (!text || !xml::parse_value(p.type, *text, back.data()) || back != *bound)
                throw BuildError(port + " has a range bound with no literal form (" + text.value_or("?") + ")");
            a.texts.push_back(*text);
        }
        if (*number_of(p.type, a.min.data()) > *number_of(p.type, a.max.data()))
            throw BuildError(port + " has the range " + a.texts[0] + " to " + a.texts[1] + ", whose low end is above its high end");
    } else {
        if (!p.type || !xml::has_literal_form(p.type))
            throw BuildError(port + " (" + type + ") has one_of(), but its type has no literal form (bool, int, unsigned, long, long long, "
                             "float, double, std::string, an enum added with add_enum, a user type with format/parse)");
        for (Value& v : a.one_of) {
            std::optional<Value> converted = as_port_type(v, p.type);
            if (!converted)
                throw BuildError(port + " (" + type + ") lists " + text_of(v) + " (" + (v.type() ? v.type()->name : "?") +
                                 ") in one_of(), which is not a " + type);
            v = std::move(*converted);
            const std::optional<std::string> text = xml::format_value(p.type, v.data());
            Value back(p.type);
            if (!text || !xml::parse_value(p.type, *text, back.data()) || back != v)
                throw BuildError(port + " lists a value with no literal form in one_of() (" + text.value_or("?") + ")");
            // The model export writes the list separated by ';' (as BehaviorTree.CPP writes vectors).
            if (text->find(';') != std::string::npos)
                throw BuildError(port + " lists '" + *text + "' in one_of(): an allowed value cannot contain ';'");
            for (const std::string& earlier : a.texts)
                if (earlier == *text) throw BuildError(port + " lists '" + *text + "' twice in one_of()");
            a.texts.push_back(*text);
        }
    }
    if (p.fallback.kind == PortDefault::Kind::Value) {
        const std::string problem = detail::port_value_problem(p, p.fallback.value.data());
        if (!problem.empty()) throw BuildError(port + " has a default value that is not allowed: " + problem);
    }
}

}  // namespace

std::string detail::port_allowed_text(const PortSpec& p) {
    const PortAllowed& a = p.allowed;
    if (a.min.type() && a.texts.size() == 2) return a.texts[0] + " to " + a.texts[1];
    std::string list;
    for (const std::string& t : a.texts) list += (list.empty() ? "" : ", ") + t;
    return list;
}

std::string detail::port_value_problem(const PortSpec& p, const void* value) {
    const PortAllowed& a = p.allowed;
    if (a.min.type()) {
        const std::optional<long double> v = number_of(p.type, value);
        if (v && *v >= *number_of(p.type, a.min.data()) && *v <= *number_of(p.type, a.max.data())) return {};
        return xml::format_value(p.type, value).value_or("?") + " is outside the allowed range " + port_allowed_text(p);
    }
    if (a.one_of.empty()) return {};
    for (const Value& allowed : a.one_of)
        if (allowed == Value(p.type, value)) return {};
    return "'" + xml::format_value(p.type, value).value_or("?") + "' is not one of the allowed values: " + port_allowed_text(p);
}

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
        check_allowed(port, p, is_condition);
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
    // Suspends the run and calls start; the engine recognises it and does both itself (latent_start.hpp).
    spec.on_initialize = detail::LatentStart{std::move(latent.start)};
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
