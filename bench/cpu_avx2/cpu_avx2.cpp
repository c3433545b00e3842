// LD_PRELOAD library that makes an AVX-512 x86-64 CPU look like an AVX2 + FMA one (the Zen 3)
// to everything the process runs: oneDNN, ONNX Runtime's MLAS, GCC's __builtin_cpu_supports, V8.
//
// The kernel's CPUID faulting (arch_prctl(ARCH_SET_CPUID, 0); /proc/cpuinfo flag `cpuid_fault`)
// turns every CPUID instruction of this process into a SIGSEGV. The handler below runs the real
// CPUID with faulting briefly off, clears the AVX-512, AMX, AVX10 and AVX-VNNI feature bits of
// leaf 7, writes the four registers back and steps over the instruction. Faulting is set before
// any other constructor of the program runs and is inherited by its threads, so libraries that
// read CPUID lazily (Xbyak in oneDNN, MLAS) and the executable's own constructors (libgcc's
// __cpu_indicator_init) all see the masked bits. What cannot be masked: the dynamic loader and
// glibc have already read CPUID when this library's constructor runs (glibc's string functions
// may stay EVEX-encoded), and XGETBV still reports the AVX-512 register state as enabled (every
// library checks the CPUID feature bit first).
//
// A program that installs its own SIGSEGV handler (node's V8 does) keeps working: sigaction() is
// interposed, the program's handler is recorded and called for every SIGSEGV that is not a CPUID.
//
// Where the kernel or CPU has no CPUID faulting, the constructor prints why and exits with 3:
// nothing runs unmasked by mistake. Used by bench/onnx_models.py --cpu-isa avx2.
#include <asm/prctl.h>
#include <dlfcn.h>
#include <signal.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <cpuid.h>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

using SigactionFn = int (*)(int, const struct sigaction*, struct sigaction*);

// Looked up on first use (no function-local static: its guard would need libstdc++, which is
// initialised after this library).
SigactionFn g_real_sigaction = nullptr;
SigactionFn real_sigaction() {
  if (g_real_sigaction == nullptr) g_real_sigaction = reinterpret_cast<SigactionFn>(dlsym(RTLD_NEXT, "sigaction"));
  return g_real_sigaction;
}

struct sigaction g_app{};  // the program's own SIGSEGV disposition (SIG_DFL until it sets one)

bool set_cpuid_faulting(bool on) { return syscall(SYS_arch_prctl, ARCH_SET_CPUID, on ? 0 : 1) == 0; }

// Leaf 7 bits an AVX2 + FMA CPU without AVX-VNNI does not have.
constexpr uint32_t bit(int b) { return 1u << b; }
constexpr uint32_t kLeaf7Ebx = bit(16) | bit(17) | bit(21) | bit(26) | bit(27) | bit(28) | bit(30) | bit(31);  // AVX512 F DQ IFMA PF ER CD BW VL
constexpr uint32_t kLeaf7Ecx = bit(1) | bit(6) | bit(11) | bit(12) | bit(14);  // AVX512 VBMI VBMI2 VNNI BITALG VPOPCNTDQ
constexpr uint32_t kLeaf7Edx = bit(2) | bit(3) | bit(8) | bit(22) | bit(23) | bit(24) | bit(25);  // 4VNNIW 4FMAPS VP2INTERSECT AMX-BF16 AVX512-FP16 AMX-TILE AMX-INT8
constexpr uint32_t kLeaf71Eax = bit(4) | bit(5) | bit(21) | bit(23);  // AVX-VNNI AVX512-BF16 AMX-FP16 AVX-IFMA
constexpr uint32_t kLeaf71Edx = bit(4) | bit(5) | bit(8) | bit(10) | bit(19);  // AVX-VNNI-INT8 AVX-NE-CONVERT AMX-COMPLEX AVX-VNNI-INT16 AVX10

void forward(int sig, siginfo_t* info, void* ctx) {
  const struct sigaction& a = g_app;
  if (a.sa_flags & SA_SIGINFO) {
    if (a.sa_sigaction) return a.sa_sigaction(sig, info, ctx);
  } else if (a.sa_handler != SIG_DFL && a.sa_handler != SIG_IGN) {
    return a.sa_handler(sig);
  }
  // Default action: restore it and return, so that the faulting instruction faults again and the
  // process ends as it would have without this library.
  struct sigaction dfl{};
  dfl.sa_handler = SIG_DFL;
  real_sigaction()(sig, &dfl, nullptr);
}

void on_segv(int sig, siginfo_t* info, void* ctx) {
  auto* uc = static_cast<ucontext_t*>(ctx);
  greg_t* r = uc->uc_mcontext.gregs;
  const auto* ip = reinterpret_cast<const unsigned char*>(r[REG_RIP]);
  if (info->si_code != SI_KERNEL || ip == nullptr || ip[0] != 0x0f || ip[1] != 0xa2) return forward(sig, info, ctx);
  const auto leaf = static_cast<uint32_t>(r[REG_RAX]), sub = static_cast<uint32_t>(r[REG_RCX]);
  unsigned a = 0, b = 0, c = 0, d = 0;
  set_cpuid_faulting(false);
  __cpuid_count(leaf, sub, a, b, c, d);
  set_cpuid_faulting(true);
  if (leaf == 7 && sub == 0) {
    b &= ~kLeaf7Ebx;
    c &= ~kLeaf7Ecx;
    d &= ~kLeaf7Edx;
  } else if (leaf == 7 && sub == 1) {
    a &= ~kLeaf71Eax;
    d &= ~kLeaf71Edx;
  } else if (leaf == 0x24) {  // AVX10 converged vector ISA leaf
    a = b = c = d = 0;
  }
  r[REG_RAX] = a;
  r[REG_RBX] = b;
  r[REG_RCX] = c;
  r[REG_RDX] = d;
  r[REG_RIP] += 2;
}

__attribute__((constructor(101))) void install() {
  struct sigaction sa{};
  sa.sa_sigaction = on_segv;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  if (real_sigaction()(SIGSEGV, &sa, nullptr) != 0 || !set_cpuid_faulting(true)) {
    std::fprintf(stderr,
                 "weft_cpu_avx2: this kernel or CPU has no CPUID faulting (arch_prctl ARCH_SET_CPUID: %s); "
                 "cannot present an AVX2-only CPU\n",
                 std::strerror(errno));
    std::_Exit(3);
  }
}

}  // namespace

// The program's SIGSEGV handler is recorded, not installed: CPUID faults stay ours, the rest go to it.
extern "C" int sigaction(int sig, const struct sigaction* act, struct sigaction* old) {
  if (sig != SIGSEGV) return real_sigaction()(sig, act, old);
  if (old) *old = g_app;
  if (act) g_app = *act;
  return 0;
}
