#include "ranks/protocol.h"

#include <gtest/gtest.h>

#include "testing/status_matchers.h"

namespace tocsin::ranks {
namespace {

std::string Header(uint32_t n) {
  return std::string{static_cast<char>(n), static_cast<char>(n >> 8), static_cast<char>(n >> 16),
                     static_cast<char>(n >> 24)};
}

TEST(FrameReaderTest, ReassemblesAFrameFedByteByByte) {
  FrameReader r(100);
  std::string stream = Header(5) + "hello";
  for (char c : stream) {
    ASSERT_FALSE(r.Complete());
    ASSERT_EQ(r.Wanted() > 0, true);
    ASSERT_TRUE(r.Add(std::string_view(&c, 1)).ok());
  }
  ASSERT_TRUE(r.Complete());
  EXPECT_EQ(r.Take(), "hello");
  EXPECT_EQ(r.Wanted(), 4u);  // the next header
}

TEST(FrameReaderTest, AnOversizedHeaderIsRefusedBeforeAnythingIsAllocated) {
  FrameReader r(kMaxHelloBytes);
  Status st = r.Add(Header(30 << 20));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kParseError);
  EXPECT_NE(st.message().find("31457280 bytes"), std::string::npos) << st.ToString();
  EXPECT_EQ(r.buffered(), 0u);
  EXPECT_FALSE(r.Add(std::string(10, 'x')).ok()) << "never more than wanted";
}

TEST(ProtocolTest, HelloRoundTripsAndEveryFieldIsChecked) {
  Hello h{"1.2.3", "tok", 2, 4, "params", "node-c", "10.0.0.3:4242"};
  auto back = DecodeHello(EncodeHello(h));
  ASSERT_OK(back);
  EXPECT_EQ(back->token, "tok");
  EXPECT_EQ(back->rank, 2);
  EXPECT_EQ(back->address, "10.0.0.3:4242");
  for (const char* bad :
       {"", "null", "[]", "\"hello\"", R"({"type":"hello"})",
        R"({"type":"hello","version":"1","token":7,"rank":1,"world_size":2,"params":"","host":"","address":""})",
        R"({"type":"hello","version":"1","token":"t","rank":"1","world_size":2,"params":"","host":"","address":""})",
        R"({"type":"hello","version":"1","token":"t","rank":1.5,"world_size":2,"params":"","host":"","address":""})",
        R"({"type":"hello","version":"1","token":"t","rank":99999999999,"world_size":2,"params":"","host":"","address":""})",
        R"({"type":"hello","version":"1","token":"t","rank":1,"world_size":-3,"params":"","host":"","address":""})",
        R"({"type":"hello","version":"1","token":"t","rank":1,"world_size":2,"params":[],"host":"","address":""})"}) {
    EXPECT_FALSE(DecodeHello(bad).ok()) << bad;
  }
  h.host = "node\x1b[31m-c";  // a terminal escape in every report
  EXPECT_FALSE(DecodeHello(EncodeHello(h)).ok());
}

TEST(ProtocolTest, NodeNamesAreDnsSubdomainsElseDroppedAndMarked) {
  for (const char* good : {"n0", "gpu-node-01.example.com", "a", "0-0"}) {
    EXPECT_TRUE(IsNodeName(good)) << good;
  }
  for (std::string bad : {std::string(), std::string("Node"), std::string("-a"),
                          std::string("a-"), std::string("a..b"), std::string(".a"),
                          std::string("a_b"), std::string("a b"), std::string("n\x1b[31m"),
                          std::string(64, 'a'), std::string(127, 'a') + "." + std::string(126, 'b')}) {
    EXPECT_FALSE(IsNodeName(bad)) << bad;
  }
  EXPECT_TRUE(IsNodeName(std::string(63, 'a') + "." + std::string(63, 'b') + "." +
                         std::string(63, 'c') + "." + std::string(61, 'd')));  // 253
  Hello h{"1", "t", 1, 2, "p", "host", "", "node-b"};
  auto back = DecodeHello(EncodeHello(h));
  ASSERT_OK(back);
  EXPECT_EQ(back->node, "node-b");
  EXPECT_FALSE(back->node_dropped);
  // Not a reason to refuse the rank: the name is dropped, and that is counted.
  h.node = "Evil\nNode";
  back = DecodeHello(EncodeHello(h));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->node, "");
  EXPECT_TRUE(back->node_dropped);
  h.node = "";  // unset: nothing to drop
  back = DecodeHello(EncodeHello(h));
  ASSERT_TRUE(back.ok());
  EXPECT_FALSE(back->node_dropped);
  back = DecodeHello(
      R"({"type":"hello","version":"1","token":"t","rank":1,"world_size":2,"params":"","host":"","address":"","node":7})");
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back->node_dropped);
  std::vector<Peer> peers = {{0, "a", "ip", "x:1", "n0", false}, {1, "b", "ip", "x:2", "", true}};
  std::string secret;
  auto roster = DecodeRoster(EncodeRoster(peers, "s"), 2, secret);
  ASSERT_OK(roster);
  EXPECT_EQ((*roster)[0].node, "n0");
  EXPECT_TRUE((*roster)[1].node_dropped);
}

TEST(ProtocolTest, MessagesAreTypedAndBounded) {
  auto g = DecodeMessage(R"({"type":"gather","round":1,"payload":"[1,2]"})", 4);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->type, Message::Type::kGather);
  EXPECT_EQ(g->payload, "[1,2]");
  auto s = DecodeMessage(R"({"type":"stall","peer":3,"detail":"waited"})", 4);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->peer, 3);
  // A rank index out of range (it once indexed the coordinator's table), a payload that is not a
  // string, an empty frame, an unknown type: all errors, none a crash.
  for (const char* bad : {R"({"type":"stall","peer":4})", R"({"type":"stall","peer":-1})",
                          R"({"type":"stall"})", R"({"type":"gather","payload":7})",
                          R"({"type":"gather"})", "", "not json", R"({"type":"dance"})",
                          R"({"type":["gather"]})"}) {
    EXPECT_FALSE(DecodeMessage(bad, 4).ok()) << bad;
  }
  std::string big = R"({"type":"gather","payload":")" + std::string(kMaxPayloadBytes + 1, 'x') +
                    R"("})";
  EXPECT_FALSE(DecodeMessage(big, 4).ok());
  std::string long_reason = R"({"type":"abort","reason":")" + std::string(100000, 'r') + R"("})";
  auto a = DecodeMessage(long_reason, 4);
  ASSERT_TRUE(a.ok());
  EXPECT_LE(a->text.size(), kMaxReasonBytes + 3);
}

TEST(ProtocolTest, RosterAndGatheredMustMatchTheWorld) {
  std::vector<Peer> peers = {{0, "a", "10.0.0.1", "10.0.0.1:1"}, {1, "b", "10.0.0.2", "x:2"}};
  std::string secret;
  auto back = DecodeRoster(EncodeRoster(peers, "s3cret"), 2, secret);
  ASSERT_OK(back);
  EXPECT_EQ(secret, "s3cret");
  EXPECT_EQ((*back)[1].address, "x:2");
  EXPECT_FALSE(DecodeRoster(EncodeRoster(peers, "s"), 3, secret).ok());
  std::vector<Peer> swapped = {peers[1], peers[0]};
  EXPECT_FALSE(DecodeRoster(EncodeRoster(swapped, "s"), 2, secret).ok());
  EXPECT_TRUE(DecodeGathered(R"({"payloads":["a","b"]})", 2).ok());
  EXPECT_FALSE(DecodeGathered(R"({"payloads":["a"]})", 2).ok());
  EXPECT_FALSE(DecodeGathered(R"({"payloads":["a",2]})", 2).ok());
  EXPECT_FALSE(DecodeGathered(R"({"payloads":null})", 2).ok());
}

TEST(ProtocolTest, SecretsCompareWholly) {
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "ab"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abcd"));
  EXPECT_FALSE(ConstantTimeEquals("", "x"));
  EXPECT_TRUE(ConstantTimeEquals("", ""));
  std::string a = NewRunSecret(), b = NewRunSecret();
  EXPECT_EQ(a.size(), kRunSecretBytes);
  EXPECT_NE(a, b);
}

}  // namespace
}  // namespace tocsin::ranks
