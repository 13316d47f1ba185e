// What the ABI's size rules promise a host of each version (R-CAP-2;
// abi/include/kvblob/types.h and driver.h): a driver writes no member past
// the capability record's struct_size and reads none past the services
// record's; at ABI 1.0 it declares no bit that 1.0 does not define and
// calls no notify, whatever the size of the services record; it declares
// KVBLOB_CAP_NOTIFY only where the host lent a notify service.
//
// The host's loader zero-fills the bytes past a 1.0 record and refuses a bit
// it does not know, so these checks call the table's open slot themselves,
// with records laid out as a host of that version lays them, each followed
// by bytes the driver has no business touching.
#include <atomic>
#include <cstring>
#include <memory>
#include <sstream>
#include <thread>

#include "common.hpp"

#include "kvblob/host/capabilities.hpp"
#include "kvblob/host/version.hpp"

namespace kvblob::conformance {

namespace {

constexpr unsigned char untouched_byte = 0xA5;
constexpr size_t tail_bytes = 64;

// A driver opened through the table's open slot as a host of the check's
// shape (Check::host) opens it: the capability record sized for the
// negotiated version and followed by untouched_byte; the services record
// sized likewise, and where it is 1.0's, a notify member past its size that
// only a driver reading beyond the record would find and call. roomy: at
// 1.0, a services record with room for every 1.1 member, notify set in it:
// what 1.0 defines is the same whatever the record's size (R-CAP-2), so a
// driver that goes by the size, not the version, declares or calls notify.
class RawDriver {
public:
    explicit RawDriver(const Context &c, bool roomy = false)
        : table_(c.plugin().table()), abi_(c.plugin().abi_version()), roomy_(roomy && abi_ < KVBLOB_ABI_1_1)
    {
        const bool v1_1 = abi_ >= KVBLOB_ABI_1_1;
        std::memset(&services_, 0, sizeof services_);
        services_.s.struct_size = v1_1 || roomy_ ? sizeof(kvblob_host_services_t) : KVBLOB_HOST_SERVICES_SIZE_1_0;
        services_.s.context = this;
        services_.s.log = [](void *, kvblob_log_level, const char *) {};
        // A 1.1 record here lends no notify (these checks run as a polling
        // host); a 1.0 record ends before the member, where the tripwire
        // lies, or (roomy) holds it, where 1.0 gives it no meaning.
        services_.s.notify = v1_1 ? nullptr : &RawDriver::tripwire;

        std::memset(caps_bytes_, untouched_byte, sizeof caps_bytes_);
        caps_size_ = v1_1 ? sizeof(kvblob_caps_t) : KVBLOB_CAPS_SIZE_1_0;
        std::memset(caps_bytes_, 0, caps_size_);
        std::memcpy(caps_bytes_, &caps_size_, sizeof caps_size_);

        for (const auto &[k, v] : c.options()) raw_options_.push_back({sizeof(kvblob_option_t), 0, k.c_str(), v.c_str()});
        kvblob_open_args_t args{};
        args.struct_size = sizeof args;
        args.abi_version = abi_;
        args.options = raw_options_.data();
        args.option_count = raw_options_.size();
        args.host = &services_.s;
        char err[1024] = {0};
        const kvblob_status st = table_.open(&args, reinterpret_cast<kvblob_caps_t *>(caps_bytes_), &handle_, err,
                                             sizeof err);
        err[sizeof err - 1] = '\0';
        if (st != KVBLOB_OK || !handle_) {
            handle_ = nullptr;
            throw CheckFailure("R-CAP-2", "open by " + host_words() + " answered " + kvblob_status_name(st) +
                                              (err[0] ? std::string(": ") + err : std::string()));
        }
    }
    RawDriver(const RawDriver &) = delete;
    RawDriver &operator=(const RawDriver &) = delete;
    ~RawDriver()
    {
        if (handle_ && table_.drain(handle_, 5'000'000'000ull) == KVBLOB_OK) table_.close(handle_);
    }

    std::string host_words() const
    {
        if (roomy_)
            return "a host of ABI 1.0 whose services record has " + std::to_string(sizeof(kvblob_host_services_t)) +
                   " bytes (room for every 1.1 member, notify set)";
        return "a host of ABI " + abi_version_text(abi_) + " lending no notify service";
    }

    // Where the driver wrote past the capability record; empty when nowhere.
    std::string written_past_caps() const
    {
        for (size_t i = caps_size_; i < sizeof caps_bytes_; ++i)
            if (caps_bytes_[i] != untouched_byte)
                return "byte " + std::to_string(i) + " (the record's struct_size is " + std::to_string(caps_size_) +
                       ")";
        return {};
    }
    uint64_t flags() const
    {
        uint64_t f = 0;
        std::memcpy(&f, caps_bytes_ + offsetof(kvblob_caps_t, flags), sizeof f);
        return f;
    }
    int tripped() const { return tripped_.load(); }

    // One put of one row through the table, polled to its end and released:
    // what a driver does with the services record shows once it works.
    void exercise(Context &c)
    {
        GuardedBuffer buf(4096);
        fill_pattern(buf.data(), buf.size(), 91);
        kvblob_region_desc_t desc{sizeof desc, KVBLOB_MEMORY_HOST, buf.data(), buf.size(), 0, 0};
        kvblob_region_t *region = nullptr;
        char err[512] = {0};
        expect(table_.register_region(handle_, &desc, &region, err, sizeof err) == KVBLOB_OK && region, "R-ADM-10",
               "registering a live HOST region was refused by " + host_words());
        const std::string key = c.key("raw");
        kvblob_span_t span{sizeof span, 0, region, 0, buf.size()};
        kvblob_row_t row{sizeof row, 1, reinterpret_cast<const uint8_t *>(key.data()), key.size(), &span};
        kvblob_batch_t batch{sizeof batch, 0, &row, 1, nullptr};
        kvblob_op_t *op = nullptr;
        const kvblob_status st = table_.put(handle_, &batch, &op, err, sizeof err);
        if (st == KVBLOB_OK) c.wrote(batch);
        expect(st == KVBLOB_OK && op, "R-ADM-10", "a put of one row was refused by " + host_words());
        const auto deadline = std::chrono::steady_clock::now() + c.op_timeout;
        for (;;) {
            uint32_t fin = 0;
            table_.poll(handle_, op, &fin);
            if (fin && table_.access(handle_, op) != KVBLOB_ACCESS_OPEN) break;
            expect(std::chrono::steady_clock::now() < deadline, "R-CAP-2",
                   "a put polled by " + host_words() + " was not final with access ended within " +
                       std::to_string(c.op_timeout.count()) + " ms");
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
        expect(table_.release(handle_, op) == KVBLOB_OK, "R-OPS-1", "release refused for a settled put");
        expect(table_.unregister_region(handle_, region) == KVBLOB_OK, "R-REG-1",
               "unregister refused with no operation in flight");
    }

private:
    static void tripwire(void *context, kvblob_op_t *, kvblob_notify_event)
    {
        static_cast<RawDriver *>(context)->tripped_++;
    }

    const kvblob_plugin_t &table_;
    uint32_t abi_;
    bool roomy_;
    // The services record and what lies past it, in one piece.
    struct {
        kvblob_host_services_t s;
        unsigned char past[tail_bytes];
    } services_;
    alignas(8) unsigned char caps_bytes_[sizeof(kvblob_caps_t) + tail_bytes];
    uint32_t caps_size_ = 0;
    std::vector<kvblob_option_t> raw_options_;
    kvblob_driver_t *handle_ = nullptr;
    std::atomic<int> tripped_{0};
};

std::string bit_names(uint64_t bits)
{
    std::ostringstream out;
    for (const auto &name : capability_names(bits)) out << (out.tellp() ? ", " : "") << name;
    if (out.tellp() == 0) out << "0x" << std::hex << bits;
    return out.str();
}

// A driver that answers the host's offer refusing a version cannot be
// judged at it; the runner said so (NotSupported) before the body runs.
void expect_negotiated(const Context &c, uint32_t abi)
{
    if (c.plugin().abi_version() != abi)
        throw NotSupported("the driver answered ABI " + abi_version_text(c.plugin().abi_version()) + " to an offer of " +
                           abi_version_text(abi));
}

void open_abi_1_0(Context &c)
{
    expect_negotiated(c, KVBLOB_ABI_1_0);
    auto d = std::make_unique<RawDriver>(c);
    const auto past = d->written_past_caps();
    expect(past.empty(), "R-CAP-2",
           "open at ABI 1.0 wrote past the capability record's struct_size, at " + past);
    const uint64_t beyond = d->flags() & ~KVBLOB_CAP_KNOWN_MASK_1_0;
    expect(beyond == 0, "R-CAP-2", "open at ABI 1.0 declared " + bit_names(beyond) +
                                       ", which ABI 1.0 does not define");
    d->exercise(c);
    expect(d->tripped() == 0, "R-CAP-2",
           "the driver called notify " + std::to_string(d->tripped()) +
               " time(s) from past the end of a 1.0 services record");
    // Again with a services record large enough for every 1.1 member: 1.0
    // still defines no notify, and no 1.1 bit.
    d.reset();
    auto roomy = std::make_unique<RawDriver>(c, true);
    const auto roomy_past = roomy->written_past_caps();
    expect(roomy_past.empty(), "R-CAP-2",
           "open by " + roomy->host_words() + " wrote past the capability record's struct_size, at " + roomy_past);
    const uint64_t roomy_beyond = roomy->flags() & ~KVBLOB_CAP_KNOWN_MASK_1_0;
    expect(roomy_beyond == 0, "R-CAP-2",
           "open by " + roomy->host_words() + " declared " + bit_names(roomy_beyond) +
               ", which ABI 1.0 does not define, whatever the size of the services record");
    roomy->exercise(c);
    expect(roomy->tripped() == 0, "R-CAP-2",
           "the driver called notify " + std::to_string(roomy->tripped()) + " time(s), opened by " +
               roomy->host_words() + ": ABI 1.0 defines no notify, whatever the size of the services record");
}

void open_notify_unlent(Context &c)
{
    expect_negotiated(c, KVBLOB_ABI_1_1);
    auto d = std::make_unique<RawDriver>(c);
    const auto past = d->written_past_caps();
    expect(past.empty(), "R-CAP-2",
           "open at ABI 1.1 wrote past the capability record's struct_size, at " + past);
    expect(!(d->flags() & KVBLOB_CAP_NOTIFY), "R-CAP-2",
           "declared notify although the host lent no notify service");
    d->exercise(c);
}

}  // namespace

// The checks of this file, in run order, each with the host it is run as.
void add_version_checks(std::vector<Check> &out)
{
    const Check checks[] = {
        {"open.abi-1.0", {"R-CAP-2"}, Level::must, 0, {},
         "opened by a host of ABI 1.0, the driver writes nothing past the 1.0 capability record, declares no "
         "bit 1.0 does not define, and never calls notify, whether the services record ends before that member "
         "or has room for every 1.1 member",
         open_abi_1_0, {KVBLOB_ABI_1_0, false}},
        {"open.notify-unlent", {"R-CAP-2"}, Level::must, 0, {},
         "opened at ABI 1.1 by a host that lends no notify service, the driver does not declare notify, "
         "writes nothing past the capability record, and completes a put polled",
         open_notify_unlent, {KVBLOB_ABI_1_1, false}},
    };
    out.insert(out.end(), std::begin(checks), std::end(checks));
}

}  // namespace kvblob::conformance
