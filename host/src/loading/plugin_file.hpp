// The plugin file, opened once (R-LOAD-1, R-LOAD-10, R-LOAD-11). Internal.
//
// Checking a file by its path and then handing the same path to dlopen
// leaves a window in which the path can come to name another file (a
// symlink swapped, a file renamed over). So the loader opens the file once,
// judges that descriptor (its kind, owner, mode, folder, digest and ELF
// segments) and has the dynamic linker load that same descriptor through
// /proc/self/fd/N: what was checked is what runs.
#pragma once

#include <string>

#include "kvblob/host/types.hpp"

namespace kvblob {

// An owned file descriptor, closed at scope exit.
class Fd {
public:
    Fd() = default;
    explicit Fd(int fd) noexcept : fd_(fd) {}
    Fd(Fd &&other) noexcept : fd_(other.release()) {}
    Fd &operator=(Fd &&other) noexcept;
    Fd(const Fd &) = delete;
    Fd &operator=(const Fd &) = delete;
    ~Fd();
    int get() const noexcept { return fd_; }
    explicit operator bool() const noexcept { return fd_ >= 0; }
    int release() noexcept
    {
        int fd = fd_;
        fd_ = -1;
        return fd;
    }

private:
    int fd_ = -1;
};

// "/proc/self/fd/N": the name under which the dynamic linker loads fd.
std::string descriptor_path(int fd);

// True when an object the dynamic linker holds was loaded under `name`.
// dlopen answers a name it already holds with that object, without opening
// anything, so a descriptor name still held by an earlier object must not
// be reused for another file.
bool loaded_under(const std::string &name);

// The name of the object a dlopen of fd's file answered with, when that
// object was loaded from another file; empty when it is fd's file (or no
// name of it can be looked at). A name the dynamic linker already holds is
// answered without opening anything, so the answer is checked, not assumed.
std::string other_object(void *handle, int fd);

struct PluginFile {
    Fd fd;  // read-only, close-on-exec: the very file that was judged
    // The name to give dlopen: descriptor_path(fd), on a descriptor number
    // no loaded object was loaded under; or, when this very file is loaded
    // already under another descriptor path this loader still holds open,
    // that path. dlopen of the same file under a second name would add the
    // name to the loaded object for good, so a later plugin given this
    // descriptor number (once this load is gone) would get that object.
    std::string load_name() const;
};

// Opens `file` (a path: the loader has already resolved any search) once,
// and judges that descriptor at stage open, before any of its code runs:
//   R-LOAD-1   it is a regular file (not a FIFO, device or folder: no
//              open that could hang), and when it is an ELF object, every
//              loadable segment lies inside it (a truncated file would
//              fault in the dynamic linker);
//   R-LOAD-10  neither it nor the folder holding it can be written by
//              others (the folder may if it is sticky), and it is owned by
//              root or this process's user, unless options allow it;
//   R-LOAD-11  its SHA-256 is the pinned one, when one is pinned.
// Symlinks are followed first: a link to a trusted file is legitimate, and
// it is the file linked to that is opened and judged. Throws LoadError
// naming `file` (and the file it resolved to).
PluginFile open_plugin_file(const std::string &file, const LoadOptions &options);

}  // namespace kvblob
