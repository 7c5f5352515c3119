#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "rdma/sysfs_parse.h"
#include "sys/env.h"
#include "sys/pci.h"
#include "sys/read_issue.h"

namespace tocsin::rdma {

inline constexpr const char* kClassDir = "/sys/class/infiniband";

// The error counters that rdma.port.errors watches.
inline constexpr const char* kErrorCounters[] = {
    "symbol_error",
    "link_downed",
    "port_rcv_errors",
    "port_xmit_discards",
    "local_link_integrity_errors",
    "excessive_buffer_overrun_errors",
};

struct Gid {
  int index = 0;
  std::string gid;
  std::string type;  // "IB/RoCE v1", "RoCE v2"; empty when not readable
  std::string ndev;  // RoCE netdev; empty for IB
};

struct Port {
  int number = 0;
  std::optional<CodedState> state;
  std::optional<CodedState> phys_state;
  std::optional<LinkRate> rate;
  std::string rate_text;   // the rate file as read ("400 Gb/sec (4X NDR)"); empty when unreadable
  std::string link_layer;  // "InfiniBand", "Ethernet", "Unknown"; empty when unreadable
  std::optional<uint64_t> lid;
  std::vector<Gid> gids;  // populated (non-zero) GIDs only
  std::map<std::string, CounterValue> counters;
  std::vector<ReadIssue> issues;

  bool active() const { return state && state->code == kPortActive; }
  // Data counters count octets / 4; nullopt when unknown.
  std::optional<uint64_t> xmit_bytes() const;
  std::optional<uint64_t> rcv_bytes() const;
};

struct Device {
  std::string name;
  std::string hca_type, fw_ver, node_guid, board_id, node_type;
  std::optional<PciLocation> pci;
  std::vector<std::string> netdevs;
  std::vector<Port> ports;
  std::vector<ReadIssue> issues;
};

struct Scan {
  bool present = false;  // /sys/class/infiniband exists (an RDMA core is loaded)
  std::vector<Device> devices;
  std::optional<ReadIssue> error;  // the class directory exists but could not be listed
};

// Reads every device and port under /sys/class/infiniband. Never fails as a whole: what cannot
// be read lands in `issues`.
Scan ScanDevices(Env& env);

nlohmann::json ToJson(const Scan& scan);

}  // namespace tocsin::rdma
