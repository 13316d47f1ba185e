#include "elf_check.hpp"

#include <elf.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace kvblob {

namespace {

// Reads exactly n bytes at offset, or says why not.
bool read_at(int fd, void *out, size_t n, off_t offset)
{
    auto *p = static_cast<char *>(out);
    while (n > 0) {
        ssize_t got = pread(fd, p, n, offset);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return false;
        p += got;
        n -= static_cast<size_t>(got);
        offset += got;
    }
    return true;
}

// offset + size <= limit, without overflow.
bool fits(uint64_t offset, uint64_t size, uint64_t limit) { return offset <= limit && size <= limit - offset; }

}  // namespace

std::string elf_segments_problem(int fd, off_t file_size)
{
    const auto size = static_cast<uint64_t>(file_size);
    unsigned char ident[EI_NIDENT] = {};
    if (size < EI_NIDENT || !read_at(fd, ident, sizeof ident, 0)) return {};
    if (std::memcmp(ident, ELFMAG, SELFMAG) != 0) return {};
    // Only the host's own class is judged here: the dynamic linker refuses
    // another class (wrong ELF class) without mapping it.
    if (ident[EI_CLASS] != ELFCLASS64) return {};
    Elf64_Ehdr eh{};
    if (size < sizeof eh || !read_at(fd, &eh, sizeof eh, 0))
        return "it is an ELF file too short for its own header (" + std::to_string(size) + " bytes): truncated";
    if (eh.e_phnum == 0) return {};
    if (eh.e_phentsize != sizeof(Elf64_Phdr))
        return "its program header entries are " + std::to_string(eh.e_phentsize) + " bytes, not " +
               std::to_string(sizeof(Elf64_Phdr)) + ": damaged";
    const uint64_t table_bytes = uint64_t{eh.e_phnum} * sizeof(Elf64_Phdr);
    if (!fits(eh.e_phoff, table_bytes, size))
        return "its program headers (offset " + std::to_string(eh.e_phoff) + ", " + std::to_string(table_bytes) +
               " bytes) end past the end of the file (" + std::to_string(size) + " bytes): truncated";
    std::vector<Elf64_Phdr> headers(eh.e_phnum);
    if (!read_at(fd, headers.data(), table_bytes, static_cast<off_t>(eh.e_phoff)))
        return "its program headers cannot be read";
    for (size_t i = 0; i < headers.size(); ++i) {
        const auto &ph = headers[i];
        if (ph.p_type != PT_LOAD && ph.p_type != PT_DYNAMIC) continue;
        if (!fits(ph.p_offset, ph.p_filesz, size))
            return std::string(ph.p_type == PT_LOAD ? "its loadable segment" : "its dynamic section") + " #" +
                   std::to_string(i) + " (file offset " + std::to_string(ph.p_offset) + ", " +
                   std::to_string(ph.p_filesz) + " bytes) ends past the end of the file (" + std::to_string(size) +
                   " bytes): truncated or damaged";
    }
    return {};
}

}  // namespace kvblob
