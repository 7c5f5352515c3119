#include "sys/huge_heap.h"

#include <malloc.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdlib>

namespace tocsin::sys {
namespace {

constexpr char kTunables[] = "GLIBC_TUNABLES";
constexpr char kTunable[] = "glibc.malloc.hugetlb";
// Set in the re-executed image: "-" when GLIBC_TUNABLES was unset, else "=" and its value.
constexpr char kMarker[] = "TOCSIN_HUGE_HEAP_PREVIOUS_TUNABLES";
// The process name before the exec (an exec of /proc/self/exe names the process "exe").
constexpr char kComm[] = "TOCSIN_HUGE_HEAP_COMM";
constexpr char kThpEnabled[] = "/sys/kernel/mm/transparent_hugepage/enabled";

// Whether the heap should be given huge pages: THP on request only, and the user did not say.
bool WantHugeHeap(Env& env) {
  auto thp = env.ReadFile(kThpEnabled, 4096);
  return thp.ok() && HugeHeapTunables(getenv(kTunables), *thp).has_value();
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitizer = true;
#else
constexpr bool kSanitizer = false;
#endif

}  // namespace

std::optional<std::string> HugeHeapTunables(const char* current, std::string_view thp_enabled) {
  if (thp_enabled.find("[madvise]") == std::string_view::npos) return std::nullopt;
  std::string now = current == nullptr ? "" : current;
  if (now.find(kTunable) != std::string::npos) return std::nullopt;
  std::string want = std::string(kTunable) + "=1";
  return now.empty() ? want : now + ":" + want;
}

void ReexecWithHugeHeap(Env& env, char** argv) {
  // A secure-execution program (setuid, capabilities) takes nothing from the environment here;
  // and a program run through the loader (`ld.so tocsin ...`: no interpreter base, and
  // /proc/self/exe is the loader) cannot re-execute itself that way.
  if (getauxval(AT_SECURE) != 0 || getauxval(AT_BASE) == 0) return;
  if (const char* comm = getenv(kComm); comm != nullptr) {
    prctl(PR_SET_NAME, comm, 0, 0, 0);
    unsetenv(kComm);
  }
  if (const char* previous = getenv(kMarker); previous != nullptr) {
    // The re-executed image: glibc has read the tunable; the environment goes back as it was.
    if (previous[0] == '=') {
      setenv(kTunables, previous + 1, 1);
    } else {
      unsetenv(kTunables);
    }
    unsetenv(kMarker);
    return;
  }
  if (kSanitizer || argv == nullptr || argv[0] == nullptr) return;
  auto thp = env.ReadFile(kThpEnabled, 4096);
  if (!thp.ok()) return;
  const char* current = getenv(kTunables);
  auto want = HugeHeapTunables(current, *thp);
  if (!want) return;
  std::string previous = current == nullptr ? "-" : std::string("=") + current;
  char comm[17] = {};
  if (prctl(PR_GET_NAME, comm, 0, 0, 0) != 0 || setenv(kComm, comm, 1) != 0) return;
  if (setenv(kMarker, previous.c_str(), 1) != 0) {
    unsetenv(kComm);
    return;
  }
  if (setenv(kTunables, want->c_str(), 1) != 0) {
    unsetenv(kMarker);
    unsetenv(kComm);
    return;
  }
  execv("/proc/self/exe", argv);
  // Still here: the exec failed; the environment goes back and the run goes on.
  if (current == nullptr) {
    unsetenv(kTunables);
  } else {
    setenv(kTunables, previous.c_str() + 1, 1);
  }
  unsetenv(kMarker);
  unsetenv(kComm);
}

bool HugeMainHeap(Env& env, size_t reserve) {
  if (kSanitizer || reserve == 0 || reserve > (1u << 30) || !WantHugeHeap(env)) return false;
  uint64_t huge = 2u << 20;  // the PMD size: 2 MiB on x86-64 and on arm64 with 4 KiB pages
  if (auto size = env.ReadFile("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", 64);
      size.ok()) {
    uint64_t v = std::strtoull(size->c_str(), nullptr, 10);
    if (v >= 4096 && (v & (v - 1)) == 0 && v <= (1u << 30)) huge = v;
  }
  if (mallopt(M_TOP_PAD, static_cast<int>(reserve)) != 1) return false;
  void* before = sbrk(0);
  if (before == reinterpret_cast<void*>(-1)) return false;
  // One extension of the heap, by `reserve` and more: blocks below the mmap threshold (128 KiB)
  // until the top moves (it has at most 128 KiB and a few pages free), then freed back into it.
  std::array<void*, 64> blocks{};
  size_t n = 0;
  while (n < blocks.size() && sbrk(0) == before) {
    blocks[n] = malloc(96u << 10);
    if (blocks[n] == nullptr) break;
    ++n;
  }
  for (size_t i = 0; i < n; ++i) free(blocks[i]);
  auto from = (reinterpret_cast<uintptr_t>(before) + huge - 1) & ~(huge - 1);
  auto end = reinterpret_cast<uintptr_t>(sbrk(0));
  if (end == static_cast<uintptr_t>(-1)) return false;
  end &= ~uintptr_t{4095};
  if (end <= from + huge) return false;  // did not grow (the break is a brk the kernel refused)
  return madvise(reinterpret_cast<void*>(from), end - from, MADV_HUGEPAGE) == 0;
}

}  // namespace tocsin::sys
