#include "sys/huge_heap.h"

#include <gtest/gtest.h>
#include <sys/prctl.h>

#include <cstdlib>

namespace tocsin::sys {
namespace {

TEST(HugeHeapTest, OnlyWhenHugePagesAreGivenOnRequest) {
  EXPECT_EQ(HugeHeapTunables(nullptr, "always [madvise] never\n"), "glibc.malloc.hugetlb=1");
  EXPECT_EQ(HugeHeapTunables("", "always [madvise] never\n"), "glibc.malloc.hugetlb=1");
  EXPECT_EQ(HugeHeapTunables(nullptr, "always madvise [never]\n"), std::nullopt);   // none at all
  EXPECT_EQ(HugeHeapTunables(nullptr, "[always] madvise never\n"), std::nullopt);   // already
  EXPECT_EQ(HugeHeapTunables(nullptr, ""), std::nullopt);                           // not known
  EXPECT_EQ(HugeHeapTunables(nullptr, "garbage [madvise"), std::nullopt);
}

TEST(HugeHeapTest, KeepsTheUsersTunables) {
  EXPECT_EQ(HugeHeapTunables("glibc.malloc.tcache_count=0", "always [madvise] never"),
            "glibc.malloc.tcache_count=0:glibc.malloc.hugetlb=1");
  // The user chose: even "off" stands.
  EXPECT_EQ(HugeHeapTunables("glibc.malloc.hugetlb=0", "always [madvise] never"), std::nullopt);
}

// The re-executed image puts the environment back as the user gave it, whatever it was.
TEST(HugeHeapTest, TheNewImageRestoresTheEnvironment) {
  auto env = NewRootedEnv();
  setenv("TOCSIN_HUGE_HEAP_PREVIOUS_TUNABLES", "=glibc.malloc.tcache_count=0", 1);
  setenv("GLIBC_TUNABLES", "glibc.malloc.tcache_count=0:glibc.malloc.hugetlb=1", 1);
  ReexecWithHugeHeap(*env, nullptr);
  ASSERT_NE(getenv("GLIBC_TUNABLES"), nullptr);
  EXPECT_STREQ(getenv("GLIBC_TUNABLES"), "glibc.malloc.tcache_count=0");
  EXPECT_EQ(getenv("TOCSIN_HUGE_HEAP_PREVIOUS_TUNABLES"), nullptr);

  // The process name the exec of /proc/self/exe changed to "exe" comes back.
  char before[17] = {};
  prctl(PR_GET_NAME, before, 0, 0, 0);
  setenv("TOCSIN_HUGE_HEAP_COMM", "tocsin-named", 1);
  setenv("TOCSIN_HUGE_HEAP_PREVIOUS_TUNABLES", "-", 1);
  ReexecWithHugeHeap(*env, nullptr);
  char after[17] = {};
  prctl(PR_GET_NAME, after, 0, 0, 0);
  EXPECT_STREQ(after, "tocsin-named");
  EXPECT_EQ(getenv("TOCSIN_HUGE_HEAP_COMM"), nullptr);
  prctl(PR_SET_NAME, before, 0, 0, 0);

  setenv("TOCSIN_HUGE_HEAP_PREVIOUS_TUNABLES", "-", 1);
  setenv("GLIBC_TUNABLES", "glibc.malloc.hugetlb=1", 1);
  ReexecWithHugeHeap(*env, nullptr);
  EXPECT_EQ(getenv("GLIBC_TUNABLES"), nullptr);
  EXPECT_EQ(getenv("TOCSIN_HUGE_HEAP_PREVIOUS_TUNABLES"), nullptr);
}

}  // namespace
}  // namespace tocsin::sys
