// The file driver against a real filesystem: objects shared between
// processes, a writer killed mid-put, a full filesystem, the quota, and
// direct I/O.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include "file/posix_io.hpp"
#include "plugins/driver_harness.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "kvblob/tools/fill_pattern.hpp"

namespace fs = std::filesystem;
using kvblob::OpKind;
using namespace std::chrono_literals;

namespace {

struct FileHarness : DriverHarness {
    explicit FileHarness(const std::string &root, kvblob::Options extra = {})
        : DriverHarness("file", with_root(root, std::move(extra)))
    {
    }
    static kvblob::Options with_root(const std::string &root, kvblob::Options extra)
    {
        extra.insert(extra.begin(), {"root", root});
        return extra;
    }
};

// Files under root whose name contains part.
std::vector<fs::path> files_named(const std::string &root, const std::string &part)
{
    std::vector<fs::path> out;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec))
        if (it->path().filename().string().find(part) != std::string::npos) out.push_back(it->path());
    return out;
}

int peer(std::vector<std::string> args)
{
    args.insert(args.begin(), KVBLOB_FILE_PEER_BIN);
    ChildProcess p(args);
    REQUIRE(p.started());
    return p.wait();
}

std::vector<uint8_t> pattern(size_t size, uint64_t seed)
{
    std::vector<uint8_t> v(size);
    fill_pattern(v.data(), size, seed);
    return v;
}

}  // namespace

TEST_CASE("file driver: objects put by one process are read by another through one root")
{
    TempDir root("kvblob-file");
    REQUIRE(peer({"put", root.path(), "p", "16", "65536"}) == 0);

    FileHarness h(root.path());
    auto buf = h.buffer(65536);
    for (uint64_t i = 0; i < 16; ++i) {
        std::fill(buf.bytes.begin(), buf.bytes.end(), 0);
        CHECK(h.one(OpKind::get, "p" + std::to_string(i), {make_span(buf.handle(), 0, 65536)}) == KVBLOB_ROW_READY);
        CHECK(buf.bytes == pattern(65536, i));
    }
    for (uint64_t i = 0; i < 16; ++i) {
        auto bytes = pattern(65536, i);
        std::copy(bytes.begin(), bytes.end(), buf.bytes.begin());
        CHECK(h.one(OpKind::put, "q" + std::to_string(i), {make_span(buf.handle(), 0, 65536)}) == KVBLOB_ROW_READY);
    }
    CHECK(peer({"verify", root.path(), "q", "16", "65536"}) == 0);
    // The peer can fail: a key nobody put is not READY there either.
    CHECK(peer({"verify", root.path(), "never-put", "1", "65536"}) == 1);
}

TEST_CASE("file driver: a writer killed mid-put leaves no READY object, and its reservation expires")
{
    constexpr uint64_t size = 32u << 20;
    const std::string expiry = "1500";
    bool caught_mid_put = false;
    // The kill lands mid-put almost always; a put that finished between
    // the look and the kill is tried again.
    for (int attempt = 0; attempt < 5 && !caught_mid_put; ++attempt) {
        TempDir root("kvblob-file-kill");
        ChildProcess writer({KVBLOB_FILE_PEER_BIN, "put", root.path(), "k", "1000", std::to_string(size),
                             "reservation_expiry_ms=" + expiry});
        REQUIRE(writer.started());
        const auto deadline = std::chrono::steady_clock::now() + 30s;
        while (files_named(root.path(), ".writing").empty() && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(1ms);
        writer.kill(SIGKILL);
        CHECK(writer.wait() == 128 + SIGKILL);
        if (files_named(root.path(), ".writing").empty()) continue;
        caught_mid_put = true;

        const uint64_t published = files_named(root.path(), ".obj").size();
        const std::string torn = "k" + std::to_string(published);
        {
            // Judged by a reader whose expiry is an hour, the dead writer's
            // claim is fresh however long this takes on a loaded machine.
            FileHarness h(root.path(), {{"reservation_expiry_ms", "3600000"}});
            auto buf = h.buffer(size);
            auto span = make_span(buf.handle(), 0, size);
            // Every object published before the kill is whole; the one being
            // written is NOT_READY, never READY.
            for (uint64_t i = 0; i < published; ++i) {
                CHECK(h.one(OpKind::get, "k" + std::to_string(i), {span}) == KVBLOB_ROW_READY);
                CHECK(buf.bytes == pattern(size, i));
            }
            std::fill(buf.bytes.begin(), buf.bytes.end(), 0xEE);
            CHECK(h.one(OpKind::get, torn, {span}) == KVBLOB_ROW_NOT_READY);
            CHECK(h.one(OpKind::probe, torn) == KVBLOB_ROW_NOT_READY);
            CHECK(h.one(OpKind::put, torn, {span}) == KVBLOB_ROW_NOT_READY);
            CHECK(std::all_of(buf.bytes.begin(), buf.bytes.end(), [](uint8_t b) { return b == 0xEE; }));
        }

        // Once the dead writer's reservation is older than the expiry, the
        // key is simply absent, and a new writer takes it over. Its age is
        // its file's mtime: set an hour back (not the epoch, which marks a
        // claim given up), rather than waited for.
        for (const auto &claim : files_named(root.path(), ".writing")) {
            timespec hour_ago{};
            clock_gettime(CLOCK_REALTIME, &hour_ago);
            hour_ago.tv_sec -= 3600;
            const timespec times[2] = {hour_ago, hour_ago};
            REQUIRE(utimensat(AT_FDCWD, claim.c_str(), times, 0) == 0);
        }
        FileHarness h(root.path(), {{"reservation_expiry_ms", expiry}});
        auto buf = h.buffer(size);
        auto span = make_span(buf.handle(), 0, size);
        CHECK(h.one(OpKind::get, torn, {span}) == KVBLOB_ROW_MISS);
        CHECK(h.one(OpKind::probe, torn) == KVBLOB_ROW_MISS);
        auto bytes = pattern(size, 77);
        std::copy(bytes.begin(), bytes.end(), buf.bytes.begin());
        CHECK(h.one(OpKind::put, torn, {span}) == KVBLOB_ROW_READY);
        std::fill(buf.bytes.begin(), buf.bytes.end(), 0);
        CHECK(h.one(OpKind::get, torn, {span}) == KVBLOB_ROW_READY);
        CHECK(buf.bytes == bytes);
        // The dead writer's claim, and the bytes it held, went with it.
        CHECK(files_named(root.path(), ".writing").empty());
        CHECK(files_named(root.path(), ".stale.").empty());
    }
    REQUIRE(caught_mid_put);
}

TEST_CASE("file driver: a full filesystem is DECLINED and leaves nothing behind (R-ROW-8)")
{
    TempDir root("kvblob-file-full");
    if (::mount("tmpfs", root.path().c_str(), "tmpfs", 0, "size=1m") != 0) {
        MESSAGE("skipped: cannot mount a 1 MiB tmpfs here (" << std::strerror(errno) << "); needs root");
        return;
    }
    struct Unmount {
        std::string path;
        ~Unmount() { ::umount2(path.c_str(), MNT_DETACH); }
    } unmount{root.path()};
    {
        FileHarness h(root.path(), {{"fanout", "0"}});
        auto buf = h.buffer(600 << 10, 7);
        auto span = make_span(buf.handle(), 0, 600 << 10);
        CHECK(h.one(OpKind::put, "first", {span}) == KVBLOB_ROW_READY);
        Batch b;
        b.row("second", {span});
        auto op = h.submit(OpKind::put, b);
        REQUIRE(op.wait(30s));
        CHECK(op.results().at(0).result == KVBLOB_ROW_DECLINED);
        CHECK(op.message(0).find("No space left on device") != std::string::npos);
        CHECK(h.one(OpKind::get, "second", {span}) == KVBLOB_ROW_MISS);
        CHECK(files_named(root.path(), ".writing").empty());
        CHECK(h.one(OpKind::get, "first", {span}) == KVBLOB_ROW_READY);
    }
}

TEST_CASE("file driver: the quota declines what does not fit and counts what is already stored")
{
    TempDir root("kvblob-file-quota");
    constexpr uint64_t row = 600 << 10;
    {
        FileHarness h(root.path(), {{"capacity", "1M"}});
        auto buf = h.buffer(row, 3);
        auto span = make_span(buf.handle(), 0, row);
        CHECK(h.one(OpKind::put, "a", {span}) == KVBLOB_ROW_READY);
        CHECK(h.one(OpKind::put, "b", {span}) == KVBLOB_ROW_DECLINED);
        CHECK(h.one(OpKind::get, "b", {span}) == KVBLOB_ROW_MISS);
        CHECK(h.one(OpKind::remove, "a") == KVBLOB_ROW_READY);
        CHECK(h.one(OpKind::put, "b", {span}) == KVBLOB_ROW_READY);
    }
    // A driver opened later counts what the root already holds.
    FileHarness later(root.path(), {{"capacity", "1M"}});
    auto buf = later.buffer(row, 3);
    CHECK(later.one(OpKind::put, "c", {make_span(buf.handle(), 0, row)}) == KVBLOB_ROW_DECLINED);
}

TEST_CASE("file driver: direct I/O round-trips multi-span rows of unaligned sizes")
{
    TempDir root("kvblob-file-direct");
    FileHarness h(root.path(), {{"direct", "true"}, {"fsync", "data"}});
    auto src = h.buffer(3 * 4099);
    auto dst = h.buffer(3 * 4099);
    fill_pattern(src.bytes.data(), src.bytes.size(), 11);
    std::vector<kvblob_span_t> in, out;
    for (int s = 0; s < 3; ++s) {
        in.push_back(make_span(src.handle(), s * 4099, 4099));
        out.push_back(make_span(dst.handle(), (2 - s) * 4099, 4099));  // scattered the other way round
    }
    CHECK(h.one(OpKind::put, "unaligned", in) == KVBLOB_ROW_READY);
    CHECK(h.one(OpKind::get, "unaligned", out) == KVBLOB_ROW_READY);
    for (int s = 0; s < 3; ++s)
        CHECK(std::memcmp(src.bytes.data() + s * 4099, dst.bytes.data() + (2 - s) * 4099, 4099) == 0);
    CHECK(fs::file_size(files_named(root.path(), ".obj").at(0)) == 3 * 4099 + 40);
}

TEST_CASE("file driver: buffered rows of more spans than a read or write holds inline round-trip")
{
    TempDir root("kvblob-file-spans");
    FileHarness h(root.path());
    const size_t max_spans = h.driver().caps().max_spans_per_row;
    for (const size_t spans : {size_t(1), size_t(7), size_t(8), size_t(12)}) {
        CAPTURE(spans);
        if (spans > max_spans) continue;
        constexpr size_t each = 1000;
        auto src = h.buffer(spans * each);
        auto dst = h.buffer(spans * each);
        fill_pattern(src.bytes.data(), src.bytes.size(), static_cast<uint32_t>(spans));
        std::vector<kvblob_span_t> in, out;
        for (size_t s = 0; s < spans; ++s) {
            in.push_back(make_span(src.handle(), s * each, each));
            out.push_back(make_span(dst.handle(), (spans - 1 - s) * each, each));  // the other way round
        }
        const std::string key = "spans-" + std::to_string(spans);
        CHECK(h.one(OpKind::put, key, in) == KVBLOB_ROW_READY);
        CHECK(h.one(OpKind::get, key, out) == KVBLOB_ROW_READY);
        bool same = true;
        for (size_t s = 0; s < spans; ++s) {
            const uint8_t *back = dst.bytes.data() + (spans - 1 - s) * each;
            same = same && std::memcmp(src.bytes.data() + s * each, back, each) == 0;
        }
        CHECK(same);
    }
}

// Rows under 16 KiB are read whole into a staging buffer, the read's count
// telling the object's size (plugins/file/file_driver.cpp, get_staged);
// larger ones are sized first and read into their spans. Both sides of the
// line, in two spans each, and gets one byte off the stored size, which the
// staged read hands to the sized reading.
TEST_CASE("file driver: rows on both sides of the staged read round-trip, and another size is refused whole")
{
    TempDir root("kvblob-file-staged");
    FileHarness h(root.path());
    for (const size_t size : {size_t(2), size_t(4096), size_t(16383), size_t(16384), size_t(16385)}) {
        CAPTURE(size);
        const std::string key = "staged-" + std::to_string(size);
        auto src = h.buffer(size);
        fill_pattern(src.bytes.data(), size, static_cast<uint32_t>(size));
        const size_t head = size / 2;
        CHECK(h.one(OpKind::put, key, {make_span(src.handle(), 0, head), make_span(src.handle(), head, size - head)}) ==
              KVBLOB_ROW_READY);
        auto dst = h.buffer(size + 1, 0xa5);
        CHECK(h.one(OpKind::get, key, {make_span(dst.handle(), head, size - head), make_span(dst.handle(), 0, head)}) ==
              KVBLOB_ROW_READY);
        CHECK(std::memcmp(dst.bytes.data(), src.bytes.data() + size - head, head) == 0);
        CHECK(std::memcmp(dst.bytes.data() + head, src.bytes.data(), size - head) == 0);

        for (const size_t wrong : {size - 1, size + 1}) {
            CAPTURE(wrong);
            std::fill(dst.bytes.begin(), dst.bytes.end(), 0xa5);
            Batch b;
            b.row(key, {make_span(dst.handle(), 0, wrong)});
            auto op = h.submit(OpKind::get, b);
            REQUIRE(op.wait(std::chrono::seconds(60)));
            CHECK(op.results().at(0).result == KVBLOB_ROW_FAULT);
            CHECK(op.message(0).find("stored object is " + std::to_string(size) + " bytes") != std::string::npos);
            // Neither side of the line writes a row it refuses for its size.
            CHECK(std::count(dst.bytes.begin(), dst.bytes.end(), 0xa5) == static_cast<ptrdiff_t>(dst.bytes.size()));
        }
    }
}

TEST_CASE("file driver: a root that is missing or not a directory is refused, naming the option")
{
    TempDir root("kvblob-file-bad");
    const std::string missing = root.path() + "/no-such-dir";
    for (const std::string &bad : {missing, std::string("/dev/null"), std::string()}) {
        CAPTURE(bad);
        auto plugin = kvblob::Plugin::load("file");
        std::string what;
        try {
            plugin.open({{"root", bad}});
        } catch (const std::exception &e) {
            what = e.what();
        }
        CHECK(what.find("option 'root'") != std::string::npos);
    }
}

TEST_CASE("file driver: a put closes a duplicate to hear a late write error only where close may report one")
{
    using kvblob::file::close_may_report;
    using kvblob::file::close_may_report_on;
    // Local filesystems without a close-time step: no flush by close.
    CHECK_FALSE(close_may_report_on(EXT4_SUPER_MAGIC));
    CHECK_FALSE(close_may_report_on(XFS_SUPER_MAGIC));
    CHECK_FALSE(close_may_report_on(TMPFS_MAGIC));
    // Shared and user-space ones write back at close, and any other is
    // taken to: the flush stays.
    CHECK(close_may_report_on(NFS_SUPER_MAGIC));
    CHECK(close_may_report_on(SMB2_SUPER_MAGIC));
    CHECK(close_may_report_on(0x65735546));  // FUSE
    CHECK(close_may_report_on(OVERLAYFS_SUPER_MAGIC));
    CHECK(close_may_report_on(0));
    // By path: one statfs cannot look at reports; the test's own root
    // answers as its filesystem's type does.
    TempDir root("kvblob-file-close");
    CHECK(close_may_report(root.path() + "/no-such-dir"));
    struct statfs fs {};
    REQUIRE(::statfs(root.path().c_str(), &fs) == 0);
    CHECK(close_may_report(root.path()) == close_may_report_on(static_cast<long>(fs.f_type)));
}

TEST_CASE("file driver: an open file is linked by descriptor or through /proc, never over a name, never once nameless")
{
    using kvblob::file::link_open_file;
    using kvblob::file::LinkBy;
    TempDir root("kvblob-file-link");
    const std::string claim = root.path() + "/claim", object = root.path() + "/object";
    kvblob::file::UniqueFd fd(::open(claim.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
    REQUIRE(fd);
    REQUIRE(::write(fd.get(), "bytes", 5) == 5);
    for (const auto by : {LinkBy::descriptor, LinkBy::proc_path}) {
        CAPTURE(by == LinkBy::descriptor);
        const int err = link_open_file(fd.get(), object, by);
        // Linking by descriptor needs CAP_DAC_READ_SEARCH before Linux
        // 6.10: a refusal is ENOENT, and the chooser goes through /proc.
        if (by == LinkBy::descriptor && err == ENOENT) {
            MESSAGE("linkat AT_EMPTY_PATH refused to this process: the /proc way alone is checked");
            continue;
        }
        REQUIRE(err == 0);
        struct stat a {}, b {};
        REQUIRE(::stat(object.c_str(), &a) == 0);
        REQUIRE(::fstat(fd.get(), &b) == 0);
        CHECK(a.st_ino == b.st_ino);
        CHECK(a.st_size == 5);
        CHECK(link_open_file(fd.get(), object, by) == EEXIST);  // never replaces
        REQUIRE(::unlink(object.c_str()) == 0);
    }
    CHECK(link_open_file(fd.get(), object) == 0);  // whichever way this process may
    CHECK(link_open_file(fd.get(), object) == EEXIST);
    REQUIRE(::unlink(object.c_str()) == 0);
    // A file whose names are all gone (a claim broken by another writer)
    // cannot be given one again, either way.
    REQUIRE(::unlink(claim.c_str()) == 0);
    CHECK(link_open_file(fd.get(), object, LinkBy::descriptor) == ENOENT);
    CHECK(link_open_file(fd.get(), object, LinkBy::proc_path) == ENOENT);
    CHECK(link_open_file(fd.get(), object) == ENOENT);
    struct stat none {};
    CHECK(::stat(object.c_str(), &none) != 0);
}
