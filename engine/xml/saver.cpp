// The XML saver: a Tree's source form (TreeData::source) back to a v4 document, plus the registry's
// TreeNodesModel.
#include "xml/xml_internal.hpp"

#include <ebt/detail/engine_access.hpp>
#include <ebt/limits.hpp>

#include <pugixml.hpp>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace ebt::xml {

using namespace detail;
using ebt::detail::PredOp;
using ebt::detail::SourceNode;

namespace {

std::string describe_source(const SourceNode& n) {
    std::string s = to_string(n.kind);
    if (!n.label.empty()) s += " '" + n.label + "'";
    else if (!n.name.empty()) s += " '" + n.name + "'";
    // (a NUL would cut the message short)
    for (std::size_t i = s.find('\0'); i != std::string::npos; i = s.find('\0', i)) s.replace(i, 1, "\\0");
    return s;
}

std::string format_duration(std::int64_t micros) {
    std::string s = std::to_string(micros / 1000);
    std::int64_t frac = micros % 1000;
    if (frac) {
        char digits[4] = {static_cast<char>('0' + frac / 100), static_cast<char>('0' + frac / 10 % 10),
                          static_cast<char>('0' + frac % 10), 0};
        std::string f = digits;
        while (!f.empty() && f.back() == '0') f.pop_back();
        s += "." + f;
    }
    return s;
}

std::string format_threshold(std::int32_t encoded) {
    if (encoded == -2) return "-1";  // all children (BehaviorTree.CPP's -1)
    if (encoded == -1) return "1";   // RequireOne
    return std::to_string(encoded);
}

bool attribute_name(std::string_view s) {
    auto start = [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' || static_cast<unsigned char>(c) >= 0x80;
    };
    auto rest = [&](char c) { return start(c) || (c >= '0' && c <= '9') || c == '-' || c == '.'; };
    if (s.empty() || !start(s[0])) return false;
    for (char c : s)
        if (!rest(c)) return false;
    return true;
}

const char* port_element(PortDirection d, bool condition) {
    if (condition) return "input_port";
    switch (d) {
    case PortDirection::In: return "input_port";
    case PortDirection::Out: return "output_port";
    case PortDirection::InOut: return "inout_port";
    }
    return "inout_port";
}

// One port of a registered node in the model, as BehaviorTree.CPP v4 writes it (name, type, default,
// the description as the element's text), then ebt's parameter rules in attributes of its own, which
// editors that do not know them skip (docs/parameters.md): ebt_min/ebt_max, ebt_one_of (';'-separated),
// ebt_required.
void append_port(pugi::xml_node node, const PortSpec& p, bool condition) {
    pugi::xml_node port = node.append_child(port_element(p.direction, condition));
    port.append_attribute("name") = p.name.c_str();
    port.append_attribute("type") = xml_type_name(p.type).c_str();
    if (p.fallback.kind == PortDefault::Kind::Key)
        port.append_attribute("default") = (p.fallback.key == p.name ? std::string("{=}") : "{" + p.fallback.key + "}").c_str();
    else if (p.fallback.kind == PortDefault::Kind::Value)
        port.append_attribute("default") = p.fallback.text.c_str();
    const PortAllowed& allowed = p.allowed;
    if (allowed.min.type() && allowed.texts.size() == 2) {
        port.append_attribute("ebt_min") = allowed.texts[0].c_str();
        port.append_attribute("ebt_max") = allowed.texts[1].c_str();
    } else if (!allowed.one_of.empty()) {
        std::string list;
        for (const std::string& t : allowed.texts) list += (list.empty() ? "" : ";") + t;
        port.append_attribute("ebt_one_of") = list.c_str();
    }
    if (p.must_be_given) port.append_attribute("ebt_required") = "true";
    if (!p.description.empty()) port.text().set(p.description.c_str());
}

bool same_ports(const std::vector<PortSpec>& a, const std::vector<PortSpec>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (a[i].name != b[i].name || a[i].type != b[i].type) return false;
    return true;
}

std::string port_list(const std::vector<PortSpec>& ports) {
    std::string s = "(";
    for (const auto& p : ports) s += (s.size() > 1 ? " " : "") + p.name + ":" + p.type->name;
    return s + ")";
}

void append_model(pugi::xml_node root, const Registry& registry) {
    pugi::xml_node model = root.append_child("TreeNodesModel");
    for (const auto& name : registry.action_names()) {
        pugi::xml_node n = model.append_child("Action");
        n.append_attribute("ID") = name.c_str();
        for (const auto& p : registry.find_action(name)->ports) append_port(n, p, false);
    }
    for (const auto& name : registry.condition_names()) {
        pugi::xml_node n = model.append_child("Condition");
        n.append_attribute("ID") = name.c_str();
        for (const auto& p : registry.find_condition(name)->ports) append_port(n, p, true);
    }
    // ebt's own control and decorator nodes, so that an editor offers them too.
    for (const auto& b : builtin_nodes()) {
        if (!b.ebt_only || !b.canonical) continue;
        pugi::xml_node n = model.append_child(to_string(b.category));
        n.append_attribute("ID") = b.name;
        for (const auto& p : builtin_params(b.kind)) {
            pugi::xml_node port = n.append_child("input_port");
            port.append_attribute("name") = p.name;
            port.append_attribute("type") = p.type;
            if (p.default_value) port.append_attribute("default") = p.default_value;
        }
    }
}

std::string to_text(const pugi::xml_document& doc) {
    std::ostringstream out;
    doc.save(out, "  ", pugi::format_indent, pugi::encoding_utf8);
    return out.str();
}

class Saver {
public:
    Saver(const Tree& tree, const Registry& registry) : data_(ebt::detail::EngineAccess::tree_data(tree)), src_(data_.source), reg_(registry) {}

    std::string run(const SaveOptions& options) {
        if (src_.empty()) fail("", "the tree has no source form");
        if (!is_identifier(data_.name))
            fail("", "the tree's name is not a valid BehaviorTree ID (not empty, no blanks, none of ! & | ^ ( ) { } , = ; \" ' < >, "
                     "not true or false)");
        check_limits();
        collect_keys();
        pugi::xml_document doc;
        pugi::xml_node root = doc.append_child("root");
        root.append_attribute("BTCPP_format") = "4";
        root.append_attribute("main_tree_to_execute") = data_.name.c_str();
        pugi::xml_node bt = root.append_child("BehaviorTree");
        bt.append_attribute("ID") = data_.name.c_str();
        if (needs_blackboard()) write_blackboard(bt);
        write(bt, 0, "", -1);
        if (options.nodes_model) append_model(root, reg_);
        return to_text(doc);
    }

private:
    [[noreturn]] void fail(const std::string& path, const std::string& problem) const {
        throw SaveError("cannot save tree '" + data_.name + "'" + (path.empty() ? "" : ", node " + path) + ": " + problem);
    }

    // Keys bound to literals, and the keys (with types) a reload would infer from the nodes.
    void collect_keys() {
        for (const auto& n : src_) {
            const Bindings* bindings = n.kind == NodeKind::Action ? &n.bindings
                                       : (n.kind == NodeKind::Condition && n.predicate && n.predicate->op == PredOp::Condition)
                                           ? &n.predicate->bindings
                                           : nullptr;
            for (const auto& [port, text] : n.literals)
                if (bindings)
                    for (const auto& [p, key] : *bindings)
                        if (p == port) literal_keys_.insert(key);
        }
        for (const auto& n : src_) {
            if (n.kind == NodeKind::Action && n.action_spec)
                for (std::size_t i = 0; i < n.bindings.size() && i < n.action_spec->ports.size(); ++i)
                    infer(n.bindings[i].second, n.action_spec->ports[i].type);
            if (n.predicate) infer_predicate(*n.predicate);
            if (n.precondition) infer_predicate(*n.precondition);
        }
    }
    void infer(const std::string& key, const TypeInfo* type) {
        if (literal_keys_.count(key)) return;
        auto [it, fresh] = inferred_.emplace(key, type);
        if (!fresh && it->second != type) it->second = nullptr;  // conflicting uses: declare it
    }
    void infer_predicate(const Predicate::Node& p) {
        if (p.op == PredOp::KeyIs) infer(p.name, type_of<bool>());
        if (p.op == PredOp::Compare) {
            // A compared key's type is not implied by its use: <Blackboard> declares it.
            infer(p.name, nullptr);
            if (!p.other_key.empty()) infer(p.other_key, nullptr);
        }
        if (p.op == PredOp::Condition && p.spec)
            for (std::size_t i = 0; i < p.bindings.size() && i < p.spec->ports.size(); ++i) {
                // A constant the builder made for a literal default: no <Blackboard> entry (the
                // expression printer refuses it, naming the node).
                if (p.spec->ports[i].fallback.kind == PortDefault::Kind::Value && !is_identifier(p.bindings[i].second))
                    literal_keys_.insert(p.bindings[i].second);
                infer(p.bindings[i].second, p.spec->ports[i].type);
            }
        if (p.a) infer_predicate(*p.a);
        if (p.b) infer_predicate(*p.b);
    }

    bool needs_blackboard() const {
        const BlackboardSchema& schema = data_.schema;
        for (const auto& k : schema.keys()) {
            if (literal_keys_.count(k.name)) continue;
            if (k.scope != kLocalScope) return true;
            auto it = inferred_.find(k.name);
            if (it == inferred_.end() || it->second != k.type) return true;
            if (!schema.initial_is_default(k)) return true;
        }
        return false;
    }

    void write_blackboard(pugi::xml_node bt) {
        pugi::xml_node bb = bt.append_child("Blackboard");
        const BlackboardSchema& schema = data_.schema;
        for (const auto& k : schema.keys()) {
            if (literal_keys_.count(k.name)) continue;
            pugi::xml_node e = bb.append_child("Entry");
            const bool shared = k.scope != kLocalScope;
            const std::string& key = shared ? k.shared_name : k.name;
            if (!is_identifier(key)) fail("", "key '" + k.name + "' cannot be written in XML (not a valid key name)");
            e.append_attribute("key") = key.c_str();
            e.append_attribute("type") = xml_type_name(k.type).c_str();
            const void* v = schema.initial(k);
            if (!schema.initial_is_default(k)) {
                if (!format_value(k.type, v))
                    fail("", "key '" + k.name + "' of type " + k.type->name + " has an initial value XML cannot express");
                e.append_attribute("default") = value_text(k.type, v, "", "key '" + k.name + "'").c_str();
            }
            if (shared) e.append_attribute("scope") = text(schema.scopes()[k.scope], "", "the scope of key '" + k.name + "'");
        }
    }

    std::string literal_of(const SourceNode& n, const std::string& port) const {
        for (const auto& [p, text] : n.literals)
            if (p == port) return text;
        return {};
    }
    bool has_literal(const SourceNode& n, const std::string& port) const {
        for (const auto& l : n.literals)
            if (l.first == port) return true;
        return false;
    }

    // Whether the port's binding is what the registered default gives when the port is left out: its
    // default key, or a literal of its default value.
    bool is_default(const SourceNode& n, const std::vector<PortSpec>& registered, const std::string& port, const std::string& key) const {
        const auto it = std::find_if(registered.begin(), registered.end(), [&](const PortSpec& p) { return p.name == port; });
        if (it == registered.end()) return false;
        const PortDefault& d = it->fallback;
        if (d.kind == PortDefault::Kind::Key) return !has_literal(n, port) && key == d.key;
        if (d.kind == PortDefault::Kind::Value && has_literal(n, port)) {
            Value value(it->type);
            return parse_value(it->type, literal_of(n, port), value.data()) && value == d.value;
        }
        return false;
    }

    void write_ports(pugi::xml_node el, const SourceNode& n, const Bindings& bindings, const std::vector<PortSpec>& registered,
                     const std::string& path) {
        for (const auto& [port, key] : bindings) {
            if (port == "name" || port == "ID" || !attribute_name(port) || port[0] == '_' || port.find(':') != std::string::npos)
                fail(path, "port '" + port + "' cannot be written as an XML attribute");
            if (is_default(n, registered, port, key)) continue;  // left out: loads back to the same binding
            if (has_literal(n, port)) {
                el.append_attribute(port.c_str()) = text(literal_of(n, port), path, "the literal of port '" + port + "'");
            } else {
                if (!is_identifier(key)) fail(path, "port '" + port + "' is bound to key '" + key + "', which XML cannot name");
                el.append_attribute(port.c_str()) = ("{" + key + "}").c_str();
            }
        }
    }

    pugi::xml_node registered(pugi::xml_node parent, const std::string& name, bool action) {
        const bool other = action ? reg_.find_condition(name) != nullptr : reg_.find_action(name) != nullptr;
        const bool compact = is_xml_name(name) && !other;
        if (compact) return parent.append_child(name.c_str());
        pugi::xml_node el = parent.append_child(action ? "Action" : "Condition");
        el.append_attribute("ID") = text(name, "", "the name '" + name + "'");
        return el;
    }

    void check_predicate(const Predicate::Node& p, const std::string& path) const {
        if (p.op == PredOp::Condition) {
            const ConditionSpec* spec = reg_.find_condition(p.name);
            if (!spec) fail(path, "condition '" + p.name + "' is not registered in the registry given to save()");
            check_port_count("condition '" + p.name + "'", spec->ports, path);
            if (p.spec && !same_ports(p.spec->ports, spec->ports))
                fail(path, "condition '" + p.name + "' has ports " + port_list(p.spec->ports) + " in the tree but " +
                               port_list(spec->ports) + " in the registry");
        }
        if (p.a) check_predicate(*p.a, path);
        if (p.b) check_predicate(*p.b, path);
    }

    std::string expression(const Predicate::Node& p, const std::string& path) const {
        try {
            const KeyTypeLookup key_type = [this](const std::string& name) -> const TypeInfo* {
                const KeyId id = data_.schema.find(name);
                return id == kNoKey ? nullptr : data_.schema.info(id).type;
            };
            std::string text = print_expression(p, reg_, key_type);
            check_predicate(p, path);
            return text;
        } catch (const SaveError& e) {
            fail(path, e.what());
        }
    }

    // The loader refuses an action or condition with more than limits::kMaxPorts ports.
    void check_port_count(const std::string& what, const std::vector<PortSpec>& ports, const std::string& path) const {
        if (ports.size() > limits::kMaxPorts)
            fail(path, what + " has " + std::to_string(ports.size()) + " ports, more than " + std::to_string(limits::kMaxPorts) +
                           " (limits::kMaxPorts)");
    }

    // Refuses a tree the loader would refuse for its size (limits.hpp: depth and node count, the
    // size of its predicates), before anything walks it recursively.
    void check_limits() {
        if (src_.size() > limits::kMaxNodes)
            fail("", "the tree has " + std::to_string(src_.size()) + " nodes, more than " + std::to_string(limits::kMaxNodes) +
                         " (limits::kMaxNodes)");
        std::vector<std::pair<std::uint32_t, std::uint32_t>> stack{{0u, 1u}};  // node, level
        while (!stack.empty()) {
            const auto [index, level] = stack.back();
            stack.pop_back();
            const SourceNode& n = src_[index];
            if (level > limits::kMaxDepth)
                fail("", "the tree is deeper than " + std::to_string(limits::kMaxDepth) + " levels (limits::kMaxDepth): " +
                             describe_source(n) + " is at level " + std::to_string(level));
            for (const auto* p : {n.predicate.get(), n.precondition.get()}) {
                if (!p) continue;
                try {
                    check_expression_size(*p);
                } catch (const SaveError& e) {
                    fail("", describe_source(n) + ": " + e.what());
                }
            }
            for (std::uint32_t c : n.children) stack.emplace_back(c, level + 1);
        }
    }

    // `s` as XML text: a NUL cannot be written (it would cut the text short).
    const char* text(const std::string& s, const std::string& path, const std::string& what) const {
        if (s.find('\0') != std::string::npos) fail(path, what + " contains a NUL character, which XML cannot hold");
        return s.c_str();
    }
    // A value of a builtin type as text that parses back to the same bytes (not NaN or infinite).
    std::string value_text(const TypeInfo* type, const void* value, const std::string& path, const std::string& what) const {
        std::optional<std::string> t = format_value(type, value);
        if (!t) fail(path, what + " of type " + type->name + " has a value XML cannot express");
        Value back(type);
        if (!parse_value(type, *t, back.data()) || !ebt::detail::values_equal(type, back.data(), value))
            fail(path, what + " has the value " + *t + ", which XML cannot express (it would not load back)");
        return *t;
    }

    void write(pugi::xml_node parent, std::uint32_t index, const std::string& parent_path, int position) {
        const SourceNode& n = src_[index];
        std::string path = parent_path + "/" + describe_source(n);
        if (position >= 0) {
            path += '[';
            path += std::to_string(position);
            path += ']';
        }

        pugi::xml_node el;
        std::string default_label;
        switch (n.kind) {
        case NodeKind::Action: {
            const ActionSpec* spec = reg_.find_action(n.name);
            if (!spec) fail(path, "action '" + n.name + "' is not registered in the registry given to save()");
            check_port_count("action '" + n.name + "'", spec->ports, path);
            if (n.action_spec && !same_ports(n.action_spec->ports, spec->ports))
                fail(path, "action '" + n.name + "' has ports " + port_list(n.action_spec->ports) + " in the tree but " +
                               port_list(spec->ports) + " in the registry");
            el = registered(parent, n.name, true);
            write_ports(el, n, n.bindings, spec->ports, path);
            default_label = n.name;
            break;
        }
        case NodeKind::Condition: {
            if (!n.predicate) fail(path, "condition node without a predicate");
            const Predicate::Node& p = *n.predicate;
            if (p.op == PredOp::Condition && !n.name.empty()) {
                check_predicate(p, path);
                el = registered(parent, p.name, false);
                write_ports(el, n, p.bindings, reg_.find_condition(p.name)->ports, path);
                default_label = p.name;
            } else {
                el = parent.append_child("ScriptCondition");
                el.append_attribute("code") = expression(p, path).c_str();
                default_label = p.op == PredOp::KeyIs    ? (p.expected ? "" : "!") + p.name
                                : p.op == PredOp::Compare ? ebt::detail::comparison_text(p)
                                                          : "predicate";
            }
            break;
        }
        default: {
            const BuiltinNode& b = canonical_builtin(n.kind);
            el = parent.append_child(b.name);
            switch (n.kind) {
            case NodeKind::Parallel:
            case NodeKind::Monitor:
                el.append_attribute("success_count") = format_threshold(n.count).c_str();
                el.append_attribute("failure_count") = format_threshold(n.count2).c_str();
                break;
            case NodeKind::WeightedSelector: {
                std::string w;
                for (double v : n.weights) {
                    if (!w.empty()) w += ';';
                    w += value_text(type_of<double>(), &v, path, "a weight");
                }
                el.append_attribute("weights") = w.c_str();
                break;
            }
            case NodeKind::Repeat:
            case NodeKind::Loop: el.append_attribute("num_cycles") = std::to_string(n.count).c_str(); break;
            case NodeKind::Retry: el.append_attribute("num_attempts") = std::to_string(n.count).c_str(); break;
            case NodeKind::Timeout:
            case NodeKind::Cooldown:
            case NodeKind::Wait:
            case NodeKind::Delay:
                if (!duration_in_range(n.duration))
                    fail(path, "the duration " + std::to_string(n.duration) + " us is not below 2^50 ms, the longest XML can write");
                el.append_attribute(n.kind == NodeKind::Delay ? "delay_msec" : "msec") = format_duration(n.duration).c_str();
                break;
            default: break;
            }
            break;
        }
        }
        if (!n.label.empty() && n.label != default_label) el.append_attribute("name") = text(n.label, path, "the label");
        if (n.precondition) el.append_attribute("_precondition") = expression(*n.precondition, path).c_str();
        if (n.has_abort) el.append_attribute("_abort") = to_string(n.abort);
        std::set<std::string_view> written;  // (a set: an element may keep thousands of attributes)
        for (pugi::xml_attribute a = el.first_attribute(); a; a = a.next_attribute()) written.insert(a.name());
        for (const auto& [name, value] : n.attributes) {
            if (!attribute_name(name) || (name[0] != '_' && name.find(':') == std::string::npos))
                fail(path, "kept attribute '" + name + "' is not one XML can keep (a name starting with '_' or with a prefix, as in 'editor:x')");
            if (!written.insert(name).second || name == "_autoremap" || is_script_attribute(name))
                fail(path, "kept attribute '" + name + "' clashes with an attribute ebt or BehaviorTree.CPP interprets");
            el.append_attribute(name.c_str()) = text(value, path, "kept attribute '" + name + "'");
        }
        int child = 0;
        for (std::uint32_t c : n.children) write(el, c, path, child++);
    }

    const ebt::detail::TreeData& data_;
    const std::vector<SourceNode>& src_;
    const Registry& reg_;
    std::set<std::string> literal_keys_;
    std::map<std::string, const TypeInfo*> inferred_;
};

}  // namespace

std::string save(const Tree& tree, const Registry& registry, const SaveOptions& options) {
    if (!tree) throw SaveError("save(): the tree is empty");
    return Saver(tree, registry).run(options);
}

void save_file(const std::filesystem::path& path, const Tree& tree, const Registry& registry, const SaveOptions& options) {
    const std::string text = save(tree, registry, options);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) throw SaveError("cannot write '" + path.string() + "'");
    out << text;
    if (!out.flush()) throw SaveError("cannot write '" + path.string() + "'");
}

std::string nodes_model(const Registry& registry) {
    pugi::xml_document doc;
    pugi::xml_node root = doc.append_child("root");
    root.append_attribute("BTCPP_format") = "4";
    append_model(root, registry);
    return to_text(doc);
}

}  // namespace ebt::xml
