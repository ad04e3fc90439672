// SharedBlackboard: double-buffered values, published once per frame.
#include <ebt/shared_blackboard.hpp>

namespace ebt {

SharedBlackboard::SharedBlackboard(std::string name) : name_(std::move(name)) {
    if (name_.empty()) throw UsageError("a shared blackboard needs a name");
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
        signal_(*this, k);
    }
    return changed;
}

}  // namespace ebt
