// Only a refusal (KVBLOB_E_REJECTED, KVBLOB_E_CLOSED) certifies that a put
// or get touched no memory (R-ADM-1). The host gives a region back after a
// refused slot, and keeps it registered for good after one that threw or
// answered any other failure: it says so in the log, and never asks the
// driver to unregister it. The spy stages each answer (admit=, throw=).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "host/spied_driver.hpp"
#include "support/kept_for_good.hpp"

using kvblob::OpKind;

// The spy with staged answers, and what the host logged of it.
using Staged = SpiedDriver;

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
        const uint64_t unregisters = s.spy().calls[s_unregister].load();
        CHECK(r.unregister() == KVBLOB_E_UNPROVABLE);
        CHECK(s.spy().calls[s_unregister].load() == unregisters);  // the driver is not even asked
        const std::string log = s.logged();
        CHECK_MESSAGE(log.find(c.logged) != std::string::npos, log);
        CHECK_MESSAGE(log.find("life of the process (R-REG-2)") != std::string::npos, log);
    }
}
