#include <doctest/doctest.h>

#include <array>
#include <climits>
#include <fstream>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "kvblob/host/sha256.hpp"
#include "kvblob/host/sha256_chain.hpp"
#include "kvblob/host/sha256_oneshot.hpp"
#include "support/openssl_sha256.hpp"
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

// The incremental digest (plugin files, the runner's signed reports)
// against OpenSSL: every message of 0 to 300 bytes, given whole and in two
// pieces split at every place (a block begun in one update and made whole in
// the next), one object reused across messages (finish starts over).
TEST_CASE("the incremental SHA-256 agrees with OpenSSL however the message is split, on both compressions")
{
    std::mt19937 random(13);
    std::string bytes(300, '\0');
    for (auto &b : bytes) b = static_cast<char>(random());
    for (bool portable : {false, true}) {
        kvblob::sha256_force_portable(portable);
        kvblob::Sha256 sha;
        for (size_t n = 0; n <= bytes.size(); n += 7) {
            const auto expected = openssl_sha256(std::string_view(bytes.data(), n));
            sha.update(bytes.data(), n);
            CHECK_MESSAGE(sha.finish() == expected, "length " << n << " whole" << (portable ? ", portable" : ""));
            for (size_t cut = 0; cut <= n; ++cut) {
                sha.update(bytes.data(), cut);
                sha.update(bytes.data() + cut, n - cut);
                CHECK_MESSAGE(sha.finish() == expected, "length " << n << " cut at " << cut);
            }
        }
    }
    kvblob::sha256_force_portable(false);
}

// sha256_oneshot (block keys) against OpenSSL, with the SHA extensions where
// this CPU has them and with the portable compression: every length of 0 to
// 300 bytes crosses the one- and two-block paddings and several whole blocks.
TEST_CASE("SHA-256 in one shot agrees with OpenSSL at every length, on both compressions")
{
    std::mt19937 random(11);
    std::string bytes(300, '\0');
    for (auto &b : bytes) b = static_cast<char>(random());
    const std::string native = kvblob::sha256_compression_name();
    MESSAGE("this CPU's compression: " << native);
    for (bool portable : {false, true}) {
        kvblob::sha256_force_portable(portable);
        CHECK(std::string(kvblob::sha256_compression_name()) == (portable ? "portable" : native));
        for (size_t n = 0; n <= bytes.size(); ++n) {
            const auto oneshot = kvblob::sha256_oneshot(bytes.data(), n);
            const auto openssl = openssl_sha256(std::string_view(bytes.data(), n));
            CHECK_MESSAGE(oneshot == openssl, "length " << n << (portable ? ", portable" : ", native"));
        }
        const std::string million(1000000, 'a');
        CHECK(kvblob::sha256_oneshot(million.data(), million.size()) == openssl_sha256(million));
    }
    kvblob::sha256_force_portable(false);
}

// The block-key chain kernel against OpenSSL message by message: each key's
// message is the previous chain value and the block's tokens (4 bytes
// little-endian each). 1 to 40 tokens per block cross the one-, two- and
// three-block paddings and every count of tokens past a whole group of four
// (the SHA-NI kernel reads whole groups in place and the rest from its tail);
// run in two calls, the second picking up the first's chain value.
TEST_CASE("the SHA-256 block-key chain agrees with OpenSSL for every block size, on both compressions")
{
    std::mt19937 random(12);
    std::vector<int32_t> tokens(7 * 40);
    for (auto &t : tokens) t = static_cast<int32_t>(random());
    tokens[3] = INT32_MIN, tokens[4] = INT32_MAX, tokens[5] = -1;
    std::array<uint8_t, 32> start;
    for (auto &b : start) b = static_cast<uint8_t>(random());
    for (bool portable : {false, true}) {
        kvblob::sha256_force_portable(portable);
        for (size_t per_block = 1; per_block <= 40; ++per_block) {
            const size_t keys = 7, first_run = 3;
            // By hand: OpenSSL over each whole message.
            std::string chain(start.begin(), start.end());
            std::vector<std::string> expected;
            for (size_t i = 0; i < keys; ++i) {
                std::string message = chain;
                for (size_t t = 0; t < per_block; ++t)
                    for (int b = 0; b < 4; ++b)
                        message += static_cast<char>(static_cast<uint32_t>(tokens[i * per_block + t]) >> (8 * b));
                const auto digest = openssl_sha256(message);
                chain.assign(digest.begin(), digest.end());
                expected.push_back(chain.substr(0, 16));
            }
            auto value = start;
            std::vector<uint8_t> names(16 * keys);
            const std::span<const int32_t> all(tokens.data(), keys * per_block);
            kvblob::sha256_chain(value.data(), all.first(first_run * per_block + per_block / 2), per_block,
                                 names.data());
            kvblob::sha256_chain(value.data(), all.subspan(first_run * per_block), per_block,
                                 names.data() + 16 * first_run);
            for (size_t i = 0; i < keys; ++i)
                CHECK_MESSAGE(std::string(names.begin() + 16 * i, names.begin() + 16 * (i + 1)) == expected[i],
                              per_block << " tokens per block, key " << i << (portable ? ", portable" : ", native"));
            CHECK_MESSAGE(std::string(value.begin(), value.end()) == chain, per_block << " tokens per block");
        }
    }
    kvblob::sha256_force_portable(false);
}
