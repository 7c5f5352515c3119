#include "sys/huge_heap.h"

#include <malloc.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
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

// GCC says __SANITIZE_*__; clang (the fuzz build) answers __has_feature.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TOCSIN_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define TOCSIN_SANITIZER 1
#endif
#endif
#ifdef TOCSIN_SANITIZER
constexpr bool kSanitizer = true;
#else
constexpr bool kSanitizer = false;
#endif

constexpr int kDefaultTopPad = 128 << 10;  // glibc's M_TOP_PAD, mallopt(3)

constexpr size_t kHeaderBytes = 2 * sizeof(size_t);  // a chunk's header, before its block

// Where the main heap's top begins: the free space at its end that glibc carves new blocks from
// when no freed one fits (mallinfo2's keepcost is its size; it ends at the break).
uintptr_t HeapTop() { return reinterpret_cast<uintptr_t>(sbrk(0)) - mallinfo2().keepcost; }

// Blocks are taken from the top up to `from`, a huge page boundary less than a huge page above
// it, and kept: the next blocks start in huge pages (what is carved below `from` would fault in
// 4 KiB pages). Only their headers are touched. A block taken must come from the top (no freed
// one fits), else it is given back and the top stays where it is.
void HoldHeapHead(uintptr_t from) {
  constexpr size_t kHeader = kHeaderBytes;
  constexpr size_t kMinChunk = 4 * sizeof(size_t);
  static std::array<void*, 32> held{};  // 2 MiB in blocks of 96 KiB: 22
  for (size_t n = 0; n < held.size();) {
    uintptr_t top = HeapTop();
    if (top >= from || from - top < kMinChunk) return;  // there (or within a sliver of it)
    size_t chunk = std::min<size_t>(from - top, 96u << 10);
    if (from - top - chunk < kMinChunk) chunk = from - top;  // no sliver is left behind
    void* p = malloc(chunk - kHeader / 2);                   // a chunk of exactly `chunk` bytes
    if (p == nullptr) return;
    if (reinterpret_cast<uintptr_t>(p) != top + kHeader) {
      free(p);  // a freed block fitted: the top is not where the blocks go
      return;
    }
    held[n++] = p;
  }
}

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
  // Under a limit on data or address space the reserve would count against it, touched or not.
  for (int resource : {RLIMIT_DATA, RLIMIT_AS}) {
    struct rlimit limit {};
    if (getrlimit(resource, &limit) != 0 || limit.rlim_cur != RLIM_INFINITY) return false;
  }
  uint64_t huge = 2u << 20;  // the PMD size: 2 MiB on x86-64 and on arm64 with 4 KiB pages
  if (auto size = env.ReadFile("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", 64);
      size.ok()) {
    uint64_t v = std::strtoull(size->c_str(), nullptr, 10);
    if (v >= 4096 && (v & (v - 1)) == 0 && v <= (1u << 30)) huge = v;
  }
  void* before = sbrk(0);
  if (before == reinterpret_cast<void*>(-1)) return false;
  // The main heap's next extension takes `reserve` more than it needs (M_TOP_PAD), made to happen
  // now by blocks below the mmap threshold (128 KiB; the top has at most that and a few pages
  // free). Then glibc's default pad comes back: the pad also sizes every later extension and
  // each new thread's heap, which stay as they were (and under a data limit a refused 64 MiB
  // extension would have failed every allocation after it). A trim threshold above the reserve
  // keeps it when the blocks are freed and later. Both settings fix glibc's mmap threshold at its
  // default, 128 KiB: larger blocks are mapped on their own, as before.
  if (mallopt(M_TOP_PAD, static_cast<int>(reserve)) != 1) return false;
  std::array<void*, 64> blocks{};
  size_t n = 0;
  while (n < blocks.size() && sbrk(0) == before) {
    blocks[n] = malloc(96u << 10);
    if (blocks[n] == nullptr) break;
    ++n;
  }
  bool grew = sbrk(0) != before;
  if (grew) mallopt(M_TRIM_THRESHOLD, static_cast<int>(reserve + (1u << 20)));
  // The lowest of the blocks: heap memory, so where the heap's top may begin at the lowest.
  uintptr_t lowest = static_cast<uintptr_t>(-1);
  for (size_t i = 0; i < n; ++i) lowest = std::min(lowest, reinterpret_cast<uintptr_t>(blocks[i]));
  for (size_t i = 0; i < n; ++i) free(blocks[i]);
  mallopt(M_TOP_PAD, kDefaultTopPad);
  if (!grew) return false;  // the kernel refused the break (a data limit) or the heap is mapped
  // From the first huge page boundary above the top's start: the top may begin below the old
  // break (it had free space), and all of it is heap. The blocks were carved from the top, so
  // it begins at the lowest of them (or above, if some came from freed space): anything else
  // (the main arena's top in a mapping of its own) is not this heap, and nothing is marked.
  uintptr_t top = HeapTop();
  auto end = reinterpret_cast<uintptr_t>(sbrk(0));
  if (end == static_cast<uintptr_t>(-1) || top + kHeaderBytes < lowest || top >= end) return false;
  auto from = (top + huge - 1) & ~(huge - 1);
  end &= ~uintptr_t{4095};
  if (end <= from + huge) return false;  // less than one whole huge page
  if (madvise(reinterpret_cast<void*>(from), end - from, MADV_HUGEPAGE) != 0) return false;
  HoldHeapHead(from);
  return true;
}

}  // namespace tocsin::sys
