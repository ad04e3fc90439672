// SharedBlackboard: double-buffered values, published once per frame.
#include <ebt/shared_blackboard.hpp>

#include <ebt/signals.hpp>
#include <ebt/tree.hpp>

#include <cstdio>
#include <cstring>

namespace ebt {

SharedBlackboard::SharedBlackboard(std::string name)
    : name_(std::move(name)), signal_(std::make_unique<Signal>(&slot_errors_)) {
    if (name_.empty()) throw UsageError("a shared blackboard needs a name");
}

SharedBlackboard::~SharedBlackboard() = default;

namespace {
/// A value for error messages: numbers and bools as such, anything else as its bytes in hex.
std::string show_value(const TypeInfo* type, const std::byte* data) {
    const auto as = [data](auto v) {
        std::memcpy(&v, data, sizeof v);
        return v;
    };
    if (type == type_of<bool>()) return as(bool{}) ? "true" : "false";
    if (type == type_of<int>()) return std::to_string(as(int{}));
    if (type == type_of<unsigned>()) return std::to_string(as(unsigned{}));
    if (type == type_of<long>()) return std::to_string(as(long{}));
    if (type == type_of<long long>()) return std::to_string(as(0ll));
    if (type == type_of<float>() || type == type_of<double>()) {
        char text[40];
        std::snprintf(text, sizeof text, "%.9g", type == type_of<float>() ? static_cast<double>(as(0.0f)) : as(0.0));
        return text;
    }
    static const char* digits = "0123456789abcdef";
    std::string hex = "0x";
    for (std::size_t i = 0; i < type->size; ++i) {
        hex += digits[static_cast<unsigned>(data[i]) >> 4];
        hex += digits[static_cast<unsigned>(data[i]) & 15];
    }
    return hex;
}
}  // namespace

void detail::bind_shared_keys(const Tree& tree, std::uint8_t scope, SharedBlackboard& shared, const std::string& who,
                              bool declare_missing) {
    const BlackboardSchema& schema = tree.schema();
    for (KeyId k = 0; k < schema.size(); ++k) {
        const KeyInfo& info = schema.info(k);
        if (info.scope != scope) continue;
        const std::byte* tree_initial = schema.defaults() + info.offset;
        const KeyId sid = shared.schema().find(info.shared_name);
        if (sid == kNoKey) {
            if (declare_missing) shared.declare_raw(info.shared_name, info.type, tree_initial);
            continue;
        }
        const KeyInfo& have = shared.schema().info(sid);
        if (have.type != info.type)
            throw UsageError(who + "shared blackboard '" + shared.name() + "': key '" + info.shared_name + "' is " +
                             have.type->name + ", but tree '" + tree.name() + "' reads '" + info.name + "' as " + info.type->name);
        const std::byte* shared_initial = shared.schema().defaults() + have.offset;
        if (std::memcmp(shared_initial, tree_initial, info.type->size) != 0)
            throw UsageError(who + "shared blackboard '" + shared.name() + "': key '" + info.shared_name +
                             "' was declared with the initial value " + show_value(info.type, shared_initial) + ", but tree '" +
                             tree.name() + "' declares '" + info.name + "' with " + show_value(info.type, tree_initial) +
                             " (declare it once: in the tree, or on the shared blackboard with the same value)");
    }
}

void SharedBlackboard::declare_raw(std::string key, const TypeInfo* type, const void* initial) {
    if (publishing_)
        throw UsageError("shared blackboard '" + name_ + "': declare('" + key + "') from inside its publish (a change slot)");
    if (schema_.find(key) != kNoKey) throw BuildError("shared blackboard '" + name_ + "': key '" + key + "' is declared twice");
    const KeyId id = schema_.declare_raw(std::move(key), type, initial);
    // Keys are packed in declaration order: the keys declared before keep their offsets, and so their
    // published and pending values. The new key starts with its initial value in both buffers.
    const KeyInfo& info = schema_.info(id);
    published_.resize(schema_.storage_size(), std::byte{0});
    pending_.resize(schema_.storage_size(), std::byte{0});
    std::memcpy(published_.data() + info.offset, schema_.defaults() + info.offset, info.type->size);
    std::memcpy(pending_.data() + info.offset, schema_.defaults() + info.offset, info.type->size);
    written_.push_back(0);
}

void SharedBlackboard::set_raw(KeyId id, const void* value) {
    if (id >= schema_.size()) throw UsageError("shared blackboard '" + name_ + "': no key id " + std::to_string(id));
    const KeyInfo& info = schema_.info(id);
    std::memcpy(pending_.data() + info.offset, value, info.type->size);
    written_[id] = 1;
    any_written_ = true;
}

std::size_t SharedBlackboard::publish() {
    if (publishing_) throw UsageError("shared blackboard '" + name_ + "': publish() from inside its publish (a change slot)");
    if (!any_written_) return 0;
    struct Publishing {
        bool& flag;
        explicit Publishing(bool& f) : flag(f) { flag = true; }
        ~Publishing() { flag = false; }
    } publishing(publishing_);
    any_written_ = false;
    std::size_t changed = 0;
    for (KeyId k = 0; k < schema_.size(); ++k) {
        if (!written_[k]) continue;
        written_[k] = 0;
        const KeyInfo& info = schema_.info(k);
        std::byte* to = published_.data() + info.offset;
        const std::byte* from = pending_.data() + info.offset;
        if (std::memcmp(to, from, info.type->size) == 0) continue;
        std::memcpy(to, from, info.type->size);
        ++changed;
        (*signal_)(*this, k);
    }
    return changed;
}

}  // namespace ebt
