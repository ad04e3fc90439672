// The XML loader's build of one tree: checks the <BehaviorTree> element, runs the first pass
// (loader_analyze.cpp), then the second: declares the keys and emits the nodes into a TreeBuilder,
// reporting a builder error at the position of the node it is about. Subtrees are cached per ID.
#include "xml/loader_session.hpp"

#include <ebt/detail/builder_access.hpp>
#include <ebt/detail/engine_access.hpp>
#include <algorithm>

namespace ebt::xml::detail {

// ---- building one tree ------------------------------------------------------------------------------------

Built Session::build(const std::string& id, const Site& use, const std::string& user_tree, const std::string& user_path,
                     const Overrides* overrides, bool as_subtree) {
    if (!overrides && as_subtree)
        if (auto it = cache_.find(id); it != cache_.end()) return it->second;
    if (std::find(building_.begin(), building_.end(), id) != building_.end()) {
        std::string chain;
        for (const auto& b : building_) chain += b + " -> ";
        fail_at(use, user_tree, user_path, "subtree cycle: " + chain + id);
    }
    building_.push_back(id);

    const TreeDef& def = trees_[tree_index_.at(id)];
    const Document& doc = *def.doc;
    Ctx ctx;
    ctx.def = &def;
    ctx.id = id;
    ctx.overrides = overrides;

    for (pugi::xml_attribute a : def.element.attributes()) {
        const std::string_view n = a.name();
        if (n != "ID" && n[0] != '_')
            fail(attribute_site(doc, def.element, n), ctx, "", "<BehaviorTree> has no attribute '" + std::string(n) + "'");
    }
    std::vector<pugi::xml_node> nodes;
    for (pugi::xml_node c : def.element.children()) {
        if (c.type() == pugi::node_pcdata || c.type() == pugi::node_cdata) {
            if (!blank_text(c.value())) fail(element_site(doc, c), ctx, "", "unexpected text inside <BehaviorTree>");
            continue;
        }
        if (c.type() != pugi::node_element) continue;
        if (std::string_view(c.name()) == "Blackboard") {
            if (!nodes.empty() || ctx.strict)
                fail(element_site(doc, c), ctx, "", "<Blackboard> must come first in <BehaviorTree>, once");
            read_blackboard(ctx, doc, c);
            continue;
        }
        nodes.push_back(c);
    }
    if (nodes.size() != 1)
        fail(nodes.empty() ? def.site : element_site(doc, nodes[1]), ctx, "",
             "<BehaviorTree> must have exactly one root node, got " + std::to_string(nodes.size()));

    std::string root_part = nodes[0].name();
    if (root_part == "Action" || root_part == "Condition" || root_part == "Control" || root_part == "Decorator" || root_part == "SubTree")
        root_part += " '" + std::string(nodes[0].attribute("ID").value()) + "'";
    Ir root = analyze(ctx, doc, nodes[0], "/" + root_part, 0);
    Built built;
    if (as_subtree) {
        // Whether the root may abort depends on where it is inlined: checked there.
        built.root_abort = root.abort;
        root.abort.reset();
    }

    // Pass 2: declare the keys, then build.
    TreeBuilder b(id, reg_);
    std::vector<const Ir*> sites;
    const Ir* current = &root;
    bool ending = false;
    try {
        for (const auto& k : ctx.keys) {
            const void* initial = k.initial.empty() ? nullptr : k.initial.data();
            if (overrides && k.scope.empty() && !k.literal)
                if (auto it = overrides->find(k.name); it != overrides->end()) initial = it->second.data();
            if (k.scope.empty()) ebt::detail::BuilderAccess::declare_key(b, k.name, k.type, initial);
            else ebt::detail::BuilderAccess::declare_shared_key(b, k.scope, k.shared_name, k.type, initial);
            if (!k.literal && k.scope.empty()) built.own_keys.emplace_back(k.name, k.type);
        }
        emit(b, root, sites, current);
        ending = true;
        built.tree = b.end();
    } catch (const LoadError&) {
        throw;
    } catch (const BuildError& e) {
        const TreeBuilder::ErrorDetail& detail = ebt::detail::BuilderAccess::last_error(b);
        std::string problem = e.what();
        const Ir* at = current;
        if (!detail.problem.empty() && ends_with(problem, detail.problem)) {
            problem = detail.problem;
            if (ending && detail.node >= 0 && static_cast<std::size_t>(detail.node) < sites.size()) at = sites[static_cast<std::size_t>(detail.node)];
        }
        fail(at->site, ctx, at->path, problem);
    }
    building_.pop_back();
    if (!overrides && as_subtree) cache_.emplace(id, built);
    return built;
}

void Session::emit(TreeBuilder& b, const Ir& ir, std::vector<const Ir*>& sites, const Ir*& current) {
    current = &ir;
    switch (ir.form) {
    case Ir::Form::Action: b.action(ir.name, ir.bindings); break;
    case Ir::Form::Condition: b.condition(ir.name, ir.bindings); break;
    case Ir::Form::Check: b.check(ir.check_key, ir.check_expected); break;
    case Ir::Form::Predicate: b.condition(*ir.predicate); break;
    case Ir::Form::SubTree: b.subtree(ir.inner, ir.remap); break;
    case Ir::Form::Builtin:
        switch (ir.kind) {
        case NodeKind::Sequence: b.sequence(); break;
        case NodeKind::Filter: b.filter(); break;
        case NodeKind::ReactiveSequence: b.reactive_sequence(); break;
        case NodeKind::Selector: b.selector(); break;
        case NodeKind::ActiveSelector: b.active_selector(); break;
        case NodeKind::PrioritySelector: b.priority_selector(); break;
        case NodeKind::NonPrioritySelector: b.non_priority_selector(); break;
        case NodeKind::RandomSelector: b.random_selector(); break;
        case NodeKind::WeightedSelector: b.weighted_selector(ir.weights); break;
        case NodeKind::Parallel: b.parallel(*ir.success, *ir.failure); break;
        case NodeKind::Monitor: b.monitor(*ir.success, *ir.failure); break;
        case NodeKind::Inverter: b.inverter(); break;
        case NodeKind::ForceSuccess: b.force_success(); break;
        case NodeKind::ForceFailure: b.force_failure(); break;
        case NodeKind::Repeat: b.repeat(ir.count); break;
        case NodeKind::Retry: b.retry(ir.count); break;
        case NodeKind::Loop: b.loop(ir.count); break;
        case NodeKind::Cooldown: b.cooldown(Duration(ir.duration)); break;
        case NodeKind::Timeout: b.timeout(Duration(ir.duration)); break;
        case NodeKind::Delay: b.delay(Duration(ir.duration)); break;
        case NodeKind::AlwaysSuccess: b.always_success(); break;
        case NodeKind::AlwaysFailure: b.always_failure(); break;
        case NodeKind::Wait: b.wait(Duration(ir.duration)); break;
        case NodeKind::Action:
        case NodeKind::Condition: break;  // not builtins
        }
        break;
    }
    const std::size_t added = ir.form == Ir::Form::SubTree ? ebt::detail::EngineAccess::tree_data(ir.inner).source.size() : 1;
    for (std::size_t i = 0; i < added; ++i) sites.push_back(&ir);

    if (ir.label) b.label(*ir.label);
    if (ir.precondition) b.precondition(*ir.precondition);
    if (ir.abort) b.abort(*ir.abort);
    else if (ir.inner_abort) b.abort(*ir.inner_abort);
    for (const auto& [n, v] : ir.attributes) ebt::detail::BuilderAccess::attribute(b, n, v);
    for (const auto& [port, text] : ir.literals) ebt::detail::BuilderAccess::port_literal(b, port, text);

    for (const auto& c : ir.children) emit(b, c, sites, current);
    if (!ir.children.empty()) {
        current = &ir;
        b.back();
    }
}

}  // namespace ebt::xml::detail
