// The XML loader: BehaviorTree.CPP v4 documents (plus ebt's own nodes and attributes) to ebt Trees.
//
// A load opens the document and its includes (checking their structure and collecting the
// BehaviorTree elements and the TreeNodesModel), then builds the requested tree in two passes over
// its elements: the first classifies every node, checks its attributes and children and collects
// the blackboard keys it uses (so that their types are known before anything is built); the
// second drives a TreeBuilder. SubTrees are built the same way, recursively, and inlined with
// TreeBuilder::subtree. Every problem is reported as a LoadError at a file:line:column.
#include "xml/xml_internal.hpp"

#include <ebt/limits.hpp>

#include <pugixml.hpp>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <new>
#include <set>
#include <sstream>
#include <system_error>

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

namespace {

constexpr int kMaxSubtreeDepth = 64;      // nesting of SubTree uses
constexpr int kMaxIncludeDepth = 32;
constexpr std::uintmax_t kMaxFileBytes = 64u << 20;

// ---- documents and positions ------------------------------------------------------------------------

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

struct Site {
    const Document* doc = nullptr;
    std::ptrdiff_t offset = 0;
};

Site element_site(const Document& doc, const pugi::xml_node& node) {
    const std::ptrdiff_t off = node.offset_debug();
    if (off <= 0) return {&doc, 0};
    // offset_debug points at the name: step back to the '<'
    return {&doc, (node.type() == pugi::node_element && doc.text[static_cast<std::size_t>(off) - 1] == '<') ? off - 1 : off};
}

// Calls found(name, offset) for each attribute in the start tag of `node` (scanned from the text),
// until it returns true. False when none did.
template <class Found> bool scan_attributes(const Document& doc, const pugi::xml_node& node, Found&& found) {
    const Site el = element_site(doc, node);
    const std::string& t = doc.text;
    std::size_t i = static_cast<std::size_t>(el.offset);
    if (i >= t.size() || t[i] != '<') return false;
    ++i;
    auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
    while (i < t.size() && !blank(t[i]) && t[i] != '>' && t[i] != '/') ++i;
    while (i < t.size()) {
        while (i < t.size() && blank(t[i])) ++i;
        if (i >= t.size() || t[i] == '>' || t[i] == '/') break;
        const std::size_t name_start = i;
        while (i < t.size() && !blank(t[i]) && t[i] != '=' && t[i] != '>') ++i;
        const std::string_view attr(t.data() + name_start, i - name_start);
        if (found(attr, static_cast<std::ptrdiff_t>(name_start))) return true;
        while (i < t.size() && blank(t[i])) ++i;
        if (i >= t.size() || t[i] != '=') break;
        ++i;
        while (i < t.size() && blank(t[i])) ++i;
        if (i >= t.size() || (t[i] != '"' && t[i] != '\'')) break;
        const char quote = t[i++];
        while (i < t.size() && t[i] != quote) ++i;
        ++i;
    }
    return false;
}

// The position of attribute `name` in the start tag of `node`, or the element's position.
Site attribute_site(const Document& doc, const pugi::xml_node& node, std::string_view name) {
    Site site = element_site(doc, node);
    scan_attributes(doc, node, [&](std::string_view attr, std::ptrdiff_t offset) {
        if (attr != name) return false;
        site.offset = offset;
        return true;
    });
    return site;
}

// The positions of all attributes of `node`, in one scan (for an element with many of them).
std::map<std::string_view, Site> attribute_sites(const Document& doc, const pugi::xml_node& node) {
    std::map<std::string_view, Site> sites;
    scan_attributes(doc, node, [&](std::string_view attr, std::ptrdiff_t offset) {
        sites.emplace(attr, Site{&doc, offset});
        return false;
    });
    return sites;
}

[[noreturn]] void fail_at(const Site& site, const std::string& tree, const std::string& path, const std::string& problem) {
    if (!site.doc) throw LoadError("<unknown>", 1, 1, tree, path, problem);
    const auto [line, column] = site.doc->locate(site.offset);
    throw LoadError(site.doc->name, line, column, tree, path, problem);
}

std::string where(const Site& site) {
    if (!site.doc) return "?";
    const auto [line, column] = site.doc->locate(site.offset);
    return site.doc->name + ":" + std::to_string(line) + ":" + std::to_string(column);
}

// For pugixml's "Start-end tags mismatch": which element was left open, where it was opened and
// which end tag (or the end of the document) met it. Scans the tags from the start (comments, CDATA,
// processing instructions, declarations and quoted attribute values skipped) up to the first end tag
// that does not close the innermost open element. False when the scan does not agree with pugixml's
// error offset (then its own message is used).
bool explain_mismatch(const Document& doc, std::ptrdiff_t error_offset, Site& site, std::string& problem) {
    const std::string& t = doc.text;
    struct Open {
        std::string name;
        std::size_t offset;
    };
    std::vector<Open> open;
    auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
    auto skip_past = [&](std::size_t from, std::string_view end) {
        const std::size_t at = t.find(end, from);
        return at == std::string::npos ? t.size() : at + end.size();
    };
    auto position = [&](std::size_t offset) {
        const auto [line, column] = doc.locate(static_cast<std::ptrdiff_t>(offset));
        return "line " + std::to_string(line) + ", column " + std::to_string(column);
    };
    std::size_t i = 0;
    while (i < t.size()) {
        if (t[i] != '<') {
            ++i;
        } else if (t.compare(i, 4, "<!--") == 0) {
            i = skip_past(i + 4, "-->");
        } else if (t.compare(i, 9, "<![CDATA[") == 0) {
            i = skip_past(i + 9, "]]>");
        } else if (t.compare(i, 2, "<?") == 0) {
            i = skip_past(i + 2, "?>");
        } else if (t.compare(i, 2, "<!") == 0) {  // <!DOCTYPE ...>, with an internal subset in [ ]
            int brackets = 0;
            for (i += 2; i < t.size() && (t[i] != '>' || brackets > 0); ++i) brackets += t[i] == '[' ? 1 : t[i] == ']' ? -1 : 0;
            ++i;
        } else if (t.compare(i, 2, "</") == 0) {
            const std::size_t start = i;
            std::size_t j = i + 2;
            while (j < t.size() && !blank(t[j]) && t[j] != '>') ++j;
            const std::string name = t.substr(i + 2, j - i - 2);
            const std::size_t end = skip_past(j, ">");
            if (!open.empty() && open.back().name == name) {
                open.pop_back();
                i = end;
                continue;
            }
            if (error_offset < static_cast<std::ptrdiff_t>(start) || error_offset > static_cast<std::ptrdiff_t>(end)) return false;
            const std::string closing = "</" + name + "> at " + position(start);
            if (open.empty()) {
                site = {&doc, static_cast<std::ptrdiff_t>(start)};
                problem = "malformed XML: </" + name + "> closes no open element";
                return true;
            }
            site = {&doc, static_cast<std::ptrdiff_t>(open.back().offset)};
            problem = "malformed XML: <" + open.back().name + "> is not closed (" + closing +
                      (open.size() >= 2 && open[open.size() - 2].name == name ? " ends its parent)" : " does not match it)");
            return true;
        } else {
            const std::size_t start = i;
            std::size_t j = i + 1;
            while (j < t.size() && !blank(t[j]) && t[j] != '>' && t[j] != '/') ++j;
            std::string name = t.substr(i + 1, j - i - 1);
            char quote = 0;
            for (; j < t.size() && (quote || t[j] != '>'); ++j)
                if (quote ? t[j] == quote : (t[j] == '"' || t[j] == '\'')) quote = quote ? 0 : t[j];
            if (j >= t.size()) return false;
            if (t[j - 1] != '/') open.push_back({std::move(name), start});
            i = j + 1;
        }
    }
    if (open.empty()) return false;
    site = {&doc, static_cast<std::ptrdiff_t>(open.back().offset)};
    problem = "malformed XML: <" + open.back().name + "> is not closed (the document ends at " + position(t.size()) + ")";
    return true;
}

bool blank_text(const char* s) {
    for (; *s; ++s)
        if (*s != ' ' && *s != '\t' && *s != '\n' && *s != '\r') return false;
    return true;
}

std::string quoted_list(const std::vector<std::string>& names) {
    std::string s;
    for (const auto& n : names) s += (s.empty() ? "" : " ") + n;
    return s.empty() ? "none" : s;
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool ends_with(std::string_view s, std::string_view p) { return s.size() >= p.size() && s.substr(s.size() - p.size()) == p; }

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

// ---- port defaults ---------------------------------------------------------------------------------------

// A registered port default as XML writes it: "{=}", "{key}" or the literal.
std::string port_default_text(const PortSpec& p) {
    switch (p.fallback.kind) {
    case PortDefault::Kind::Key: return p.fallback.key == p.name ? "{=}" : "{" + p.fallback.key + "}";
    case PortDefault::Kind::Value: return p.fallback.text;
    case PortDefault::Kind::None: break;
    }
    return {};
}

// Whether a model's default="..." for port `p` means the registered default: the same key ({=} is
// the port's name) or a literal of the same value.
bool same_default(const PortSpec& p, std::string_view text) {
    const PortDefault& d = p.fallback;
    const bool key = text.size() >= 2 && text.front() == '{' && text.back() == '}';
    if (d.kind == PortDefault::Kind::Key) {
        if (!key) return false;
        const std::string_view name = text.substr(1, text.size() - 2);
        return name == "=" ? d.key == p.name : name == d.key;
    }
    if (d.kind == PortDefault::Kind::Value) {
        if (key) return false;
        std::vector<std::byte> value(p.type->size);
        return parse_value(p.type, text, value.data()) && value == d.value;
    }
    return false;
}

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
};

struct KeyDecl {
    std::string name;
    const TypeInfo* type = nullptr;
    std::vector<std::byte> initial;  // empty: zero
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

using Overrides = std::map<std::string, std::vector<std::byte>, std::less<>>;

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

class Session {
public:
    Session(const Registry& registry, const LoaderOptions& options) : reg_(registry), opt_(options) {}

    void open_file(const fs::path& path, const Site* from, int depth);
    void open_text(std::string_view text, std::string name);
    Tree load(std::string_view tree_id);
    std::vector<std::string> ids() const {
        std::vector<std::string> v;
        for (const auto& t : trees_) v.push_back(t.id);
        return v;
    }

private:
    void read(std::unique_ptr<Document> doc, int depth);
    void read_model(const Document& doc, const pugi::xml_node& model);

    // The size of a tree with its subtrees expanded, measured on the elements before anything is
    // built (limits.hpp: depth and node count).
    struct Size {
        std::uint64_t nodes = 0;
        std::uint64_t depth = 0;
    };
    Size measure(const std::string& id);
    const Size* measurable(const pugi::xml_node& subtree);
    void check_size(const std::string& id);
    void find_too_deep(const std::string& root, const std::string& id, std::uint64_t above);
    void find_too_many(const std::string& root, const std::string& id, std::uint64_t before);

    Built build(const std::string& id, const Site& use, const std::string& user_tree, const std::string& user_path,
                const Overrides* overrides, bool as_subtree);
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
    std::string declare_literal(Ctx& ctx, const std::string& port, const TypeInfo* type, std::string_view text,
                                const Site& site, const std::string& path, const std::string& what);
    void emit(TreeBuilder& b, const Ir& ir, std::vector<const Ir*>& sites, const Ir*& current);
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

// ---- opening documents -------------------------------------------------------------------------------

void Session::open_file(const fs::path& path, const Site* from, int depth) {
    auto fail_open = [&](const std::string& problem) {
        if (from) fail_at(*from, "", "", problem);
        throw LoadError(path.string(), 1, 1, "", "", problem);
    };
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);
    if (ec || !fs::exists(st)) fail_open("cannot open '" + path.string() + "': no such file");
    if (!fs::is_regular_file(st)) fail_open("cannot open '" + path.string() + "': not a regular file");
    const std::uintmax_t size = fs::file_size(path, ec);
    if (ec) fail_open("cannot open '" + path.string() + "': " + ec.message());
    if (size > kMaxFileBytes) fail_open("'" + path.string() + "' is too large (" + std::to_string(size) + " bytes)");
    fs::path canonical = fs::weakly_canonical(path, ec);
    if (ec) canonical = fs::absolute(path, ec);

    for (const auto& open : include_stack_)
        if (open == canonical) {
            std::string chain;
            for (const auto& p : include_stack_) chain += p.filename().string() + " -> ";
            fail_open("include cycle: " + chain + canonical.filename().string());
        }
    for (const auto& d : docs_)
        if (!d->canonical.empty() && d->canonical == canonical) return;  // included twice: read once

    std::ifstream in(path, std::ios::binary);
    if (!in) fail_open("cannot open '" + path.string() + "'");
    std::ostringstream buffer;
    buffer << in.rdbuf();
    auto doc = std::make_unique<Document>();
    doc->name = path.string();
    doc->dir = path.parent_path();
    doc->canonical = canonical;
    doc->text = buffer.str();
    include_stack_.push_back(canonical);
    read(std::move(doc), depth);
    include_stack_.pop_back();
}

void Session::open_text(std::string_view text, std::string name) {
    auto doc = std::make_unique<Document>();
    doc->name = std::move(name);
    doc->dir = opt_.include_base;
    doc->text = std::string(text);
    read(std::move(doc), 0);
}

void Session::read(std::unique_ptr<Document> owned, int depth) {
    Document& doc = *owned;
    docs_.push_back(std::move(owned));
    doc.index_lines();
    const pugi::xml_parse_result parsed =
        doc.xml.load_buffer(doc.text.data(), doc.text.size(), pugi::parse_default, pugi::encoding_utf8);
    if (!parsed) {
        Site site{&doc, parsed.offset};
        std::string problem = std::string("malformed XML: ") + parsed.description();
        if (parsed.status == pugi::status_end_element_mismatch) explain_mismatch(doc, parsed.offset, site, problem);
        fail_at(site, "", "", problem);
    }

    pugi::xml_node root;
    for (pugi::xml_node n : doc.xml.children()) {
        if (n.type() != pugi::node_element) continue;
        if (root) fail_at(element_site(doc, n), "", "", "a second top-level element <" + std::string(n.name()) + "> (a document has one <root>)");
        root = n;
    }
    if (!root) fail_at({&doc, 0}, "", "", "malformed XML: No document element found");
    // pugixml accepts an attribute given twice; XML does not.
    for (pugi::xml_node n = root; n;) {
        if (n.type() == pugi::node_element && n.first_attribute() && n.first_attribute().next_attribute()) {
            std::vector<std::string_view> names;
            for (pugi::xml_attribute a = n.first_attribute(); a; a = a.next_attribute()) names.emplace_back(a.name());
            std::sort(names.begin(), names.end());
            const auto dup = std::adjacent_find(names.begin(), names.end());
            if (dup != names.end())
                fail_at(attribute_site(doc, n, *dup), "", "", "malformed XML: attribute '" + std::string(*dup) + "' appears twice in <" +
                                                               std::string(n.name()) + ">");
        }
        // pre-order walk without recursion
        if (n.first_child()) {
            n = n.first_child();
        } else {
            while (n && !n.next_sibling() && n != root) n = n.parent();
            n = (n && n != root) ? n.next_sibling() : pugi::xml_node();
        }
    }
    if (std::string_view(root.name()) != "root")
        fail_at(element_site(doc, root), "", "", "the top-level element must be <root>, not <" + std::string(root.name()) + ">");
    if (pugi::xml_attribute format = root.attribute("BTCPP_format")) {
        if (std::string_view(format.value()) != "4")
            fail_at(attribute_site(doc, root, "BTCPP_format"), "", "",
                    "BTCPP_format=\"" + std::string(format.value()) + "\" is not supported (ebt reads version 4)");
    }
    for (pugi::xml_node n : root.children()) {
        if (n.type() == pugi::node_pcdata || n.type() == pugi::node_cdata) {
            if (!blank_text(n.value())) fail_at(element_site(doc, n), "", "", "unexpected text inside <root>");
            continue;
        }
        if (n.type() != pugi::node_element) continue;
        const std::string_view name = n.name();
        const Site site = element_site(doc, n);
        if (name == "BehaviorTree") {
            std::string id = n.attribute("ID").value();
            if (id.empty()) {
                const auto trees = root.children("BehaviorTree");
                const auto count = std::distance(trees.begin(), trees.end());
                if (count > 1 || !n.attribute("ID").empty())
                    fail_at(site, "", "", "<BehaviorTree> needs a non-empty ID attribute");
                id = "MainTree";
            }
            if (!is_identifier(id))
                fail_at(attribute_site(doc, n, "ID"), "", "", "BehaviorTree ID '" + id +
                        "' is not a valid name (no blanks, none of ! & | ^ ( ) { } , = ; \" ' < >, not true or false)");
            auto [it, fresh] = tree_index_.emplace(id, trees_.size());
            if (!fresh)
                fail_at(site, "", "", "duplicate BehaviorTree ID '" + id + "' (first defined at " + where(trees_[it->second].site) + ")");
            trees_.push_back({id, n, &doc, site});
        } else if (name == "TreeNodesModel") {
            for (pugi::xml_node m = n.previous_sibling("TreeNodesModel"); m; m = m.previous_sibling("TreeNodesModel"))
                fail_at(site, "", "", "a second <TreeNodesModel> (first at " + where(element_site(doc, m)) + ")");
            read_model(doc, n);
        } else if (name == "include") {
            if (n.attribute("ros_pkg")) fail_at(attribute_site(doc, n, "ros_pkg"), "", "", "<include ros_pkg> is not supported");
            const std::string path = n.attribute("path").value();
            if (path.empty()) fail_at(site, "", "", "<include> needs a path attribute");
            if (!opt_.allow_includes) fail_at(site, "", "", "<include> is disabled (LoaderOptions::allow_includes)");
            if (depth >= kMaxIncludeDepth) fail_at(site, "", "", "includes nested too deeply");
            fs::path target(path);
            if (target.is_relative()) target = doc.dir / target;
            open_file(target, &site, depth + 1);
        } else {
            fail_at(site, "", "", "unexpected element <" + std::string(name) +
                                      "> in <root> (expected BehaviorTree, TreeNodesModel or include)");
        }
    }
}

void Session::read_model(const Document& doc, const pugi::xml_node& model) {
    std::map<std::string, Site, std::less<>> seen;
    for (pugi::xml_node n : model.children()) {
        if (n.type() != pugi::node_element) continue;
        const std::string category = n.name();
        const Site site = element_site(doc, n);
        const std::string where_path = "TreeNodesModel/" + category;
        if (category != "Action" && category != "Condition" && category != "Control" && category != "Decorator" &&
            category != "SubTree")
            fail_at(site, "", "", "unexpected <" + category + "> in <TreeNodesModel> (expected Action, Condition, Control, Decorator or SubTree)");
        const std::string id = n.attribute("ID").value();
        if (id.empty()) fail_at(site, "", "", "<" + category + "> in <TreeNodesModel> needs an ID");
        if (auto [it, fresh] = seen.emplace(id, site); !fresh)
            fail_at(site, "", "", "duplicate ID '" + id + "' in <TreeNodesModel> (first at " + where(it->second) + ")");

        std::vector<ModelPort> ports;
        std::set<std::string> port_names;  // (a set: a model entry may list thousands of ports)
        for (pugi::xml_node p : n.children()) {
            if (p.type() != pugi::node_element) continue;
            const std::string kind = p.name();
            if (kind != "input_port" && kind != "output_port" && kind != "inout_port") continue;  // editor metadata
            ModelPort port;
            port.name = p.attribute("name").value();
            port.direction = kind;
            port.type = p.attribute("type").value();
            if (pugi::xml_attribute d = p.attribute("default")) port.default_value = d.value();
            port.site = element_site(doc, p);
            if (port.name.empty()) fail_at(port.site, "", "", "<" + kind + "> of '" + id + "' in <TreeNodesModel> needs a name");
            if (!port_names.insert(port.name).second)
                fail_at(port.site, "", "", "port '" + port.name + "' of '" + id + "' is listed twice in <TreeNodesModel>");
            ports.push_back(std::move(port));
        }

        if (category == "SubTree") {
            subtree_models_[id] = std::move(ports);
            continue;
        }
        // Registered nodes: the model must agree with the registry.
        if (category == "Action" || category == "Condition") model_ids_.emplace(id, site);
        const ActionSpec* action = reg_.find_action(id);
        const ConditionSpec* condition = reg_.find_condition(id);
        if (!action && !condition) continue;  // not ours: an editor palette entry
        if (category == "Action" && !action)
            fail_at(site, "", "", "<TreeNodesModel> declares '" + id + "' as an Action, but it is registered as a condition");
        if (category == "Condition" && !condition)
            fail_at(site, "", "", "<TreeNodesModel> declares '" + id + "' as a Condition, but it is registered as an action");
        if (category != "Action" && category != "Condition")
            fail_at(site, "", "", "<TreeNodesModel> declares '" + id + "' as a " + category + ", but it is a registered " +
                                      (action ? "action" : "condition"));
        const std::vector<PortSpec>& spec_ports = category == "Action" ? action->ports : condition->ports;
        for (const auto& port : ports) {
            auto it = std::find_if(spec_ports.begin(), spec_ports.end(), [&](const PortSpec& p) { return p.name == port.name; });
            if (it == spec_ports.end())
                fail_at(port.site, "", "", "<TreeNodesModel> lists port '" + port.name + "' of '" + id + "', which the registered " +
                                               (category == "Action" ? "action" : "condition") + " does not have");
            if (!port.type.empty() && port.type != it->type->name)
                fail_at(port.site, "", "", "<TreeNodesModel> gives port '" + port.name + "' of '" + id + "' the type " + port.type +
                                               ", but it is registered as " + it->type->name);
            if (port.default_value && !same_default(*it, *port.default_value)) {
                const std::string registered = it->fallback.kind == PortDefault::Kind::None
                                                   ? "without a default"
                                                   : "with \"" + port_default_text(*it) + "\"";
                fail_at(port.site, "", "", "<TreeNodesModel> gives port '" + port.name + "' of '" + id + "' the default \"" +
                                               *port.default_value + "\", but it is registered " + registered);
            }
        }
    }
}

// ---- the size of a tree, subtrees expanded ---------------------------------------------------------------

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

std::string Session::declare_literal(Ctx& ctx, const std::string& port, const TypeInfo* type, std::string_view text,
                                     const Site& site, const std::string& path, const std::string& what) {
    if (!builtin_type(type->name) || builtin_type(type->name) != type)
        fail(site, ctx, path, what + " has type " + type->name + ", which has no literal form: bind it to a key with {key}");
    std::vector<std::byte> value(type->size);
    if (!parse_value(type, text, value.data()))
        fail(site, ctx, path, what + ": '" + std::string(text) + "' is not a valid " + type->name);
    KeyDecl k;
    k.name = "=" + port + "#" + std::to_string(ctx.literals++);
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
                 "unknown type '" + type + "' (bool, int, unsigned, long, long long, float, double, or the type of a registered port)");
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
            if (builtin_type(k.type->name) != k.type)
                fail(attribute_site(doc, e, "default"), ctx, path, "key '" + key + "' of type " + type + " cannot have a default in XML");
            k.initial.resize(k.type->size);
            if (!parse_value(k.type, d.value(), k.initial.data()))
                fail(attribute_site(doc, e, "default"), ctx, path,
                     "default '" + std::string(d.value()) + "' of key '" + key + "' is not a valid " + type);
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
        p = parse_expression(code, reg_, uses);
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
                                         "=\"{=}\" (the key '" + p.name + "') or a literal value");
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
            const std::string key = declare_literal(ctx, p.name, p.type, value, site, ir.path, port_what);
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
            if (builtin_type(type->name) != type)
                fail(site_of(g), ctx, ir.path, what + " has type " + type->name + ", which has no literal form: remap it to a key with {key}");
            std::vector<std::byte> value(type->size);
            if (!parse_value(type, g.value, value.data()))
                fail(site_of(g), ctx, ir.path, what + ": '" + g.value + "' is not a valid " + type->name);
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
            if (k.scope.empty()) b.declare_key(k.name, k.type, initial);
            else b.declare_shared_key(k.scope, k.shared_name, k.type, initial);
            if (!k.literal && k.scope.empty()) built.own_keys.emplace_back(k.name, k.type);
        }
        emit(b, root, sites, current);
        ending = true;
        built.tree = b.end();
    } catch (const LoadError&) {
        throw;
    } catch (const BuildError& e) {
        const TreeBuilder::ErrorDetail& detail = b.last_error();
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
    const std::size_t added = ir.form == Ir::Form::SubTree ? ir.inner.data().source.size() : 1;
    for (std::size_t i = 0; i < added; ++i) sites.push_back(&ir);

    if (ir.label) b.label(*ir.label);
    if (ir.precondition) b.precondition(*ir.precondition);
    if (ir.abort) b.abort(*ir.abort);
    else if (ir.inner_abort) b.abort(*ir.inner_abort);
    for (const auto& [n, v] : ir.attributes) b.attribute(n, v);
    for (const auto& [port, text] : ir.literals) b.port_literal(port, text);

    for (const auto& c : ir.children) emit(b, c, sites, current);
    if (!ir.children.empty()) {
        current = &ir;
        b.back();
    }
}

Tree Session::load(std::string_view tree_id) {
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

}  // namespace

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
