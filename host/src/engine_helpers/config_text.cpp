// Reading a config file without trusting it: what the path names is checked
// before it is opened (a FIFO would block the engine, a device may act on
// being opened), and the text is bounded before toml++ parses it (toml++
// recurses per dotted key part: 50,000 parts overflow the stack).
#include "config_text.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "kvblob/host/config.hpp"
#include "kvblob/host/file_kind.hpp"

namespace kvblob {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void not_a_file(const fs::path &file, const std::string &kind)
{
    throw ConfigError(file, 0, 0, "is " + kind + ", not a config file: give the path of a regular TOML file");
}

[[noreturn]] void cannot(const fs::path &file, const char *what, int error)
{
    if (error == ENOENT) throw ConfigError(file, 0, 0, "no such file");
    throw ConfigError(file, 0, 0, std::string("cannot be ") + what + ": " + std::strerror(error));
}

struct Fd {
    int fd;
    ~Fd()
    {
        if (fd >= 0) ::close(fd);
    }
};

}  // namespace

std::string read_config_text(const fs::path &file)
{
    // The system reads a path up to its first NUL: "real.toml\0.toml" would
    // read real.toml while the caller named something else.
    if (file.native().find('\0') != std::string::npos)
        throw ConfigError(file, 0, 0, "the path holds a NUL character (\\0), which would cut it short: refused");
    struct stat st{};
    if (::stat(file.c_str(), &st) != 0) cannot(file, "read", errno);
    if (auto kind = file_kind(st.st_mode); !kind.empty()) not_a_file(file, kind);
    // Non-blocking: were the path swapped for a FIFO since, open must not
    // wait for a writer; fstat then says what was opened.
    Fd in{::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)};
    if (in.fd < 0) cannot(file, "opened", errno);
    if (::fstat(in.fd, &st) != 0) cannot(file, "read", errno);
    if (auto kind = file_kind(st.st_mode); !kind.empty()) not_a_file(file, kind);
    if (st.st_size > static_cast<off_t>(max_config_bytes))
        throw ConfigError(file, 0, 0,
                          "is " + std::to_string(st.st_size) + " bytes; a config file is at most " +
                              std::to_string(max_config_bytes) + " bytes");
    std::string text;
    char buf[65536];
    for (;;) {
        const ssize_t n = ::read(in.fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) cannot(file, "read", errno);
        if (n == 0) break;
        text.append(buf, static_cast<size_t>(n));
        if (text.size() > max_config_bytes)  // grew while read
            throw ConfigError(file, 0, 0, "is more than " + std::to_string(max_config_bytes) +
                                              " bytes; a config file is at most that");
    }
    return text;
}

void prescan_config(const fs::path &file, std::string_view text)
{
    // Strings are followed as TOML 1.0 delimits them, so that the scan is in
    // a string exactly where the parser is: a scan that thinks a string runs
    // on where the parser has left it would miss the dots the parser reads.
    enum class In { code, comment, basic, literal, basic_ml, literal_ml } in = In::code;
    unsigned line = 1, column = 0, depth = 0, dots = 0;
    const auto at = [&](size_t i, std::string_view s) { return text.substr(i, s.size()) == s; };
    // How many times c repeats from i on.
    const auto run = [&](size_t i, char c) {
        size_t n = 0;
        while (i + n < text.size() && text[i + n] == c) ++n;
        return n;
    };
    // A multi-line string ends at the last quote of a run of three or more:
    // up to two quotes before the closing three are the string's own
    // ("""q"""" is the string q"; a longer run the parser refuses), so
    // ending at the run's first three would read the fourth quote as the
    // start of a string the parser never sees.
    const auto closes_multiline = [&](size_t &i, char quote) {
        const size_t n = run(i, quote);
        i += n - 1, column += static_cast<unsigned>(n - 1);
        return n >= 3;
    };
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        ++column;
        if (c == '\n') {
            ++line, column = 0;
            dots = 0;  // a key or header never spans lines
            if (in == In::comment || in == In::basic || in == In::literal) in = In::code;
            continue;
        }
        switch (in) {
        case In::comment: continue;
        case In::basic:
            // An escape takes the character after it (an escaped quote does
            // not end the string), but never a line's end, which the loop
            // above must see.
            if (c == '\\' && i + 1 < text.size() && text[i + 1] != '\n') ++i, ++column;
            else if (c == '"') in = In::code;
            continue;
        case In::literal:
            if (c == '\'') in = In::code;
            continue;
        case In::basic_ml:
            if (c == '\\' && i + 1 < text.size() && text[i + 1] != '\n') ++i, ++column;
            else if (c == '"' && closes_multiline(i, '"')) in = In::code;
            continue;
        case In::literal_ml:
            if (c == '\'' && closes_multiline(i, '\'')) in = In::code;
            continue;
        case In::code: break;
        }
        switch (c) {
        case '#': in = In::comment; break;
        case '"':
            if (at(i, "\"\"\"")) in = In::basic_ml, i += 2, column += 2;
            else in = In::basic;
            break;
        case '\'':
            if (at(i, "'''")) in = In::literal_ml, i += 2, column += 2;
            else in = In::literal;
            break;
        case '.':
            if (++dots >= max_key_parts)
                throw ConfigError(file, line, column,
                                  "a key of more than " + std::to_string(max_key_parts) +
                                      " dotted parts: refused before parsing (each part nests a table)");
            break;
        case '[':
        case '{':
            dots = 0;
            if (++depth > max_nesting)
                throw ConfigError(file, line, column,
                                  "brackets or braces nested more than " + std::to_string(max_nesting) +
                                      " deep: refused before parsing");
            break;
        case ']':
        case '}':
            dots = 0;
            if (depth) --depth;
            break;
        case '=':
        case ',': dots = 0; break;
        default: break;
        }
    }
}

}  // namespace kvblob
