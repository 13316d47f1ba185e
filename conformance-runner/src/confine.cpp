#include "confine.hpp"

#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace kvblob::conformance {

namespace {

std::string failed(const char *what) { return std::string(what) + ": " + std::strerror(errno); }

void add(std::string &out, const std::string &why)
{
    if (!why.empty()) out += (out.empty() ? "" : "; ") + why;
}

// CAP_SYS_PTRACE out of the bounding set (so no exec brings it back) and out
// of the effective, permitted, inheritable and ambient sets: the one
// capability that reads a process that is not dumpable.
std::string drop_ptrace_capability()
{
    std::string out;
    // Without CAP_SETPCAP the bounding set stays; no_new_privs then keeps an
    // exec from granting what it holds.
    if (prctl(PR_CAPBSET_READ, CAP_SYS_PTRACE, 0, 0, 0) == 1 && prctl(PR_CAPBSET_DROP, CAP_SYS_PTRACE, 0, 0, 0) != 0 &&
        errno != EPERM)
        add(out, failed("PR_CAPBSET_DROP"));
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_LOWER, CAP_SYS_PTRACE, 0, 0);
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
    if (syscall(SYS_capget, &header, data) != 0) {
        add(out, failed("capget"));
        return out;
    }
    const uint32_t bit = 1u << (CAP_SYS_PTRACE % 32);
    auto &word = data[CAP_SYS_PTRACE / 32];
    if (!((word.effective | word.permitted | word.inheritable) & bit)) return out;
    word.effective &= ~bit;
    word.permitted &= ~bit;
    word.inheritable &= ~bit;
    if (syscall(SYS_capset, &header, data) != 0) add(out, failed("capset"));
    return out;
}

// A Landlock domain of this process's own. It handles one access right no
// check needs (making block devices) and allows it nowhere; what matters is
// the domain: Landlock lets no process in it ptrace, or open the /proc
// files of, a process outside it.
std::string enter_landlock_domain()
{
#if defined(SYS_landlock_create_ruleset) && defined(SYS_landlock_restrict_self)
    struct {
        uint64_t handled_access_fs;
    } attr{1ull << 11};  // LANDLOCK_ACCESS_FS_MAKE_BLOCK, in every Landlock ABI
    const long fd = syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
    if (fd < 0) return failed("landlock");
    const long rc = syscall(SYS_landlock_restrict_self, fd, 0);
    const std::string why = rc == 0 ? "" : failed("landlock_restrict_self");
    close(static_cast<int>(fd));
    return why;
#else
    return "landlock: not in this build's headers";
#endif
}

#if defined(__x86_64__)
constexpr uint32_t native_arch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr uint32_t native_arch = AUDIT_ARCH_AARCH64;
#endif

sock_filter statement(uint16_t code, uint32_t k) { return BPF_STMT(code, k); }
sock_filter jump(uint16_t code, uint32_t k, uint8_t yes, uint8_t no) { return BPF_JUMP(code, k, yes, no); }

// The filter: system calls of another ABI refused; ptrace (its pid is the
// second argument) and process_vm_readv and process_vm_writev (the first)
// refused when aimed at runner, compared on the low 32 bits the kernel reads
// a pid from; pidfd_getfd refused; everything else allowed.
std::vector<sock_filter> filter_for(uint32_t runner)
{
    const uint32_t deny = SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA);
    auto low_word = [](int arg) { return static_cast<uint32_t>(offsetof(seccomp_data, args) + 8 * arg); };
    std::vector<sock_filter> f;
    f.push_back(statement(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)));
    f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, native_arch, 1, 0));
    f.push_back(statement(BPF_RET | BPF_K, deny));
    f.push_back(statement(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)));
#if defined(__x86_64__)
    f.push_back(jump(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1));  // x32
    f.push_back(statement(BPF_RET | BPF_K, deny));
#endif
#ifdef SYS_pidfd_getfd
    f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, SYS_pidfd_getfd, 0, 1));
    f.push_back(statement(BPF_RET | BPF_K, deny));
#endif
    // Each: if nr is this call, load its pid and refuse it when it is the runner.
    for (const auto &[nr, arg] : {std::pair<long, int>{SYS_ptrace, 1}, {SYS_process_vm_readv, 0}, {SYS_process_vm_writev, 0}}) {
        f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(nr), 0, 4));
        f.push_back(statement(BPF_LD | BPF_W | BPF_ABS, low_word(arg)));
        f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, runner, 0, 1));
        f.push_back(statement(BPF_RET | BPF_K, deny));
        f.push_back(statement(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
    }
    f.push_back(statement(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
    return f;
}

std::string install_filter()
{
#if defined(__x86_64__) || defined(__aarch64__)
    static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the filter reads a pid from an argument's low word");
    auto f = filter_for(static_cast<uint32_t>(getppid()));
    sock_fprog prog{static_cast<unsigned short>(f.size()), f.data()};
    // Every thread of the process (a library may have started one).
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog) == 0) return {};
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) == 0) return {};
    return failed("seccomp");
#else
    return "seccomp: no filter for this architecture";
#endif
}

}  // namespace

std::string confine_child()
{
    std::string out;
    // Landlock and an unprivileged seccomp filter need it; it also keeps an
    // exec from gaining what was dropped here.
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) add(out, failed("PR_SET_NO_NEW_PRIVS"));
    add(out, drop_ptrace_capability());
    add(out, enter_landlock_domain());
    add(out, install_filter());
    return out;
}

std::string make_undumpable()
{
    return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0 ? std::string() : failed("PR_SET_DUMPABLE");
}

}  // namespace kvblob::conformance
