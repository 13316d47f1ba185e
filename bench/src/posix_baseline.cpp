// Raw POSIX I/O in the driver's own directory: a put is open(O_CREAT) +
// pwrite + close of a new file (with the driver's fsync setting), a get is
// open + pread + close, a probe is stat. No checksum, no reservation, no
// atomic publish: what the file driver adds to these is what its ratio
// shows. Its buffer is allocated as the driver lane's is (lane_memory.hpp):
// a copy from the page cache runs at very different speeds into buffers at
// different page offsets.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <vector>

#include "baseline.hpp"
#include "copy_methods.hpp"
#include "kvblob/host/batch.hpp"
#include "kvblob/tools/fill_pattern.hpp"
#include "lane_memory.hpp"

namespace kvblob::bench {

namespace {

using Clock = std::chrono::steady_clock;

bool write_all(int fd, const uint8_t *p, uint64_t n)
{
    for (uint64_t done = 0; done < n;) {
        ssize_t w = ::pwrite(fd, p + done, n - done, static_cast<off_t>(done));
        if (w <= 0) return false;
        done += static_cast<uint64_t>(w);
    }
    return true;
}

bool read_all(int fd, uint8_t *p, uint64_t n)
{
    for (uint64_t done = 0; done < n;) {
        ssize_t r = ::pread(fd, p + done, n - done, static_cast<off_t>(done));
        if (r <= 0) return false;
        done += static_cast<uint64_t>(r);
    }
    return true;
}

class PosixLane : public Lane {
public:
    PosixLane(const Point &p, const std::string &root, const std::string &fsync, unsigned lane)
        : p_(p), fsync_(fsync), buf_(p.size * p.batch)
    {
        dir_ = root + "/kvblob-bench-baseline/lane" + std::to_string(lane);
        std::filesystem::create_directories(dir_);
        fill_pattern(buf_.data(), buf_.size(), lane + 1);
    }
    ~PosixLane() override
    {
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }
    void prepare() override
    {
        if (p_.op != BenchOp::put && run(BenchOp::put).errors) throw std::runtime_error("cannot write the files to read");
    }
    Sample step() override { return run(p_.op); }
    std::string method() const override { return "buffer at page offset " + std::to_string(page_offset(buf_.data())); }
    void between() override
    {
        if (p_.op != BenchOp::put) return;
        for (uint64_t r = 0; r < p_.batch; ++r) ::unlink((dir_ + "/" + std::to_string(r)).c_str());
    }

private:
    Sample run(BenchOp op)
    {
        Sample s;
        const auto t0 = Clock::now();
        for (uint64_t r = 0; r < p_.batch; ++r) {
            const std::string path = dir_ + "/" + std::to_string(r);
            uint8_t *at = buf_.data() + r * p_.size;
            bool ok = false;
            if (op == BenchOp::probe) {
                struct stat st {};
                ok = ::stat(path.c_str(), &st) == 0;
            } else {
                int fd = op == BenchOp::put ? ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)
                                            : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
                if (fd >= 0) {
                    ok = op == BenchOp::put ? write_all(fd, at, p_.size) : read_all(fd, at, p_.size);
                    if (ok && op == BenchOp::put && fsync_ == "data") ok = ::fdatasync(fd) == 0;
                    if (ok && op == BenchOp::put && fsync_ == "full") ok = ::fsync(fd) == 0;
                    ok = ::close(fd) == 0 && ok;
                }
            }
            if (ok) {
                ++s.rows;
                if (op != BenchOp::probe) s.bytes += p_.size;
            } else if (!s.errors++) {
                s.error = path + ": " + std::strerror(errno);
            }
        }
        s.complete = Clock::now() - t0;
        return s;
    }

    const Point p_;
    const std::string fsync_;
    std::string dir_;
    HostBuffer buf_;
};

}  // namespace

Baseline posix_baseline(const std::string &root, const std::string &fsync)
{
    return {"pwrite/pread", [](BenchOp) { return true; },
            [root, fsync](const Point &p, unsigned lane) { return std::make_unique<PosixLane>(p, root, fsync, lane); }};
}

}  // namespace kvblob::bench
