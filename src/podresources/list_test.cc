#include "podresources/list.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "testing/status_matchers.h"

namespace tocsin::podresources {
namespace {

// Protobuf's wire format, by hand (as the kubelet's Go code writes it).
std::string Varint(uint64_t n) {
  std::string out;
  while (n >= 0x80) {
    out.push_back(static_cast<char>((n & 0x7f) | 0x80));
    n >>= 7;
  }
  out.push_back(static_cast<char>(n));
  return out;
}
std::string Field(uint32_t num, const std::string& payload) {
  return Varint(num << 3 | 2) + Varint(payload.size()) + payload;
}
std::string Devices(const std::string& resource, const std::vector<std::string>& ids) {
  std::string d = Field(1, resource);
  for (const auto& id : ids) d += Field(2, id);
  d += Field(3, Field(1, Varint(1 << 3) + Varint(1)));  // topology {nodes {ID: 1}}
  return d;
}
std::string Container(const std::string& name, const std::vector<std::string>& devices) {
  std::string c = Field(1, name);
  for (const auto& d : devices) c += Field(2, d);
  c += Field(3, Varint(0) + Varint(1) + Varint(2));  // cpu_ids, packed
  c += Varint(6 << 3 | 0) + Varint(300);             // a varint field of a newer kubelet
  c += Varint(7 << 3 | 1) + std::string(8, 'x');     // a fixed64 one
  c += Varint(8 << 3 | 5) + std::string(4, 'y');     // a fixed32 one
  return c;
}
std::string Pod(const std::string& ns, const std::string& name,
                const std::vector<std::string>& containers) {
  std::string p = Field(1, name) + Field(2, ns);
  for (const auto& c : containers) p += Field(3, c);
  return p;
}
std::string Answer(const std::vector<std::string>& pods) {
  std::string a;
  for (const auto& p : pods) a += Field(1, p);
  return a;
}

TEST(ParseListResponseTest, ReadsPodsAndTheirDevicesSkippingOtherFields) {
  std::string answer = Answer({
      Pod("ml", "llm-0",
          {Container("trainer", {Devices("nvidia.com/gpu", {"GPU-aaaa", "GPU-bbbb"}),
                                 Devices("nvidia.com/sriov_rdma", {"0000:05:00.2"})}),
           Container("sidecar", {Devices("nvidia.com/gpu", {"GPU-aaaa"})})}),  // seen: once
      Pod("kube-system", "coredns-1", {Container("coredns", {})}),
  });
  ASSERT_OK_AND_ASSIGN(PodList list, ParseListResponse(answer));
  ASSERT_EQ(list.pods.size(), 2u);
  EXPECT_EQ(list.pods[0].ns, "ml");
  EXPECT_EQ(list.pods[0].name, "llm-0");
  ASSERT_EQ(list.pods[0].devices.size(), 3u);
  EXPECT_EQ(list.pods[0].devices[0].resource, "nvidia.com/gpu");
  EXPECT_EQ(list.pods[0].devices[0].id, "GPU-aaaa");
  EXPECT_EQ(list.pods[0].devices[2].resource, "nvidia.com/sriov_rdma");
  EXPECT_EQ(list.pods[0].devices[2].id, "0000:05:00.2");
  EXPECT_TRUE(list.pods[1].devices.empty());
  EXPECT_EQ(list.dropped.pods + list.dropped.devices + list.dropped.invalid, 0u);
}

TEST(ParseListResponseTest, AnEmptyAnswerHasNoPods) {
  ASSERT_OK_AND_ASSIGN(PodList list, ParseListResponse(""));
  EXPECT_TRUE(list.pods.empty());
}

TEST(ParseListResponseTest, MalformedAnswersNameTheByte) {
  std::string good = Answer({Pod("ml", "a", {})});
  for (const std::string& bad : {good.substr(0, good.size() - 1),  // length past the end
                                 std::string("\x0b"),              // wire type 3: a group
                                 std::string("\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"),
                                 std::string("\x00\x01", 2)}) {  // field number 0
    auto r = ParseListResponse(bad);
    ASSERT_FALSE(r.ok()) << bad.size();
    EXPECT_EQ(r.status().code(), StatusCode::kParseError);
    EXPECT_NE(r.status().message().find("malformed PodResources answer at byte"), std::string::npos)
        << r.status().message();
  }
}

TEST(ParseListResponseTest, HostileAnswersAreCappedAndCounted) {
  Limits limits;
  limits.max_pods = 3;
  limits.max_devices_per_pod = 2;
  limits.max_id_bytes = 16;
  std::vector<std::string> pods;
  pods.push_back(Pod("ml", "many", {Container("c", {Devices("x/y", {"a", "b", "c", "d"})})}));
  pods.push_back(Pod("ml", std::string(300, 'x'), {}));  // name too long
  pods.push_back(Pod("ml", "Upper", {}));                // not a name
  pods.push_back(Pod("", "no-namespace", {}));           // empty
  pods.push_back(Pod("ml", "long-id",
                     {Container("c", {Devices("x/y", {std::string(17, 'i'), "ok", "bad id"})})}));
  pods.push_back(Pod("ml", "third", {}));
  for (int i = 0; i < 5; ++i) pods.push_back(Pod("ml", "over-" + std::to_string(i), {}));
  ASSERT_OK_AND_ASSIGN(PodList list, ParseListResponse(Answer(pods), limits));
  ASSERT_EQ(list.pods.size(), 3u);
  EXPECT_EQ(list.pods[0].name, "many");
  EXPECT_EQ(list.pods[0].devices.size(), 2u);
  EXPECT_EQ(list.pods[1].name, "long-id");
  ASSERT_EQ(list.pods[1].devices.size(), 1u);
  EXPECT_EQ(list.pods[1].devices[0].id, "ok");
  EXPECT_EQ(list.pods[2].name, "third");
  EXPECT_EQ(list.dropped.pods, 5u);
  EXPECT_EQ(list.dropped.devices, 2u);
  EXPECT_EQ(list.dropped.invalid, 3u + 2u);  // three pods, two device IDs
}

}  // namespace
}  // namespace tocsin::podresources
