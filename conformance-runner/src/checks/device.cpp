// Checks of device memory (R-ADM-8, R-ROW-1, R-ROW-3, R-ROW-6, R-REG-3):
// they run where the runner sees a CUDA device and the driver declares
// device_memory, and are NOT_SUPPORTED otherwise, saying which is missing.
#include "common.hpp"
#include "device_buffer.hpp"
#include "kvblob/tools/cuda_device.hpp"

namespace kvblob::conformance {

namespace {

// A driver without device_memory is not judged here (NOT_SUPPORTED); one
// that declares it, on a runner built without CUDA or on a machine without
// a device, is NOT_EXERCISED: the runner's limit, never the driver's.
void require_device(Driver &d)
{
    if (!d.has(KVBLOB_CAP_DEVICE_MEMORY))
        throw NotSupported("needs capability device_memory, which the driver does not declare");
    if (const std::string why = tools::cuda_unavailable_reason(); !why.empty()) throw RunnerCannot(why);
}

std::vector<uint8_t> pattern(size_t size, uint64_t seed)
{
    std::vector<uint8_t> v(size);
    fill_pattern(v.data(), size, seed);
    return v;
}

void device_round_trip(Context &c)
{
    auto d = c.open();
    require_device(d);
    constexpr size_t rows = 8, size = 256 * 1024;
    DeviceBuffer src(rows * size), dst(rows * size);
    const auto bytes = pattern(rows * size, 41);
    src.upload(bytes);
    dst.upload(std::vector<uint8_t>(rows * size, 0));
    auto rs = c.reg_device(d, src.data(), src.size()), rd = c.reg_device(d, dst.data(), dst.size());
    auto rows_of = row_pairs(c, rs, rd, rows, size);
    for (const auto &r : c.run(d, OpKind::put, rows_of.put))
        expect(r.result == KVBLOB_ROW_READY, "R-ROW-1", "a put from device memory is not READY");
    for (const auto &r : c.run(d, OpKind::get, rows_of.get))
        expect(r.result == KVBLOB_ROW_READY, "R-ROW-1", "a get into device memory is not READY");
    expect(dst.download() == bytes, "R-ROW-6", "device memory got other bytes than were put");
    expect(src.canary_intact() && dst.canary_intact(), "R-REG-3",
           "a write landed beside the device spans (canary damaged)");
}

void device_miss_untouched(Context &c)
{
    auto d = c.open();
    require_device(d);
    DeviceBuffer dst(64 * 1024);
    const auto before = pattern(dst.size(), 42);
    dst.upload(before);
    auto rd = c.reg_device(d, dst.data(), dst.size());
    const auto res = c.run_one(d, OpKind::get, c.key("absent"), {make_span(rd, 0, dst.size())});
    expect(res == KVBLOB_ROW_MISS, "R-ROW-3", std::string("a get of an absent key is ") +
                                                  kvblob_row_result_name(res) + ", not MISS");
    expect(dst.download() == before, "R-ROW-3", "a MISS changed device memory");
}

void device_guard_canaries(Context &c)
{
    auto d = c.open();
    require_device(d);
    constexpr size_t size = 4 * 1024 * 1024 + 17;  // spans more than one staging chunk
    std::vector<uint8_t> host(size);
    fill_pattern(host.data(), size, 43);
    GuardedBuffer src(size);
    std::copy(host.begin(), host.end(), src.data());
    DeviceBuffer dst(size);
    dst.upload(std::vector<uint8_t>(size, 0));
    auto rs = c.reg(d, src);
    auto rd = c.reg_device(d, dst.data(), dst.size());
    const auto k = c.key("middle");
    expect(c.run_one(d, OpKind::put, k, {make_span(rs, 0, size)}) == KVBLOB_ROW_READY, "R-ROW-1",
           "a put from host memory is not READY");
    expect(c.run_one(d, OpKind::get, k, {make_span(rd, 0, size)}) == KVBLOB_ROW_READY, "R-ROW-1",
           "a get into device memory is not READY");
    expect(dst.download() == host, "R-ROW-6", "device memory got other bytes than were put");
    expect(dst.canary_intact(), "R-REG-3", "a write landed beside the device span (canary damaged)");
}

}  // namespace

// The checks of this file, in run order.
void add_device_checks(std::vector<Check> &out)
{
    const Check checks[] = {
        {"device.round-trip", {"R-ROW-1", "R-ROW-6", "R-ADM-8"}, Level::must, 0, {},
         "rows put from device memory and got back into device memory, byte for byte",
         device_round_trip},
        {"device.miss.untouched", {"R-ROW-3"}, Level::must, 0, {},
         "a MISS leaves device memory byte for byte untouched",
         device_miss_untouched},
        {"device.guard-canaries", {"R-REG-3"}, Level::must, 0, {},
         "a get into the middle of device memory writes its span and nothing beside it",
         device_guard_canaries},
    };
    out.insert(out.end(), std::begin(checks), std::end(checks));
}

}  // namespace kvblob::conformance
