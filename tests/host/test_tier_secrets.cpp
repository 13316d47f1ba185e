// A tier's secret option stays secret through a driver made of drivers: the
// tiered driver's table cannot describe tier.N.<option>, so the host asks
// tier N's driver (Plugin::secret_option among the options). The fixture
// libkvblob_fixture_option_flags.so flags its option "greeting" secret, a
// name no guess would hide: only its table can say so.
#include <doctest/doctest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include "kvblob/host/batch.hpp"
#include "kvblob/host/config.hpp"
#include "kvblob/host/plugin.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace fs = std::filesystem;

namespace {

const std::string flagged = std::string(KVBLOB_FIXTURE_DIR) + "/libkvblob_fixture_option_flags.so";
const std::string quiet = "quiet-greeting-7f3a";  // the flagged option's value: never shown

std::string value_of(const kvblob::Options &options, const std::string &key)
{
    for (const auto &[k, v] : options)
        if (k == key) return v;
    return "(absent)";
}

bool has(const std::string &text, const std::string &part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("tier secrets: a tier's option is secret where the tier's driver flags it, whatever its name")
{
    const auto tiered = kvblob::Plugin::load("tiered");
    const kvblob::Options options{{"tier.0.driver", "memory"}, {"tier.0.store", "tier-secrets"},
                                  {"tier.0.token", "memory-token-9c1d"},  // memory flags token
                                  {"tier.1.driver", flagged},           {"tier.1.greeting", quiet},
                                  {"workers", "2"}};
    CHECK_FALSE(kvblob::looks_secret("tier.1.greeting"));  // so the name alone would print it
    CHECK(tiered.secret_option("tier.1.greeting", options));
    CHECK(tiered.secret_option("tier.0.token", options));
    CHECK_FALSE(tiered.secret_option("tier.0.store", options));
    CHECK_FALSE(tiered.secret_option("tier.1.driver", options));
    CHECK_FALSE(tiered.secret_option("workers", options));
    const auto shown = tiered.redacted(options);
    CHECK(value_of(shown, "tier.1.greeting") == kvblob::redacted_value);
    CHECK(value_of(shown, "tier.0.token") == kvblob::redacted_value);
    CHECK(value_of(shown, "tier.0.store") == "tier-secrets");
    CHECK(value_of(shown, "tier.1.driver") == flagged);
    const auto secrets = tiered.secrets_in(options);
    CHECK(std::find(secrets.begin(), secrets.end(), quiet) != secrets.end());
    CHECK(std::find(secrets.begin(), secrets.end(), "tier-secrets") == secrets.end());
}

TEST_CASE("tier secrets: a tier of tiers asks its own tiers, and a tier whose driver cannot load hides its options")
{
    const auto tiered = kvblob::Plugin::load("tiered");
    const kvblob::Options nested{{"tier.0.driver", "memory"},
                                 {"tier.1.driver", "tiered"},
                                 {"tier.1.tier.0.driver", "memory"},
                                 {"tier.1.tier.1.driver", flagged},
                                 {"tier.1.tier.1.greeting", quiet}};
    CHECK(tiered.secret_option("tier.1.tier.1.greeting", nested));
    CHECK_FALSE(tiered.secret_option("tier.1.tier.0.driver", nested));
    const kvblob::Options unloadable{{"tier.0.driver", "memory"},
                                     {"tier.1.driver", "no-such-driver-here"},
                                     {"tier.1.greeting", quiet}};
    CHECK(tiered.secret_option("tier.1.greeting", unloadable));
    // A key of no tier is judged by its name, as before.
    CHECK(tiered.secret_option("tier.9.password", {}));
    CHECK_FALSE(tiered.secret_option("tier.9.greeting", {}));
}

TEST_CASE("tier secrets: a refused tier option in a config file is reported without a tier's secret")
{
    // The fixture refuses its option 'fail'; its value repeats the secret
    // greeting, which the host takes out of the report.
    TempDir dir("kvblob-tier-secrets");
    const fs::path file = fs::path(dir.path()) / "engine.toml";
    std::ofstream(file) << "[driver]\nname = \"tiered\"\n"
                        << "[[driver.tiers]]\ndriver = \"memory\"\nstore = \"tier-secrets-config\"\n"
                        << "[[driver.tiers]]\ndriver = \"" << flagged << "\"\ngreeting = \"" << quiet << "\"\n"
                        << "fail = \"" << quiet << "\"\n";
    const auto config = kvblob::read_driver_config(file);
    const auto plugin = kvblob::load_configured_plugin(config);
    try {
        kvblob::open_configured_driver(plugin, config);
        FAIL("opened");
    } catch (const kvblob::ConfigError &e) {
        const std::string said = e.what();
        CAPTURE(said);
        CHECK(e.line() == 9);
        CHECK(has(said, "driver.tiers[1] (tier 1), key 'fail'"));
        CHECK_FALSE(has(said, quiet));
        CHECK(has(said, kvblob::removed_secret));
    }
}

TEST_CASE("tier secrets: the conformance runner prints a tier's secret nowhere")
{
    TempDir dir("kvblob-tier-secrets");
    const std::string json = dir.path() + "/report.json";
    // One quick check is enough: the header and the report carry the options.
    const auto run = run_command(std::string(KVBLOB_CONFORMANCE_BIN) +
                                 " --driver tiered --option tier.0.driver=memory --option tier.0.store=tier-secrets-run"
                                 " --option tier.1.driver=" + flagged + " --option tier.1.greeting=" + quiet +
                                 " --filter admission.no-rows --json " + json);
    CAPTURE(run.output);
    std::ifstream in(json);
    std::stringstream report;
    report << in.rdbuf();
    CHECK(has(report.str(), "tier.1.greeting"));  // the report names the option
    CHECK_FALSE(has(report.str(), quiet));         // and not its value
    CHECK_FALSE(has(run.output, quiet));
}

TEST_CASE("tier secrets: the battery opens a tiered driver with a secret in each option a tier's driver flags")
{
    // The tiered driver's own table flags nothing; the memory driver flags
    // token. The check had nothing to judge (NOT_SUPPORTED) before it asked
    // the tiers.
    const auto run = run_command(std::string(KVBLOB_CONFORMANCE_BIN) +
                                 " --driver tiered --option tier.0.driver=memory --option tier.0.store=tier-secrets-hot"
                                 " --option tier.1.driver=memory --option tier.1.store=tier-secrets-cold"
                                 " --filter open.secret-unspoken");
    CAPTURE(run.output);
    CHECK(run.exit_code == 0);
    CHECK(has(run.output, "[PASS] open.secret-unspoken"));
}

namespace {

// Tiers of tiers, depth levels deep: each level a tiered driver over a
// memory tier, the deepest a memory tier over the flagged fixture, whose
// option "store" is not secret.
kvblob::Options nested_tiers(size_t depth)
{
    kvblob::Options options;
    std::string at;
    for (size_t level = 1; level < depth; ++level) {
        options.emplace_back(at + "tier.0.driver", "tiered");
        options.emplace_back(at + "tier.1.driver", "memory");
        options.emplace_back(at + "tier.1.store", "tier-secrets-nested-" + std::to_string(getpid()));
        at += "tier.0.";
    }
    options.emplace_back(at + "tier.0.driver", "memory");
    options.emplace_back(at + "tier.0.store", "tier-secrets-deepest-" + std::to_string(getpid()));
    options.emplace_back(at + "tier.1.driver", flagged);
    options.emplace_back(at + "tier.1.store", "plain");
    return options;
}

}  // namespace

TEST_CASE("tier secrets: tiers of tiers nest at most 4 deep, and a deeper key is hidden without loading")
{
    const auto tiered = kvblob::Plugin::load("tiered");
    // Four levels: the deepest tier's driver is asked, and says "store" is
    // not secret; the stack opens.
    const auto four = nested_tiers(4);
    const std::string deepest4 = "tier.0.tier.0.tier.0.tier.1.store";
    CHECK_FALSE(tiered.secret_option(deepest4, four));
    CHECK_NOTHROW(tiered.open(four));
    // Five: nothing is loaded for the key (taken as secret), and the tiered
    // driver refuses the open naming the key and the bound. Before the bound,
    // 200 levels took minutes to open (each level loads and asks the levels
    // below it).
    const auto five = nested_tiers(5);
    const std::string deepest5 = "tier.0." + deepest4;
    CHECK(tiered.secret_option(deepest5, five));
    try {
        auto d = tiered.open(five);
        FAIL("five levels of tiers opened");
    } catch (const kvblob::LoadError &e) {
        const std::string said = e.what();
        CAPTURE(said);
        CHECK(has(said, "'tier.0.tier.0.tier.0.tier.0.tier.0.driver'"));
        CHECK(has(said, "nest at most 4 deep"));
    }
}

// The spy (tests/fixtures/spy_driver.cpp) as the top tier repeats, at the
// end of each row message, a value that is not its own secret but the
// memory tier's (its token), after padding that makes the spy's host cut
// the message inside it. The spy's host cannot know it for a secret; the
// tiered driver, which knows every tier's, takes it out of the words it
// repeats (here the log line of a put the top tier did not cache).
TEST_CASE("tier secrets: a tier repeating another tier's secret, cut by the host, is said nowhere")
{
    const std::string token = "q7-memory-token-5e7a91c0";
    std::mutex mu;
    std::string said;
    const auto tiered = kvblob::Plugin::load("tiered");
    auto driver = tiered.open(
        {{"tier.0.driver", std::string(KVBLOB_FIXTURE_DIR) + "/libkvblob_spy.so"},
         {"tier.0.results", "fault"},
         {"tier.0.echo", token},
         {"tier.0.message_pad", std::to_string(kvblob::max_row_message_bytes - 12)},
         {"tier.1.driver", "memory"},
         {"tier.1.store", "tier-secrets-echo"},
         {"tier.1.token", token}},
        [&](kvblob_log_level, const std::string &line) {
            std::lock_guard lock(mu);
            said += line + "\n";
        });
    std::vector<uint8_t> memory(64, 7);
    auto region = driver.register_region({sizeof(kvblob_region_desc_t), KVBLOB_MEMORY_HOST, memory.data(), 64, 0, 0});
    kvblob::Batch put;
    put.row("echo", {kvblob::make_span(region.handle(), 0, 64)});
    auto op = driver.submit(kvblob::OpKind::put, put.get());
    REQUIRE(op.wait(std::chrono::seconds(60)));
    CHECK(op.results().at(0).result == KVBLOB_ROW_READY);  // stored below; the top tier's FAULT is a cache's
    CHECK(op.release() == KVBLOB_OK);
    std::lock_guard lock(mu);
    CAPTURE(said);
    CHECK(has(said, "was not cached"));
    CHECK_FALSE(has(said, token.substr(0, kvblob::min_scrubbed_secret)));
}
