#include "bench/payloads.h"

#include <gtest/gtest.h>

#include "testing/status_matchers.h"

namespace tocsin::bench {
namespace {

TEST(PayloadsTest, SizeResultsRoundTripAndMustMatchTheSweep) {
  std::vector<SizeResult> mine = {{1024, 256, 12.5, 0}, {4096, 1024, 30, -1}};
  auto back = DecodeSizeResults(EncodeSizeResults(mine), mine);
  ASSERT_OK(back);
  EXPECT_DOUBLE_EQ((*back)[0].us, 12.5);
  EXPECT_EQ((*back)[1].wrong, -1);
  // What crashed or threw in rank 0: empty, not JSON, wrong types, too few rows, other sizes.
  for (const char* bad :
       {"", "not json", "null", "{}", "[]", R"([{"bytes":1024}])",
        R"([{"bytes":"1024","count":256,"us":1,"wrong":0},{"bytes":4096,"count":1024,"us":1,"wrong":0}])",
        R"([{"bytes":1024,"count":256,"us":-1,"wrong":0},{"bytes":4096,"count":1024,"us":1,"wrong":0}])",
        R"([{"bytes":1024,"count":256,"us":1,"wrong":-2},{"bytes":4096,"count":1024,"us":1,"wrong":0}])",
        R"([{"bytes":2048,"count":512,"us":1,"wrong":0},{"bytes":4096,"count":1024,"us":1,"wrong":0}])",
        R"([1,2])"}) {
    auto r = DecodeSizeResults(bad, mine);
    EXPECT_FALSE(r.ok()) << bad;
  }
}

TEST(PayloadsTest, P2pRecordsAreTheSendersOwn) {
  using Kind = P2pRecord::Kind;
  std::vector<P2pRecord> mine = {{Kind::kLatency, 1, 2, -1, 0, 3.5, -1},
                                 {Kind::kStream, 1, 2, 1, 4096, 10, -1},
                                 {Kind::kStream, 0, 1, 1, 4096, 11, -1},
                                 {Kind::kWrong, -1, -1, -1, 0, 0, 0}};
  auto back = DecodeP2p(EncodeP2p(mine), 1, 3, {4096});
  ASSERT_OK(back);
  ASSERT_EQ(back->size(), 4u);
  EXPECT_EQ((*back)[2].from, 1);
  for (const char* bad : {"", "{}", "[1]", R"([{"a":0,"b":7,"latency_us":1}])",
                          R"([{"a":2,"b":1,"latency_us":1}])", R"([{"a":0,"b":2,"latency_us":1}])",
                          R"([{"a":1,"b":2,"from":2,"bytes":4096,"us":1}])",
                          R"([{"a":1,"b":2,"from":1,"bytes":8192,"us":1}])",
                          R"([{"a":1,"b":2,"from":1,"bytes":4096}])", R"([{"wrong":"x"}])"}) {
    EXPECT_FALSE(DecodeP2p(bad, 1, 3, {4096}).ok()) << bad;
  }
}

TEST(PayloadsTest, PhasesMustBeThePhasesRun) {
  PhaseResult w;
  w.name = "write";
  w.bytes = 1 << 20;
  w.ops = 1;
  w.seconds = 0.5;
  w.latency.count = 1;
  PhaseResult r = w;
  r.name = "read";
  r.wrong = 0;
  auto back = DecodePhases(EncodePhases("node-a", {w, r}), {"write", "read"});
  ASSERT_OK(back);
  EXPECT_EQ((*back)[0].wrong, -1);
  EXPECT_EQ((*back)[1].wrong, 0);
  EXPECT_FALSE(DecodePhases(EncodePhases("node-a", {r, w}), {"write", "read"}).ok());
  EXPECT_FALSE(DecodePhases(EncodePhases("node-a", {w}), {"write", "read"}).ok());
  for (const char* bad : {"", "[]", "null", R"({"phases":7})", R"({"phases":[{"phase":"write"}]})"}) {
    EXPECT_FALSE(DecodePhases(bad, {"write"}).ok()) << bad;
  }
}

}  // namespace
}  // namespace tocsin::bench
