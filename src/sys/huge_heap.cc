#include "sys/huge_heap.h"

#include <sys/auxv.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdlib>

namespace tocsin::sys {
namespace {

constexpr char kTunables[] = "GLIBC_TUNABLES";
constexpr char kTunable[] = "glibc.malloc.hugetlb";
// Set in the re-executed image: "-" when GLIBC_TUNABLES was unset, else "=" and its value.
constexpr char kMarker[] = "TOCSIN_HUGE_HEAP_PREVIOUS_TUNABLES";
// The process name before the exec (an exec of /proc/self/exe names the process "exe").
constexpr char kComm[] = "TOCSIN_HUGE_HEAP_COMM";

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
  auto thp = env.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled", 4096);
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

}  // namespace tocsin::sys
