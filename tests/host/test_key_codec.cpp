#include <doctest/doctest.h>

#include <cstdio>
#include <string>

#include "kvblob/host/hex.hpp"
#include "kvblob/host/key_codec.hpp"

using kvblob::decode_key;
using kvblob::encode_key;
using kvblob::KeyError;

TEST_CASE("keys encode as prefix/v1/hex(name)")
{
    CHECK(encode_key("kv", "ab") == "kv/v1/6162");
    CHECK(encode_key("llama-3_8b", std::string("\x00\xff", 2)) == "llama-3_8b/v1/00ff");
}

// Both hex writers (the 16-byte one is SIMD on x86-64) against snprintf's
// %02x, for every byte value in every position of a 16-byte name.
TEST_CASE("hex: lowercase, two digits a byte, the 16-byte form the same as the general one")
{
    for (int first = 0; first < 256; first += 16) {
        uint8_t bytes[16];
        for (int i = 0; i < 16; ++i) bytes[i] = static_cast<uint8_t>((first + 17 * i) % 256);
        std::string expected;
        for (uint8_t b : bytes) {
            char two[3];
            std::snprintf(two, sizeof two, "%02x", b);
            expected += two;
        }
        std::string general(32, '?'), sixteen(34, '?');
        kvblob::write_hex(bytes, 16, general.data());
        kvblob::write_hex16(bytes, sixteen.data() + 1);
        CHECK(general == expected);
        CHECK(sixteen == "?" + expected + "?");  // exactly 32 bytes written
    }
}

TEST_CASE("decoding inverts encoding, for every byte value")
{
    std::string all;
    for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
    for (size_t len : {1u, 2u, 17u, 256u}) {
        std::string name = all.substr(0, len);
        auto key = encode_key("p0", name);
        CHECK(decode_key(key) == kvblob::DecodedKey{"p0", name});
    }
}

TEST_CASE("distinct pairs give distinct keys")
{
    CHECK(encode_key("a", "bc") != encode_key("ab", "c"));
    CHECK(encode_key("a", "b") != encode_key("b", "b"));
}

TEST_CASE("encoding rejects a bad prefix or an empty name")
{
    CHECK_THROWS_AS(encode_key("", "x"), KeyError);
    CHECK_THROWS_AS(encode_key("Upper", "x"), KeyError);
    CHECK_THROWS_AS(encode_key("a/b", "x"), KeyError);
    CHECK_THROWS_AS(encode_key("a.b", "x"), KeyError);
    CHECK_THROWS_AS(encode_key(std::string(65, 'a'), "x"), KeyError);
    CHECK_NOTHROW(encode_key(std::string(64, 'a'), "x"));
    CHECK_THROWS_AS(encode_key("kv", ""), KeyError);
}

TEST_CASE("decoding rejects every malformed form, saying which")
{
    const struct {
        const char *key, *why;
    } bad[] = {
        {"kv", "no '/'"},
        {"/v1/61", "prefix"},
        {"KV/v1/61", "prefix"},
        {"k.v/v1/61", "prefix"},
        {"kv/v2/61", "not v1"},
        {"kv/61", "not v1"},
        {"kv/v1/", "empty"},
        {"kv/v1/6", "odd"},
        {"kv/v1/6g", "not lowercase hex"},
        {"kv/v1/6A", "not lowercase hex"},
        {"kv/v1/61/6", "not lowercase hex"},
    };
    for (const auto &b : bad) {
        INFO("key " << std::string(b.key));
        try {
            decode_key(b.key);
            FAIL("accepted");
        } catch (const KeyError &e) {
            CHECK_MESSAGE(std::string(e.what()).find(b.why) != std::string::npos, e.what());
        }
    }
}
