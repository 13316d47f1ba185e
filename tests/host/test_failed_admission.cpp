// Only a refusal (KVBLOB_E_REJECTED, KVBLOB_E_CLOSED) certifies that a put
// or get touched no memory (R-ADM-1). The host gives a region back after a
// refused slot, and keeps it registered for good after one that threw or
// answered any other failure: it says so in the log, and never asks the
// driver to unregister it. The spy stages each answer (admit=, throw=).
#include <doctest/doctest.h>

#include <map>
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
            CHECK(e.refused());  // what a caller that stacks drivers reads (plugins/tiered)
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
        CHECK_FALSE(e.refused());
        CHECK(std::string(e.what()).find("stay held for good (R-ADM-1)") != std::string::npos);
        const uint64_t unregisters = s.spy().calls[s_unregister].load();
        CHECK(r.unregister() == KVBLOB_E_UNPROVABLE);
        CHECK(s.spy().calls[s_unregister].load() == unregisters);  // the driver is not even asked
        const std::string log = s.logged();
        CHECK_MESSAGE(log.find(c.logged) != std::string::npos, log);
        CHECK_MESSAGE(log.find("life of the process (R-REG-2)") != std::string::npos, log);
    }
}

// The rule of a refusal comes from the answer's structure (host/src/guarding/
// refusal.hpp): CLOSED is R-ADM-2 whatever the text says; REJECTED names the
// rule the driver put in the leading "[R-ADM-n]" field, and is the driver's
// own ("driver") without one; a rule cited anywhere else in the text is
// words, not a field; an answer that is not a refusal breaks R-ADM-1.
TEST_CASE("a driver's refusal is counted under the rule its status and leading field name")
{
    struct Case {
        std::string admit, text, rule, counted;
    };
    const Case cases[] = {
        {"closed", "draining", "R-ADM-2", "R-ADM-2"},
        {"closed", "[R-ADM-4] not what CLOSED means", "R-ADM-2", "R-ADM-2"},
        {"rejected", "[R-ADM-4] a key of 300 bytes", "R-ADM-4", "R-ADM-4"},
        {"rejected", "too many operations in flight (limit 1)", "R-ADM-1", "driver"},
        {"rejected", "refused, as R-ADM-6 would have it", "R-ADM-1", "driver"},
        {"rejected", "[R-ADM-2] a field CLOSED gives, not REJECTED", "R-ADM-1", "driver"},
        {"internal", "[R-ADM-4] but not a refusal", "R-ADM-1", "driver"},
    };
    for (const auto &c : cases) {
        CAPTURE(c.admit);
        CAPTURE(c.text);
        auto &memory = kept_for_good<std::vector<uint8_t>>(4096, 7);  // pinned for good after "internal"
        Staged s({{"admit", c.admit}, {"refusal_text", c.text}});
        auto r = s.region(memory);
        const auto e = s.failed(OpKind::put, r);
        CHECK(e.rule() == c.rule);
        CHECK_MESSAGE(std::string(e.what()).find(c.text) != std::string::npos, e.what());
        CHECK(s.driver.metrics().of(OpKind::put).refused == std::map<std::string, uint64_t>{{c.counted, 1}});
    }
}
