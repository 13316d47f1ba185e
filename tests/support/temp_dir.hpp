// A fresh directory under $TMPDIR (or /tmp), removed with everything in it
// at scope exit.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

class TempDir {
public:
    explicit TempDir(const std::string &tag = "kvblob")
    {
        const char *base = std::getenv("TMPDIR");
        std::string pattern = std::string(base && *base ? base : "/tmp") + "/" + tag + ".XXXXXX";
        if (::mkdtemp(pattern.data())) path_ = pattern;
    }
    ~TempDir()
    {
        std::error_code ec;
        if (!path_.empty()) std::filesystem::remove_all(path_, ec);
    }
    TempDir(const TempDir &) = delete;
    TempDir &operator=(const TempDir &) = delete;
    const std::string &path() const { return path_; }

private:
    std::string path_;
};
