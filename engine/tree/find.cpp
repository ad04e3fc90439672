// Tree::find: looking a node up by names instead of its pre-order index (see tree.hpp for the rules).
#include "tree/node_path.hpp"
#include "tree/tree_data.hpp"

#include <ebt/detail/engine_access.hpp>

#include <algorithm>
#include <cstddef>
#include <optional>

namespace ebt {

namespace {

/// One '/'-separated part of a path: the name and the required child position ("Wait[2]"), if any.
struct Segment {
    std::string_view name;
    std::optional<std::uint32_t> position;
};

/// Splits the "[i]" suffix off a segment. Text that merely ends in brackets without a number in
/// them stays part of the name.
Segment parse_segment(std::string_view text) {
    Segment s{text, std::nullopt};
    if (text.size() < 3 || text.back() != ']') return s;
    const std::size_t open = text.rfind('[');
    if (open == std::string_view::npos || open == 0) return s;
    const std::string_view digits = text.substr(open + 1, text.size() - open - 2);
    if (digits.empty() || digits.size() > 5 ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return s;
    s.name = text.substr(0, open);
    s.position = static_cast<std::uint32_t>(std::stoul(std::string(digits)));
    return s;
}

/// The distance between two names in single-character edits (Levenshtein), for "closest names".
std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t above = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diagonal = above;
        }
    }
    return row[b.size()];
}

/// Looks nodes up in one tree; a short-lived helper of Tree::find.
class Finder {
public:
    Finder(const Tree& tree, std::string_view path) : tree_(tree), data_(detail::EngineAccess::tree_data(tree)), path_(path) {}

    NodeIndex find() const {
        if (path_.empty()) fail("an empty path names no node");
        const bool from_root = path_.front() == '/';
        std::vector<Segment> segments;
        std::string_view rest = from_root ? path_.substr(1) : path_;
        while (true) {
            const std::size_t slash = rest.find('/');
            const std::string_view text = rest.substr(0, slash);
            if (text.empty()) fail("the path has an empty name (names are separated by single '/')");
            segments.push_back(parse_segment(text));
            if (slash == std::string_view::npos) break;
            rest = rest.substr(slash + 1);
        }

        // matched: the nodes the segments so far lead to, in pre-order.
        std::vector<NodeIndex> matched;
        const auto node_count = static_cast<NodeIndex>(data_.nodes.size());
        for (NodeIndex i = 0; i < node_count; ++i)
            if ((!from_root || i == 0) && matches(i, segments[0])) matched.push_back(i);
        if (matched.empty()) {
            if (from_root) fail("the root is " + tree_.path(0));
            fail("no node is named '" + std::string(segments[0].name) + "'" + closest(segments[0].name));
        }
        for (std::size_t k = 1; k < segments.size(); ++k) {
            std::vector<NodeIndex> next;
            for (NodeIndex i = 0; i < node_count; ++i) {
                if (!matches(i, segments[k])) continue;
                const bool below = std::any_of(matched.begin(), matched.end(), [&](NodeIndex m) {
                    return from_root ? data_.nodes[i].parent == m : (i > m && i < data_.nodes[m].end);
                });
                if (below) next.push_back(i);
            }
            if (next.empty()) fail(not_below(matched, segments[k], from_root));
            matched = std::move(next);
        }
        if (matched.size() > 1) {
            std::string list;
            for (NodeIndex m : matched) list += (list.empty() ? "" : ", ") + tree_.path(m);
            throw UsageError("tree '" + data_.name + "': \"" + std::string(path_) + "\" is ambiguous, it matches " +
                             std::to_string(matched.size()) + " nodes: " + list +
                             " (name a node above it, as in \"parent/name\", or its position, as in \"name[1]\")");
        }
        return matched.front();
    }

private:
    bool matches(NodeIndex i, const Segment& s) const {
        const detail::NodeDef& d = data_.nodes[i];
        if (s.position && (d.parent == kNoNode || d.child_position != *s.position)) return false;
        const std::string label = tree_.label(i);
        if (s.name == label) return true;
        // The form paths print: "Kind 'label'".
        return !d.label.empty() && s.name == detail::format_path_level({d.kind, d.label, -1});
    }

    [[noreturn]] void fail(const std::string& why) const {
        throw UsageError("tree '" + data_.name + "': no node matches \"" + std::string(path_) + "\": " + why);
    }

    std::string describe(const Segment& s) const {
        std::string out = "'" + std::string(s.name) + "'";
        if (s.position) out += " at position " + std::to_string(*s.position);
        return out;
    }

    std::string children_of(NodeIndex m) const {
        std::string list;
        for (NodeIndex c = data_.nodes[m].first_child; c != kNoNode; c = data_.nodes[c].next_sibling)
            list += (list.empty() ? "'" : ", '") + tree_.label(c) + "'";
        return list.empty() ? "it has no children" : "its children are " + list;
    }

    // Why nothing matched `s` below the nodes `above`: what is there instead.
    std::string not_below(const std::vector<NodeIndex>& above, const Segment& s, bool from_root) const {
        std::string out;
        const std::size_t shown = std::min<std::size_t>(above.size(), 3);
        for (std::size_t k = 0; k < shown; ++k) {
            out += (k == 0 ? "" : "; ");
            out += std::string(from_root ? "no child of " : "nothing under ") + tree_.path(above[k]) + " is named " +
                   describe(s) + ", " + children_of(above[k]);
        }
        if (above.size() > shown) out += "; and " + std::to_string(above.size() - shown) + " more";
        return out;
    }

    // The nodes whose names are closest to `name` (up to 3, fewest edits first, then pre-order).
    std::string closest(std::string_view name) const {
        std::vector<std::pair<std::size_t, NodeIndex>> ranked;
        for (NodeIndex i = 0; i < data_.nodes.size(); ++i) ranked.emplace_back(edit_distance(name, tree_.label(i)), i);
        std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
        std::string out;
        for (std::size_t k = 0; k < ranked.size() && k < 3; ++k) {
            const NodeIndex node = ranked[k].second;
            out += (k == 0 ? "; the closest: '" : ", '") + tree_.label(node) + "' (" + tree_.path(node) + ")";
        }
        return out;
    }

    const Tree& tree_;
    const detail::TreeData& data_;
    std::string_view path_;
};

}  // namespace

NodeRef Tree::find(std::string_view path) const {
    if (!data_) throw UsageError("Tree::find() on an empty Tree");
    return NodeRef(Finder(*this, path).find(), data_->schema.tag());
}

NodeRef Tree::node(NodeIndex index) const {
    if (!data_) throw UsageError("Tree::node() on an empty Tree");
    if (index >= data_->nodes.size())
        throw UsageError("tree '" + data_->name + "' has no node " + std::to_string(index) + " (it has " +
                         std::to_string(data_->nodes.size()) + ")");
    return NodeRef(index, data_->schema.tag());
}

}  // namespace ebt
