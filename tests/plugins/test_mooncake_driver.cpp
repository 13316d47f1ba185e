// The Mooncake driver's mapping of store answers, and its open without the
// library. (The battery runs over the fake library: conformance_mooncake_fake.)
#include <doctest/doctest.h>

#include <string>

#include "kvblob/host/plugin.hpp"
#include "mooncake/answers.hpp"

using namespace kvblob::mooncake;

TEST_CASE("mooncake answers: every store answer becomes the row result its rule asks for")
{
    // put
    CHECK(put_answer(OK, false).result == KVBLOB_ROW_READY);
    CHECK(put_answer(OBJECT_ALREADY_EXISTS, true).result == KVBLOB_ROW_READY);       // R-ROW-7
    CHECK(put_answer(OBJECT_ALREADY_EXISTS, false).result == KVBLOB_ROW_NOT_READY);  // R-ROW-2
    CHECK(put_answer(REPLICA_IS_NOT_READY, false).result == KVBLOB_ROW_NOT_READY);
    CHECK(put_answer(NO_AVAILABLE_HANDLE, false).result == KVBLOB_ROW_DECLINED);
    CHECK(put_answer(TRANSFER_FAIL, false).access_unprovable);
    CHECK(put_answer(RPC_TIMEOUT, false).result == KVBLOB_ROW_FAULT);
    CHECK(put_answer(RPC_TIMEOUT, false).message == "RPC_TIMEOUT (-901)");
    // get
    CHECK(get_answer(4096, 4096).result == KVBLOB_ROW_READY);
    CHECK(get_answer(100, 4096).result == KVBLOB_ROW_FAULT);  // R-ROW-5
    CHECK(get_answer(BUFFER_OVERFLOW, 4096).result == KVBLOB_ROW_FAULT);
    CHECK(get_answer(OBJECT_NOT_FOUND, 4096).result == KVBLOB_ROW_MISS);  // R-ROW-4
    CHECK(get_answer(REPLICA_IS_NOT_READY, 4096).result == KVBLOB_ROW_NOT_READY);
    CHECK(get_answer(CHECKSUM_MISMATCH, 4096).result == KVBLOB_ROW_FAULT);  // R-ROW-6
    const Answer transfer = get_answer(TRANSFER_FAIL, 4096);
    CHECK((transfer.result == KVBLOB_ROW_FAULT && transfer.access_unprovable));  // R-REG-2
    CHECK_FALSE(get_answer(RPC_FAIL, 4096).access_unprovable);
    CHECK(get_answer(RPC_FAIL, 4096).message == "RPC_FAIL (-900)");
    CHECK(get_answer(-12345, 4096).message == "Mooncake error -12345");
    // probe and remove
    CHECK(probe_answer(1).result == KVBLOB_ROW_READY);
    CHECK(probe_answer(0).result == KVBLOB_ROW_MISS);
    CHECK(probe_answer(REPLICA_IS_NOT_READY).result == KVBLOB_ROW_NOT_READY);
    CHECK(probe_answer(RPC_FAIL).result == KVBLOB_ROW_FAULT);
    CHECK(remove_answer(OK).result == KVBLOB_ROW_READY);
    CHECK(remove_answer(OBJECT_NOT_FOUND).result == KVBLOB_ROW_MISS);
    CHECK(remove_answer(OBJECT_HAS_LEASE).result == KVBLOB_ROW_NOT_READY);
}

TEST_CASE("mooncake driver: without Mooncake's library, open fails naming the library it looked for")
{
    auto plugin = kvblob::Plugin::load("mooncake");  // the driver itself always loads
    std::string what;
    try {
        plugin.open({{"library", "libmooncake_store_not_here.so"}});
    } catch (const std::exception &e) {
        what = e.what();
    }
    CHECK(what.find("libmooncake_store_not_here.so") != std::string::npos);
    CHECK(what.find("option 'library'") != std::string::npos);
    CHECK(what.find("stage init") != std::string::npos);
}

TEST_CASE("mooncake driver: a master that does not answer fails open, naming the master")
{
    auto plugin = kvblob::Plugin::load("mooncake");
    std::string what;
    try {
        plugin.open({{"library", KVBLOB_FAKE_MOONCAKE}, {"master_server_address", "unreachable"}});
    } catch (const std::exception &e) {
        what = e.what();
    }
    CHECK(what.find("master unreachable") != std::string::npos);
    CHECK(what.find("RPC_FAIL (-900)") != std::string::npos);
}
