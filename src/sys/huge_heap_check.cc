// A plain (unsanitized) program for the test `sys_huge_main_heap_marks_the_heap`: a sanitizer's
// allocator has no brk heap, so sys_test cannot see what HugeMainHeap does. Exits 0 when the
// heap was marked for huge pages ("hg" in the VmFlags of the mapping below the new break), 77
// when this machine does not give huge pages on request (the test is then skipped, and says
// why), 1 otherwise.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "sys/huge_heap.h"

int main() {
  auto env = tocsin::NewRootedEnv();
  auto thp = env->ReadFile("/sys/kernel/mm/transparent_hugepage/enabled", 4096);
  if (!thp.ok() || thp->find("[madvise]") == std::string::npos) {
    std::printf("transparent huge pages are not `madvise` here: nothing is to be marked\n");
    return 77;
  }
  auto before = reinterpret_cast<uintptr_t>(sbrk(0));
  if (!tocsin::sys::HugeMainHeap(*env, 16u << 20)) {
    std::printf("HugeMainHeap did not mark the heap\n");
    return 1;
  }
  auto after = reinterpret_cast<uintptr_t>(sbrk(0));
  // By the reserve, less what the top of the heap had free before (at most 128 KiB and a page).
  if (after - before < (15u << 20)) {
    std::printf("the heap grew by %zu bytes, not about 16 MiB\n",
                static_cast<size_t>(after - before));
    return 1;
  }
  // The VmFlags of the mapping that holds the last page below the new break.
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (line.rfind("VmFlags:", 0) == 0) {
      if (!inside) continue;
      bool marked = line.find(" hg") != std::string::npos;
      std::printf("%s: %s\n", marked ? "marked" : "NOT marked", line.c_str());
      return marked ? 0 : 1;
    }
    if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = lo <= after - 4096 && after - 4096 < hi;
    }
  }
  std::printf("no mapping holds the heap's last page\n");
  return 1;
}
