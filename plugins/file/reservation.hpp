// A writer's claim on a key, shared by every process under one root: a
// file created with O_EXCL beside the object, holding the writer's host,
// pid, start time and the name of its temporary file. While it exists and
// is younger than the expiry, other drivers answer NOT_READY for the key
// (R-ROW-2); once older, it is taken to be left by a dead writer and is
// broken (its temporary file removed with it).
//
// The expiry must exceed the longest put: a live writer slower than that
// loses its claim, and two writers may then race to publish; publishing
// with link() keeps even that race safe (the first object stays, R-ROW-7).
#pragma once

#include <chrono>
#include <string>

#include "layout.hpp"

namespace kvblob::file {

// Whether a reservation at path is held: it exists and is younger than
// expiry.
bool reservation_active(const std::string &path, std::chrono::milliseconds expiry);

class Reservation {
public:
    enum class Outcome { owned, held_by_other, no_space, failed };

    // Tries to claim paths' key; error carries the errno text on failure.
    static Reservation claim(const std::string &root, const ObjectPaths &paths, const std::string &temp_path,
                             std::chrono::milliseconds expiry, Outcome &outcome, std::string &error);

    Reservation() = default;
    Reservation(Reservation &&o) noexcept : path_(std::move(o.path_)) { o.path_.clear(); }
    Reservation &operator=(Reservation &&) = delete;
    Reservation(const Reservation &) = delete;
    ~Reservation();  // releases the claim

    // Writes a reservation as another process would (the scenario hook).
    static bool plant(const std::string &root, const ObjectPaths &paths, const std::string &who);

private:
    explicit Reservation(std::string path) : path_(std::move(path)) {}
    std::string path_;
};

// This process' identity in reservations: "host=H pid=P".
const std::string &writer_identity();

}  // namespace kvblob::file
