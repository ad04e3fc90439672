// SharedBlackboard: double-buffered values, published once per frame.
#include <ebt/shared_blackboard.hpp>

#include <ebt/detail/hash.hpp>
#include <ebt/signals.hpp>
#include <ebt/tree.hpp>

#include "world/parallel_tick.hpp"

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
std::string show_value(const TypeInfo* type, const void* value) {
    const auto* data = static_cast<const std::byte*>(value);
    if (type->text) return "'" + type->text->format(type, data) + "'";
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
        const void* tree_initial = schema.initial(k);
        const KeyId sid = shared.schema().find(info.shared_name);
        if (sid == kNoKey) {
            if (declare_missing) shared.declare_raw(info.shared_name, info.type, tree_initial);
            continue;
        }
        const KeyInfo& have = shared.schema().info(sid);
        if (have.type != info.type)
            throw UsageError(who + "shared blackboard '" + shared.name() + "': key '" + info.shared_name + "' is " +
                             have.type->name + ", but tree '" + tree.name() + "' reads '" + info.name + "' as " + info.type->name);
        const void* shared_initial = shared.schema().initial(sid);
        if (!detail::values_equal(info.type, shared_initial, tree_initial))
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
    boxed_published_.resize(schema_.size());
    boxed_pending_.resize(schema_.size());
    if (info.type->ops) {
        boxed_published_[id] = Value(info.type, schema_.initial(id));
        boxed_pending_[id] = Value(info.type, schema_.initial(id));
    } else {
        std::memcpy(published_.data() + info.offset, schema_.initial(id), info.type->size);
        std::memcpy(pending_.data() + info.offset, schema_.initial(id), info.type->size);
    }
    written_.push_back(0);
}

void SharedBlackboard::set_raw(KeyId id, const void* value) {
    if (id >= schema_.size()) throw UsageError("shared blackboard '" + name_ + "': no key id " + std::to_string(id));
    // Written by an agent's tick in a World's parallel phase: buffered, and written by the World
    // after the phase in slot order (docs/world.md, "Threads").
    if (detail::parallel_tick()) return detail::defer_shared_write(*this, id, value);
    const KeyInfo& info = schema_.info(id);
    void* pending = const_cast<void*>(pending_value(id));
    // Writing the value the key already holds changes nothing: a key not written since the last
    // publish holds its published value, so the next publish would find it equal and emit nothing.
    // Left out, it does not make this blackboard publish at all (an agent keeping a value up every
    // frame, like the arena's attackers their squad's alarm, costs the World no publish).
    if (detail::values_equal(info.type, pending, value)) return;
    detail::assign_value(info.type, pending, value);
    written_[id] = 1;
    if (!any_written_ && publish_queue_) publish_queue_->push_back(publish_index_);
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
        void* to = const_cast<void*>(published(k));
        const void* from = pending_value(k);
        if (detail::values_equal(info.type, to, from)) continue;
        try {
            detail::assign_value(info.type, to, from);
        } catch (...) {
            // A value whose copy throws: this key and the ones after it stay written, for the next publish.
            written_[k] = 1;
            any_written_ = true;
            throw;
        }
        ++changed;
        (*signal_)(*this, k);
    }
    return changed;
}

void SharedBlackboard::hash_published(detail::Fnv1a& h) const {
    if (schema_.nontrivial_keys().empty()) {
        h.bytes(published_.data(), published_.size());
        return;
    }
    for (KeyId k = 0; k < schema_.size(); ++k) {
        const TypeInfo* type = schema_.info(k).type;
        if (type->ops) h(type->ops->hash(published(k)));
        else h.bytes(published(k), type->size);
    }
}

}  // namespace ebt
