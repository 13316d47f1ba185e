// What a check's process gives up before it loads the driver, so that the
// driver's code, which runs there, cannot reach into the runner that judges
// it (the runner's memory holds the key of the child being judged).
#pragma once

#include <string>

namespace kvblob::conformance {

// In a child, before any plugin code runs: no new privileges; no
// CAP_SYS_PTRACE (dropped from every set and the bounding set, where it was
// held); a Landlock domain of its own where the kernel offers Landlock (a
// process in it can neither ptrace nor open the /proc files of a process
// outside it, such as the runner); and a seccomp filter that refuses
// ptrace, process_vm_readv and process_vm_writev aimed at the runner (the
// parent), pidfd_getfd, and every system call of another ABI (i386 or x32
// on x86-64, arm32 on arm64) with EPERM. Each step the kernel refuses is
// left out, and named in the answer ("landlock: ..."); empty when all held.
std::string confine_child();

// In the runner, before it starts any child: not dumpable, so that a process
// of the same user without CAP_SYS_PTRACE can neither ptrace it nor read its
// memory (/proc/<pid>/mem). Where the kernel refuses, the reason.
std::string make_undumpable();

}  // namespace kvblob::conformance
