// Only a refusal (KVBLOB_E_REJECTED, KVBLOB_E_CLOSED) certifies that a put
// or get touched no memory (R-ADM-1). The host gives a region back after a
// refused slot, and keeps it registered for good after one that threw or
// answered any other failure: it says so in the log, and never asks the
// driver to unregister it. The spy stages each answer (admit=, throw=).
#include <doctest/doctest.h>

#include <mutex>
#include <string>
#include <vector>

#include "fixtures/spy.hpp"
#include "kvblob/host/batch.hpp"
#include "kvblob/host/plugin.hpp"
#include "support/kept_for_good.hpp"

using kvblob::Batch;
using kvblob::make_span;
using kvblob::OpKind;

namespace {

struct Staged {
    explicit Staged(kvblob::Options options)
        : plugin(kvblob::Plugin::load(KVBLOB_FIXTURE_DIR "/libkvblob_spy.so")),
          driver(plugin.open(options, [this](kvblob_log_level level, const std::string &m) {
              std::lock_guard lock(mu);
              if (level == KVBLOB_LOG_MISBEHAVING) misbehaving += m + "\n";
          })),
          spy(static_cast<const kvblob_spy *>(driver.table().get_extension(driver.handle(), "kvblob.test.spy/1")))
    {
        REQUIRE(spy);
    }
    std::string logged()
    {
        std::lock_guard lock(mu);
        return misbehaving;
    }
    kvblob::Region region(std::vector<uint8_t> &memory)
    {
        kvblob_region_desc_t desc{sizeof desc, KVBLOB_MEMORY_HOST, memory.data(), memory.size(), 0, 0};
        return driver.register_region(desc);
    }
    // Submits one row and returns the CallError the host threw.
    kvblob::CallError failed(OpKind kind, kvblob::Region &r)
    {
        Batch b;
        b.row("k", {make_span(r.handle(), 0, 64)});
        try {
            driver.submit(kind, b.get());
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
    const kvblob_spy *spy;
};

}  // namespace

TEST_CASE("a refused put or get gives its region back")
{
    for (const std::string answer : {"rejected", "closed"})
        for (OpKind kind : {OpKind::put, OpKind::get}) {
            CAPTURE(answer);
            CAPTURE(kvblob::to_string(kind));
            Staged s({{"admit", answer}});
            std::vector<uint8_t> memory(4096);
            auto r = s.region(memory);
            auto e = s.failed(kind, r);
            CHECK(e.status() == (answer == "rejected" ? KVBLOB_E_REJECTED : KVBLOB_E_CLOSED));
            CHECK(r.unregister() == KVBLOB_OK);
            CHECK(s.logged().empty());
        }
}

TEST_CASE("a put or get that threw or failed otherwise keeps its region for good, and the log says why")
{
    const auto keep_loaded = kvblob::Plugin::load(KVBLOB_FIXTURE_DIR "/libkvblob_spy.so");  // its counters stay
    struct Case {
        kvblob::Options options;
        OpKind kind;
        std::string logged;
    };
    const Case cases[] = {
        {{{"admit", "internal"}}, OpKind::put, "put answered KVBLOB_E_INTERNAL, not a refusal"},
        {{{"admit", "internal"}}, OpKind::get, "get answered KVBLOB_E_INTERNAL, not a refusal"},
        {{{"admit", "null-op"}}, OpKind::get, "get answered OK without an operation"},
        {{{"throw", "put"}}, OpKind::put, "threw a C++ exception out of put"},
        {{{"throw", "get"}}, OpKind::get, "threw a C++ exception out of get"},
    };
    for (const auto &c : cases) {
        CAPTURE(c.logged);
        // Kept alive for good, on purpose: nothing proves the driver let go of it.
        auto &memory = kept_for_good<std::vector<uint8_t>>(4096, 7);
        Staged s(c.options);
        auto r = s.region(memory);
        auto e = s.failed(c.kind, r);
        CHECK(e.status() != KVBLOB_E_REJECTED);
        CHECK(std::string(e.what()).find("stay held for good (R-ADM-1)") != std::string::npos);
        const uint64_t unregisters = s.spy->calls[s_unregister].load();
        CHECK(r.unregister() == KVBLOB_E_UNPROVABLE);
        CHECK(s.spy->calls[s_unregister].load() == unregisters);  // the driver is not even asked
        const std::string log = s.logged();
        CHECK_MESSAGE(log.find(c.logged) != std::string::npos, log);
        CHECK_MESSAGE(log.find("life of the process (R-REG-2)") != std::string::npos, log);
    }
}
