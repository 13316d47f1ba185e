#include "plugin_pointers.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace kvblob {

namespace {

std::string hex(uintptr_t v)
{
    char text[24];
    std::snprintf(text, sizeof text, "0x%jx", static_cast<uintmax_t>(v));
    return text;
}

// A pipe the kernel copies probed memory into, drained as it goes.
class Probe {
public:
    Probe()
    {
        if (::pipe2(fds_, O_CLOEXEC | O_NONBLOCK) != 0) fds_[0] = fds_[1] = -1;
    }
    ~Probe()
    {
        for (int fd : fds_)
            if (fd >= 0) ::close(fd);
    }
    Probe(const Probe &) = delete;
    Probe &operator=(const Probe &) = delete;

    // Copies up to n bytes at p into out (n <= out's size): how many could
    // be read (0 at an unreadable first byte), or -1 when the probe failed.
    ssize_t copy(const void *p, size_t n, char *out)
    {
        if (fds_[1] < 0) return -1;
        const ssize_t put = ::write(fds_[1], p, n);
        if (put < 0) return errno == EFAULT ? 0 : -1;
        return ::read(fds_[0], out, static_cast<size_t>(put)) == put ? put : -1;
    }

private:
    int fds_[2];
};

// Reads [p, p + n) in chunks no larger than the pipe holds, none crossing a
// page boundary (a write that faults midway copies what came before).
template <class Each>
std::string walk(const void *p, size_t n, Each each)
{
    static const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    Probe probe;
    std::array<char, 4096> chunk{};
    auto at = reinterpret_cast<uintptr_t>(p);
    while (n > 0) {
        const size_t step = std::min({n, chunk.size(), page - at % page});
        const ssize_t got = probe.copy(reinterpret_cast<const void *>(at), step, chunk.data());
        if (got < 0) return "its memory could not be probed";
        if (static_cast<size_t>(got) < step) return hex(at + static_cast<uintptr_t>(got)) + " is not readable memory";
        if (each(chunk.data(), step)) break;
        at += step;
        n -= step;
    }
    return {};
}

}  // namespace

std::string unreadable(const void *p, size_t bytes)
{
    if (!p) return "it is NULL";
    if (reinterpret_cast<uintptr_t>(p) + bytes < reinterpret_cast<uintptr_t>(p)) return "it wraps around the address space";
    return walk(p, bytes, [](const char *, size_t) { return false; });
}

std::string read_bounded_string(const char *p, size_t max, std::string &out)
{
    out.clear();
    if (!p) return "NULL";
    bool ended = false;
    // max + 1 bytes at most: the string and its NUL.
    std::string why = walk(p, max + 1, [&](const char *chunk, size_t n) {
        const char *nul = static_cast<const char *>(std::memchr(chunk, '\0', n));
        out.append(chunk, nul ? static_cast<size_t>(nul - chunk) : n);
        return ended = nul != nullptr;
    });
    if (!why.empty()) return "not a readable string (" + why + ")";
    if (!ended) {
        out.resize(max);
        return "longer than " + std::to_string(max) + " bytes";
    }
    return {};
}

std::string not_code(const void *fn)
{
    struct Search {
        uintptr_t address;
        bool executable;
    } s{reinterpret_cast<uintptr_t>(fn), false};
    dl_iterate_phdr(
        [](dl_phdr_info *info, size_t, void *data) {
            auto *s = static_cast<Search *>(data);
            for (int i = 0; i < info->dlpi_phnum; ++i) {
                const auto &ph = info->dlpi_phdr[i];
                if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
                const uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
                if (s->address >= lo && s->address < lo + ph.p_memsz) s->executable = true;
            }
            return s->executable ? 1 : 0;
        },
        &s);
    if (s.executable) return {};
    Dl_info where{};
    const std::string owner =
        dladdr(fn, &where) && where.dli_fname ? std::string("data of ") + where.dli_fname : "no loaded object";
    return hex(s.address) + " is not inside an executable segment of any loaded object (it lies in " + owner + ")";
}

}  // namespace kvblob
