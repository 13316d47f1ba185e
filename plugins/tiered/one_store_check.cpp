#include "one_store_check.hpp"

#include <kvblob/host/batch.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <random>

namespace kvblob::tiered {

namespace {

// A slow tier is not waited for longer: the check is then skipped.
constexpr std::chrono::seconds answer_within{10};

std::vector<uint8_t> random_bytes(size_t n)
{
    std::vector<uint8_t> out(n);
    std::random_device device;
    for (auto &b : out) b = static_cast<uint8_t>(device());
    return out;
}

std::string hex(const std::vector<uint8_t> &bytes)
{
    static const char digits[] = "0123456789abcdef";
    std::string out;
    for (uint8_t b : bytes) {
        out += digits[b >> 4];
        out += digits[b & 15];
    }
    return out;
}

// One row of kind on key through tier's driver, spans over bytes (none for
// a remove); the row's answer, or nullopt where the tier did not answer
// within answer_within (the operation is then cancelled by its release).
// Where the operation's access did not end (no answer in time, or access
// unprovable), bytes' memory is left to the driver, leaked: it is never
// freed while the driver may still touch it (R-REG-2).
std::optional<kvblob_row_result> one_row(Tier &tier, OpKind kind, const std::string &key,
                                         std::vector<uint8_t> *bytes, std::string &message)
{
    kvblob::Driver &driver = *tier.handle;
    std::optional<kvblob::Region> region;
    kvblob::Batch batch;
    if (bytes) {
        const kvblob_region_desc_t desc{sizeof desc, KVBLOB_MEMORY_HOST, bytes->data(), bytes->size(), 0, 0};
        region.emplace(driver.register_region(desc));
        batch.row(key, {kvblob::make_span(region->handle(), 0, bytes->size())});
    } else {
        batch.row(key);
    }
    kvblob::Operation op = driver.submit(kind, batch.get());
    const bool answered = op.wait(answer_within);
    if (bytes && !(answered && op.access() == KVBLOB_ACCESS_ENDED))
        (void)new std::vector<uint8_t>(std::move(*bytes));  // the same memory, never freed
    if (!answered) return std::nullopt;
    message = op.message(0);
    return op.results().at(0).result;
}

}  // namespace

std::string tiers_of_one_store(std::vector<Tier> &tiers, const std::function<void(const std::string &)> &note)
{
    for (size_t below = 1; below < tiers.size(); ++below) {
        Tier &lower = tiers[below];
        const auto skipped = [&](const std::string &why) {
            note("whether " + lower.label() + " is one store with a tier above it was not tried: " + why);
        };
        if (!lower.handle->has(KVBLOB_CAP_REMOVE)) {
            skipped("it offers no remove, and the object tried would stay");
            continue;
        }
        std::string found, message;
        try {
            const std::string key = "kvblob-tiered/one-store-check/" + hex(random_bytes(16));
            const std::vector<uint8_t> expected = random_bytes(32);
            std::vector<uint8_t> object = expected;  // the put's memory: left to the driver where it must be
            const auto put = one_row(lower, OpKind::put, key, &object, message);
            if (put != KVBLOB_ROW_READY) {
                skipped(put ? "its put answered " + std::string(kvblob_row_result_name(*put)) + " " + message
                            : "its put did not answer within 10 s");
                continue;
            }
            for (size_t above = 0; above < below && found.empty(); ++above) {
                std::vector<uint8_t> read(expected.size(), 0);
                const auto get = one_row(tiers[above], OpKind::get, key, &read, message);
                if (get == KVBLOB_ROW_READY && read == expected)
                    found = tiers[above].label() + " and " + lower.label() +
                            " are one store: an object put into " + lower.label() + " is READY from " +
                            tiers[above].label() + ". Evicting from the top tier, and removing, would then remove "
                            "the only copy; give each tier a store of its own (a memory tier its own store "
                            "name, a file tier its own root, a Redis tier its own prefix or server)";
            }
            if (one_row(lower, OpKind::remove, key, nullptr, message) != KVBLOB_ROW_READY)
                note(lower.label() + " did not remove the object of the one-store check: " + key);
        } catch (const std::exception &e) {
            skipped(e.what());
            continue;
        }
        if (!found.empty()) return found;
    }
    return {};
}

}  // namespace kvblob::tiered
