// A plain (unsanitized) program for the test `sys_huge_main_heap_marks_the_heap`: a sanitizer's
// allocator has no brk heap, so sys_test cannot see what HugeMainHeap does. Exits 0 when the
// heap was marked for huge pages ("hg" in the VmFlags of the mapping below the new break) and a
// thread started after it still gets a small heap (glibc's pad was put back); 77 when the test
// cannot apply here (it is then skipped, and says why); 1 otherwise.
#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "sys/huge_heap.h"

namespace {

// The mapping that holds `address` in /proc/self/smaps: its size in bytes and its VmFlags line.
bool MappingAt(uintptr_t address, uintptr_t* size, std::string* flags) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (line.rfind("VmFlags:", 0) == 0) {
      if (!inside) continue;
      *flags = line;
      return true;
    }
    if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = lo <= address && address < hi;
      if (inside) *size = hi - lo;
    }
  }
  return false;
}

}  // namespace

int main() {
  auto env = tocsin::NewRootedEnv();
  auto thp = env->ReadFile("/sys/kernel/mm/transparent_hugepage/enabled", 4096);
  if (!thp.ok() || thp->find("[madvise]") == std::string::npos) {
    std::printf("transparent huge pages are not `madvise` here: nothing is to be marked\n");
    return 77;
  }
  if (const char* t = std::getenv("GLIBC_TUNABLES"); t != nullptr && std::strstr(t, "hugetlb")) {
    std::printf(
        "GLIBC_TUNABLES sets glibc.malloc.hugetlb: the user's choice stands, nothing is marked\n");
    return 77;
  }
  for (int resource : {RLIMIT_DATA, RLIMIT_AS}) {
    struct rlimit limit {};
    if (getrlimit(resource, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
      std::printf("a data or address-space limit is set (ulimit -d, -v): HugeMainHeap declines\n");
      return 77;
    }
  }
  auto before = reinterpret_cast<uintptr_t>(sbrk(0));
  if (!tocsin::sys::HugeMainHeap(*env, 16u << 20)) {
    std::printf("HugeMainHeap did not mark the heap\n");
    return 1;
  }
  auto after = reinterpret_cast<uintptr_t>(sbrk(0));
  // New blocks are carved from the heap's top: it begins on a huge page boundary (2 MiB here).
  auto top = after - mallinfo2().keepcost;
  if (top % (2u << 20) != 0) {
    std::printf("the heap's top begins at %#zx, not on a huge page\n", static_cast<size_t>(top));
    return 1;
  }
  // By the reserve, less what the top of the heap had free before (at most 128 KiB and a page).
  if (after - before < (15u << 20)) {
    std::printf("the heap grew by %zu bytes, not about 16 MiB\n",
                static_cast<size_t>(after - before));
    return 1;
  }
  uintptr_t size = 0;
  std::string flags;
  if (!MappingAt(after - 4096, &size, &flags)) {
    std::printf("no mapping holds the heap's last page\n");
    return 1;
  }
  bool marked = flags.find(" hg") != std::string::npos;
  std::printf("heap %s: %s\n", marked ? "marked" : "NOT marked", flags.c_str());
  if (!marked) return 1;
  // A thread's heap is made writable by glibc's pad (128 KiB and what it needs), not 16 MiB.
  uintptr_t at = 0;
  std::thread([&at] {
    void* p = std::malloc(1024);
    at = reinterpret_cast<uintptr_t>(p);
    std::free(p);
  }).join();
  if (!MappingAt(at, &size, &flags)) {
    std::printf("no mapping holds the thread's block\n");
    return 1;
  }
  std::printf("a thread's heap: %zu KiB writable\n", static_cast<size_t>(size >> 10));
  return size < (8u << 20) ? 0 : 1;
}
