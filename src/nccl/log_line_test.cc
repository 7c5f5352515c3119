#include "nccl/log_line.h"

#include <gtest/gtest.h>

namespace tocsin::nccl {
namespace {

TEST(LogLineTest, PlainInfo) {
  // Observed, NVIDIA/nccl issue #676 (NCCL 2.11.4).
  auto l = ParseLogLine("gpu01:124172:124172 [0] NCCL INFO Using network Socket");
  ASSERT_TRUE(l);
  EXPECT_EQ(l->kind, LineKind::kInfo);
  EXPECT_EQ(l->host, "gpu01");
  EXPECT_EQ(l->pid, 124172);
  EXPECT_EQ(l->cuda_dev, 0);
  EXPECT_EQ(l->message, "Using network Socket");
}

TEST(LogLineTest, LauncherPrefixesAndTimestamps) {
  auto mpi = ParseLogLine("[1,7]<stdout>:gpu02:3384:3414 [7] NCCL INFO Using network IB");
  ASSERT_TRUE(mpi);
  EXPECT_EQ(mpi->host, "gpu02");
  EXPECT_EQ(mpi->cuda_dev, 7);
  auto kubectl = ParseLogLine(
      "[pod/train-worker-1/pytorch] train-worker-1:77:77 [3] NCCL INFO NET/IB : No device found.");
  ASSERT_TRUE(kubectl);
  EXPECT_EQ(kubectl->host, "train-worker-1");
  EXPECT_EQ(kubectl->message, "NET/IB : No device found.");
  auto ts = ParseLogLine("[2026-11-29 10:00:01] node-a:101:202 [0] NCCL INFO Init COMPLETE");
  ASSERT_TRUE(ts);
  EXPECT_EQ(ts->host, "node-a");
  EXPECT_EQ(ts->tid, 202);
  auto spaced = ParseLogLine("a3ultra-vm-0:606:642 [ 6 ] NCCL INFO Using network gIB");
  ASSERT_TRUE(spaced);
  EXPECT_EQ(spaced->cuda_dev, 6);
  auto rank_prefix = ParseLogLine("[0] gpu01:1:2 [0] NCCL INFO Using network IB");
  ASSERT_TRUE(rank_prefix);
  EXPECT_EQ(rank_prefix->host, "gpu01");
}

// A console copy (or NCCL_DEBUG_TIMESTAMP_FORMAT without its trailing space) glues the time onto
// the host: the host stays the host, not a second one made of the seconds and the name.
TEST(LogLineTest, TimestampGluedOntoTheHost) {
  for (const char* text :
       {"2026-11-29T10:00:01.123456Zgpu-node-01:3384:3414 [7] NCCL INFO Using network IB",
        "2026-11-29T10:00:01Zgpu-node-01:3384:3414 [7] NCCL INFO Using network IB",
        "10:00:01gpu-node-01:3384:3414 [7] NCCL INFO Using network IB",
        "2026-11-29 10:00:01,250gpu-node-01:3384:3414 [7] NCCL INFO Using network IB",
        "2026-11-29T10:00:01+01:00gpu-node-01:3384:3414 [7] NCCL INFO Using network IB",
        "2026-11-29T10:00:01Zgpu-node-01:3384:3414 [7] enqueue.cc:12 NCCL WARN boom"}) {
    SCOPED_TRACE(text);
    auto line = ParseLogLine(text);
    ASSERT_TRUE(line);
    EXPECT_EQ(line->host, "gpu-node-01");
    EXPECT_EQ(line->pid, 3384);
    EXPECT_EQ(line->cuda_dev, 7);
  }
  // Not a time: a launcher prefix before a host that starts with digits is kept whole.
  EXPECT_EQ(ParseLogLine("[1,7]<stdout>:42node:1:2 [0] NCCL INFO x")->host, "42node");
  EXPECT_EQ(ParseLogLine("a:10-0-0-1:1:2 [0] NCCL INFO x")->host, "10-0-0-1");
}

TEST(LogLineTest, WarnWithFileLineAndFunction) {
  auto w = ParseLogLine("gpu01:10:10 [1] init.cc:1234 NCCL WARN Error: network IB not found.");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->kind, LineKind::kWarn);
  EXPECT_EQ(w->host, "gpu01");
  EXPECT_EQ(w->cuda_dev, 1);
  EXPECT_EQ(w->message, "Error: network IB not found.");
  auto f = ParseLogLine(
      "gpu01:10:10 [1] plugin/net.cc:88 (ncclNetInit) NCCL WARN Failed to "
      "initialize any NET plugin");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->pid, 10);
}

TEST(LogLineTest, VersionLineWithoutPrefix) {
  auto v = ParseLogLine("NCCL version 2.4.8+cuda10.0");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->kind, LineKind::kVersion);
  EXPECT_TRUE(v->host.empty());
}

TEST(LogLineTest, OtherLinesAndGarbage) {
  EXPECT_FALSE(ParseLogLine("Epoch: [0][  0/625]\tTime 12.807"));
  EXPECT_FALSE(ParseLogLine(""));
  EXPECT_FALSE(ParseLogLine("NCCL"));
  auto noheader = ParseLogLine("garbage NCCL INFO Using network IB");
  ASSERT_TRUE(noheader);  // an NCCL line, but no process to pin it on
  EXPECT_TRUE(noheader->host.empty());
  // Binary bytes around the keyword: an NCCL line without a header, never a crash.
  auto binary = ParseLogLine(std::string_view("\xff\xfe\x00 NCCL INFO \x01\x02", 17));
  ASSERT_TRUE(binary);
  EXPECT_TRUE(binary->host.empty());
}

// Headers that lost their pid (redacted by whoever posted the log) or everything but the device:
// still NCCL lines, with what can be read (issue 14).
TEST(LogLineTest, PartialHeaders) {
  auto redacted = ParseLogLine("node-b:XXXXXX [5] NCCL INFO Using network IB");
  ASSERT_TRUE(redacted);
  EXPECT_EQ(redacted->host, "node-b");
  EXPECT_EQ(redacted->pid, -1);
  EXPECT_EQ(redacted->cuda_dev, 5);
  EXPECT_EQ(redacted->message, "Using network IB");
  auto warn = ParseLogLine(
      "[2026-11-29 10:00:01] host-1:XXXX:XXXX [3] transport/net_ib.cc:1295 (ncclIbTest) NCCL "
      "WARN NET/IB : Got completion from peer");
  ASSERT_TRUE(warn);
  EXPECT_EQ(warn->kind, LineKind::kWarn);
  EXPECT_EQ(warn->host, "host-1");
  EXPECT_EQ(warn->pid, -1);
  EXPECT_EQ(warn->cuda_dev, 3);
  auto mpi = ParseLogLine("[1,7]<stdout>:gpu02:<pid>:<tid> [7] NCCL INFO Using network IB");
  ASSERT_TRUE(mpi);
  EXPECT_EQ(mpi->host, "gpu02");
  EXPECT_EQ(mpi->cuda_dev, 7);
  auto device_only = ParseLogLine(" [0] NCCL INFO Bootstrap : Using ib0:10.0.0.1<0>");
  ASSERT_TRUE(device_only);
  EXPECT_TRUE(device_only->host.empty());
  EXPECT_EQ(device_only->pid, -1);
  EXPECT_EQ(device_only->cuda_dev, 0);
  auto device_warn = ParseLogLine(" [1] include/alloc.h:48 NCCL WARN Cuda failure 'out of memory'");
  ASSERT_TRUE(device_warn);
  EXPECT_EQ(device_warn->kind, LineKind::kWarn);
  EXPECT_EQ(device_warn->cuda_dev, 1);
  EXPECT_EQ(device_warn->message, "Cuda failure 'out of memory'");
  // Nothing before the keyword, or a bracket that is not the header's: no device.
  auto bare_warn = ParseLogLine("NCCL WARN Cuda failure 'out of memory'");
  ASSERT_TRUE(bare_warn);
  EXPECT_EQ(bare_warn->cuda_dev, -1);
  EXPECT_TRUE(bare_warn->host.empty());
  auto not_header = ParseLogLine("step [3] of 10 NCCL INFO Using network IB");
  ASSERT_TRUE(not_header);
  EXPECT_EQ(not_header->cuda_dev, -1);
  auto full = ParseLogLine("gpu01:10:11 [2] NCCL INFO Using network IB");
  ASSERT_TRUE(full);
  EXPECT_EQ(full->pid, 10);
}

// The memo reuses a header only when ParseLogLine would read the same one.
void ExpectSameFields(const LogLine& plain, const LogLine& memo) {
  EXPECT_EQ(plain.kind, memo.kind);
  EXPECT_EQ(plain.host, memo.host);
  EXPECT_EQ(plain.pid, memo.pid);
  EXPECT_EQ(plain.tid, memo.tid);
  EXPECT_EQ(plain.cuda_dev, memo.cuda_dev);
  EXPECT_EQ(plain.message, memo.message);
}

TEST(LogLineTest, LineParserMemoGivesTheSameFieldsAsParseLogLine) {
  const char* lines[] = {
      "node-a:1:2 [0] NCCL INFO Using network IB",
      "node-a:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] [send] via NET/IB/0",
      "2026-11-29T10:00:01.1Z stdout F node-a:1:2 [0] NCCL INFO Using network IB",
      "xnode-a:1:2 [0] NCCL INFO Using network IB",  // same bytes, longer host
      "[0]node-a:1:2 [0] NCCL INFO Using network IB",
      "b:node-a:1:2 [0] NCCL INFO Using network IB",
      "node-a:1:3 [0] NCCL INFO Using network IB",
      "node-a:11:2 [0] NCCL INFO Using network IB",
      "node-a:1:2 [0] init.cc:12 NCCL WARN boom",
      "NCCL version 2.18.3+cuda12.2",
      "node-a:1:2 [0]  NCCL INFO two spaces",
      "node-a:1:2 [ 0 ] NCCL INFO spaced brackets",
      "node-a:1:2 [0] NCCL INFO Using network IB",
      "12:00:00node-a:1:2 [0] NCCL INFO glued time: the memo's host after a time's ':'",
      "x:05node-a:1:2 [0] NCCL INFO not a time before it",
      "12:34:05node-a:1:2 [0] NCCL INFO the memo holds 05node-a: not reused",
      "garbage NCCL INFO no header",
      "node-a:XXXXXX [0] NCCL INFO redacted pid",
      " [0] NCCL INFO device only",
      "node-a:1:2 [0] NCCL INFO Using network IB",
  };
  LineParser parser;
  int reused = 0;
  for (const char* text : lines) {
    SCOPED_TRACE(text);
    auto plain = ParseLogLine(text);
    auto memo = parser.Parse(text);
    ASSERT_EQ(plain.has_value(), memo.has_value());
    if (!plain) continue;
    ExpectSameFields(*plain, *memo);
    reused += parser.same_header() ? 1 : 0;
  }
  EXPECT_EQ(reused, 4);  // the second line, the CRI-prefixed one, the "b:" one, the last
}

// A caller that vouches for the bytes before the keyword (LineReader::same_prefix) gets the
// memo's header without a compare: the same fields as a plain parse, for INFO and WARN alike.
TEST(LogLineTest, AVouchedPrefixReusesTheMemoWithTheSameFields) {
  const char* lines[] = {
      "node-a:1:2 [0] NCCL INFO Using network IB",
      "node-a:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] [send] via NET/IB/0",
      "node-a:1:2 [0] NCCL WARN Call to ibv_modify_qp failed",
      "node-a:1:2 [0] NCCL INFO  trimmed  ",
      "node-a:1:2 [0] NCCL VERSION not INFO or WARN",
      "node-a:1:2 [0] NCCL INFO after a line that was no NCCL line",
  };
  LineParser parser;
  int reused = 0;
  bool first = true;
  for (const char* text : lines) {
    SCOPED_TRACE(text);
    std::string_view line = text;
    size_t at = line.find("NCCL ");
    auto plain = ParseLogLine(line);
    auto memo = parser.Parse(line, at, /*same_prefix=*/!first);
    first = false;
    ASSERT_EQ(plain.has_value(), memo.has_value());
    if (!plain) continue;
    ExpectSameFields(*plain, *memo);
    reused += parser.same_header() ? 1 : 0;
  }
  // Every NCCL line after the first: the one after the "VERSION" line is not vouched for by the
  // memo (the failed parse cleared it), and its header is found equal by the compare instead.
  EXPECT_EQ(reused, 4);
  EXPECT_TRUE(parser.header_memoized());
  // A vouched prefix whose keyword sits elsewhere than the memo's is parsed in full.
  auto other = parser.Parse("nodeb:7:8 [1] NCCL INFO x", 14, true);
  ASSERT_TRUE(other);
  EXPECT_EQ(other->host, "nodeb");
  EXPECT_EQ(other->pid, 7);
  EXPECT_FALSE(parser.same_header());
}

// ReusedInfoMessage: Parse's message for an INFO line on the memo's header, nothing otherwise.
TEST(LogLineTest, ReusedInfoMessageIsParsesMessageOnTheMemosHeader) {
  LineParser parser;
  std::string_view first = "node-a:1:2 [0] NCCL INFO Using network IB";
  EXPECT_FALSE(parser.ReusedInfoMessage(first, 15));  // nothing memoized yet
  ASSERT_TRUE(parser.Parse(first, 15));
  std::string_view next = "node-a:1:2 [0] NCCL INFO  Channel 00/0 : 0[0] -> 1[1] via P2P/IPC \r";
  auto msg = parser.ReusedInfoMessage(next, 15);
  ASSERT_TRUE(msg);
  EXPECT_EQ(*msg, ParseLogLine(next)->message);
  EXPECT_TRUE(parser.same_header());
  EXPECT_FALSE(parser.ReusedInfoMessage("node-a:1:2 [0] NCCL WARN x", 15));  // INFO only
  EXPECT_FALSE(parser.ReusedInfoMessage("node-a:1:2  [0] NCCL INFO x", 16));  // another offset
  EXPECT_FALSE(parser.ReusedInfoMessage("node-a:1:2 [0] NCCL INF", 15));     // too short
  ASSERT_FALSE(parser.Parse("no keyword here"));
  EXPECT_FALSE(parser.ReusedInfoMessage(next, 15));  // the memo no longer holds the last line's
}

}  // namespace
}  // namespace tocsin::nccl
