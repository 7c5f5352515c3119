#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "sys/env.h"

namespace tocsin::sys {

// Commands that decode a whole cluster (`audit --from`, `diff`, `snapshot`: 100,000 pods are
// millions of small strings and map nodes) spend about a third of their time faulting in 4 KiB
// heap pages and missing the TLB. glibc backs its heap with transparent huge pages when the
// tunable glibc.malloc.hugetlb=1 is set, and reads tunables only when a program starts.

// What GLIBC_TUNABLES must become for that, given its value now (null: unset) and the text of
// /sys/kernel/mm/transparent_hugepage/enabled ("always [madvise] never"); nullopt when nothing is
// to be done: THP is `never` (no huge pages) or `always` (the heap has them already), the text
// is not understood, or the tunable is already set (the user's choice stands).
std::optional<std::string> HugeHeapTunables(const char* current, std::string_view thp_enabled);

// Re-executes this program (/proc/self/exe, the same argv) once with that tunable, keeping the
// environment's previous GLIBC_TUNABLES in a marker variable; in the new image the same call
// puts it back (children see the environment the user gave) and returns. Returns without doing
// anything when HugeHeapTunables says nothing is to be done, when the exec fails (the run goes
// on without), in sanitizer builds (their allocator ignores the tunable), for a secure-execution
// program (AT_SECURE) and for one started through the loader (`ld.so tocsin ...`). The new image
// takes back the process name the exec of /proc/self/exe changed. Call it before any thread is
// started or any input is read.
void ReexecWithHugeHeap(Env& env, char** argv);

// The same without a re-exec, for the main heap (the brk heap of the main thread) only: glibc
// takes its next `reserve` bytes from the kernel at once and they are marked MADV_HUGEPAGE, so
// that what the main thread builds after that (`nccl`'s report of hundreds of processes, once
// its reader threads are done) faults in a 2 MiB page at a time, not 4 KiB. On a VM that
// virtualises page tables in software a first touch of a 4 KiB page costs 11-14 us (5-7 us even
// when mapped beforehand; docs/BENCHMARKS.md): a report of 512 processes touched 700 of them.
// Address space, not memory: pages come as they are touched. Later extensions of the heap and
// the threads' heaps are sized as before; the heap keeps the reserve when blocks are freed (its
// trim threshold is raised above it). Nothing is done, and false returned, under the same
// conditions as above (THP not `madvise`, the tunable set by the user, a sanitizer), under a
// limit on data or address space (ulimit -d, -v: the reserve would count against it), and when
// the kernel refuses the extension. Call it before other threads start.
bool HugeMainHeap(Env& env, size_t reserve);

}  // namespace tocsin::sys
