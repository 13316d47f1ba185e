// Does an ELF file hold every byte its loadable segments map? (R-LOAD-1)
// Internal.
//
// The dynamic linker maps each PT_LOAD segment from the file and touches
// it; a segment that runs past the end of a truncated file faults with
// SIGBUS inside dlopen, killing the engine. So the loader reads the program
// headers itself, from the descriptor it will load, first.
#pragma once

#include <sys/types.h>

#include <string>

namespace kvblob {

// Empty when the file behind fd (file_size bytes) is not an ELF object (the
// dynamic linker then refuses it in its own words) or when every segment of
// it fits; otherwise what does not fit, in words.
std::string elf_segments_problem(int fd, off_t file_size);

}  // namespace kvblob
