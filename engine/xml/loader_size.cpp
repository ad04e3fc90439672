// The XML loader's size check: the depth and node count of a tree with its subtrees expanded,
// measured on the elements before anything is built, and the error at the first element past
// limits::kMaxDepth or limits::kMaxNodes. Walks without recursion (a file may nest elements far
// deeper than any limit).
#include "xml/loader_session.hpp"

#include <ebt/limits.hpp>

#include <algorithm>

namespace ebt::xml::detail {

namespace {

constexpr std::uint64_t kSaturated = std::uint64_t{1} << 62;  // "more than any limit", without overflow

std::uint64_t add_saturated(std::uint64_t a, std::uint64_t b) { return a + b > kSaturated ? kSaturated : a + b; }

pugi::xml_node first_element(const pugi::xml_node& n) {
    for (pugi::xml_node c = n.first_child(); c; c = c.next_sibling())
        if (c.type() == pugi::node_element) return c;
    return {};
}
pugi::xml_node next_element(const pugi::xml_node& n) {
    for (pugi::xml_node c = n.next_sibling(); c; c = c.next_sibling())
        if (c.type() == pugi::node_element) return c;
    return {};
}

// Visits the node elements of BehaviorTree element `bt` in document order with their level (a root
// is level 1), without recursion (a file may nest elements far deeper than any limit). The children
// of a <SubTree> (an error reported by the build) are not visited. `visit(element, level)` returns
// false to stop the walk.
template <class Visit> void walk_nodes(const pugi::xml_node& bt, Visit&& visit) {
    for (pugi::xml_node top = first_element(bt); top; top = next_element(top)) {
        if (std::string_view(top.name()) == "Blackboard") continue;
        pugi::xml_node n = top;
        std::uint64_t level = 1;
        for (;;) {
            if (!visit(n, level)) return;
            pugi::xml_node child = std::string_view(n.name()) == "SubTree" ? pugi::xml_node() : first_element(n);
            if (child) {
                n = child;
                ++level;
                continue;
            }
            while (n != top && !next_element(n)) {
                n = n.parent();
                --level;
            }
            if (n == top) break;
            n = next_element(n);
        }
    }
}

}  // namespace

// The size of `subtree`'s tree, or nullptr when the build reports the use instead (an unknown ID, a
// cycle, subtrees nested too deeply): it then counts as one node.
const Session::Size* Session::measurable(const pugi::xml_node& subtree) {
    const std::string_view id = subtree.attribute("ID").value();
    if (!tree_index_.count(id) || static_cast<int>(measuring_.size()) >= kMaxSubtreeDepth ||
        std::find(measuring_.begin(), measuring_.end(), id) != measuring_.end())
        return nullptr;
    const std::string key(id);
    measure(key);
    return &sizes_.at(key);
}

Session::Size Session::measure(const std::string& id) {
    if (auto it = sizes_.find(id); it != sizes_.end()) return it->second;
    measuring_.push_back(id);
    Size size;
    walk_nodes(trees_[tree_index_.at(id)].element, [&](const pugi::xml_node& el, std::uint64_t level) {
        const Size* inner = std::string_view(el.name()) == "SubTree" ? measurable(el) : nullptr;
        // An inlined subtree's root takes the place of the <SubTree>.
        size.nodes = add_saturated(size.nodes, inner ? inner->nodes : 1);
        size.depth = std::max(size.depth, add_saturated(level - 1, inner ? inner->depth : 1));
        return true;
    });
    measuring_.pop_back();
    sizes_.emplace(id, size);
    return size;
}

// Refuses tree `id` when, with its subtrees expanded, it is deeper than limits::kMaxDepth or has
// more than limits::kMaxNodes nodes, at the first element (in document order, subtrees expanded)
// past the limit. Called before the tree is built: a small file cannot make the build deep or big.
void Session::check_size(const std::string& id) {
    const Size size = measure(id);
    if (size.depth > limits::kMaxDepth) find_too_deep(id, id, 0);
    if (size.nodes > limits::kMaxNodes) find_too_many(id, id, 0);
}

// Finds the first element of tree `id` (inlined `above` levels down in tree `root`) past the depth
// limit, and fails there.
void Session::find_too_deep(const std::string& root, const std::string& id, std::uint64_t above) {
    const TreeDef& def = trees_[tree_index_.at(id)];
    measuring_.push_back(id);
    walk_nodes(def.element, [&](const pugi::xml_node& el, std::uint64_t level) {
        const Size* inner = std::string_view(el.name()) == "SubTree" ? measurable(el) : nullptr;
        if (inner && above + level - 1 + inner->depth > limits::kMaxDepth) {
            find_too_deep(root, el.attribute("ID").value(), above + level - 1);
            return false;
        }
        if (above + level > limits::kMaxDepth)
            fail_at(element_site(*def.doc, el), id, "",
                    "the tree is deeper than " + std::to_string(limits::kMaxDepth) +
                        " levels with its subtrees expanded (limits::kMaxDepth): this node is at level " +
                        std::to_string(above + level) + " of tree '" + root + "'");
        return true;
    });
    measuring_.pop_back();
}

// Finds the first element of tree `id` (inlined after `before` nodes of tree `root`) past the node
// limit, and fails there.
void Session::find_too_many(const std::string& root, const std::string& id, std::uint64_t before) {
    const TreeDef& def = trees_[tree_index_.at(id)];
    measuring_.push_back(id);
    std::uint64_t count = before;
    walk_nodes(def.element, [&](const pugi::xml_node& el, std::uint64_t) {
        const Size* inner = std::string_view(el.name()) == "SubTree" ? measurable(el) : nullptr;
        if (inner && count + inner->nodes > limits::kMaxNodes) {
            find_too_many(root, el.attribute("ID").value(), count);
            return false;
        }
        count += inner ? inner->nodes : 1;
        if (count > limits::kMaxNodes)
            fail_at(element_site(*def.doc, el), id, "",
                    "the tree has more than " + std::to_string(limits::kMaxNodes) +
                        " nodes with its subtrees expanded (limits::kMaxNodes): this node is number " + std::to_string(count) +
                        " of tree '" + root + "'");
        return true;
    });
    measuring_.pop_back();
}

}  // namespace ebt::xml::detail
