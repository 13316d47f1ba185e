// The Redis driver's open against a real server that requires a login
// (tests/redis/with_redis.sh auth): a missing or wrong password, and an ACL
// user refused a command, are refused at open with the server's words,
// never taken for a healthy store; no message ever carries a password.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdlib>
#include <vector>
#include <optional>
#include <string>

#include "plugins/driver_harness.hpp"

using kvblob::OpKind;

namespace {

struct Login {
    std::string url, password, user, limited_user, user_password;
};

// The server's login, or nullopt when these tests run without one.
std::optional<Login> login()
{
    const char *url = std::getenv("KVBLOB_REDIS_URL");
    const char *pw = std::getenv("KVBLOB_REDIS_PASSWORD");
    const char *user = std::getenv("KVBLOB_REDIS_ACL_USER");
    const char *limited = std::getenv("KVBLOB_REDIS_LIMITED_USER");
    const char *user_pw = std::getenv("KVBLOB_REDIS_ACL_PASSWORD");
    if (!url || !pw || !user || !limited || !user_pw) return std::nullopt;
    return Login{url, pw, user, limited, user_pw};
}

// Opens the driver with options; the loader's message when refused, or
// "" when it opened (and served a put and a get).
std::string open_message(kvblob::Options options)
{
    try {
        DriverHarness h("redis", std::move(options));
        auto buf = h.buffer(4096, 0x5c);
        CHECK(h.one(OpKind::put, "login-check", {make_span(buf.handle(), 0, 4096)}) == KVBLOB_ROW_READY);
        CHECK(h.one(OpKind::get, "login-check", {make_span(buf.handle(), 0, 4096)}) == KVBLOB_ROW_READY);
        return "";
    } catch (const kvblob::LoadError &e) {
        return e.what();
    }
}

bool has(const std::string &text, const std::string &part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("redis login: a missing or wrong password is refused at open with the server's words")
{
    const auto l = login();
    if (!l) {
        MESSAGE("skipped: needs a server with a login (run through tests/redis/with_redis.sh auth)");
        return;
    }
    // Missing: the PING of the login check is answered NOAUTH.
    std::string m = open_message({{"url", l->url}});
    INFO(m);
    CHECK(has(m, "KVBLOB_E_STORE"));
    CHECK(has(m, "NOAUTH"));
    CHECK(has(m, "option 'password' is not set"));

    // Wrong: AUTH itself is refused; neither password is repeated.
    const std::string wrong = "not-" + l->password;
    m = open_message({{"url", l->url}, {"password", wrong}});
    INFO(m);
    CHECK(has(m, "KVBLOB_E_STORE"));
    CHECK(has(m, "WRONGPASS"));
    CHECK(has(m, "option 'password'"));
    CHECK_FALSE(has(m, wrong));
    CHECK_FALSE(has(m, l->password));

    // Right: the store serves.
    CHECK(open_message({{"url", l->url}, {"password", l->password}}) == "");
}

TEST_CASE("redis login: an ACL user logs in by name and password, and a wrong password names the user only")
{
    const auto l = login();
    if (!l) {
        MESSAGE("skipped: needs a server with a login (run through tests/redis/with_redis.sh auth)");
        return;
    }
    CHECK(open_message({{"url", l->url}, {"username", l->user}, {"password", l->user_password}}) == "");

    const std::string wrong = l->user_password + "-wrong";
    const std::string m = open_message({{"url", l->url}, {"username", l->user}, {"password", wrong}});
    INFO(m);
    CHECK(has(m, "KVBLOB_E_STORE"));
    CHECK(has(m, "WRONGPASS"));
    CHECK(has(m, "user '" + l->user + "'"));
    CHECK_FALSE(has(m, wrong));
    CHECK_FALSE(has(m, l->user_password));

    // The default user's password is not this user's.
    CHECK(has(open_message({{"url", l->url}, {"username", l->user}, {"password", l->password}}), "WRONGPASS"));
}

TEST_CASE("redis login: only 'cluster support disabled' means one server, any other CLUSTER SLOTS error refuses")
{
    const auto l = login();
    if (!l) {
        MESSAGE("skipped: needs a server with a login (run through tests/redis/with_redis.sh auth)");
        return;
    }
    // A user refused the CLUSTER command cannot be told a single server
    // from a cluster: refused, in the server's words...
    const kvblob::Options limited{{"url", l->url}, {"username", l->limited_user}, {"password", l->user_password}};
    const std::string m = open_message(limited);
    INFO(m);
    CHECK(has(m, "KVBLOB_E_STORE"));
    CHECK(has(m, "NOPERM"));
    CHECK(has(m, "CLUSTER SLOTS"));
    // ...unless cluster=off says which it is.
    kvblob::Options off = limited;
    off.emplace_back("cluster", "off");
    CHECK(open_message(off) == "");
}

TEST_CASE("redis login: a URL's userinfo logs in, and no refusal repeats its password")
{
    const auto l = login();
    if (!l) {
        MESSAGE("skipped: needs a server with a login (run through tests/redis/with_redis.sh auth)");
        return;
    }
    const std::string hostport = l->url.substr(std::string("redis://").size());
    // The ACL user by name, and the default user by password alone.
    CHECK(open_message({{"url", "redis://" + l->user + ":" + l->user_password + "@" + hostport}}) == "");
    CHECK(open_message({{"url", "redis://:" + l->password + "@" + hostport}}) == "");
    // Percent-encoded, as a URL may carry it.
    std::string encoded;
    for (char c : l->user_password) encoded += "%" + std::string(1, "0123456789ABCDEF"[(c >> 4) & 15]) + "0123456789ABCDEF"[c & 15];
    CHECK(open_message({{"url", "redis://" + l->user + ":" + encoded + "@" + hostport}}) == "");
    // Refused: a wrong password, a server that is not there, a malformed
    // URL, and a URL that disagrees with option 'password'. It once connected
    // to the host "user:password@127.0.0.1" and said so.
    const std::string secret = "wrong-url-secret-" + std::to_string(::getpid());
    for (const auto &options : std::vector<kvblob::Options>{
             {{"url", "redis://" + l->user + ":" + secret + "@" + hostport}},
             {{"url", "redis://" + l->user + ":" + secret + "@127.0.0.1:1"}, {"connect_timeout_ms", "2000"}},
             {{"url", "redis://" + l->user + ":" + secret + "@127.0.0.1:notaport"}},
             {{"url", "redis://" + l->user + ":" + secret + "@" + hostport}, {"password", l->user_password}},
         }) {
        const std::string m = open_message(options);
        CHECK_MESSAGE(!m.empty(), "opened with " << options.front().second.size() << " bytes of url");
        CHECK_MESSAGE(!has(m, secret), m);
        CHECK_MESSAGE(!has(m, l->user_password), m);
    }
}
