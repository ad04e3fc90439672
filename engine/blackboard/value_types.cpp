// The names XML files give value types, the text form of enums (Registry::add_enum), and the binary
// form of values (ValueWriter / ValueReader, the serializers of <ebt/value_type.hpp>).
#include <ebt/status.hpp>
#include <ebt/value_type.hpp>

#include "debug/binary_io.hpp"

#include <charconv>
#include <map>
#include <mutex>

namespace ebt::detail {

namespace {

/// The named value types of the process: "string" and whatever add_enum / add_type named. Written at
/// start-up, read by the loader and saver; guarded so that registries built on several threads are safe.
/// Never destroyed (trees and registries in static storage may use it late).
struct NamedTypes {
    std::mutex mutex;
    std::map<std::string, const TypeInfo*, std::less<>> by_name;
    std::map<const TypeInfo*, std::string> name_of;
    std::vector<std::unique_ptr<TextForm>> forms;  // the enums' text forms, kept for the process's life
};
NamedTypes& named_types() {
    static auto* types = [] {
        auto* t = new NamedTypes;
        t->by_name.emplace("string", type_of<std::string>());
        t->name_of.emplace(type_of<std::string>(), "string");
        return t;
    }();
    return *types;
}

bool is_identifier(std::string_view s) {
    if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
    for (const char c : s)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
    return true;
}

std::string enum_format(const TypeInfo* type, const void* value) {
    const long long v = type->text->enum_value(value);
    for (const auto& [name, n] : type->text->names)
        if (n == v) return name;
    return std::to_string(v);  // a value with no name: its number (it does not parse back, so save() refuses it)
}

bool enum_parse(const TypeInfo* type, std::string_view text, void* out) {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
    for (const auto& [name, n] : type->text->names)
        if (name == text) {
            type->text->set_enum(out, n);
            return true;
        }
    return false;
}

}  // namespace

void name_value_type(const TypeInfo* type, const std::string& xml_name, std::unique_ptr<TextForm> form) {
    if (!is_identifier(xml_name)) throw BuildError("'" + xml_name + "' is not a valid type name (an identifier)");
    if (form) {
        if (form->names.empty()) throw BuildError("enum '" + xml_name + "' is added without any value names");
        for (std::size_t i = 0; i < form->names.size(); ++i) {
            if (!is_identifier(form->names[i].first))
                throw BuildError("enum '" + xml_name + "': '" + form->names[i].first + "' is not a valid value name (an identifier)");
            for (std::size_t j = 0; j < i; ++j)
                if (form->names[j].first == form->names[i].first)
                    throw BuildError("enum '" + xml_name + "': the value name '" + form->names[i].first + "' is given twice");
        }
        form->format = &enum_format;
        form->parse = &enum_parse;
    }
    NamedTypes& reg = named_types();
    const std::lock_guard lock(reg.mutex);
    if (auto it = reg.by_name.find(xml_name); it != reg.by_name.end() && it->second != type)
        throw BuildError("the type name '" + xml_name + "' is already given to " + it->second->name);
    if (auto it = reg.name_of.find(type); it != reg.name_of.end()) {
        if (it->second != xml_name)
            throw BuildError(std::string(type->name) + " is already named '" + it->second + "', not '" + xml_name + "'");
        if (form && type->text && type->text->names != form->names)
            throw BuildError("enum '" + xml_name + "' is added again with other value names");
        return;  // the same again
    }
    if (form) {
        type->text = form.get();
        reg.forms.push_back(std::move(form));
    }
    reg.by_name.emplace(xml_name, type);
    reg.name_of.emplace(type, xml_name);
}

const TypeInfo* value_type_named(std::string_view xml_name) noexcept {
    NamedTypes& reg = named_types();
    const std::lock_guard lock(reg.mutex);
    const auto it = reg.by_name.find(xml_name);
    return it == reg.by_name.end() ? nullptr : it->second;
}

const char* value_type_xml_name(const TypeInfo* type) noexcept {
    NamedTypes& reg = named_types();
    const std::lock_guard lock(reg.mutex);
    const auto it = reg.name_of.find(type);
    return it == reg.name_of.end() ? nullptr : it->second.c_str();
}

}  // namespace ebt::detail

// ---- the binary form of values (ValueWriter / ValueReader over the debug files' byte format) ----------

namespace ebt {

void ValueWriter::boolean(bool v) { out_->u8(v ? 1 : 0); }
void ValueWriter::u64(std::uint64_t v) { out_->varint(v); }
void ValueWriter::i64(std::int64_t v) {
    // zigzag: small magnitudes of either sign stay short
    const auto u = static_cast<std::uint64_t>(v);
    out_->varint((u << 1) ^ (v < 0 ? ~std::uint64_t{0} : 0));
}
void ValueWriter::f32(float v) {
    std::uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    out_->u32(bits);
}
void ValueWriter::f64(double v) { out_->f64(v); }
void ValueWriter::string(std::string_view v) { out_->string(v); }
void ValueWriter::bytes(const void* data, std::size_t size) { out_->raw(data, size); }

bool ValueReader::boolean() {
    const std::uint8_t b = in_->u8();
    if (b > 1) in_->fail("corrupt: a bool value is " + std::to_string(b) + " (0 or 1)");
    return b == 1;
}
std::uint64_t ValueReader::u64() { return in_->varint(); }
std::int64_t ValueReader::i64() {
    const std::uint64_t z = in_->varint();
    return static_cast<std::int64_t>((z >> 1) ^ (~(z & 1) + 1));
}
float ValueReader::f32() {
    const std::uint32_t bits = in_->u32();
    float v;
    std::memcpy(&v, &bits, sizeof v);
    return v;
}
double ValueReader::f64() { return in_->f64(); }
std::string ValueReader::string() { return in_->string(std::size_t{1} << 30); }
void ValueReader::bytes(void* out, std::size_t size) { in_->raw(out, size); }
void ValueReader::fail(const std::string& problem) const { in_->fail(problem); }

}  // namespace ebt
