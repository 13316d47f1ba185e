// without_secrets: what a driver says, with the secrets it was given taken
// out, in bounded time whatever the secret is; and the host's reading of a
// driver's row messages and refusals with its secret options taken out,
// one the host's buffer cut inside too. A secret found inside the
// host's own marker ("host", "secret", "removed") once made the replacement
// run forever, so each case runs in a child process under an alarm: a hang
// is a failed case, not a hung suite.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <optional>
#include <string>
#include <vector>

#include "host/spied_driver.hpp"
#include "kvblob/host/plugin.hpp"
#include "support/in_child.hpp"

namespace {

// without_secrets(text, secrets) computed by a child given 10 s; nullopt
// when it did not answer within them.
std::optional<std::string> scrubbed(const std::string &text, const std::vector<std::string> &secrets)
{
    const ChildAnswer answer = in_child([&] {
        alarm(10);  // no memory limit: a sanitizer's reservations pass any
        return kvblob::without_secrets(text, secrets);
    });
    if (!answer.exited_zero()) return std::nullopt;
    return answer.text;
}

const std::string marker = kvblob::removed_secret;

}  // namespace

TEST_CASE("secret scrubbing: a text cut inside a secret loses the secret's beginning too")
{
    const std::string secret = "s3cr3t-t0ken-0123456789";
    // An open refusal that filled its buffer, cut 9 bytes into the secret.
    const std::string cut = "cannot open /data/" + secret.substr(0, 9);
    CHECK(kvblob::without_secrets(cut, {secret}, kvblob::TextEnd::maybe_cut) == "cannot open /data/" + marker);
    // Whole texts keep their ends: only a cut text may end inside a secret.
    CHECK(kvblob::without_secrets(cut, {secret}) == cut);
    // Under min_scrubbed_secret bytes of it, as a whole secret that short.
    const std::string three = "cannot open /data/" + secret.substr(0, 3);
    CHECK(kvblob::without_secrets(three, {secret}, kvblob::TextEnd::maybe_cut) == three);
    // Whole occurrences before the cut go as ever, one marker where they meet.
    CHECK(kvblob::without_secrets(secret + " and " + secret + secret.substr(0, 12), {secret},
                                  kvblob::TextEnd::maybe_cut) == marker + " and " + marker);
    // A secret longer than the whole text, which is its beginning.
    CHECK(kvblob::without_secrets(secret.substr(0, 6), {secret}, kvblob::TextEnd::maybe_cut) == marker);
}

TEST_CASE("secret scrubbing: a secret inside the host's marker ends, and is removed")
{
    for (const std::string secret : {"host", "secret", "removed", "ecre", "<secret", "by the host>", "d by"}) {
        const auto out = scrubbed("cannot connect to " + secret + ":6379 (" + secret + ")", {secret});
        REQUIRE_MESSAGE(out, "no answer within 10 s for the secret '" << secret << "'");
        CHECK_MESSAGE(*out == "cannot connect to " + marker + ":6379 (" + marker + ")", secret);
    }
    // A driver that prints the marker itself: the secret in it goes too.
    const auto echoed = scrubbed(marker, {"host"});
    REQUIRE(echoed);
    CHECK(echoed->find("<secret removed by the " + marker + ">") == 0);
}

TEST_CASE("secret scrubbing: overlapping and repeated secrets leave nothing of either")
{
    // Neither order nor length decides: both overlapping secrets go whole.
    for (const std::vector<std::string> &secrets : {std::vector<std::string>{"abcdef", "defghi"},
                                                   std::vector<std::string>{"defghi", "abcdef"}}) {
        const auto out = scrubbed("x abcdefghi y", secrets);
        REQUIRE(out);
        CHECK(*out == "x " + marker + " y");
    }
    // One secret inside another, the shorter given first.
    const auto nested = scrubbed("[hunter2hunter]", {"hunter", "hunter2hunter"});
    REQUIRE(nested);
    CHECK(*nested == "[" + marker + "]");
    // A secret that overlaps itself: one marker, nothing of it left.
    const auto repeated = scrubbed("<aaaaaaaaa>", {"aaaa"});
    REQUIRE(repeated);
    CHECK(*repeated == "<" + marker + ">");
    // Two occurrences apart stay two markers.
    const auto apart = scrubbed("pass1 and pass1", {"pass1"});
    REQUIRE(apart);
    CHECK(*apart == marker + " and " + marker);
}

TEST_CASE("secret scrubbing: short secrets are left, and long texts end promptly")
{
    const auto short_secret = scrubbed("a b c", {"b"});
    REQUIRE(short_secret);
    CHECK(*short_secret == "a b c");
    const auto none = scrubbed("nothing to hide", {});
    REQUIRE(none);
    CHECK(*none == "nothing to hide");
    // A megabyte of one letter against a secret of half of it: one marker.
    const std::string text(1 << 20, 'a');
    const auto big = scrubbed(text, {std::string(1 << 19, 'a'), "aaaa", "host"});
    REQUIRE(big);
    CHECK(*big == marker);
}

// The spy (tests/fixtures/spy_driver.cpp) repeats its option "token", a
// name the host takes for a secret, after message_pad bytes of each row's
// message, or after the padding of its refusal (R-OPN-2 broken on purpose).
TEST_CASE("secret scrubbing: a driver's row message and refusal lose its secret, whole or cut by the host's buffer")
{
    const std::string token = "SuperSecretToken-12345";
    const std::string beginning = token.substr(0, kvblob::min_scrubbed_secret);
    std::vector<uint8_t> memory(4096);
    // Whole, then cut 10 bytes into the secret by the host's 511-byte read.
    for (const size_t pad : {size_t{10}, kvblob::max_row_message_bytes - 16}) {
        CAPTURE(pad);
        SpiedDriver s({{"token", token}, {"message_pad", std::to_string(pad)}, {"results", "fault"}});
        auto r = s.region(memory);
        auto op = s.put(r);
        REQUIRE(op.wait(std::chrono::seconds(60)));
        const std::string said = op.message(0);
        CAPTURE(said);
        CHECK(said.find(beginning) == std::string::npos);
        CHECK(said.find(marker) != std::string::npos);
        CHECK(said.rfind(std::string(pad, 'x') + "token ", 0) == 0);  // the driver's other words stay
    }
    // A refusal's words, cut by the 512-byte buffer the driver writes them in.
    SpiedDriver s({{"token", token}, {"admit", "rejected"},
                   {"refusal_text", std::string(500, 'x') + "token " + token}});
    auto r = s.region(memory);
    const auto e = s.failed(kvblob::OpKind::put, r);
    const std::string said = e.what();
    CAPTURE(said);
    CHECK(e.refused());
    CHECK(said.find(beginning) == std::string::npos);
    CHECK(said.find(marker) != std::string::npos);
}
