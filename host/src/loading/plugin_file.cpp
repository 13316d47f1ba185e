#include "plugin_file.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <stdexcept>

#include "elf_check.hpp"
#include "kvblob/host/file_kind.hpp"
#include "kvblob/host/load_error.hpp"
#include "kvblob/host/sha256.hpp"

namespace kvblob {

namespace fs = std::filesystem;

Fd &Fd::operator=(Fd &&other) noexcept
{
    if (this != &other) {
        if (fd_ >= 0) ::close(fd_);
        fd_ = other.release();
    }
    return *this;
}

Fd::~Fd()
{
    if (fd_ >= 0) ::close(fd_);
}

std::string descriptor_path(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

bool loaded_under(const std::string &name)
{
    struct Search {
        const std::string *name;
        bool found;
    } search{&name, false};
    dl_iterate_phdr(
        [](dl_phdr_info *info, size_t, void *data) {
            auto *s = static_cast<Search *>(data);
            if (info->dlpi_name && *s->name == info->dlpi_name) s->found = true;
            return s->found ? 1 : 0;
        },
        &search);
    return search.found;
}

namespace {

// The file mapped at address at in this process, as the kernel names it in
// /proc/self/maps: its device and inode.
struct MappedFile {
    unsigned major = 0, minor = 0;
    uint64_t inode = 0;
    bool operator==(const MappedFile &) const = default;
};

std::optional<MappedFile> mapped_file_at(uintptr_t at)
{
    std::FILE *maps = std::fopen("/proc/self/maps", "re");
    if (!maps) return std::nullopt;
    std::optional<MappedFile> found;
    char line[4096];
    while (!found && std::fgets(line, sizeof line, maps)) {
        uintptr_t start = 0, end = 0;
        MappedFile f;
        if (std::sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %*s %*s %x:%x %" SCNu64, &start, &end, &f.major, &f.minor,
                        &f.inode) == 5 &&
            start <= at && at < end && f.inode != 0)
            found = f;
    }
    std::fclose(maps);
    return found;
}

// fd's file as the kernel names a mapping of it: mapped for a moment, so
// that it is named as the loaded object's mapping is (on overlayfs both are
// the underlying file, which fstat does not show).
std::optional<MappedFile> mapped_file_of(int fd)
{
    void *page = ::mmap(nullptr, 1, PROT_READ, MAP_PRIVATE, fd, 0);
    if (page == MAP_FAILED) return std::nullopt;
    auto f = mapped_file_at(reinterpret_cast<uintptr_t>(page));
    ::munmap(page, 1);
    return f;
}

}  // namespace

std::string other_object(void *handle, int fd)
{
    link_map *map = nullptr;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || !map) return {};
    const std::string name = map->l_name ? map->l_name : "";
    // The file the object was mapped from, which no name can stand in for:
    // its first name may be a descriptor path since closed, or since given
    // to this very file.
    const auto loaded = mapped_file_at(reinterpret_cast<uintptr_t>(map->l_ld));
    const auto own = loaded ? mapped_file_of(fd) : std::nullopt;
    if (loaded && own) {
        if (*loaded == *own) return {};
        return name.empty() ? "an unnamed object" : name;
    }
    // No mapping to look at: the file at the object's first name.
    struct stat own_st {}, loaded_st {};
    if (name.empty() || ::fstat(fd, &own_st) != 0 || ::stat(name.c_str(), &loaded_st) != 0) return {};
    if (loaded_st.st_dev == own_st.st_dev && loaded_st.st_ino == own_st.st_ino) return {};
    return name;
}

std::string PluginFile::load_name() const
{
    struct stat own {};
    if (::fstat(fd.get(), &own) != 0) return descriptor_path(fd.get());
    struct Search {
        const struct stat *own;
        std::string held;
    } search{&own, {}};
    dl_iterate_phdr(
        [](dl_phdr_info *info, size_t, void *data) {
            auto *s = static_cast<Search *>(data);
            // This very file, loaded already: under a descriptor path this
            // loader holds open while the object stays loaded (library.cpp),
            // or under its own path by whoever dlopen'ed it so (the engine,
            // another library). dlopen of that name answers with the loaded
            // object and adds no name to it; a descriptor path would stay
            // its name for good, unseen here (dl_iterate_phdr shows only the
            // first name), and answer for the next plugin given that number.
            if (!info->dlpi_name || info->dlpi_name[0] != '/') return 0;
            struct stat st {};
            if (::stat(info->dlpi_name, &st) != 0 || st.st_dev != s->own->st_dev || st.st_ino != s->own->st_ino)
                return 0;
            s->held = info->dlpi_name;
            return 1;
        },
        &search);
    return search.held.empty() ? descriptor_path(fd.get()) : search.held;
}

namespace {

std::string octal(mode_t mode)
{
    char buf[8];
    std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
    return buf;
}

}  // namespace

PluginFile open_plugin_file(const std::string &file, const LoadOptions &options)
{
    auto refuse = [&](const std::string &rule, const std::string &why) {
        throw LoadError(file, LoadStage::open, {{rule, why}});
    };
    auto failed = [](const char *what) { return std::string(what) + ": " + std::strerror(errno); };

    // Links are resolved once, here; from then on every step works from a
    // descriptor, so nothing is looked up by name twice.
    std::error_code ec;
    const fs::path real = fs::canonical(file, ec);
    if (ec) refuse("R-LOAD-1", "no such file (" + ec.message() + ")");
    const std::string resolved = real.string() == file ? "" : " (resolved to " + real.string() + ")";
    const std::string folder = real.parent_path().string();

    Fd dir(::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir) refuse("R-LOAD-1", failed(("cannot open its folder " + folder).c_str()));
    // O_PATH opens nothing for reading: a FIFO or a device is named, never
    // opened (an open of a FIFO waits for a writer forever).
    Fd node(::openat(dir.get(), real.filename().c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (!node) refuse("R-LOAD-1", failed(("cannot open it" + resolved).c_str()));
    struct stat st {};
    if (fstat(node.get(), &st) != 0) refuse("R-LOAD-1", failed(("cannot stat it" + resolved).c_str()));
    if (!S_ISREG(st.st_mode))
        refuse("R-LOAD-1", "it is " + file_kind(st.st_mode) + resolved + ", not a regular file: not a shared object");
    // Reopened for reading through the descriptor, so it is the same inode.
    Fd fd(::open(descriptor_path(node.get()).c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) refuse("R-LOAD-1", failed(("cannot open it for reading" + resolved).c_str()));
    struct stat st2 {};
    if (fstat(fd.get(), &st2) != 0 || st2.st_dev != st.st_dev || st2.st_ino != st.st_ino)
        refuse("R-LOAD-1", "it changed while it was being opened" + resolved);

    std::vector<LoadProblem> problems;
    if (!options.allow_untrusted_file) {
        // Where no setting can allow the file (allow_untrusted_words empty),
        // none is suggested: the caller says what does work.
        const std::string allow = options.allow_untrusted_words.empty()
                                      ? std::string()
                                      : " (" + options.allow_untrusted_words + " to load it anyway)";
        if (st2.st_mode & S_IWOTH)
            problems.push_back({"R-LOAD-10", "the file" + resolved + " is world-writable (mode " +
                                                 octal(st2.st_mode) + "): anyone could have replaced its code" +
                                                 allow});
        if (st2.st_uid != 0 && st2.st_uid != geteuid())
            problems.push_back({"R-LOAD-10", "the file" + resolved + " is owned by user " +
                                                 std::to_string(st2.st_uid) + ", neither root nor this process's user " +
                                                 std::to_string(geteuid()) + allow});
        struct stat dst {};
        if (fstat(dir.get(), &dst) != 0)
            problems.push_back({"R-LOAD-10", failed(("cannot stat its folder " + folder).c_str())});
        else if ((dst.st_mode & S_IWOTH) && !(dst.st_mode & S_ISVTX))
            problems.push_back({"R-LOAD-10", "its folder " + folder + " is writable by others and not sticky (mode " +
                                                 octal(dst.st_mode) + "): anyone could replace the file" + allow});
    }
    if (!options.expected_sha256.empty()) {
        try {
            const std::string actual = sha256_fd_hex(fd.get());
            if (actual != options.expected_sha256)
                problems.push_back({"R-LOAD-11", "its SHA-256" + resolved + " is " + actual + ", not the pinned " +
                                                     options.expected_sha256});
        } catch (const std::runtime_error &e) {
            problems.push_back({"R-LOAD-11", e.what()});
        }
    }
    if (!problems.empty()) throw LoadError(file, LoadStage::open, std::move(problems));

    if (auto why = elf_segments_problem(fd.get(), st2.st_size); !why.empty()) refuse("R-LOAD-1", why + resolved);

    // A name an earlier object still holds (one dlclose could not unload,
    // its descriptor since closed) would make dlopen answer with that
    // object: move to a descriptor number no loaded object was loaded under.
    while (loaded_under(descriptor_path(fd.get()))) {
        Fd higher(fcntl(fd.get(), F_DUPFD_CLOEXEC, fd.get() + 1));
        if (!higher) refuse("R-LOAD-1", failed("cannot duplicate its descriptor"));
        fd = std::move(higher);
    }
    return PluginFile{std::move(fd)};
}

}  // namespace kvblob
