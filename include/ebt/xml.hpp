// Trees from files: BehaviorTree.CPP v4 XML in, and back out.
//
//   ebt::Registry registry;            // game code registers its actions and conditions
//   ...
//   ebt::xml::Loader loader(registry);
//   ebt::Tree guard = loader.load_file("samples/guard.xml");            // main_tree_to_execute
//   ebt::Tree flee  = loader.load_file("trees.xml", "Flee");             // one BehaviorTree ID
//   ebt::Tree t     = loader.load_string(text, "inline.xml");            // name used in errors
//   std::string xml = ebt::xml::save(guard, registry);                    // + <TreeNodesModel>
//
// The format, the mapping of BehaviorTree.CPP's nodes onto ebt's, every semantic difference and
// ebt's own attributes are documented in docs/xml.md.
//
// Bad input (malformed XML, an unknown node, a wrong child count, a missing or mistyped port, an
// unknown key, a subtree cycle, a duplicate ID, a tree past the limits of <ebt/limits.hpp> with its
// subtrees expanded, even running out of memory, ...) throws ebt::xml::LoadError, a BuildError whose
// message starts with "file:line:column: " and names the tree, the node path and the problem. A
// tree is returned complete or not at all. save() enforces the same limits (docs/xml.md, "Limits").
//
// Part of ebt when it is built with the CMake option EBT_XML (the default; then EBT_HAS_XML is 1 in
// <ebt/config.hpp>). A build with -DEBT_XML=OFF has no loader and saver and does not install this header.
#pragma once

#include <ebt/builder.hpp>
#include <ebt/registry.hpp>
#include <ebt/tree.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ebt::xml {

/// A tree file could not be loaded. what() is
///   "<file>:<line>:<column>: tree '<ID>', node <path>: <problem>"
/// (without the tree and node parts when the problem is not inside a BehaviorTree). Lines and
/// columns count from 1; columns count characters (UTF-8 code points).
class LoadError : public BuildError {
public:
    LoadError(std::string file, int line, int column, std::string tree, std::string node_path, std::string problem);
    const std::string& file() const noexcept { return file_; }
    int line() const noexcept { return line_; }
    int column() const noexcept { return column_; }
    const std::string& tree() const noexcept { return tree_; }  // BehaviorTree ID, or empty
    const std::string& node_path() const noexcept { return node_path_; }  // e.g. "/ReactiveFallback/Sequence[0]"
    const std::string& problem() const noexcept { return problem_; }

private:
    std::string file_;
    int line_;
    int column_;
    std::string tree_;
    std::string node_path_;
    std::string problem_;
};

/// A tree cannot be written (a node not registered by name, a value XML cannot express, ...).
class SaveError : public UsageError {
public:
    using UsageError::UsageError;
};

struct LoaderOptions {
    /// Follow <include path="..."/>. Paths are relative to the including file's directory; for
    /// load_string, relative to `include_base`.
    bool allow_includes = true;
    std::filesystem::path include_base = ".";
};

/// Loads trees written in BehaviorTree.CPP's v4 XML format (plus ebt's own nodes and attributes),
/// resolving action and condition names through a registry. Stateless between calls: every load
/// reads its files afresh. The registry must outlive the loader (not the trees).
class Loader {
public:
    explicit Loader(const Registry& registry, LoaderOptions options = {});

    /// Loads BehaviorTree `tree_id`, or (empty) the document's main_tree_to_execute, or its only
    /// BehaviorTree.
    Tree load_file(const std::filesystem::path& path, std::string_view tree_id = {}) const;
    /// Same, from text in memory; `source_name` names it in error messages.
    Tree load_string(std::string_view xml, std::string_view source_name = "<string>",
                     std::string_view tree_id = {}) const;

    /// The BehaviorTree IDs a file defines (its includes' too), in document order; checks the
    /// document's structure but builds nothing.
    std::vector<std::string> tree_ids(const std::filesystem::path& path) const;

    const Registry& registry() const noexcept { return *registry_; }

private:
    const Registry* registry_;
    LoaderOptions options_;
};

struct SaveOptions {
    /// Write a <TreeNodesModel> of the registry (its actions and conditions with their ports, and
    /// ebt's own control and decorator nodes), so that an editor such as Groot2 shows them.
    bool nodes_model = true;
};

/// Writes `tree` as a v4 document with one BehaviorTree (ID = tree.name(), subtrees inlined) in the
/// compact form. Every action and condition must be registered in `registry` under its name with
/// the same ports; otherwise SaveError. Loading the result with a Loader over the same registry
/// gives the same definition: the same describe(), the same traces, the same keys. A tree the
/// loader would refuse (past a limit, a NaN value, a name that is not a BehaviorTree ID, a NUL in a
/// text, ...) is a SaveError instead.
std::string save(const Tree& tree, const Registry& registry, const SaveOptions& options = {});
/// save() to a file (throws SaveError when the file cannot be written).
void save_file(const std::filesystem::path& path, const Tree& tree, const Registry& registry,
               const SaveOptions& options = {});

/// A document holding only the <TreeNodesModel> of `registry`, for an editor's palette.
std::string nodes_model(const Registry& registry);

// ---- literal values --------------------------------------------------------------------------

/// The value types XML literals and <Blackboard> entries can name: "bool", "int", "unsigned",
/// "long", "long long", "float", "double", "string" (std::string), and the enums and user types
/// named with Registry::add_enum / add_type. nullptr for any other name.
const TypeInfo* builtin_type(std::string_view name) noexcept;
/// Whether values of `type` have a literal form: the types builtin_type names, and any type with a
/// text form (TypeInfo::text).
bool has_literal_form(const TypeInfo* type) noexcept;
/// The name a file calls `type` by ("string", "Stance"), or its C++ name when it has none.
std::string xml_type_name(const TypeInfo* type);
/// The message for a literal that is not a value of `type`: "'Alrt' is not a valid Stance (one of
/// Idle, Alert, Combat)" (an enum lists its names).
std::string not_a_valid(const TypeInfo* type, std::string_view text);
/// " (one of Idle, Alert, Combat)" for an enum added with Registry::add_enum, "" for other types.
std::string allowed_names(const TypeInfo* type);
/// Parses `text` as a value of `type` into `out`, a constructed value of that type (a Value(type),
/// or zeroed bytes for a trivially copyable type). bool: true/false/1/0 (also True/TRUE/False/FALSE);
/// integers: decimal, range-checked; float and double: decimal or scientific, finite (surrounding
/// blanks ignored); std::string: the text as it is; an enum: one of its names (blanks ignored); a
/// user type: BlackboardValue<T>::parse. False when unparsable (`out` unchanged).
bool parse_value(const TypeInfo* type, std::string_view text, void* out);
/// The text form of a value (round-trips through parse_value exactly); nullopt for a type without
/// a literal form.
std::optional<std::string> format_value(const TypeInfo* type, const void* value);

}  // namespace ebt::xml
