#include "canary/history.h"

#include <gtest/gtest.h>

#include "canary/attribution.h"
#include "canary/testing.h"
#include "testing/status_matchers.h"

namespace tocsin::canary {
namespace {

using namespace testing;  // NOLINT

bool Same(const History& x, const History& y) {
  auto node_eq = [](const NodeRecord& a, const NodeRecord& b) {
    return a.last_pass == b.last_pass && a.fail_since == b.fail_since && a.blamed == b.blamed &&
           a.cause == b.cause && a.partners == b.partners;
  };
  auto block_eq = [](const BlockPairRecord& a, const BlockPairRecord& b) {
    return a.last_pass == b.last_pass && a.fail_since == b.fail_since && a.blamed == b.blamed &&
           a.cause == b.cause && a.pairs == b.pairs;
  };
  auto fail_eq = [](const Failure& a, const Failure& b) {
    return a.a == b.a && a.b == b.b && a.block_a == b.block_a && a.block_b == b.block_b &&
           a.cause == b.cause && a.at == b.at;
  };
  return std::equal(x.nodes.begin(), x.nodes.end(), y.nodes.begin(), y.nodes.end(),
                    [&](const auto& a, const auto& b) {
                      return a.first == b.first && node_eq(a.second, b.second);
                    }) &&
         std::equal(x.block_pairs.begin(), x.block_pairs.end(), y.block_pairs.begin(),
                    y.block_pairs.end(),
                    [&](const auto& a, const auto& b) {
                      return a.first == b.first && block_eq(a.second, b.second);
                    }) &&
         std::equal(x.failures.begin(), x.failures.end(), y.failures.begin(), y.failures.end(),
                    fail_eq);
}

// Passes, a node verdict, a block-pair verdict, a suspect and a streak.
History Sample() {
  std::vector<NodeInfo> all = Grid(3, 4);
  History h;
  auto add = [&](const PairResult& r) { EXPECT_TRUE(Record(h, r, kWindow).ok()); };
  for (size_t i = 0; i < all.size(); i += 2) add(Pass(all[i], all[i + 1], T(0)));
  add(Pass(all[0], all[8], T(10)));
  add(Result(all[1], all[2], Outcome::kNodeFault, T(100), "canary.rank-failed", all[1].name));
  add(Fail(all[3], all[4], T(100), "canary.busbw.low"));
  add(Pass(all[3], all[2], T(200)));
  add(Pass(all[4], all[5], T(200)));
  add(Fail(all[6], all[10], T(300)));
  return h;
}

TEST(HistoryTest, RoundTrip) {
  History h = Sample();
  ASSERT_EQ(h.failures.size(), 1u);
  ASSERT_TRUE(h.nodes.at("n-00-01").blamed);
  ASSERT_TRUE(h.block_pairs.at({"b00", "b01"}).blamed);
  size_t dropped = 99;
  std::string text = EncodeHistory(h, kDefaultHistoryBytes, &dropped);
  EXPECT_EQ(dropped, 0u);
  auto back = DecodeHistory(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << text;
  EXPECT_TRUE(Same(h, *back)) << text;
  EXPECT_EQ(EncodeHistory(*back), text);
  EXPECT_TRUE(DecodeHistory(EncodeHistory(History{})).ok());
}

TEST(HistoryTest, CapKeepsVerdictsFirstAndCountsWhatIsLeftOut) {
  History h = Sample();
  std::string full = EncodeHistory(h);
  for (size_t cap : {0u, 100u, 300u, 600u}) {
    size_t dropped = 0;
    std::string text = EncodeHistory(h, cap, &dropped);
    EXPECT_LE(text.size(), std::max<size_t>(cap, 60)) << cap;
    EXPECT_GT(dropped, 0u) << cap;
    auto back = DecodeHistory(text);
    ASSERT_OK(back);
    if (cap >= 300) {
      ASSERT_TRUE(back->nodes.contains("n-00-01"));
      EXPECT_TRUE(back->nodes.at("n-00-01").blamed) << "verdicts kept first";
    }
  }
  size_t dropped = 1;
  EncodeHistory(h, full.size() + 64, &dropped);  // the envelope's reserve
  EXPECT_EQ(dropped, 0u);
}

TEST(HistoryTest, FourThousandNodesFitTheDefaultCap) {
  std::vector<NodeInfo> all = Grid(64, 64);
  History h;
  // Every node passed, every block pair passed (one cross pair each), at distinct times.
  for (size_t i = 0; i < all.size(); i += 2) {
    ASSERT_TRUE(Record(h, Pass(all[i], all[i + 1], T(static_cast<int64_t>(i))), kWindow).ok());
  }
  for (size_t x = 0; x < 64; ++x) {
    for (size_t y = x + 1; y < 64; ++y) {
      ASSERT_TRUE(Record(h, Pass(all[64 * x + y], all[64 * y + x], T(5000)), kWindow).ok());
    }
  }
  ASSERT_EQ(h.block_pairs.size(), 2016u);
  size_t dropped = 1;
  std::string text = EncodeHistory(h, kDefaultHistoryBytes, &dropped);
  EXPECT_EQ(dropped, 0u);
  EXPECT_LT(text.size(), kDefaultHistoryBytes);
  RecordProperty("encoded_bytes", std::to_string(text.size()));
  std::printf("encoded history, 4096 nodes, 2016 block pairs: %zu bytes\n", text.size());
  auto back = DecodeHistory(text);
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(Same(h, *back));
}

TEST(HistoryTest, RejectsJunk) {
  const char* junk[] = {
      "",
      "null",
      "[]",
      "{",
      "{\"version\":2,\"nodes\":[],\"blocks\":[],\"failures\":[]}",
      "{\"version\":\"1\",\"nodes\":[],\"blocks\":[],\"failures\":[]}",
      "{\"version\":1,\"blocks\":[],\"failures\":[]}",
      "{\"version\":1,\"nodes\":{},\"blocks\":[],\"failures\":[]}",
      "{\"version\":1,\"nodes\":[1],\"blocks\":[],\"failures\":[]}",
      "{\"version\":1,\"nodes\":[{\"n\":\"UPPER\"}],\"blocks\":[],\"failures\":[]}",
      "{\"version\":1,\"nodes\":[{\"n\":\"-a\"}],\"blocks\":[],\"failures\":[]}",
      "{\"version\":1,\"nodes\":[{\"n\":\"a\",\"p\":1.5}],\"blocks\":[],\"failures\":[]}",
      "{\"version\":1,\"nodes\":[{\"n\":\"a\",\"p\":99999999999}],\"blocks\":[],\"failures\":[]}",
      "{\"version\":1,\"nodes\":[{\"n\":\"a\",\"p\":-9223372036854775808}],\"blocks\":[],"
      "\"failures\":[]}",
      "{\"version\":1,\"nodes\":[{\"n\":\"a\",\"p\":18446744073709551615}],\"blocks\":[],"
      "\"failures\":[]}",
      "{\"version\":1,\"nodes\":[{\"n\":\"a\"},{\"n\":\"a\"}],\"blocks\":[],\"failures\":[]}",
      "{\"version\":1,\"nodes\":[{\"n\":\"a\",\"c\":\"x\"}],\"blocks\":[],\"failures\":[]}",
      "{\"version\":1,\"nodes\":[{\"n\":\"a\",\"c\":\"x\",\"w\":[]}],\"blocks\":[],\"failures\":[]"
      "}",
      "{\"version\":1,\"nodes\":[{\"n\":\"a\",\"f\":1,\"c\":\"x y\",\"w\":[]}],\"blocks\":[],"
      "\"failures\":[]}",
      "{\"version\":1,\"nodes\":[{\"n\":\"a\",\"f\":1,\"c\":\"x\",\"w\":[\"a\"]}],\"blocks\":[],"
      "\"failures\":[]}",
      "{\"version\":1,\"nodes\":[{\"n\":\"a\",\"f\":1,\"c\":\"x\",\"w\":[\"b\",\"b\"]}],"
      "\"blocks\":[],\"failures\":[]}",
      "{\"version\":1,\"nodes\":[],\"blocks\":[{\"a\":\"b\",\"b\":\"a\"}],\"failures\":[]}",
      "{\"version\":1,\"nodes\":[],\"blocks\":[{\"a\":\"a\",\"b\":\"a\"}],\"failures\":[]}",
      "{\"version\":1,\"nodes\":[],\"blocks\":[{\"a\":\"a\",\"b\":\"b/c\"}],\"failures\":[]}",
      "{\"version\":1,\"nodes\":[],\"blocks\":[{\"a\":\"a\",\"b\":\"b\",\"f\":1,\"c\":\"x\","
      "\"w\":[[\"n2\",\"n1\"]]}],\"failures\":[]}",
      "{\"version\":1,\"nodes\":[],\"blocks\":[],\"failures\":[{\"a\":\"b\",\"b\":\"a\",\"x\":\"\","
      "\"y\":\"\",\"c\":\"x\",\"t\":1}]}",
      "{\"version\":1,\"nodes\":[],\"blocks\":[],\"failures\":[{\"a\":\"a\",\"b\":\"b\",\"x\":\"\","
      "\"y\":\"\",\"c\":\"\",\"t\":1}]}",
      "{\"version\":1,\"nodes\":[],\"blocks\":[],\"failures\":[{\"a\":\"a\",\"b\":\"b\",\"x\":\"\","
      "\"y\":\"\",\"c\":\"x\"}]}",
      "{\"version\":1,\"nodes\":[],\"blocks\":[],\"failures\":[{\"a\":\"a\",\"b\":\"b\",\"x\":\"\","
      "\"y\":\"\",\"c\":\"x\",\"t\":2},{\"a\":\"a\",\"b\":\"b\",\"x\":\"\",\"y\":\"\",\"c\":\"x\","
      "\"t\":1}]}",
  };
  for (const char* text : junk) {
    auto r = DecodeHistory(text);
    EXPECT_FALSE(r.ok()) << text;
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), StatusCode::kParseError) << text;
    }
  }
  std::string deep(600000, '[');
  EXPECT_FALSE(DecodeHistory(deep).ok());
  EXPECT_FALSE(DecodeHistory(std::string(kMaxHistoryInput + 1, ' ')).ok());
  std::string nodes = "{\"version\":1,\"blocks\":[],\"failures\":[],\"nodes\":[";
  for (size_t i = 0; i < kMaxNodes; ++i) nodes += "{},";
  auto r = DecodeHistory(nodes + "{}]}");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("over 65536"), std::string::npos) << r.status().message();
  std::string many = "{\"version\":1,\"nodes\":[],\"blocks\":[],\"failures\":[";
  for (size_t i = 0; i <= kMaxFailures; ++i) many += "1,";
  many += "1]}";
  EXPECT_FALSE(DecodeHistory(many).ok());
}

TEST(HistoryTest, Names) {
  EXPECT_TRUE(ValidNodeName("gpu-node-01.example.com"));
  EXPECT_TRUE(ValidNodeName(std::string(63, 'a') + "." + std::string(63, 'b')));
  EXPECT_FALSE(ValidNodeName(std::string(64, 'a')));
  EXPECT_FALSE(ValidNodeName(""));
  EXPECT_FALSE(ValidNodeName("a..b"));
  EXPECT_FALSE(ValidNodeName("a-.b"));
  EXPECT_FALSE(ValidNodeName("a."));
  EXPECT_FALSE(ValidNodeName("a_b"));
  std::string long_name;
  while (long_name.size() < 250) long_name += "abcdefghi.";
  EXPECT_FALSE(ValidNodeName(long_name + "abcd"));  // 254 bytes
  EXPECT_TRUE(ValidBlock(""));
  EXPECT_TRUE(ValidBlock("Rack_7.a-b"));
  EXPECT_FALSE(ValidBlock(std::string(64, 'a')));
  EXPECT_FALSE(ValidBlock("a b"));
  EXPECT_TRUE(ValidCause("canary.transport.not-rdma"));
  EXPECT_FALSE(ValidCause(""));
  EXPECT_FALSE(ValidCause("a\nb"));
}

}  // namespace
}  // namespace tocsin::canary
