// The keys this driver's own puts are writing. Two puts of one key through
// one client race inside Mooncake: the second's PutStart meets the first's
// uncommitted object and the client answers it 0 (it swallows
// OBJECT_ALREADY_EXISTS), though nothing is whole yet. So a put of a key
// another operation of this driver is writing is NOT_READY without asking
// the store (the contract's "another operation of this driver").
#pragma once

#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

namespace kvblob::mooncake {

class WritingKeys {
public:
    // Claims keys for one put: claimed[i] says whether keys[i] is now this
    // put's (false: another put of this driver is writing it, or an earlier
    // row of the same put named it). Released when the Claim goes.
    class Claim {
    public:
        Claim(WritingKeys &owner, const std::vector<std::string> &keys) : owner_(owner), keys_(keys)
        {
            claimed.assign(keys.size(), false);
            std::lock_guard lock(owner_.mu_);
            for (size_t i = 0; i < keys.size(); ++i) claimed[i] = owner_.keys_.insert(keys[i]).second;
        }
        ~Claim()
        {
            std::lock_guard lock(owner_.mu_);
            for (size_t i = 0; i < keys_.size(); ++i)
                if (claimed[i]) owner_.keys_.erase(keys_[i]);
        }
        Claim(const Claim &) = delete;
        Claim &operator=(const Claim &) = delete;

        std::vector<bool> claimed;

    private:
        WritingKeys &owner_;
        const std::vector<std::string> &keys_;
    };

private:
    std::mutex mu_;
    std::unordered_set<std::string> keys_;
};

}  // namespace kvblob::mooncake
