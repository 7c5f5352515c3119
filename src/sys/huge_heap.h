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

}  // namespace tocsin::sys
