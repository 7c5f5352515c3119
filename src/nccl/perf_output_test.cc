#include "nccl/perf_output.h"

#include <gtest/gtest.h>

#include <sstream>

#include "base/strings.h"

namespace tocsin::nccl {
namespace {

void FeedAll(PerfParser& p, std::string_view text) {
  for (auto line : Split(text, '\n')) p.Feed(line);
}

TEST(PerfOutputTest, NewLayout) {
  PerfParser p;
  FeedAll(p,
          "# nccl-tests version 2.17.1 nccl-headers=22703 nccl-library=22703\n"
          "# Collective test starting: all_reduce_perf\n"
          "# nThread 1 nGpus 1 minBytes 1048576 maxBytes 2147483648 step: 2(factor) warmup "
          "iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0 unalign: 0\n"
          "#\n"
          "# Using devices\n"
          "#  Rank  0 Group  0 Pid   4242 on     node-a device  0 [0000:18:00] NVIDIA H100 80GB "
          "HBM3\n"
          "#                                                              out-of-place          "
          "             in-place\n"
          "#       size         count      type   redop    root     time   algbw   busbw  #wrong "
          "    time   algbw   busbw  #wrong\n"
          "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)        "
          "     (us)  (GB/s)  (GB/s)\n"
          "     1048576        262144     float     sum      -1    27.76   37.78   66.11       0 "
          "   27.49   38.15   66.76       0\n"
          "  2147483648     536870912     float     sum      -1    11186  191.99  359.98      0 "
          "   11199  191.75  359.53      2\n"
          "# Out of bounds values : 0 OK\n"
          "# Avg bus bandwidth    : 213.095 \n"
          "#\n"
          "# Collective test concluded: all_reduce_perf\n");
  ASSERT_EQ(p.runs().size(), 1u);
  const PerfRun& r = p.runs()[0];
  EXPECT_EQ(r.test, "all_reduce_perf");
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[1].size, 2147483648u);
  EXPECT_EQ(r.rows[1].redop, "sum");
  EXPECT_DOUBLE_EQ(r.rows[1].out_of_place.busbw, 359.98);
  EXPECT_EQ(r.rows[1].in_place.wrong, 2);
  EXPECT_DOUBLE_EQ(*r.avg_busbw, 213.095);
  EXPECT_EQ(r.out_of_bounds, 0);
  ASSERT_EQ(r.devices.size(), 1u);
  EXPECT_EQ(r.devices[0].host, "node-a");
  EXPECT_NEAR(*r.ComputedAvgBusbw(), (66.11 + 66.76 + 359.98 + 359.53) / 4, 1e-9);
}

TEST(PerfOutputTest, OldLayoutsWithoutRootAndWithCheckOff) {
  PerfParser p;
  FeedAll(p,
          "# nThread 1 nGpus 8 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 "
          "iters: 20 validation: 0\n"
          "#   Rank  0 Pid   1320 on ip-172-31-20-228 device  0 [0x00] Tesla V100-SXM2-16GB\n"
          "#                                                     out-of-place                  "
          "     in-place\n"
          "#       size         count    type   redop     time   algbw   busbw  error     time  "
          " algbw   busbw  error\n"
          "           8             2   float     sum    41.95    0.00    0.00    N/A    41.23  "
          "  0.00    0.00    N/A\n"
          "[1,0]<stdout>:    134217728      33554432   float     sum   1385.4   96.88  169.54    "
          "N/A   1384.7   96.93  169.63    N/A\n"
          "# Out of bounds values : 0 OK\n"
          "# Avg bus bandwidth    : 84.7 \n");
  ASSERT_EQ(p.runs().size(), 1u);
  const PerfRun& r = p.runs()[0];
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_FALSE(r.rows[0].out_of_place.wrong.has_value());
  EXPECT_DOUBLE_EQ(r.rows[1].in_place.busbw, 169.63);
  EXPECT_EQ(r.devices[0].host, "ip-172-31-20-228");
}

// Older nccl-tests print the largest error ("%5.0le"), not a count: read by the header's column
// names, with each collective's own leading columns (issue 14).
TEST(PerfOutputTest, OldErrorColumnIsAnErrorValueNotACount) {
  PerfParser p;
  FeedAll(p,
          "#       size         count    type   redop     time   algbw   busbw  error     time  "
          " algbw   busbw  error\n"
          "     1048576        262144   float     sum     31.7   33.13   65.74  2e-06     31.7  "
          " 33.13   65.74  1e-06\n"
          "    16777216       4194304   float     sum    206.4   81.28  161.29  0e+00    206.4  "
          " 81.28  161.29  3e+00*\n"
          "# Out of bounds values : 1 FAILED\n"
          "#       size         count    type    root     time   algbw   busbw  error     time  "
          " algbw   busbw  error\n"
          "     1048576        262144   float       0     31.7   33.13   33.13  0e+00     31.7  "
          " 33.13   33.13  0e+00\n");
  ASSERT_EQ(p.runs().size(), 2u);
  const PerfRun& r = p.runs()[0];
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_FALSE(r.rows[0].out_of_place.wrong.has_value());
  EXPECT_DOUBLE_EQ(*r.rows[0].out_of_place.max_error, 2e-06);
  EXPECT_DOUBLE_EQ(*r.rows[0].in_place.max_error, 1e-06);
  EXPECT_FALSE(r.rows[0].in_place.out_of_bounds);
  EXPECT_TRUE(r.rows[1].in_place.out_of_bounds);
  EXPECT_DOUBLE_EQ(*r.rows[1].in_place.max_error, 3);
  EXPECT_EQ(r.rows[1].redop, "sum");
  EXPECT_EQ(r.out_of_bounds, 1);
  const PerfRun& b = p.runs()[1];
  ASSERT_EQ(b.rows.size(), 1u);
  EXPECT_EQ(b.rows[0].type, "float");
  EXPECT_EQ(b.rows[0].redop, "");  // "0" is the root
  EXPECT_DOUBLE_EQ(b.rows[0].out_of_place.busbw, 33.13);
  // Under a "#wrong" header a float is no count: the row is not read.
  PerfParser strict;
  FeedAll(strict,
          "#       size         count      type   redop    root     time   algbw   busbw  #wrong "
          "    time   algbw   busbw  #wrong\n"
          "     1048576        262144     float     sum      -1    27.76   37.77   66.11   1e-06 "
          "   27.76   37.77   66.11       0\n");
  EXPECT_TRUE(strict.runs()[0].rows.empty());
}

TEST(PerfOutputTest, GarbageRowsIgnored) {
  PerfParser p;
  FeedAll(p,
          "#       size         count      type\n 12 x y\n123 456 float sum -1 a b c d e f g h\n");
  ASSERT_EQ(p.runs().size(), 1u);
  EXPECT_TRUE(p.runs()[0].rows.empty());
}

}  // namespace
}  // namespace tocsin::nccl
