// A writer's claim on a key, shared by every process under one root: the
// file NAME.writing beside the object, created with O_EXCL. The writer
// writes the object's bytes into it and publishes that file, by its
// descriptor, under the object's name (a hard link, which never replaces an
// existing object), so the claim and the unpublished bytes are one file and
// a put costs one file creation. The writer's host and pid are kept in the
// extended attribute user.kvblob.writer where the filesystem has them (for
// people looking at a stuck key), and its mtime is the claim's age.
//
// While the claim exists and is younger than the expiry, other drivers
// answer NOT_READY for the key (R-ROW-2); once older, it is taken to be
// left by a dead writer and is broken. Claims are told apart by file
// identity (device and inode), never by name alone: a breaker removes only
// the file it judged stale, a writer publishes only the file it wrote, and
// removes only its own claim. A writer slower than the expiry may find its
// claim broken: it then publishes nothing (Publish::lost). The one race
// left, a claim broken between the writer's last look and its link, links
// the writer's own whole file, which is as good as a put in time; and
// link() keeps the first object of two (R-ROW-7).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>

#include "layout.hpp"
#include "posix_io.hpp"

namespace kvblob::file {

// Whether a claim at path is held: it exists and is younger than expiry.
bool reservation_active(const std::string &path, std::chrono::milliseconds expiry);

// Which file a name stood for: device and inode.
struct FileId {
    dev_t dev = 0;
    ino_t ino = 0;
    bool operator==(const FileId &) const = default;
};

class Reservation {
public:
    enum class Outcome { owned, held_by_other, no_space, failed };
    enum class Publish {
        published,  // the object is this writer's file
        exists,     // an object was there already (R-ROW-7)
        lost,       // the claim was broken as stale: nothing published
        not_whole,  // the file does not hold the bytes expected: nothing published
        failed,     // err says why
    };

    // Tries to claim paths' key, its file opened for O_DIRECT writes when
    // direct (and the filesystem allows). error carries the errno text on
    // failure.
    static Reservation claim(const std::string &root, const ObjectPaths &paths, bool direct,
                             std::chrono::milliseconds expiry, Outcome &outcome, std::string &error);

    Reservation() = default;
    Reservation(Reservation &&o) noexcept : path_(std::move(o.path_)), fd_(std::move(o.fd_))
    {
        o.path_.clear();
    }
    Reservation &operator=(Reservation &&) = delete;
    Reservation(const Reservation &) = delete;
    ~Reservation();  // drops the claim, if still this writer's (and any bytes not published)

    int fd() const { return fd_.get(); }
    const std::string &path() const { return path_; }
    // Reports what a shared filesystem may report only at close (by
    // closing a duplicate: the file stays open for publish); 0 or an errno.
    // Only worth its two calls where close_may_report (posix_io.hpp).
    int flush();
    // Publishes the claimed file as object if it holds exactly bytes and
    // the claim is still this writer's, and then drops the claim's name.
    // err is set with failed.
    Publish publish(const std::string &object, uint64_t bytes, int &err);

    // Writes a claim as another process would (the scenario hook).
    static bool plant(const std::string &root, const ObjectPaths &paths);

private:
    Reservation(std::string path, UniqueFd fd) : path_(std::move(path)), fd_(std::move(fd)) {}
    std::string path_;  // empty once published (or moved from): no claim left to drop
    // Open until the claim is gone: the inode cannot be reused meanwhile,
    // and an fstat of it tells the claim's identity whenever it is needed.
    UniqueFd fd_;
};

}  // namespace kvblob::file
