// Where each object lives under the root: one file per key, named by the
// key's 128-bit digest in hex, under `fanout` levels of two-hex-digit
// directories so that no directory grows past a few thousand entries.
//
//   ROOT/ab/cd/abcd....obj        the object: payload, then the TLBK trailer
//   ROOT/ab/cd/abcd....writing    a writer's claim and unpublished bytes
//
// The trailer records the key's digest again, so a file moved or copied
// under another name reads as FAULT, never as another key's bytes.
#pragma once

#include <string>
#include <string_view>

namespace kvblob::file {

struct ObjectPaths {
    std::string dir;          // the fan-out directory
    std::string object;       // dir/NAME.obj
    std::string reservation;  // dir/NAME.writing
};

inline constexpr std::string_view object_suffix = ".obj";
inline constexpr std::string_view reservation_suffix = ".writing";

ObjectPaths paths_for(const std::string &root, unsigned fanout, std::string_view key);

// Creates dir and its parents below root (which must exist); 0 or an errno.
int make_dirs(const std::string &root, const std::string &dir);

}  // namespace kvblob::file
