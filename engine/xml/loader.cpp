// The XML loader's public face: ebt::xml::Loader and LoadError, and Session::load, which picks the
// BehaviorTree to load.
//
// A load opens the document and its includes (checking their structure and collecting the
// BehaviorTree elements and the TreeNodesModel), then builds the requested tree in two passes over
// its elements: the first classifies every node, checks its attributes and children and collects
// the blackboard keys it uses (so that their types are known before anything is built); the
// second drives a TreeBuilder. SubTrees are built the same way, recursively, and inlined with
// TreeBuilder::subtree. Every problem is reported as a LoadError at a file:line:column.
// loader_session.hpp lists the files that do each part.
#include "xml/loader_session.hpp"

#include <new>

namespace ebt::xml {

namespace fs = std::filesystem;
using namespace detail;

namespace {

std::string compose(const std::string& file, int line, int column, const std::string& tree, const std::string& path,
                    const std::string& problem) {
    std::string s = file + ":" + std::to_string(line) + ":" + std::to_string(column) + ": ";
    if (!tree.empty()) {
        s += "tree '" + tree + "'";
        s += path.empty() ? ": " : ", node " + path + ": ";
    }
    return s + problem;
}

}  // namespace

LoadError::LoadError(std::string file, int line, int column, std::string tree, std::string node_path, std::string problem)
    : BuildError(compose(file, line, column, tree, node_path, problem)),
      file_(std::move(file)),
      line_(line),
      column_(column),
      tree_(std::move(tree)),
      node_path_(std::move(node_path)),
      problem_(std::move(problem)) {}

Tree detail::Session::load(std::string_view tree_id) {
    const Document& main = *docs_.front();
    std::string id(tree_id);
    pugi::xml_node root = main.xml.document_element();
    if (id.empty()) id = root.attribute("main_tree_to_execute").value();
    if (id.empty()) {
        if (trees_.empty()) fail_at(element_site(main, root), "", "", "the document defines no <BehaviorTree>");
        if (trees_.size() > 1) {
            fail_at(element_site(main, root), "", "",
                    "several BehaviorTrees (" + quoted_list(ids()) + ") and no main_tree_to_execute: name the tree to load");
        }
        id = trees_.front().id;
    }
    if (!tree_index_.count(id)) {
        const Site site = tree_id.empty() ? attribute_site(main, root, "main_tree_to_execute") : element_site(main, root);
        fail_at(site, "", "", "no BehaviorTree with ID '" + id + "' (defined: " + quoted_list(ids()) + ")");
    }
    check_size(id);
    const TreeDef& def = trees_[tree_index_.at(id)];
    return build(id, def.site, "", "", nullptr, false).tree;
}

// ---- Loader ------------------------------------------------------------------------------------------------

Loader::Loader(const Registry& registry, LoaderOptions options) : registry_(&registry), options_(std::move(options)) {}

// Runs one load; memory exhaustion (a file the limits let through, a huge file) is a LoadError too,
// so that every load problem is one.
template <class Load> static auto guarded(const std::string& source, Load&& load) -> decltype(load()) {
    try {
        return load();
    } catch (const std::bad_alloc&) {
        throw LoadError(source, 1, 1, "", "", "out of memory while loading");
    }
}

Tree Loader::load_file(const fs::path& path, std::string_view tree_id) const {
    return guarded(path.string(), [&] {
        Session s(*registry_, options_);
        s.open_file(path, nullptr, 0);
        return s.load(tree_id);
    });
}

Tree Loader::load_string(std::string_view xml, std::string_view source_name, std::string_view tree_id) const {
    return guarded(std::string(source_name), [&] {
        Session s(*registry_, options_);
        s.open_text(xml, std::string(source_name));
        return s.load(tree_id);
    });
}

std::vector<std::string> Loader::tree_ids(const fs::path& path) const {
    return guarded(path.string(), [&] {
        Session s(*registry_, options_);
        s.open_file(path, nullptr, 0);
        return s.ids();
    });
}

}  // namespace ebt::xml
