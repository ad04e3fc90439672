// TreeBuilder::subtree: inlines another tree's source nodes under the open node, its keys remapped
// to this tree's keys or made private to this use.
#include "tree/builder_internal.hpp"

#include <ebt/detail/engine_access.hpp>
#include <ebt/limits.hpp>

#include <algorithm>
#include <map>

namespace ebt {

using detail::PredOp;
using detail::SourceNode;
using detail::TreeData;

namespace {
std::shared_ptr<const Predicate::Node> remap_predicate(const std::shared_ptr<const Predicate::Node>& p,
                                                       const std::map<std::string, std::string>& names) {
    if (!p) return p;
    auto copy = std::make_shared<Predicate::Node>(*p);
    if (p->op == PredOp::KeyIs || p->op == PredOp::Compare) copy->name = names.at(p->name);
    if (!p->other_key.empty()) copy->other_key = names.at(p->other_key);
    for (auto& b : copy->bindings) b.second = names.at(b.second);
    copy->a = remap_predicate(p->a, names);
    copy->b = remap_predicate(p->b, names);
    return copy;
}
}  // namespace

TreeBuilder& TreeBuilder::subtree(const Tree& tree, std::vector<std::pair<std::string, std::string>> remap) {
    if (!tree) impl_->fail_here("subtree() with an empty Tree");
    const TreeData& inner = detail::EngineAccess::tree_data(tree);
    {
        // The subtree's own depth (its source is in pre-order: a parent comes before its children).
        std::vector<std::uint32_t> depth(inner.source.size(), 1);
        std::uint32_t deepest = 1;
        for (std::uint32_t j = 0; j < inner.source.size(); ++j)
            for (std::uint32_t c : inner.source[j].children) {
                depth[c] = depth[j] + 1;
                deepest = std::max(deepest, depth[c]);
            }
        if (impl_->open.size() + deepest > limits::kMaxDepth)
            impl_->fail_here(detail::BuilderState::depth_problem("subtree '" + inner.name + "' (" + std::to_string(deepest) +
                                                 " levels) would reach depth " + std::to_string(impl_->open.size() + deepest)));
    }
    const std::uint32_t use = impl_->subtree_uses++;
    std::map<std::string, std::string> names;
    for (const auto& [from, to] : remap) {
        const KeyId inner_id = inner.schema.find(from);
        if (inner_id == kNoKey) impl_->fail_here("subtree '" + inner.name + "' has no key '" + from + "' to remap");
        const KeyId outer_id = impl_->schema.find(to);
        if (outer_id == kNoKey)
            impl_->fail_here("subtree '" + inner.name + "': key '" + from + "' is remapped to undeclared key '" + to + "'");
        if (impl_->schema.info(outer_id).type != inner.schema.info(inner_id).type)
            impl_->fail_here("subtree '" + inner.name + "': key '" + from + "' (" + inner.schema.info(inner_id).type->name +
                             ") is remapped to '" + to + "' of type " + impl_->schema.info(outer_id).type->name);
        names[from] = to;
    }
    for (const auto& k : inner.schema.keys()) {
        if (names.count(k.name)) continue;
        if (k.scope != kLocalScope) {
            // Shared keys are not private to the subtree: they name the same shared value everywhere.
            const KeyId outer = impl_->schema.find(k.name);
            if (outer == kNoKey) {
                impl_->schema.declare_shared_raw(inner.schema.scopes()[k.scope], k.shared_name, k.type,
                                                 inner.schema.defaults() + k.offset);
            } else if (impl_->schema.info(outer).type != k.type || impl_->schema.info(outer).scope == kLocalScope) {
                impl_->fail_here("subtree '" + inner.name + "': shared key '" + k.name + "' clashes with this tree's key of the same name");
            }
            names[k.name] = k.name;
            continue;
        }
        std::string private_name = inner.name + "#" + std::to_string(use) + "." + k.name;
        impl_->schema.declare_raw(private_name, k.type, inner.schema.defaults() + k.offset);
        names[k.name] = private_name;
    }
    // Copy the source nodes (pre-order, children as indices) under the open node.
    std::vector<std::uint32_t> mapped(inner.source.size());
    std::vector<std::uint32_t> inner_parent(inner.source.size(), 0);  // each inner node's parent (one pass)
    for (std::uint32_t j = 0; j < inner.source.size(); ++j)
        for (std::uint32_t c : inner.source[j].children) inner_parent[c] = j;
    for (std::uint32_t i = 0; i < inner.source.size(); ++i) {
        SourceNode copy = inner.source[i];
        copy.children.clear();
        for (auto& b : copy.bindings) b.second = names.at(b.second);
        copy.predicate = remap_predicate(copy.predicate, names);
        if (copy.kind == NodeKind::Condition && copy.predicate && copy.predicate->op == PredOp::KeyIs)
            copy.label = (copy.predicate->expected ? "" : "!") + copy.predicate->name;  // label the key it now reads
        if (copy.kind == NodeKind::Condition && copy.predicate && copy.predicate->op == PredOp::Compare &&
            copy.label == detail::comparison_text(*inner.source[i].predicate))
            copy.label = detail::comparison_text(*copy.predicate);
        copy.precondition = remap_predicate(copy.precondition, names);
        if (i == 0) {
            if (copy.label.empty()) copy.label = inner.name;
            mapped[0] = impl_->add(std::move(copy));
        } else {
            const std::uint32_t parent = inner_parent[i];
            const auto new_index = static_cast<std::uint32_t>(impl_->nodes.size());
            impl_->nodes.push_back(std::move(copy));
            impl_->parents.push_back(static_cast<std::int32_t>(mapped[parent]));
            impl_->nodes[mapped[parent]].children.push_back(new_index);
            mapped[i] = new_index;
        }
    }
    // The subtree arrives complete: its root is not left open.
    if (!detail::is_leaf(inner.source[0].kind)) impl_->open.pop_back();
    impl_->last_added = static_cast<std::int32_t>(mapped[0]);
    return *this;
}

}  // namespace ebt
