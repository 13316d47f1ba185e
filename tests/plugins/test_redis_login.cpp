// The Redis driver's open against a real server that requires a login
// (tests/redis/with_redis.sh auth): a missing or wrong password, and an ACL
// user refused a command, are refused at open with the server's words,
// never taken for a healthy store; no message ever carries a password.
#include <doctest/doctest.h>

#include <cstdlib>
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
