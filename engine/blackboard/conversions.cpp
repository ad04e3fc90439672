// Number conversions of Blackboard::set and get by name (include/ebt/blackboard.hpp): a value of one
// number type written to, or read from, a key declared with another. The rule is "exactly or not at
// all": the conversion happens when the target type holds the value exactly, and is refused with
// UsageError (naming the key, both types and the value) otherwise. Only the by-name calls come here,
// and only when the types differ; the Key<T> path never converts.
#include <ebt/blackboard.hpp>

#include <charconv>
#include <cmath>
#include <limits>
#include <string>

namespace ebt {

namespace {

using detail::Number;

/// Calls f(D{}) for the number type D whose TypeInfo is `type`; false when `type` is not one of them.
template <class F> bool visit_number_type(const TypeInfo* type, F&& f) {
    bool found = false;
    const auto try_type = [&](auto zero) {
        using D = decltype(zero);
        if (!found && type == type_of<D>()) {
            found = true;
            f(zero);
        }
    };
    try_type(static_cast<signed char>(0));
    try_type(static_cast<unsigned char>(0));
    try_type(static_cast<short>(0));
    try_type(static_cast<unsigned short>(0));
    try_type(0);
    try_type(0u);
    try_type(0L);
    try_type(0UL);
    try_type(0LL);
    try_type(0ULL);
    try_type(0.0f);
    try_type(0.0);
    return found;
}

/// Whether an integer of magnitude `m` is exactly representable in a floating type with `digits`
/// mantissa bits: its significant bits (trailing zeros aside) must fit.
bool fits_mantissa(unsigned long long m, int digits) {
    if (m == 0) return true;
    while ((m & 1) == 0) m >>= 1;
    return digits >= 64 || m < (1ULL << digits);
}

/// `n` as a D, when D holds it exactly.
template <class D> bool convert_exactly(const Number& n, D& out) {
    using L = std::numeric_limits<D>;
    if constexpr (std::is_floating_point_v<D>) {
        switch (n.kind) {
        case Number::Kind::Floating:
            if (std::isnan(n.f)) {
                out = L::quiet_NaN();
                return true;
            }
            if (std::isfinite(n.f) && std::fabs(n.f) > static_cast<double>(L::max())) return false;
            out = static_cast<D>(n.f);
            return static_cast<double>(out) == n.f;
        case Number::Kind::Signed: {
            const unsigned long long m = n.i < 0 ? 0ULL - static_cast<unsigned long long>(n.i) : static_cast<unsigned long long>(n.i);
            if (!fits_mantissa(m, L::digits)) return false;
            out = static_cast<D>(n.i);
            return true;
        }
        case Number::Kind::Unsigned:
            if (!fits_mantissa(n.u, L::digits)) return false;
            out = static_cast<D>(n.u);
            return true;
        }
        return false;
    } else {
        switch (n.kind) {
        case Number::Kind::Signed:
            if (n.i < static_cast<long long>(L::min())) return false;
            if (n.i > 0 && static_cast<unsigned long long>(n.i) > static_cast<unsigned long long>(L::max())) return false;
            out = static_cast<D>(n.i);
            return true;
        case Number::Kind::Unsigned:
            if (n.u > static_cast<unsigned long long>(L::max())) return false;
            out = static_cast<D>(n.u);
            return true;
        case Number::Kind::Floating: {
            // Integral and inside [min, max]: both bounds are powers of two (or 0), exact in a double.
            if (!std::isfinite(n.f) || std::trunc(n.f) != n.f) return false;
            const double low = L::is_signed ? -std::ldexp(1.0, L::digits) : 0.0;
            const double high = std::ldexp(1.0, L::digits);  // one past max
            if (n.f < low || n.f >= high) return false;
            out = static_cast<D>(n.f);
            return true;
        }
        }
        return false;
    }
}

/// The value as written in C++: "4.1", "300", "-7", "nan", "inf".
std::string text_of(const Number& n) {
    switch (n.kind) {
    case Number::Kind::Signed: return std::to_string(n.i);
    case Number::Kind::Unsigned: return std::to_string(n.u);
    case Number::Kind::Floating: break;
    }
    if (std::isnan(n.f)) return "nan";
    if (std::isinf(n.f)) return n.f < 0 ? "-inf" : "inf";
    char text[32];
    // The shortest text that reads back as the value (of the source's own type, for a float).
    const auto r = n.type == type_of<float>() ? std::to_chars(text, text + sizeof text, static_cast<float>(n.f))
                                              : std::to_chars(text, text + sizeof text, n.f);
    return std::string(text, r.ptr);
}

}  // namespace

bool Blackboard::set_converted(KeyId id, const Number& value) {
    const KeyInfo& info = schema().info(id);
    bool changed_value = false;
    const bool is_number = visit_number_type(info.type, [&](auto zero) {
        using D = decltype(zero);
        D converted{};
        if (!convert_exactly(value, converted))
            throw UsageError("blackboard key '" + info.name + "' is declared as " + info.type->name + ": the " +
                             value.type->name + " " + text_of(value) + " is not exactly representable as " +
                             info.type->name);
        changed_value = set(Key<D>{id, schema_->tag()}, converted);
    });
    if (!is_number) schema_->require(id, value.type);  // throws: "is declared as X, not Y"
    return changed_value;
}

void Blackboard::get_converted(KeyId id, const TypeInfo* as, void* out) const {
    const KeyInfo& info = schema().info(id);
    const bool is_number = visit_number_type(info.type, [&](auto zero) {
        using D = decltype(zero);
        const Number stored = number_of(*reinterpret_cast<const D*>(values_ + info.offset));
        visit_number_type(as, [&](auto target) {
            using T = decltype(target);
            T converted{};
            if (!convert_exactly(stored, converted))
                throw UsageError("blackboard key '" + info.name + "' is declared as " + info.type->name + ": its value " +
                                 text_of(stored) + " is not exactly representable as " + as->name);
            std::memcpy(out, &converted, sizeof converted);
        });
    });
    if (!is_number) schema_->require(id, as);  // throws: "is declared as X, not Y"
}

}  // namespace ebt
