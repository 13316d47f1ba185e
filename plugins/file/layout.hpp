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

#include <kvblob/support/trailer.hpp>

#include <string>
#include <string_view>

namespace kvblob::file {

inline constexpr std::string_view object_suffix = ".obj";
inline constexpr std::string_view reservation_suffix = ".writing";

// A key's names. Only the object's is built up front: a get needs no other
// (two fewer allocations on every row's path).
struct ObjectPaths {
    std::string object;        // dir/NAME.obj
    size_t dir_length = 0;     // of object's leading dir
    support::KeyDigest digest;  // the key's (version 1), which NAME spells
    std::string dir() const { return object.substr(0, dir_length); }  // the fan-out directory
    std::string reservation() const  // dir/NAME.writing
    {
        return object.substr(0, object.size() - object_suffix.size()) + std::string(reservation_suffix);
    }
};

ObjectPaths paths_for(const std::string &root, unsigned fanout, std::string_view key);

// Creates dir and its parents below root (which must exist); 0 or an errno.
int make_dirs(const std::string &root, const std::string &dir);

}  // namespace kvblob::file
