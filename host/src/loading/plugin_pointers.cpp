#include "plugin_pointers.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace kvblob {

std::string address_text(uintptr_t address)
{
    char text[24];
    std::snprintf(text, sizeof text, "0x%jx", static_cast<uintmax_t>(address));
    return text;
}

namespace {

// A pipe the kernel copies a probed byte into, drained as it goes.
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

    // 1 when the byte at p can be read, 0 when not, -1 when the probe failed.
    int readable(uintptr_t p)
    {
        char byte;
        if (fds_[1] < 0) return -1;
        if (::write(fds_[1], reinterpret_cast<const void *>(p), 1) != 1) return errno == EFAULT ? 0 : -1;
        return ::read(fds_[0], &byte, 1) == 1 ? 1 : -1;
    }

private:
    int fds_[2];
};

uintptr_t page_size() { return static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE)); }

// Readability is a property of whole pages: one byte probed in each page
// [p, p + n) touches says it for every byte there, and reads no byte
// outside the range (AddressSanitizer would rightly call that an overflow).
std::string unreadable_pages(Probe &probe, uintptr_t p, size_t n)
{
    const uintptr_t end = p + n, page = page_size();
    for (uintptr_t at = p; at < end; at = (at / page + 1) * page) {
        const int r = probe.readable(at);
        if (r < 0) return "its memory could not be probed";
        if (r == 0) return address_text(at) + " is not readable memory";
    }
    return {};
}

}  // namespace

std::string unreadable(const void *p, size_t bytes)
{
    if (!p) return "it is NULL";
    const auto at = reinterpret_cast<uintptr_t>(p);
    if (at + bytes < at) return "it wraps around the address space";
    Probe probe;
    return unreadable_pages(probe, at, bytes);
}

std::string read_bounded_string(const char *p, size_t max, std::string &out)
{
    out.clear();
    if (!p) return "NULL";
    Probe probe;
    const uintptr_t page = page_size();
    auto at = reinterpret_cast<uintptr_t>(p);
    // Page by page: each one's first byte probed, then read up to its NUL
    // (strnlen stops there), max + 1 bytes at most: the string and its NUL.
    while (out.size() <= max) {
        if (auto why = unreadable_pages(probe, at, 1); !why.empty()) return "not a readable string (" + why + ")";
        const size_t room = std::min<size_t>((at / page + 1) * page - at, max + 1 - out.size());
        const size_t len = ::strnlen(reinterpret_cast<const char *>(at), room);
        out.append(reinterpret_cast<const char *>(at), len);
        if (len < room) return {};
        at += room;
    }
    out.resize(max);
    return "longer than " + std::to_string(max) + " bytes";
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
    return address_text(s.address) + " is not inside an executable segment of any loaded object (it lies in " +
           owner + ")";
}

}  // namespace kvblob
