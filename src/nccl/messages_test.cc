#include "nccl/messages.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace tocsin::nccl {
namespace {

TEST(MessagesTest, UsingNetwork) {
  EXPECT_EQ(ParseUsingNetwork("Using network IB"), "IB");
  EXPECT_EQ(ParseUsingNetwork("Using network AWS Libfabric"), "AWS Libfabric");
  EXPECT_FALSE(ParseUsingNetwork("Using 256 threads"));
  EXPECT_TRUE(IsRdmaNetwork("IBext_v8"));
  EXPECT_TRUE(IsRdmaNetwork("AWS Libfabric"));
  EXPECT_FALSE(IsRdmaNetwork("Socket"));
  EXPECT_FALSE(IsRdmaNetwork("IB (stub)"));
}

TEST(MessagesTest, IbDevicesAcrossVersions) {
  // Observed (HF log): RoCE with relaxed ordering.
  auto roce = ParseIbDevices(
      "NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [2]mlx5_2:1/RoCE [3]mlx5_3:1/RoCE [RO]; "
      "OOB eth0:22.8.12.250<0>");
  ASSERT_TRUE(roce);
  ASSERT_EQ(roce->size(), 4u);
  EXPECT_EQ((*roce)[3].name, "mlx5_3");
  EXPECT_EQ((*roce)[3].link_layer, "RoCE");
  // 2.20-2.23 fused NICs.
  auto fused = ParseIbDevices(
      "NET/IB : Using [0]={[0] mlx5_0:1/IB, [1] mlx5_1:1/IB} [1]={[2] mlx5_2:1/IB, [3] "
      "mlx5_3:1/IB} ; OOB ib0:10.0.0.1<0>");
  ASSERT_TRUE(fused);
  EXPECT_EQ(fused->size(), 4u);
  EXPECT_EQ((*fused)[2].name, "mlx5_2");
  // 2.30.7 rail/plane suffix.
  auto rail =
      ParseIbDevices("NET/IB : Using [0]mlx5_0:1:3/IB [1]mlx5_1:1::1/IB ; OOB ib0:10.0.0.1<0>");
  ASSERT_TRUE(rail);
  EXPECT_EQ((*rail)[0].port, 1);
  EXPECT_EQ((*rail)[1].link_layer, "IB");
  EXPECT_TRUE(IsIbNoDevice("NET/IB : No device found."));
  // The SHARP plugin's flag after the link layer (issue 14: it was read as the link layer).
  auto sharp = ParseIbDevices(
      "NET/IB : Using [0]mlx5_0:1/IB/SHARP [1]mlx5_1:1/RoCE [2]mlx5_2:1:3/IB/SHARP/X ; OOB "
      "ib0:10.0.0.1<0>");
  ASSERT_TRUE(sharp);
  ASSERT_EQ(sharp->size(), 3u);
  EXPECT_EQ((*sharp)[0].name, "mlx5_0");
  EXPECT_EQ((*sharp)[0].port, 1);
  EXPECT_EQ((*sharp)[0].link_layer, "IB");
  EXPECT_EQ((*sharp)[0].flags, "SHARP");
  EXPECT_EQ((*sharp)[1].link_layer, "RoCE");
  EXPECT_TRUE((*sharp)[1].flags.empty());
  EXPECT_EQ((*sharp)[2].link_layer, "IB");
  EXPECT_EQ((*sharp)[2].flags, "SHARP/X");
  EXPECT_FALSE(ParseIbDevices("NET/IB : Using [0]mlx5_0:1/ ; OOB ib0:10.0.0.1<0>"));
}

// Each WARN by what NCCL does after printing it (its source).
TEST(MessagesTest, WarnKinds) {
  EXPECT_EQ(ClassifyWarn("Could not find a path for pattern 4, falling back to simple order"),
            WarnKind::kBenign);
  EXPECT_EQ(ClassifyWarn("Could not find a path for pattern 4"), WarnKind::kFatal);  // 2.5
  EXPECT_EQ(ClassifyWarn("Failed to open libibverbs.so[.1]"), WarnKind::kBenign);
  EXPECT_EQ(ClassifyWarn("lib wrapper not initialized."), WarnKind::kBenign);
  EXPECT_EQ(ClassifyWarn("NET/IB : mlx5_0:1 Got async event : GID table change"),
            WarnKind::kBenign);
  EXPECT_EQ(ClassifyWarn("Cuda failure 'out of memory'"), WarnKind::kFatal);
  EXPECT_EQ(ClassifyWarn("Failed to initialize any NET plugin"), WarnKind::kFatal);
  EXPECT_EQ(ClassifyWarn("Error: network IB not found."), WarnKind::kFatal);
  EXPECT_EQ(ClassifyWarn("Bootstrap : no socket interface found"), WarnKind::kFatal);
  EXPECT_EQ(ClassifyWarn("Call to ibv_reg_mr failed with error Cannot allocate memory"),
            WarnKind::kFatal);
  EXPECT_EQ(ClassifyWarn("NCCL_WORK_FIFO_DEPTH=1000 is being ignored because it is not a power "
                         "of 2."),
            WarnKind::kUnknown);
  EXPECT_EQ(ClassifyWarn(""), WarnKind::kUnknown);
  EXPECT_STREQ(WarnKindName(WarnKind::kBenign), "benign");
}

TEST(MessagesTest, SocketDevicesAndFailures) {
  auto s = ParseSocketDevices("NET/Socket : Using [0]eth0:10.0.0.1<0> [1]eth1:10.0.1.1<0>");
  ASSERT_TRUE(s);
  EXPECT_EQ(*s, (std::vector<std::string>{"eth0:10.0.0.1", "eth1:10.0.1.1"}));
  EXPECT_FALSE(ParseSocketDevices("NET/Socket: Using 2 threads and 8 sockets per thread"));
  EXPECT_EQ(ParsePluginFailure("Failed to initialize NET plugin IB"), "IB");
  EXPECT_EQ(ParseOfiProvider("NET/OFI Selected provider is efa, fabric is efa-direct (found 16 "
                             "nics)"),
            "efa");
  EXPECT_EQ(ParseOfiProvider("NET/OFI Selected Provider is efa (found 16 nics)"), "efa");
}

TEST(MessagesTest, ChannelsAcrossVersions) {
  auto now = ParseChannel("Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA");
  ASSERT_TRUE(now);
  EXPECT_EQ(now->transport, "NET");
  EXPECT_EQ(now->net, "IB");
  EXPECT_TRUE(now->gdr);
  EXPECT_EQ(now->direction, "send");
  auto old = ParseChannel("Channel 01 : 2[c7000] -> 0[87000] [receive] via NET/IB/5/GDRDMA");
  ASSERT_TRUE(old);
  EXPECT_EQ(old->direction, "receive");
  auto ext = ParseChannel("Channel 06/0 : 36[4] -> 20[4] [send] via NET/IBext_v8/3");
  ASSERT_TRUE(ext);
  EXPECT_EQ(ext->net, "IBext_v8");
  EXPECT_FALSE(ext->gdr);
  auto aws = ParseChannel("Ring 00 : 7 -> 8 [send] via NET/AWS Libfabric/0");
  ASSERT_TRUE(aws);
  EXPECT_EQ(aws->net, "AWS Libfabric");
  auto pxn = ParseChannel("Channel 02/1 : 3[3] -> 11[3] [send] via NET/IB/1(2)/GDRDMA(PCI)/Shared");
  ASSERT_TRUE(pxn);
  EXPECT_TRUE(pxn->gdr);
  EXPECT_EQ(now->link, Link::kNet);
  EXPECT_EQ(aws->link, Link::kNet);
  EXPECT_EQ(ParseChannel("Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read")->link, Link::kIntraNode);
  EXPECT_EQ(ParseChannel("Channel 00 : 0[0] -> 1[1] via SHM/direct/direct")->link,
            Link::kIntraNode);
  EXPECT_EQ(ParseChannel("Channel 00/0 : 0[0] -> 1[0] via COLLNET/IB/0")->link, Link::kCollNet);
  EXPECT_EQ(ParseChannel("Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read")->transport, "P2P");
  EXPECT_EQ(ParseChannel("Channel 00 : 0[0] -> 1[1] via SHM/direct/direct")->transport, "SHM");
  EXPECT_EQ(ParseChannel("Channel 00 : 0[18000] -> 1[3b000] via direct shared memory")->transport,
            "SHM");
  EXPECT_FALSE(ParseChannel("Channel 00/32 :    0   1   2   3"));              // ring order listing
  EXPECT_FALSE(ParseChannel("Channel 00/0 : 0[0] 8[0] [send] via NET/IB/0"));  // no arrow
  EXPECT_FALSE(ParseChannel("Channel 00/0 : 0[0] -> 8[0] [send] viaNET/IB/0"));
  EXPECT_FALSE(ParseChannel("Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB"));  // no device
  EXPECT_EQ(ParseChannel("Channel 00/0 : 0[0] -> 8[0] [receive] via NET/Socket/1")->net, "Socket");
}

// The plain reading of a channel line's peers and transport, written with find: ParseChannel
// (its 32-byte bitmask path and its memchr path) must agree with it on every message.
std::optional<std::pair<std::string, std::string>> PlainChannel(std::string_view m) {
  size_t p;
  if (m.starts_with("Channel ")) {
    p = 8;
  } else if (m.starts_with("Ring ")) {
    p = 5;
  } else {
    return std::nullopt;
  }
  p = std::min(m.find(' ', p), m.size());
  if (m.substr(p, 3) != " : ") return std::nullopt;
  size_t peers = p + 3;
  size_t via = m.find(" via ", peers - 1);
  if (via == std::string_view::npos) return std::nullopt;
  ++via;
  size_t arrow = m.substr(0, via).find('>', peers);
  if (arrow == std::string_view::npos || arrow == peers || m[arrow - 1] != '-') return std::nullopt;
  std::string_view before = m.substr(peers, via - 1 - peers);
  std::string dir = before.ends_with("[send]") ? "send" : before.ends_with("[receive]") ? "receive" : "";
  return std::make_pair(dir, std::string(m.substr(via + 4)));
}

TEST(MessagesTest, ChannelPeersAgreeWithAPlainReading) {
  std::mt19937 rng(7);
  const char* bits[] = {"v",  "via ", " via ", ">",  "->", "-",  " ",      "[send]",
                        "[receive]", "0[0]", "123[7]", "x",  "vi", "ia ", "   ", "[0]"};
  const char* tails[] = {"NET/IB/0/GDRDMA", "P2P/IPC", "NET/Socket/1", "SHM/direct/direct", ""};
  int parsed = 0;
  for (int round = 0; round < 20000; ++round) {
    std::string m = rng() % 2 ? "Channel 00/0 : " : "Ring 00 : ";
    int n = static_cast<int>(rng() % 14);
    for (int i = 0; i < n; ++i) m += bits[rng() % (sizeof(bits) / sizeof(*bits))];
    if (rng() % 3) m += std::string(" via ") + tails[rng() % (sizeof(tails) / sizeof(*tails))];
    SCOPED_TRACE(m);
    auto plain = PlainChannel(m);
    auto got = ParseChannel(m);
    if (!plain || !got) {
      // ParseChannel may still refuse a NET path without a device; never the other way round.
      EXPECT_FALSE(got.has_value() && !plain.has_value());
      continue;
    }
    ++parsed;
    EXPECT_EQ(got->direction, plain->first);
    EXPECT_TRUE(std::string_view(plain->second).starts_with(got->transport));
  }
  EXPECT_GT(parsed, 2000);
}

TEST(MessagesTest, InitComplete) {
  auto modern = ParseInitComplete(
      "ncclCommInitRank comm 0x5e303a52bd70 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 57000 "
      "commId 0xadcb40d61cc1bc4b - Init COMPLETE");
  ASSERT_TRUE(modern);
  EXPECT_EQ(modern->rank, 0);
  EXPECT_EQ(modern->nranks, 2);
  EXPECT_EQ(modern->comm_id, "0xadcb40d61cc1bc4b");
  auto old = ParseInitComplete(
      "comm 0x7fe3d4001980 rank 3 nranks 16 cudaDev 3 nvmlDev 3 - Init "
      "COMPLETE");
  ASSERT_TRUE(old);
  EXPECT_EQ(old->rank, 3);
  EXPECT_TRUE(old->comm_id.empty());
  EXPECT_FALSE(ParseInitComplete("Init COMPLETE"));
}

// NCCL's layout read in one pass gives what the token-by-token reading gives: seeded random
// Init lines whose prefix, values and separators are sometimes odd (keys as values, other blanks,
// long numbers, high bytes), so that both the one-pass reading and its fallback are taken.
TEST(MessagesTest, InitCompleteLayoutMatchesTokens) {
  const std::vector<std::string> odd = {"rank", "nranks",     "cudaDev", "comm", "commId", "0x5e30",
                                        "7",    "1234567890", "-1",      " ",    "  ",     "\t",
                                        "\v",   "\r",         "\x80",    "\xff", "x",      "rankx",
                                        "Init", "COMPLETE",   ""};
  const std::vector<std::string> layout = {
      "comm", "0x5e303a52bd70", "rank",    "3",     "nranks", "16",     "cudaDev",
      "3",    "nvmlDev",        "3",       "busId", "18000",  "commId", "0xadcb40d61cc1bc4b",
      "-",    "Init",           "COMPLETE"};
  uint64_t state = 42;
  auto next = [&] {  // splitmix64: the same sequence on every run
    state += 0x9e3779b97f4a7c15ull;
    uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  int checked = 0;
  int plain = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string msg;
    size_t prefix = next() % 4;
    for (size_t k = 0; k < prefix; ++k) msg += odd[next() % odd.size()] + (next() % 2 ? " " : "");
    if (next() % 2) msg += "ncclCommInitRank ";
    bool perturbed = false;
    for (size_t k = 0; k < layout.size(); ++k) {
      bool perturb = next() % 12 == 0;
      perturbed = perturbed || perturb;
      msg += perturb ? odd[next() % odd.size()] : layout[k];
      if (k + 1 < layout.size()) msg += next() % 40 == 0 ? odd[next() % odd.size()] : " ";
    }
    if (i % 5 == 0) msg += " \t";
    plain += perturbed ? 0 : 1;
    auto fast = ParseInitComplete(msg);
    auto reference = internal::ParseInitCompleteTokens(msg);
    ASSERT_EQ(fast.has_value(), reference.has_value()) << msg;
    if (!fast) continue;
    ++checked;
    EXPECT_EQ(fast->rank, reference->rank) << msg;
    EXPECT_EQ(fast->nranks, reference->nranks) << msg;
    EXPECT_EQ(fast->cuda_dev, reference->cuda_dev) << msg;
    EXPECT_EQ(fast->comm, reference->comm) << msg;
    EXPECT_EQ(fast->comm_id, reference->comm_id) << msg;
  }
  EXPECT_GT(checked, 5000);
  EXPECT_GT(plain, 1000);
}

TEST(MessagesTest, EnvAndVersion) {
  auto ib = ParseEnvSetting("NCCL_IB_DISABLE set by environment to 1.");
  ASSERT_TRUE(ib);
  EXPECT_EQ(ib->name, "NCCL_IB_DISABLE");
  EXPECT_EQ(ib->value, "1");
  EXPECT_EQ(ParseEnvSetting("NCCL_SOCKET_IFNAME set by environment to eth0")->value, "eth0");
  EXPECT_EQ(ParseEnvSetting("NCCL_IB_HCA set to mlx5")->value, "mlx5");
  EXPECT_EQ(ParseEnvSetting("Comm config netName reset to NCCL_NET=Socket")->name, "NCCL_NET");
  EXPECT_FALSE(ParseEnvSetting("NCCL_IB_DISABLE is weird"));
  EXPECT_EQ(ParseVersion("NCCL version 2.18.3+cuda12.2"), "2.18.3");
  EXPECT_EQ(ParseVersion("NCCL version 2.4.8+cuda10.0"), "2.4.8");
  EXPECT_FALSE(ParseVersion("NCCL version unknown"));
}

}  // namespace
}  // namespace tocsin::nccl
