// A driver that throws a C++ exception out of a slot breaks the C ABI. The
// host catches it, says so in the log (MISBEHAVING), and takes the call as
// refused / not final / access open: nothing a driver may touch is given back.
#include <doctest/doctest.h>

#include <chrono>
#include <vector>

#include "host/spied_driver.hpp"
#include "support/kept_for_good.hpp"

using namespace std::chrono_literals;

namespace {

// The spy with one slot that throws.
struct Throwing : SpiedDriver {
    explicit Throwing(const std::string &slot) : SpiedDriver({{"throw", slot}}) {}
};

}  // namespace

TEST_CASE("a slot that throws: register and put are refused, and the log names the slot")
{
    {
        Throwing t("register");
        std::vector<uint8_t> memory(4096);
        CHECK_THROWS_AS(t.region(memory), kvblob::CallError);
        CHECK(t.logged().find("threw a C++ exception out of register_region") != std::string::npos);
    }
    Throwing t("put");
    auto &memory = kept_for_good<std::vector<uint8_t>>(4096);  // nothing proves the put let go of it
    auto r = t.region(memory);
    try {
        t.put(r);
        FAIL("admitted");
    } catch (const kvblob::CallError &e) {
        CHECK(e.status() == KVBLOB_E_INTERNAL);
    }
    CHECK(t.logged().find("threw a C++ exception out of put") != std::string::npos);
    // A throw is not a refusal (R-ADM-1): the region stays registered for good.
    CHECK(r.unregister() == KVBLOB_E_UNPROVABLE);
}

TEST_CASE("a slot that throws: poll taken as not final, access as still open, so memory is kept")
{
    for (const std::string slot : {"poll", "access"}) {
        CAPTURE(slot);
        auto t = std::make_unique<Throwing>(slot);
        std::vector<uint8_t> memory(4096);
        auto r = t->region(memory);
        auto op = t->put(r);
        CHECK_FALSE(op.wait(50ms));          // never taken as settled
        CHECK(op.release() != KVBLOB_OK);    // the handle stays with the host
        // Only access is evidence about memory: with access still open the
        // region stays registered; a throwing poll says nothing about it.
        if (slot == "access") CHECK(r.unregister() != KVBLOB_OK);
        CHECK(t->logged().find("out of " + slot) != std::string::npos);
    }
}

TEST_CASE("a slot that throws: a release that throws keeps the handle")
{
    Throwing t("release");
    std::vector<uint8_t> memory(4096);
    auto r = t.region(memory);
    auto op = t.put(r);
    REQUIRE(op.wait(5s));
    CHECK(op.release() == KVBLOB_E_INTERNAL);
    CHECK(op.handle() != nullptr);
    CHECK(t.logged().find("out of release") != std::string::npos);
}

TEST_CASE("a drain that never returns: shutdown gives up after its timeout and a grace, and frees nothing")
{
    auto t = std::make_unique<Throwing>("block-drain");
    const auto start = std::chrono::steady_clock::now();
    CHECK(t->driver.shutdown(100ms) == KVBLOB_E_TIMEOUT);
    const auto took = std::chrono::steady_clock::now() - start;
    CHECK(took < 10s);
    CHECK(t->logged().find("drain did not return within its timeout") != std::string::npos);
    // The driver stays open and its code mapped: destroying the objects
    // frees nothing the blocked drain may still touch.
}

TEST_CASE("a drain that answers from a thread that never ends: shutdown goes on after a grace, and keeps the code")
{
    // The drain runs on a thread of the host's, joined once it answered;
    // the driver's thread-local destructor blocks that thread's end.
#if defined(__SANITIZE_ADDRESS__)
    // LeakSanitizer's scan at exit crashes on a thread stuck in its
    // thread-local destructors; the plain and ThreadSanitizer suites run it.
    MESSAGE("skipped under AddressSanitizer: LeakSanitizer cannot scan a thread stuck in its exit");
    return;
#endif
    auto t = std::make_unique<Throwing>("block-drain-exit");
    const auto start = std::chrono::steady_clock::now();
    CHECK(t->driver.shutdown(100ms) == KVBLOB_OK);
    const auto took = std::chrono::steady_clock::now() - start;
    CHECK(took < 10s);
    CHECK(t->logged().find("drain answered, but its thread did not end within") != std::string::npos);
    // Its code stays mapped when the objects go: the thread still runs it.
}
