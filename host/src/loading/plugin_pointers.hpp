// Checks on the pointers a plugin hands the loader, made before the host
// reads or calls through them: a wild pointer in the table, its strings,
// its options, its slots or an extension the host reads is a refusal that
// names the rule of the member it sits in, never a crash in the engine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace kvblob {

// An address as the loader's messages write it: 0x and lowercase hex.
std::string address_text(uintptr_t address);

// Empty when all of [p, p + bytes) can be read; otherwise why not, in words.
// Never faults: one byte of each page is read by the kernel (a pipe write),
// which answers EFAULT where a load would raise SIGSEGV, and no byte
// outside the range is read.
std::string unreadable(const void *p, size_t bytes);

// Reads the NUL-terminated string at p, at most max bytes before the NUL,
// without touching memory it cannot read. Returns empty and sets out, or
// says what is wrong: NULL, unreadable, or no NUL within max bytes (out
// then holds the first max bytes).
std::string read_bounded_string(const char *p, size_t max, std::string &out);

// Empty when fn lies inside an executable loaded segment of some loaded
// object (the plugin or a library it uses); otherwise where it lies instead.
std::string not_code(const void *fn);

}  // namespace kvblob
