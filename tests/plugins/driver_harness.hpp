// A driver opened through the host, with helpers to register buffers and
// run operations to the end.
#pragma once

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <vector>

#include "kvblob/host/plugin.hpp"
#include "kvblob/host/batch.hpp"
#include "kvblob/tools/fill_pattern.hpp"

// batch.hpp's helpers, in namespace kvblob like all of the public API.
using kvblob::Batch;
using kvblob::make_span;
using kvblob::fill_pattern;

// A store name no other test uses, so tests never see each other's objects.
inline std::string unique_store(const std::string &tag)
{
    static std::atomic<int> n{0};
    return tag + "-" + std::to_string(n++);
}

struct Buffer {
    std::vector<uint8_t> bytes;
    kvblob::Region region;
    kvblob_region_t *handle() const { return region.handle(); }
};

class DriverHarness {
public:
    DriverHarness(const std::string &driver, kvblob::Options options)
        : plugin_(kvblob::Plugin::load(driver)), driver_(plugin_.open(std::move(options)))
    {
    }
    kvblob::Driver &driver() { return driver_; }
    const kvblob_scenarios_t &hooks()
    {
        REQUIRE(driver_.scenarios() != nullptr);
        return *driver_.scenarios();
    }

    Buffer buffer(size_t size, uint8_t fill = 0)
    {
        Buffer b{std::vector<uint8_t>(size, fill), {}};
        kvblob_region_desc_t desc{sizeof desc, KVBLOB_MEMORY_HOST, b.bytes.data(), size, 0, 0};
        b.region = driver_.register_region(desc);
        return b;
    }
    kvblob::Operation submit(kvblob::OpKind kind, Batch &batch) { return driver_.submit(kind, batch.get()); }
    // Submits and waits for final results and ended access. The wait only
    // guards against a hang: a gigabyte batch under ThreadSanitizer on a
    // loaded 2-core machine takes minutes, so it stays below ctest's 300 s.
    std::vector<kvblob::RowStatus> run(kvblob::OpKind kind, Batch &batch)
    {
        auto op = submit(kind, batch);
        REQUIRE(op.wait(std::chrono::seconds(240)));
        return op.results();
    }
    kvblob_row_result one(kvblob::OpKind kind, const std::string &key, std::vector<kvblob_span_t> spans = {})
    {
        Batch b;
        b.row(key, std::move(spans));
        return run(kind, b).at(0).result;
    }
    kvblob_status hook(kvblob_status (*fn)(kvblob_driver_t *, const uint8_t *, uint64_t), const std::string &key)
    {
        return fn(driver_.handle(), reinterpret_cast<const uint8_t *>(key.data()), key.size());
    }

private:
    kvblob::Plugin plugin_;
    kvblob::Driver driver_;
};

struct MemoryHarness : DriverHarness {
    explicit MemoryHarness(kvblob::Options options = {}) : DriverHarness("memory", std::move(options)) {}
};
