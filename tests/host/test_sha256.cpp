#include <doctest/doctest.h>

#include <fstream>
#include <string>

#include "kvblob/host/sha256.hpp"
#include "support/process.hpp"

TEST_CASE("SHA-256 matches the FIPS 180-4 test vectors")
{
    CHECK(kvblob::sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    CHECK(kvblob::sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    CHECK(kvblob::sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
          "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    CHECK(kvblob::sha256_hex(std::string(1000000, 'a')) ==
          "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("SHA-256 of a file agrees with sha256sum, and a missing file is named")
{
    const std::string file = KVBLOB_INFO_BIN;  // any file of some size
    auto expected = run_command("sha256sum '" + file + "'");
    REQUIRE(expected.exit_code == 0);
    CHECK(expected.output.substr(0, 64) == kvblob::sha256_file_hex(file));
    CHECK_THROWS_WITH(kvblob::sha256_file_hex("/nonexistent/plugin.so"),
                      doctest::Contains("/nonexistent/plugin.so"));
}
