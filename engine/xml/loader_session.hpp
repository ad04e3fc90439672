// What the parts of the XML loader share (private to the engine): the documents of one load and
// positions in them, the form of a tree between the loader's two passes, and Session, one load.
//
// The loader is split by job, each file implementing its part of Session:
//   loader.cpp           the public Loader and LoadError; picks the tree to load
//   loader_document.cpp  opening the document and its includes, positions (file:line:column)
//   loader_model.cpp     reading a <TreeNodesModel> and checking it against the registry
//   loader_size.cpp      a tree's depth and node count with its subtrees expanded, before building
//   loader_analyze.cpp   pass 1: classify each element, check its attributes, children and keys
//   loader_build.cpp     building one tree: pass 1, then pass 2 drives a TreeBuilder
#pragma once

#include "xml/xml_internal.hpp"

#include <pugixml.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ebt::xml::detail {

namespace fs = std::filesystem;

inline constexpr int kMaxSubtreeDepth = 64;      // nesting of SubTree uses
inline constexpr int kMaxIncludeDepth = 32;
inline constexpr std::uintmax_t kMaxFileBytes = 64u << 20;

// ---- documents and positions (loader_document.cpp) ------------------------------------------------------

/// One XML file (or string) of a load, with its text kept for positions. Owned by the Session.
struct Document {
    std::string name;        // as shown in messages
    fs::path dir;            // base of relative includes
    fs::path canonical;      // empty for text documents
    std::string text;
    pugi::xml_document xml;
    std::vector<std::size_t> line_starts;

    void index_lines() {
        line_starts.assign(1, 0);
        for (std::size_t i = 0; i < text.size(); ++i)
            if (text[i] == '\n') line_starts.push_back(i + 1);
    }
    std::pair<int, int> locate(std::ptrdiff_t offset) const {
        const std::size_t off = offset < 0 ? 0 : std::min(static_cast<std::size_t>(offset), text.size());
        const auto it = std::upper_bound(line_starts.begin(), line_starts.end(), off);
        const std::size_t line = static_cast<std::size_t>(it - line_starts.begin());  // 1-based
        const std::size_t start = line_starts[line - 1];
        int column = 1;
        for (std::size_t i = start; i < off; ++i)
            if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) ++column;
        return {static_cast<int>(line), column};
    }
};

/// A position in a document: a byte offset, shown as line:column.
struct Site {
    const Document* doc = nullptr;
    std::ptrdiff_t offset = 0;
};

/// The position of `node` (its '<').
Site element_site(const Document& doc, const pugi::xml_node& node);
/// The position of attribute `name` in the start tag of `node`, or the element's position.
Site attribute_site(const Document& doc, const pugi::xml_node& node, std::string_view name);
/// The positions of all attributes of `node`, in one scan (for an element with many of them).
std::map<std::string_view, Site> attribute_sites(const Document& doc, const pugi::xml_node& node);
/// Throws the LoadError for `problem` at `site` (tree and node path may be empty).
[[noreturn]] void fail_at(const Site& site, const std::string& tree, const std::string& path, const std::string& problem);
/// "file:line:column" of `site`, for messages that point at a second place.
std::string where(const Site& site);

// ---- small text helpers --------------------------------------------------------------------------------

inline bool blank_text(const char* s) {
    for (; *s; ++s)
        if (*s != ' ' && *s != '\t' && *s != '\n' && *s != '\r') return false;
    return true;
}

inline std::string quoted_list(const std::vector<std::string>& names) {
    std::string s;
    for (const auto& n : names) s += (s.empty() ? "" : " ") + n;
    return s.empty() ? "none" : s;
}

inline bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
inline bool ends_with(std::string_view s, std::string_view p) { return s.size() >= p.size() && s.substr(s.size() - p.size()) == p; }

// ---- port defaults (loader_model.cpp) -------------------------------------------------------------------

// A registered port default as XML writes it: "{=}", "{key}" or the literal.
std::string port_default_text(const PortSpec& p);

// ---- what a tree is made of -----------------------------------------------------------------------------

struct TreeDef {
    std::string id;
    pugi::xml_node element;
    const Document* doc;
    Site site;
};

struct ModelPort {
    std::string name;
    std::string direction;
    std::string type;
    std::optional<std::string> default_value;
    Site site;
    // ebt's parameter rules as the model export writes them (docs/parameters.md); absent in files
    // from other tools. The description (the element's text) is not kept: the registry's is the one used.
    std::optional<std::string> min, max, one_of, required;
};

struct KeyDecl {
    std::string name;
    const TypeInfo* type = nullptr;
    Value initial;                   // empty: the type's T{}
    std::string scope;               // shared scope, or empty
    std::string shared_name;
    Site site;
    bool declared = false;           // in a <Blackboard> (else inferred from a use, or a literal)
    bool literal = false;
};

// One node after the first pass.
struct Ir {
    enum class Form { Builtin, Action, Condition, Check, Predicate, SubTree };
    Form form = Form::Builtin;
    NodeKind kind = NodeKind::Sequence;
    Site site;
    std::string path;
    std::string name;  // action / condition name, or the SubTree ID
    std::optional<std::string> label;
    std::optional<Threshold> success, failure;
    int count = 0;
    std::int64_t duration = 0;
    std::vector<double> weights;
    std::string check_key;
    bool check_expected = true;
    std::optional<Predicate> predicate;
    std::optional<Predicate> precondition;
    std::optional<AbortMode> abort;
    Bindings bindings;
    std::vector<std::pair<std::string, std::string>> literals;
    std::vector<std::pair<std::string, std::string>> attributes;
    Tree inner;
    std::optional<AbortMode> inner_abort;
    std::vector<std::pair<std::string, std::string>> remap;
    std::vector<Ir> children;
};

struct Built {
    Tree tree;
    std::optional<AbortMode> root_abort;  // a subtree's root _abort, applied where it is inlined
    std::vector<std::pair<std::string, const TypeInfo*>> own_keys;  // local keys the tree declared itself
};

using Overrides = std::map<std::string, Value, std::less<>>;

struct Ctx {
    const TreeDef* def = nullptr;
    std::string id;
    bool strict = false;
    std::vector<KeyDecl> keys;
    std::map<std::string, std::size_t, std::less<>> index;
    const Overrides* overrides = nullptr;
    int literals = 0;
};

// ---- the session: one load -------------------------------------------------------------------------------

/// One load: owns the documents it opened and the trees it built, used once by one Loader call
/// (Loader::load_file, load_string, tree_ids) and then dropped. Its members are implemented in the
/// loader_*.cpp file named in each group below.
class Session {
public:
    Session(const Registry& registry, const LoaderOptions& options) : reg_(registry), opt_(options) {}

    // loader_document.cpp
    void open_file(const fs::path& path, const Site* from, int depth);
    void open_text(std::string_view text, std::string name);
    // loader.cpp
    Tree load(std::string_view tree_id);
    std::vector<std::string> ids() const {
        std::vector<std::string> v;
        for (const auto& t : trees_) v.push_back(t.id);
        return v;
    }

private:
    // loader_document.cpp
    void read(std::unique_ptr<Document> doc, int depth);
    // loader_model.cpp
    void read_model(const Document& doc, const pugi::xml_node& model);

    // loader_size.cpp: the size of a tree with its subtrees expanded, measured on the elements
    // before anything is built (limits.hpp: depth and node count).
    struct Size {
        std::uint64_t nodes = 0;
        std::uint64_t depth = 0;
    };
    Size measure(const std::string& id);
    const Size* measurable(const pugi::xml_node& subtree);
    void check_size(const std::string& id);
    void find_too_deep(const std::string& root, const std::string& id, std::uint64_t above);
    void find_too_many(const std::string& root, const std::string& id, std::uint64_t before);

    // loader_build.cpp
    Built build(const std::string& id, const Site& use, const std::string& user_tree, const std::string& user_path,
                const Overrides* overrides, bool as_subtree);
    void emit(TreeBuilder& b, const Ir& ir, std::vector<const Ir*>& sites, const Ir*& current);

    // loader_analyze.cpp
    void read_blackboard(Ctx& ctx, const Document& doc, const pugi::xml_node& bb);
    Ir analyze(Ctx& ctx, const Document& doc, const pugi::xml_node& el, const std::string& path, int depth);
    void analyze_builtin(Ctx& ctx, const Document& doc, const pugi::xml_node& el, Ir& ir,
                         std::vector<pugi::xml_attribute>& rest);
    void analyze_ports(Ctx& ctx, const Document& doc, const pugi::xml_node& el, Ir& ir, const std::vector<PortSpec>& ports,
                       bool is_condition, std::vector<pugi::xml_attribute>& rest);
    void analyze_subtree(Ctx& ctx, const Document& doc, const pugi::xml_node& el, Ir& ir, std::vector<pugi::xml_attribute>& rest);
    Predicate expression(Ctx& ctx, const Document& doc, const pugi::xml_node& el, const Ir& ir, const char* attr,
                         std::string_view code);
    void use_key(Ctx& ctx, const std::string& key, const TypeInfo* type, const Site& site, const std::string& path,
                 const std::string& what, bool declare_always = false);
    /// Declares the private constant key holding literal `text` for port `p`, after checking that it
    /// parses as the port's type and is one of the values the port allows (PortSpec::range / one_of).
    std::string declare_literal(Ctx& ctx, const PortSpec& p, std::string_view text, const Site& site, const std::string& path,
                                const std::string& what);
    const TypeInfo* type_named(std::string_view name);

    [[noreturn]] void fail(const Site& site, const Ctx& ctx, const std::string& path, const std::string& problem) const {
        fail_at(site, ctx.id, path, problem);
    }

    const Registry& reg_;
    const LoaderOptions& opt_;
    std::vector<std::unique_ptr<Document>> docs_;
    std::vector<fs::path> include_stack_;
    std::vector<TreeDef> trees_;
    std::map<std::string, std::size_t, std::less<>> tree_index_;
    std::map<std::string, std::vector<ModelPort>, std::less<>> subtree_models_;
    std::map<std::string, Site, std::less<>> model_ids_;  // Action/Condition IDs of the models seen (for hints)
    std::vector<std::string> building_;                     // SubTree IDs being built (cycle check)
    std::vector<std::string> measuring_;                    // SubTree IDs being measured
    std::map<std::string, Size, std::less<>> sizes_;
    std::map<std::string, Built, std::less<>> cache_;
    std::map<std::string, const TypeInfo*, std::less<>> port_types_;
    bool port_types_ready_ = false;
};

}  // namespace ebt::xml::detail
