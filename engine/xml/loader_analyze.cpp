// The XML loader's first pass over one tree: reads its <Blackboard>, classifies every element
// (built-in node, registered action or condition, SubTree), checks its attributes, parameters,
// ports and children, parses expressions, and collects the blackboard keys the tree uses with their
// types. A <SubTree> is built here (loader_build.cpp) so that its keys are known for remapping.
#include "xml/loader_session.hpp"

#include <ebt/limits.hpp>

#include <algorithm>
#include <charconv>
#include <set>
#include <system_error>

namespace ebt::xml::detail {

namespace {

// ---- numbers in attributes -------------------------------------------------------------------------

bool parse_int(std::string_view s, long long& out) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    if (s.empty()) return false;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out, 10);
    return ec == std::errc() && end == s.data() + s.size();
}

// Milliseconds, integer or with up to 3 decimals, to microseconds. False on anything else.
bool parse_msec(std::string_view s, std::int64_t& micros) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    const auto dot = s.find('.');
    const std::string_view whole = s.substr(0, dot);
    const std::string_view frac = dot == std::string_view::npos ? std::string_view{} : s.substr(dot + 1);
    if (whole.empty() || frac.size() > 3 || (dot != std::string_view::npos && frac.empty())) return false;
    for (char c : whole)
        if (c < '0' || c > '9') return false;
    for (char c : frac)
        if (c < '0' || c > '9') return false;
    std::int64_t ms = 0;
    const auto [end, ec] = std::from_chars(whole.data(), whole.data() + whole.size(), ms, 10);
    if (ec != std::errc() || end != whole.data() + whole.size()) return false;
    if (ms >= kMaxDurationMilliseconds) return false;  // ~35,000 years (what save() writes): no overflow below
    std::int64_t f = 0;
    for (std::size_t i = 0; i < 3; ++i) f = f * 10 + (i < frac.size() ? frac[i] - '0' : 0);
    micros = ms * 1000 + f;
    return duration_in_range(micros);
}

}  // namespace

// ---- building one tree ------------------------------------------------------------------------------------

const TypeInfo* Session::type_named(std::string_view name) {
    if (const TypeInfo* t = builtin_type(name)) return t;
    if (!port_types_ready_) {
        for (const auto& n : reg_.action_names())
            for (const auto& p : reg_.find_action(n)->ports) port_types_.emplace(p.type->name, p.type);
        for (const auto& n : reg_.condition_names())
            for (const auto& p : reg_.find_condition(n)->ports) port_types_.emplace(p.type->name, p.type);
        port_types_ready_ = true;
    }
    auto it = port_types_.find(name);
    return it == port_types_.end() ? nullptr : it->second;
}

void Session::use_key(Ctx& ctx, const std::string& key, const TypeInfo* type, const Site& site, const std::string& path,
                      const std::string& what, bool declare_always) {
    auto it = ctx.index.find(key);
    if (it != ctx.index.end()) {
        const KeyDecl& k = ctx.keys[it->second];
        if (type && k.type != type) {
            if (k.declared)
                fail(site, ctx, path, what + " expects key '" + key + "' of type " + type->name + ", but it is declared as " + k.type->name +
                                          " (at " + where(k.site) + ")");
            fail(site, ctx, path, what + " expects key '" + key + "' of type " + type->name + ", but it is used as " + k.type->name +
                                      " at " + where(k.site));
        }
        return;
    }
    if (ctx.strict && !declare_always)
        fail(site, ctx, path, what + " uses unknown key '" + key + "' (not declared in this tree's <Blackboard>)");
    KeyDecl k;
    k.name = key;
    k.type = type;
    k.site = site;
    ctx.index.emplace(key, ctx.keys.size());
    ctx.keys.push_back(std::move(k));
}

std::string Session::declare_literal(Ctx& ctx, const PortSpec& p, std::string_view text, const Site& site, const std::string& path,
                                     const std::string& what) {
    const TypeInfo* type = p.type;
    if (!has_literal_form(type))
        fail(site, ctx, path, what + " has type " + type->name + ", which has no literal form: bind it to a key with {key}");
    const std::string allowed = ebt::detail::port_allowed_text(p);
    Value value(type);
    if (!parse_value(type, text, value.data()))
        fail(site, ctx, path, what + ": " + not_a_valid(type, text) + (allowed.empty() ? "" : " (allowed: " + allowed + ")"));
    // The parameter's rules, checked here once rather than by the action on every tick.
    if (const std::string problem = ebt::detail::port_value_problem(p, value.data()); !problem.empty())
        fail(site, ctx, path, what + ": " + problem);
    KeyDecl k;
    k.name = "=" + p.name + "#" + std::to_string(ctx.literals++);
    k.type = type;
    k.initial = std::move(value);
    k.site = site;
    k.literal = true;
    ctx.index.emplace(k.name, ctx.keys.size());
    ctx.keys.push_back(k);
    return k.name;
}

void Session::read_blackboard(Ctx& ctx, const Document& doc, const pugi::xml_node& bb) {
    ctx.strict = true;
    int i = 0;
    for (pugi::xml_attribute a : bb.attributes())
        if (a.name()[0] != '_') fail(attribute_site(doc, bb, a.name()), ctx, "/Blackboard", "<Blackboard> has no attribute '" + std::string(a.name()) + "'");
    for (pugi::xml_node e : bb.children()) {
        if (e.type() == pugi::node_pcdata || e.type() == pugi::node_cdata) {
            if (!blank_text(e.value())) fail(element_site(doc, e), ctx, "/Blackboard", "unexpected text inside <Blackboard>");
            continue;
        }
        if (e.type() != pugi::node_element) continue;
        const std::string path = "/Blackboard/Entry[" + std::to_string(i++) + "]";
        const Site site = element_site(doc, e);
        if (std::string_view(e.name()) != "Entry")
            fail(site, ctx, path, "unexpected <" + std::string(e.name()) + "> in <Blackboard> (expected <Entry key=... type=...>)");
        for (pugi::xml_attribute a : e.attributes()) {
            const std::string_view n = a.name();
            if (n != "key" && n != "type" && n != "default" && n != "scope" && n[0] != '_')
                fail(attribute_site(doc, e, n), ctx, path, "<Entry> has no attribute '" + std::string(n) + "' (it takes key, type, default, scope)");
        }
        if (e.first_child() && e.first_child().type() == pugi::node_element)
            fail(site, ctx, path, "<Entry> takes no children");
        KeyDecl k;
        k.declared = true;
        k.site = site;
        const std::string key = e.attribute("key").value();
        const std::string type = e.attribute("type").value();
        const std::string scope = e.attribute("scope").value();
        if (key.empty()) fail(site, ctx, path, "<Entry> needs a key");
        if (!is_identifier(key)) fail(attribute_site(doc, e, "key"), ctx, path, "'" + key + "' is not a valid key name");
        if (type.empty()) fail(site, ctx, path, "<Entry key=\"" + key + "\"> needs a type");
        k.type = type_named(type);
        if (!k.type)
            fail(attribute_site(doc, e, "type"), ctx, path,
                 "unknown type '" + type + "' (bool, int, unsigned, long, long long, float, double, string, an enum or type "
                 "named with Registry::add_enum / add_type, or the type of a registered port)");
        if (!scope.empty()) {
            if (!is_identifier(scope) || scope.find('.') != std::string::npos)
                fail(attribute_site(doc, e, "scope"), ctx, path, "'" + scope + "' is not a valid scope name");
            k.scope = scope;
            k.shared_name = key;
            k.name = scope + "." + key;
        } else {
            k.name = key;
        }
        if (pugi::xml_attribute d = e.attribute("default")) {
            if (!has_literal_form(k.type))
                fail(attribute_site(doc, e, "default"), ctx, path, "key '" + key + "' of type " + type + " cannot have a default in XML");
            k.initial = Value(k.type);
            if (!parse_value(k.type, d.value(), k.initial.data()))
                fail(attribute_site(doc, e, "default"), ctx, path,
                     "default '" + std::string(d.value()) + "' of key '" + key + "' is not a valid " + type + allowed_names(k.type));
        }
        if (auto it = ctx.index.find(k.name); it != ctx.index.end())
            fail(site, ctx, path, "key '" + k.name + "' is declared twice (first at " + where(ctx.keys[it->second].site) + ")");
        ctx.index.emplace(k.name, ctx.keys.size());
        ctx.keys.push_back(std::move(k));
    }
}

Predicate Session::expression(Ctx& ctx, const Document& doc, const pugi::xml_node& el, const Ir& ir, const char* attr,
                              std::string_view code) {
    std::vector<ExprKeyUse> uses;
    const Site site = attribute_site(doc, el, attr);
    Predicate p = Predicate::constant(true);
    try {
        // A comparison needs its keys' types: those declared in <Blackboard> or used before.
        const KeyTypeLookup key_type = [&ctx](const std::string& name) -> const TypeInfo* {
            auto it = ctx.index.find(name);
            return it == ctx.index.end() ? nullptr : ctx.keys[it->second].type;
        };
        p = parse_expression(code, reg_, uses, key_type);
    } catch (const ExprError& e) {
        fail(site, ctx, ir.path,
             std::string(attr) + "=\"" + std::string(code) + "\": " + e.message + " (at character " + std::to_string(e.position + 1) + ")");
    }
    for (const auto& u : uses) {
        if (!is_identifier(u.key) || starts_with(u.key, "@"))
            fail(site, ctx, ir.path, "'" + u.key + "' is not a valid key name");
        use_key(ctx, u.key, u.type, site, ir.path, u.what);
    }
    return p;
}

// Classifies `el`, checks its attributes and children, records the keys it uses.
Ir Session::analyze(Ctx& ctx, const Document& doc, const pugi::xml_node& el, const std::string& path, int depth) {
    Ir ir;
    ir.site = element_site(doc, el);
    ir.path = path;
    // check_size refused deeper trees before the build; this bounds the recursion all the same.
    if (depth >= static_cast<int>(limits::kMaxDepth))
        fail(ir.site, ctx, path, "nodes nested too deeply (more than " + std::to_string(limits::kMaxDepth) + " levels)");
    const std::string element = el.name();

    // Which node is this?
    Category category = Category::Action;
    std::string id;
    const bool explicit_form = element == "Action" || element == "Condition" || element == "Control" || element == "Decorator";
    if (element == "SubTree") {
        ir.form = Ir::Form::SubTree;
    } else {
        if (explicit_form) {
            id = el.attribute("ID").value();
            if (id.empty()) fail(ir.site, ctx, path, "<" + element + "> needs an ID attribute");
        } else {
            id = element;
            if (el.attribute("ID"))
                fail(attribute_site(doc, el, "ID"), ctx, path, "<" + element + "> takes no ID attribute (only <Action>, <Condition>, <Control>, <Decorator> and <SubTree> do)");
        }
        const BuiltinNode* builtin = find_builtin(id);
        const ActionSpec* action = reg_.find_action(id);
        const ConditionSpec* condition = reg_.find_condition(id);
        // The explicit forms name registered nodes first (a registered name may shadow a built-in's).
        if (element == "Action" && action) builtin = nullptr;
        if (element == "Condition" && condition) builtin = nullptr;
        if (builtin && (!explicit_form || element == to_string(builtin->category))) {
            ir.form = builtin->kind == NodeKind::Condition ? Ir::Form::Predicate : Ir::Form::Builtin;
            ir.kind = builtin->kind;
            category = builtin->category;
        } else if (builtin) {
            fail(ir.site, ctx, path, "'" + id + "' is a " + to_string(builtin->category) + ", not a " + element + " (write <" + id + "> or <" +
                                         to_string(builtin->category) + " ID=\"" + id + "\">)");
        } else if (const char* why = unsupported_node(id)) {
            fail(ir.site, ctx, path, "BehaviorTree.CPP node '" + id + "' is not supported by ebt: " + why);
        } else if (element == "Action" || (!explicit_form && action && !condition)) {
            if (!action) fail(ir.site, ctx, path, "unknown action '" + id + "'" + (condition ? " (it is a registered condition: write <Condition ID=\"" + id + "\">)" : ""));
            ir.form = Ir::Form::Action;
            ir.kind = NodeKind::Action;
            ir.name = id;
            category = Category::Action;
        } else if (element == "Condition" || (!explicit_form && condition && !action)) {
            if (!condition) fail(ir.site, ctx, path, "unknown condition '" + id + "'" + (action ? " (it is a registered action: write <Action ID=\"" + id + "\">)" : ""));
            ir.form = Ir::Form::Condition;
            ir.kind = NodeKind::Condition;
            ir.name = id;
            category = Category::Condition;
        } else if (action && condition) {
            fail(ir.site, ctx, path, "'" + id + "' is both a registered action and a registered condition: write <Action ID=\"" + id +
                                         "\"> or <Condition ID=\"" + id + "\">");
        } else if (explicit_form) {
            fail(ir.site, ctx, path, "unknown " + element + " '" + id + "'");
        } else {
            std::string hint;
            if (tree_index_.count(id)) hint = " (to use BehaviorTree '" + id + "' write <SubTree ID=\"" + id + "\"/>)";
            else if (auto m = model_ids_.find(id); m != model_ids_.end())
                hint = " (<TreeNodesModel> at " + where(m->second) + " declares it, but it is not registered)";
            else hint = " (registered actions: " + quoted_list(reg_.action_names()) + "; conditions: " + quoted_list(reg_.condition_names()) + ")";
            fail(ir.site, ctx, path, "unknown node <" + element + ">: not a built-in node nor a registered action or condition" + hint);
        }
    }

    // Attributes: the common ones here, the node's own in the analyze_* helpers.
    std::vector<pugi::xml_attribute> rest;
    for (pugi::xml_attribute a : el.attributes()) {
        const std::string n = a.name();
        auto asite = [&] { return attribute_site(doc, el, n); };  // (only for a message: the scan is linear)
        if (n == "ID" && (explicit_form || ir.form == Ir::Form::SubTree)) continue;
        if (n == "name") {
            ir.label = a.value();
        } else if (n == "_precondition") {
            ir.precondition = expression(ctx, doc, el, ir, "_precondition", a.value());
        } else if (n == "_abort") {
            const std::string_view v = a.value();
            if (v == "None") ir.abort = AbortMode::None;
            else if (v == "Self") ir.abort = AbortMode::Self;
            else if (v == "LowerPriority") ir.abort = AbortMode::LowerPriority;
            else if (v == "Both") ir.abort = AbortMode::Both;
            else fail(asite(), ctx, path, "_abort=\"" + std::string(v) + "\" is not an abort mode (None, Self, LowerPriority, Both)");
        } else if (is_script_attribute(n)) {
            fail(asite(), ctx, path, "BehaviorTree.CPP's scripting attribute " + n + " is not supported (ebt has no scripting; see _precondition)");
        } else if (n == "_autoremap" && ir.form != Ir::Form::SubTree) {
            fail(asite(), ctx, path, "_autoremap applies only to <SubTree>");
        } else if (n == "_autoremap") {
            rest.push_back(a);
        } else if (n[0] == '_' || n.find(':') != std::string::npos) {
            ir.attributes.emplace_back(n, a.value());  // kept for tools, written back by save()
        } else {
            rest.push_back(a);
        }
    }

    // Children.
    std::vector<pugi::xml_node> kids;
    for (pugi::xml_node c : el.children()) {
        if (c.type() == pugi::node_pcdata || c.type() == pugi::node_cdata) {
            if (!blank_text(c.value())) fail(element_site(doc, c), ctx, path, "unexpected text inside <" + element + ">");
            continue;
        }
        if (c.type() == pugi::node_element) kids.push_back(c);
    }
    const std::string what = ir.form == Ir::Form::SubTree ? "SubTree"
                             : ir.form == Ir::Form::Action ? "action '" + ir.name + "'"
                             : ir.form == Ir::Form::Condition ? "condition '" + ir.name + "'"
                                                              : id;
    if (ir.form == Ir::Form::SubTree || category == Category::Action || category == Category::Condition) {
        if (!kids.empty()) fail(element_site(doc, kids[0]), ctx, path, what + " takes no children, got " + std::to_string(kids.size()));
    } else if (category == Category::Decorator) {
        if (kids.size() != 1) fail(ir.site, ctx, path, what + " takes exactly one child, got " + std::to_string(kids.size()));
    } else if (kids.empty()) {
        fail(ir.site, ctx, path, what + " has no children");
    }

    // limits::kMaxPorts holds for the registry's nodes as the builder and save() see them.
    if (ir.form == Ir::Form::Action || ir.form == Ir::Form::Condition) {
        const std::size_t ports = ir.form == Ir::Form::Action ? reg_.find_action(ir.name)->ports.size() : reg_.find_condition(ir.name)->ports.size();
        if (ports > limits::kMaxPorts)
            fail(ir.site, ctx, path, what + " has " + std::to_string(ports) + " ports, more than " + std::to_string(limits::kMaxPorts) +
                                         " (limits::kMaxPorts)");
    }
    switch (ir.form) {
    case Ir::Form::Builtin:
    case Ir::Form::Predicate: analyze_builtin(ctx, doc, el, ir, rest); break;
    case Ir::Form::Action: analyze_ports(ctx, doc, el, ir, reg_.find_action(ir.name)->ports, false, rest); break;
    case Ir::Form::Condition: analyze_ports(ctx, doc, el, ir, reg_.find_condition(ir.name)->ports, true, rest); break;
    case Ir::Form::SubTree: analyze_subtree(ctx, doc, el, ir, rest); break;
    case Ir::Form::Check: break;
    }

    // Parallel thresholds in BehaviorTree.CPP's negative form count from the number of children.
    if (ir.kind == NodeKind::Parallel || ir.kind == NodeKind::Monitor) {
        for (const char* which : {"success_count", "failure_count"}) {
            std::optional<Threshold>& t = std::string_view(which) == "success_count" ? ir.success : ir.failure;
            if (t) continue;  // resolved by analyze_builtin
            const long long v = el.attribute(which).as_llong();
            const long long resolved = static_cast<long long>(kids.size()) + v + 1;
            if (ir.kind == NodeKind::Monitor || resolved < 1)
                fail(attribute_site(doc, el, which), ctx, path,
                     std::string(which) + "=\"" + el.attribute(which).value() + "\" leaves no child to count (" + std::to_string(kids.size()) +
                         " children)" + (ir.kind == NodeKind::Monitor ? "; a Monitor takes -1 (all) or a positive count" : ""));
            t = Threshold::count(static_cast<int>(resolved));
        }
    }

    int i = 0;
    for (const auto& c : kids) {
        std::string part = c.name();
        const std::string_view cn = c.name();
        if (cn == "Action" || cn == "Condition" || cn == "Control" || cn == "Decorator" || cn == "SubTree")
            part += " '" + std::string(c.attribute("ID").value()) + "'";
        ir.children.push_back(analyze(ctx, doc, c, path + "/" + part + "[" + std::to_string(i++) + "]", depth + 1));
    }
    return ir;
}

void Session::analyze_builtin(Ctx& ctx, const Document& doc, const pugi::xml_node& el, Ir& ir,
                              std::vector<pugi::xml_attribute>& rest) {
    const std::vector<BuiltinParam> params = builtin_params(ir.kind);
    const std::string node = el.name();
    for (const auto& a : rest) {
        const std::string_view n = a.name();
        const bool known = std::any_of(params.begin(), params.end(), [&](const BuiltinParam& p) { return n == p.name; });
        if (!known) {
            std::string takes;
            for (const auto& p : params) takes += (takes.empty() ? "" : ", ") + std::string(p.name);
            fail(attribute_site(doc, el, n), ctx, ir.path,
                 node + " has no attribute '" + std::string(n) + "'" + (takes.empty() ? "" : " (it takes " + takes + ")"));
        }
    }
    for (const auto& p : params) {
        pugi::xml_attribute a = el.attribute(p.name);
        const Site site = attribute_site(doc, el, p.name);
        if (!a && !p.default_value) fail(ir.site, ctx, ir.path, node + " needs the attribute " + p.name);
        const std::string value = a ? a.value() : p.default_value;
        const std::string_view pn = p.name;
        // (A code of "{key}" is an expression naming a key: see parse_expression.)
        if (pn != "code" && value.size() >= 2 && value.front() == '{' && value.back() == '}')
            fail(site, ctx, ir.path, std::string(p.name) + "=\"" + value + "\": ebt fixes this parameter when the tree is built; give a value, not a blackboard key");
        if (pn == "code") {
            Predicate pred = expression(ctx, doc, el, ir, "code", value);
            const auto& root = *pred.node();
            if (root.op == ebt::detail::PredOp::KeyIs) {
                ir.form = Ir::Form::Check;
                ir.check_key = root.name;
                ir.check_expected = root.expected;
            } else {
                ir.predicate = pred;
            }
        } else if (pn == "success_count" || pn == "failure_count") {
            long long v = 0;
            if (!parse_int(value, v) || v < -100000 || v > 100000)
                fail(site, ctx, ir.path, std::string(p.name) + "=\"" + value + "\" is not an integer");
            if (v == 0) fail(site, ctx, ir.path, std::string(p.name) + " must not be 0");
            std::optional<Threshold> t;
            if (v == -1) t = Threshold::all();
            else if (v > 0) t = Threshold::count(static_cast<int>(v));
            (pn == "success_count" ? ir.success : ir.failure) = t;  // other negatives: resolved from the children count
        } else if (pn == "num_cycles" || pn == "num_attempts") {
            long long v = 0;
            if (!parse_int(value, v) || v < -1 || v > 0x7FFFFFFF)
                fail(site, ctx, ir.path, std::string(p.name) + "=\"" + value + "\" is not a count (a positive integer" +
                                             (pn == "num_cycles" ? ", or -1 for forever)" : ")"));
            if (pn == "num_attempts" && v == -1)
                fail(site, ctx, ir.path, "num_attempts=\"-1\" (retry forever) is not supported: ebt's Retry needs a finite number of attempts");
            if (v == 0) fail(site, ctx, ir.path, std::string(p.name) + " must not be 0");
            ir.count = static_cast<int>(v);
        } else if (pn == "msec" || pn == "delay_msec") {
            if (!parse_msec(value, ir.duration))
                fail(site, ctx, ir.path, std::string(p.name) + "=\"" + value + "\" is not a duration in milliseconds (a non-negative number below 2^50, at most 3 decimals)");
        } else if (pn == "weights") {
            std::string_view rest_text = value;
            while (true) {
                const auto semi = rest_text.find(';');
                std::string_view item = rest_text.substr(0, semi);
                double w = 0;
                if (!parse_value(type_of<double>(), item, &w) || !(w > 0))
                    fail(site, ctx, ir.path, "weights=\"" + value + "\": '" + std::string(item) + "' is not a positive number");
                ir.weights.push_back(w);
                if (semi == std::string_view::npos) break;
                rest_text.remove_prefix(semi + 1);
            }
            std::size_t kids = 0;
            for (pugi::xml_node c : el.children())
                if (c.type() == pugi::node_element) ++kids;
            if (ir.weights.size() != kids)
                fail(site, ctx, ir.path, "WeightedSelector has " + std::to_string(ir.weights.size()) + " weight(s) for " +
                                             std::to_string(kids) + " children");
        }
    }
}

void Session::analyze_ports(Ctx& ctx, const Document& doc, const pugi::xml_node& el, Ir& ir, const std::vector<PortSpec>& ports,
                            bool is_condition, std::vector<pugi::xml_attribute>& rest) {
    const std::string what = (is_condition ? "condition '" : "action '") + ir.name + "'";
    for (const auto& a : rest) {
        const std::string_view n = a.name();
        const bool known = std::any_of(ports.begin(), ports.end(), [&](const PortSpec& p) { return n == p.name; });
        if (!known) {
            std::string list;
            for (const auto& p : ports) list += " " + p.name;
            fail(attribute_site(doc, el, n), ctx, ir.path,
                 what + " has no port '" + std::string(n) + "'" + (ports.empty() ? " (it has no ports)" : " (ports:" + list + ")"));
        }
    }
    for (const auto& p : ports) {
        const std::string port_what = what + " port '" + p.name + "'";
        if (p.name == "name" || p.name == "ID" || p.name.empty() || p.name[0] == '_' || p.name.find(':') != std::string::npos)
            fail(ir.site, ctx, ir.path, port_what + " cannot be written in XML (its name is a reserved attribute)");
        pugi::xml_attribute a = el.attribute(p.name.c_str());
        const Site site = a ? attribute_site(doc, el, p.name) : ir.site;
        if (!a && p.fallback.kind == PortDefault::Kind::None)
            fail(site, ctx, ir.path, port_what + " (" + p.type->name + ") is missing: write " + p.name + "=\"{key}\", " + p.name +
                                         "=\"{=}\" (the key '" + p.name + "') or a literal value" +
                                         (p.allowed.any() ? " (allowed: " + ebt::detail::port_allowed_text(p) + ")" : ""));
        // A port left out takes its registered default, read as if written.
        const std::string value = a ? std::string(a.value()) : port_default_text(p);
        if (value.size() >= 2 && value.front() == '{' && value.back() == '}') {
            std::string key = value.substr(1, value.size() - 2);
            if (key == "=") key = p.name;
            if (key.empty()) fail(site, ctx, ir.path, port_what + ": '{}' names no key");
            if (key[0] == '@')
                fail(site, ctx, ir.path, port_what + ": '{" + key + "}' refers to BehaviorTree.CPP's root blackboard, which ebt does not have (declare a shared key instead)");
            if (!is_identifier(key)) fail(site, ctx, ir.path, port_what + ": '" + key + "' is not a valid key name");
            use_key(ctx, key, p.type, site, ir.path, port_what);
            ir.bindings.emplace_back(p.name, key);
        } else {
            if (!is_condition && p.direction == PortDirection::Out)
                fail(site, ctx, ir.path, port_what + " is an output: it needs a {key}, not the literal '" + value + "'");
            const std::string key = declare_literal(ctx, p, value, site, ir.path, port_what);
            ir.bindings.emplace_back(p.name, key);
            ir.literals.emplace_back(p.name, value);
        }
    }
}

void Session::analyze_subtree(Ctx& ctx, const Document& doc, const pugi::xml_node& el, Ir& ir, std::vector<pugi::xml_attribute>& rest) {
    ir.name = el.attribute("ID").value();
    if (ir.name.empty()) fail(ir.site, ctx, ir.path, "<SubTree> needs an ID attribute");
    if (!tree_index_.count(ir.name)) {
        std::vector<std::string> ids;
        for (const auto& t : trees_) ids.push_back(t.id);
        fail(ir.site, ctx, ir.path, "unknown BehaviorTree '" + ir.name + "' (defined: " + quoted_list(ids) + ")");
    }
    if (static_cast<int>(building_.size()) >= kMaxSubtreeDepth)
        fail(ir.site, ctx, ir.path, "subtrees nested too deeply (more than " + std::to_string(kMaxSubtreeDepth) + " levels)");
    Built inner = build(ir.name, ir.site, ctx.id, ir.path, nullptr, true);

    struct Given {
        std::string port;
        std::string value;
        std::optional<Site> site;  // empty: the attribute `port` of `el` (found when a message needs it)
    };
    const std::map<std::string_view, Site> sites = attribute_sites(doc, el);
    auto site_of = [&](const Given& g) {
        if (g.site) return *g.site;
        auto it = sites.find(g.port);
        return it == sites.end() ? ir.site : it->second;
    };
    std::vector<Given> given;
    bool autoremap = false;
    for (const auto& a : rest) {
        const std::string n = a.name();
        if (n == "_autoremap") {
            const std::string_view v = a.value();
            if (v == "true" || v == "1") autoremap = true;
            else if (v == "false" || v == "0") autoremap = false;
            else fail(attribute_site(doc, el, n), ctx, ir.path, "_autoremap=\"" + std::string(v) + "\" is not true or false");
            continue;
        }
        given.push_back({n, a.value(), std::nullopt});
    }
    // Defaults from the SubTree's model, for ports this use does not give (without _autoremap,
    // which connects them all).
    if (auto m = subtree_models_.find(ir.name); !autoremap && m != subtree_models_.end()) {
        std::set<std::string_view> set;
        for (const auto& g : given) set.insert(g.port);
        for (const auto& port : m->second)
            if (port.default_value && !set.count(port.name)) given.push_back({port.name, *port.default_value, port.site});
    }

    const BlackboardSchema& schema = inner.tree.schema();
    Overrides overrides;
    std::set<std::string> remapped;
    std::set<std::string_view> own_keys;
    for (const auto& k : inner.own_keys) own_keys.insert(k.first);
    for (const auto& g : given) {
        const KeyId id = schema.find(g.port);
        if (id == kNoKey || !own_keys.count(g.port)) {
            std::vector<std::string> keys;
            for (const auto& k : inner.own_keys) keys.push_back(k.first);
            fail(site_of(g), ctx, ir.path, "subtree '" + ir.name + "' has no key '" + g.port + "' to remap (its keys: " + quoted_list(keys) + ")");
        }
        const TypeInfo* type = schema.info(id).type;
        const std::string what = "subtree '" + ir.name + "' key '" + g.port + "'";
        if (g.value.size() >= 2 && g.value.front() == '{' && g.value.back() == '}') {
            std::string key = g.value.substr(1, g.value.size() - 2);
            if (key == "=") key = g.port;
            if (key.empty() || !is_identifier(key) || key[0] == '@')
                fail(site_of(g), ctx, ir.path, what + ": '" + g.value + "' is not a valid key reference");
            use_key(ctx, key, type, site_of(g), ir.path, what);
            ir.remap.emplace_back(g.port, key);
        } else {
            if (!has_literal_form(type))
                fail(site_of(g), ctx, ir.path, what + " has type " + type->name + ", which has no literal form: remap it to a key with {key}");
            Value value(type);
            if (!parse_value(type, g.value, value.data())) fail(site_of(g), ctx, ir.path, what + ": " + not_a_valid(type, g.value));
            overrides[g.port] = std::move(value);
        }
        remapped.insert(g.port);
    }
    if (autoremap)
        for (const auto& [key, type] : inner.own_keys) {
            if (remapped.count(key)) continue;
            use_key(ctx, key, type, ir.site, ir.path, "subtree '" + ir.name + "' key '" + key + "' (_autoremap)", true);
            ir.remap.emplace_back(key, key);
        }
    ir.inner = overrides.empty() ? inner.tree : build(ir.name, ir.site, ctx.id, ir.path, &overrides, true).tree;
    ir.inner_abort = inner.root_abort;
}

}  // namespace ebt::xml::detail
