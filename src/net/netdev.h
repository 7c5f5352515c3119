#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sys/env.h"
#include "sys/pci.h"
#include "sys/read_issue.h"

namespace tocsin::net {

// One entry of /sys/class/net.
struct Netdev {
  std::string name;
  std::string operstate;              // "up", "down", "unknown", ...
  std::optional<int64_t> speed_mbps;  // nullopt when the driver does not know (-1 or EINVAL)
  std::optional<int64_t> mtu;
  std::string address;
  std::optional<int64_t> type;  // ARPHRD_*: 1 Ethernet, 32 InfiniBand, 772 loopback
  bool is_virtual = false;      // under /sys/devices/virtual (lo, bridges, veth, ...)
  std::optional<PciLocation> pci;
  // statistics/rx_bytes and tx_bytes (sysfs-class-net-statistics, "%llu"); nullopt when absent.
  std::optional<uint64_t> rx_bytes, tx_bytes;
  std::vector<ReadIssue> issues;

  bool is_ethernet() const { return type && *type == 1; }  // ARPHRD_ETHER
};

struct Scan {
  std::vector<Netdev> netdevs;
  std::optional<ReadIssue> error;
};

Scan ScanNetdevs(Env& env);
nlohmann::json ToJson(const Scan& scan);

}  // namespace tocsin::net
