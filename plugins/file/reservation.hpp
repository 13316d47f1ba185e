// A writer's claim on a key, shared by every process under one root: the
// file NAME.writing beside the object, created with O_EXCL. The writer
// writes the object's bytes into it and publishes it under the object's
// name with link(), so the claim and the unpublished bytes are one file
// and a put costs one file creation. The writer's host and pid are kept in
// the extended attribute user.kvblob.writer where the filesystem has them
// (for people looking at a stuck key), and its mtime is the claim's age.
//
// While the claim exists and is younger than the expiry, other drivers
// answer NOT_READY for the key (R-ROW-2); once older, it is taken to be
// left by a dead writer and is broken. A live writer refreshes the age with
// every write, but the expiry must still exceed the longest write call: a
// writer that loses its claim may race another to publish, and link()
// keeps even that race safe (the first object stays, R-ROW-7).
#pragma once

#include <chrono>
#include <string>

#include "layout.hpp"
#include "posix_io.hpp"

namespace kvblob::file {

// Whether a claim at path is held: it exists and is younger than expiry.
bool reservation_active(const std::string &path, std::chrono::milliseconds expiry);

class Reservation {
public:
    enum class Outcome { owned, held_by_other, no_space, failed };

    // Tries to claim paths' key, its file opened for O_DIRECT writes when
    // direct (and the filesystem allows). error carries the errno text on
    // failure.
    static Reservation claim(const std::string &root, const ObjectPaths &paths, bool direct,
                             std::chrono::milliseconds expiry, Outcome &outcome, std::string &error);

    Reservation() = default;
    Reservation(Reservation &&o) noexcept : path_(std::move(o.path_)), fd_(std::move(o.fd_)) { o.path_.clear(); }
    Reservation &operator=(Reservation &&) = delete;
    Reservation(const Reservation &) = delete;
    ~Reservation();  // drops the claim (and any bytes not published)

    int fd() const { return fd_.get(); }
    const std::string &path() const { return path_; }
    // Closes the file, reporting what a shared filesystem may report only
    // at close; 0 or an errno. The claim stays until destruction.
    int close();

    // Writes a claim as another process would (the scenario hook).
    static bool plant(const std::string &root, const ObjectPaths &paths);

private:
    Reservation(std::string path, UniqueFd fd) : path_(std::move(path)), fd_(std::move(fd)) {}
    std::string path_;
    UniqueFd fd_;
};

}  // namespace kvblob::file
