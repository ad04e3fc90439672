// The XML loader's documents: opening the main file or string and its <include>s (size, cycles,
// each file read once), parsing them with pugixml, checking the structure of <root> and collecting
// its BehaviorTrees; and positions: file:line:column of elements and attributes, and the exact
// message of a malformed document.
#include "xml/loader_session.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <system_error>

namespace ebt::xml::detail {

Site element_site(const Document& doc, const pugi::xml_node& node) {
    const std::ptrdiff_t off = node.offset_debug();
    if (off <= 0) return {&doc, 0};
    // offset_debug points at the name: step back to the '<'
    return {&doc, (node.type() == pugi::node_element && doc.text[static_cast<std::size_t>(off) - 1] == '<') ? off - 1 : off};
}

namespace {

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

}  // namespace

Site attribute_site(const Document& doc, const pugi::xml_node& node, std::string_view name) {
    Site site = element_site(doc, node);
    scan_attributes(doc, node, [&](std::string_view attr, std::ptrdiff_t offset) {
        if (attr != name) return false;
        site.offset = offset;
        return true;
    });
    return site;
}

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

}  // namespace ebt::xml::detail
