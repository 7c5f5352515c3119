#include "node/expectations.h"

#include <gtest/gtest.h>

#include "testing/status_matchers.h"

namespace tocsin::node {
namespace {

TEST(ProfileTest, ParsesAllKeys) {
  auto e = ParseProfile(
      "expect-rdma-ports: 8\n"
      "expect-rate: 400\n"
      "expect-link-layer: InfiniBand\n"
      "expect-gpus: 8\n"
      "expect-mount: [/mnt/lustre:lustre, /scratch]\n",
      "p.yaml");
  ASSERT_OK(e);
  EXPECT_EQ(e->rdma.active_ports, 8);
  EXPECT_EQ(e->rdma.min_rate_gbps, 400);
  EXPECT_EQ(e->rdma.link_layer, "InfiniBand");
  EXPECT_EQ(e->gpus, 8);
  ASSERT_EQ(e->mounts.size(), 2u);
  EXPECT_EQ(e->mounts[0].fstype, "lustre");
  EXPECT_EQ(e->mounts[1].path, "/scratch");
}

TEST(ProfileTest, SingleMountAndEmptyFile) {
  EXPECT_EQ(ParseProfile("expect-mount: /data:nfs4\n", "p")->mounts.size(), 1u);
  EXPECT_FALSE(ParseProfile("", "p")->gpus.has_value());
}

TEST(ProfileTest, ErrorsNameKeyAndFile) {
  auto unknown = ParseProfile("expect-gpu: 8\n", "node.yaml");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("node.yaml"), std::string::npos);
  EXPECT_NE(unknown.status().message().find("expect-gpu"), std::string::npos);

  auto type = ParseProfile("expect-gpus: eight\n", "node.yaml");
  ASSERT_FALSE(type.ok());
  EXPECT_NE(type.status().message().find("expect-gpus"), std::string::npos);

  EXPECT_FALSE(ParseProfile("expect-link-layer: RoCE\n", "p").ok());
  EXPECT_FALSE(ParseProfile("expect-rate: -1\n", "p").ok());
  EXPECT_FALSE(ParseProfile("expect-mount: relative\n", "p").ok());
  EXPECT_FALSE(ParseProfile("[1, 2]\n", "p").ok());
  // Found by fuzz_profile: a complex key used to throw out of yaml-cpp.
  EXPECT_FALSE(ParseProfile("? /home\n  : x\nexpect-gpus: 8\n", "p").ok());
  EXPECT_FALSE(ParseProfile("? [a, b]\n: 1\n", "p").ok());
  auto syntax = ParseProfile("expect-gpus: [8\n", "p");
  ASSERT_FALSE(syntax.ok());
  EXPECT_EQ(syntax.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tocsin::node
