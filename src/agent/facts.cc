#include "agent/facts.h"

#include <algorithm>
#include <vector>

#include "base/strings.h"

namespace tocsin::agent {
namespace {

constexpr size_t kMaxString = 128;  // k8s::DecodeFabricFacts cuts longer strings

std::string Cut(std::string s) {
  if (s.size() > kMaxString) s.resize(kMaxString);
  return s;
}

// The netdev mlx5 derives a RoCE port's MTU from (mlx5_query_port_roce: the port's netdev, or
// its bond under RoCE LAG) is the one its lowest populated GID names (gid_attrs/ndevs: the
// default GID is the port netdev's link-local address; VLANs' GIDs come later); else the HCA's
// PCI function's first netdev (device/net/).
std::string RoceNetdev(const rdma::Device& d, const rdma::Port& p) {
  for (const auto& g : p.gids) {
    if (!g.ndev.empty()) return g.ndev;
  }
  return d.netdevs.empty() ? "" : d.netdevs.front();
}

std::string RoceMtu(const rdma::Device& d, const rdma::Port& p, Env& env) {
  std::string netdev = RoceNetdev(d, p);
  if (netdev.empty() || netdev.find('/') != std::string::npos) return "";
  auto text = ReadAttribute(env, "/sys/class/net/" + netdev + "/mtu");
  if (!text.ok()) return "";
  auto mtu = ParseInt64(*text);
  if (!mtu) return "";
  int active = RoceActiveMtu(*mtu);
  return active > 0 ? std::to_string(active) : "";
}

}  // namespace

int RoceActiveMtu(int64_t netdev_mtu) {
  // IB_GRH_BYTES 40 + IB_UDP_BYTES 8 + IB_BTH_BYTES 12 + IB_EXT_XRC_BYTES 4 +
  // IB_EXT_ATOMICETH_BYTES 28 + IB_ICRC_BYTES 4.
  int64_t payload = netdev_mtu - 96;
  for (int mtu : {4096, 2048, 1024, 512, 256}) {
    if (payload >= mtu) return mtu;
  }
  return 0;
}

k8s::FabricFacts CollectFabricFacts(const rdma::Scan& scan, Env& env) {
  k8s::FabricFacts facts;
  if (auto v = ReadAttribute(env, kMlx5VersionPath); v.ok()) facts.driver = Cut(*v);
  std::vector<const rdma::Device*> devices;
  for (const auto& d : scan.devices) devices.push_back(&d);
  std::sort(devices.begin(), devices.end(),
            [](const rdma::Device* a, const rdma::Device* b) { return a->name < b->name; });
  for (const rdma::Device* d : devices) {
    if (facts.hcas.size() >= k8s::kMaxFabricHcas) break;
    k8s::HcaFacts h;
    h.name = Cut(d->name);
    h.firmware = Cut(d->fw_ver);
    h.board_id = Cut(d->board_id);
    for (const auto& p : d->ports) {
      if (p.number != 1) continue;
      h.link_layer = Cut(p.link_layer);
      h.rate = Cut(p.rate_text);
      // The InfiniBand active MTU is negotiated with the switch port and shows in no sysfs file
      // (only a verbs port query reads it): left empty rather than guessed.
      if (p.link_layer == "Ethernet") h.mtu = RoceMtu(*d, p, env);
    }
    facts.hcas.push_back(std::move(h));
  }
  return facts;
}

}  // namespace tocsin::agent
