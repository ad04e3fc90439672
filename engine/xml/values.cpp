// Literal values: the builtin value types by name, parsing and formatting them.
#include <ebt/xml.hpp>

#include <charconv>
#include <cmath>
#include <cstring>

namespace ebt::xml {

namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n' || s.front() == '\r'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r'))
        s.remove_suffix(1);
    return s;
}

template <class T> bool parse_int(std::string_view s, void* out) {
    T v{};
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 10);
    if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return false;
    std::memcpy(out, &v, sizeof v);
    return true;
}

template <class T> bool parse_float(std::string_view s, void* out) {
    T v{};
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, std::chars_format::general);
    if (ec != std::errc() || end != s.data() + s.size() || s.empty() || !std::isfinite(v)) return false;
    std::memcpy(out, &v, sizeof v);
    return true;
}

template <class T> std::string format_number(const void* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    char buf[64];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    if (ec != std::errc()) return {};
    return std::string(buf, end);
}

}  // namespace

const TypeInfo* builtin_type(std::string_view name) noexcept {
    if (name == "bool") return type_of<bool>();
    if (name == "int") return type_of<int>();
    if (name == "unsigned") return type_of<unsigned>();
    if (name == "long") return type_of<long>();
    if (name == "long long") return type_of<long long>();
    if (name == "float") return type_of<float>();
    if (name == "double") return type_of<double>();
    return ebt::detail::value_type_named(name);  // "string", enums (Registry::add_enum), user types (add_type)
}

bool has_literal_form(const TypeInfo* type) noexcept {
    return type && (type->text || (builtin_type(type->name) == type));
}

std::string xml_type_name(const TypeInfo* type) {
    if (const char* name = ebt::detail::value_type_xml_name(type)) return name;
    return type->name;
}

std::string allowed_names(const TypeInfo* type) {
    if (!type->text || type->text->names.empty()) return {};
    std::string list = " (one of";
    for (std::size_t i = 0; i < type->text->names.size(); ++i) list += (i ? ", " : " ") + type->text->names[i].first;
    return list + ")";
}

std::string not_a_valid(const TypeInfo* type, std::string_view text) {
    return "'" + std::string(text) + "' is not a valid " + xml_type_name(type) + allowed_names(type);
}

bool parse_value(const TypeInfo* type, std::string_view text, void* out) {
    if (type->text) return type->text->parse(type, text, out);  // std::string keeps its blanks
    const std::string_view s = trim(text);
    if (type == type_of<bool>()) {
        bool v;
        if (s == "true" || s == "True" || s == "TRUE" || s == "1") v = true;
        else if (s == "false" || s == "False" || s == "FALSE" || s == "0") v = false;
        else return false;
        std::memcpy(out, &v, sizeof v);
        return true;
    }
    if (type == type_of<int>()) return parse_int<int>(s, out);
    if (type == type_of<unsigned>()) return parse_int<unsigned>(s, out);
    if (type == type_of<long>()) return parse_int<long>(s, out);
    if (type == type_of<long long>()) return parse_int<long long>(s, out);
    if (type == type_of<float>()) return parse_float<float>(s, out);
    if (type == type_of<double>()) return parse_float<double>(s, out);
    return false;
}

std::optional<std::string> format_value(const TypeInfo* type, const void* value) {
    if (type->text) return type->text->format(type, value);
    if (type == type_of<bool>()) {
        unsigned char byte;  // read the byte: a stored bool is 0 or 1, but do not trust it
        std::memcpy(&byte, value, 1);
        return std::string(byte ? "true" : "false");
    }
    if (type == type_of<int>()) return format_number<int>(value);
    if (type == type_of<unsigned>()) return format_number<unsigned>(value);
    if (type == type_of<long>()) return format_number<long>(value);
    if (type == type_of<long long>()) return format_number<long long>(value);
    if (type == type_of<float>()) return format_number<float>(value);
    if (type == type_of<double>()) return format_number<double>(value);
    return std::nullopt;
}

}  // namespace ebt::xml
