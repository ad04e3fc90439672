// SharedBlackboard: double-buffered values, published once per frame.
#include <ebt/shared_blackboard.hpp>

namespace ebt {

SharedBlackboard::SharedBlackboard(std::string name) : name_(std::move(name)) {
    if (name_.empty()) throw UsageError("a shared blackboard needs a name");
}

void SharedBlackboard::declare_raw(std::string key, const TypeInfo* type, const void* initial) {
    if (schema_.find(key) != kNoKey) throw BuildError("shared blackboard '" + name_ + "': key '" + key + "' is declared twice");
    schema_.declare_raw(std::move(key), type, initial);
    published_.assign(schema_.defaults(), schema_.defaults() + schema_.storage_size());
    // Keep pending writes made so far to other keys.
    std::vector<std::byte> pending(published_);
    for (std::size_t k = 0; k + 1 < schema_.size(); ++k)
        if (written_[k]) std::memcpy(pending.data() + schema_.info(static_cast<KeyId>(k)).offset, pending_.data() + schema_.info(static_cast<KeyId>(k)).offset,
                                     schema_.info(static_cast<KeyId>(k)).type->size);
    pending_ = std::move(pending);
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
    if (!any_written_) return 0;
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
