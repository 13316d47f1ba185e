// The spy fixture opened with staged answers (admit=, throw=, access=...),
// with what the host logged as MISBEHAVING kept for the test to read: the
// set-up the tests of refused, failed and thrown slots share.
#pragma once

#include <doctest/doctest.h>

#include <mutex>
#include <string>
#include <vector>

#include "fixtures/spy.hpp"
#include "kvblob/host/batch.hpp"
#include "kvblob/host/plugin.hpp"

struct SpiedDriver {
    explicit SpiedDriver(const kvblob::Options &options)
        : plugin(kvblob::Plugin::load(KVBLOB_FIXTURE_DIR "/libkvblob_spy.so")),
          driver(plugin.open(options, [this](kvblob_log_level level, const std::string &m) {
              std::lock_guard lock(mu);
              if (level == KVBLOB_LOG_MISBEHAVING) misbehaving += m + "\n";
          }))
    {
    }
    // What the host logged as MISBEHAVING so far.
    std::string logged()
    {
        std::lock_guard lock(mu);
        return misbehaving;
    }
    // The spy's own counters (its extension), found once asked for.
    const kvblob_spy &spy()
    {
        const auto *s =
            static_cast<const kvblob_spy *>(driver.table().get_extension(driver.handle(), "kvblob.test.spy/1"));
        REQUIRE(s);
        return *s;
    }
    kvblob::Region region(std::vector<uint8_t> &memory)
    {
        kvblob_region_desc_t desc{sizeof desc, KVBLOB_MEMORY_HOST, memory.data(), memory.size(), 0, 0};
        return driver.register_region(desc);
    }
    // One row "k" over the first 64 bytes of r.
    kvblob::Operation submit(kvblob::OpKind kind, kvblob::Region &r)
    {
        kvblob::Batch b;
        b.row("k", {kvblob::make_span(r.handle(), 0, 64)});
        return driver.submit(kind, b.get());
    }
    kvblob::Operation put(kvblob::Region &r) { return submit(kvblob::OpKind::put, r); }
    // Submits one row and returns the CallError the host threw.
    kvblob::CallError failed(kvblob::OpKind kind, kvblob::Region &r)
    {
        try {
            submit(kind, r);
        } catch (const kvblob::CallError &e) {
            return e;
        }
        FAIL("admitted");
        throw;
    }

    std::mutex mu;
    std::string misbehaving;
    kvblob::Plugin plugin;
    kvblob::Driver driver;
};
