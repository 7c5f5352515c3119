// The `-o table` layout of a node inventory.
#include <fmt/format.h>

#include "node/node.h"
#include "storage/mounts.h"

namespace tocsin::node {
namespace {

std::string Numa(int n) { return n < 0 ? "-" : std::to_string(n); }

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
  return out.empty() ? "-" : out;
}

Table RdmaTable(const rdma::Scan& scan) {
  Table t{"RDMA PORTS",
          {"PORT", "STATE", "PHYS", "RATE", "LINK", "LID", "HCA", "FW", "PCI", "NUMA", "NETDEV",
           "ERRORS"},
          {},
          {}};
  for (const auto& d : scan.devices) {
    for (const auto& p : d.ports) {
      uint64_t errors = 0;
      for (const char* name : rdma::kErrorCounters) {
        auto it = p.counters.find(name);
        if (it != p.counters.end() && it->second.value) errors += *it->second.value;
      }
      t.rows.push_back(
          {d.name + "/" + std::to_string(p.number), p.state ? p.state->name : "?",
           p.phys_state ? p.phys_state->name : "?",
           p.rate ? fmt::format("{:g}G {}X {}", p.rate->gbps, p.rate->width, p.rate->speed) : "?",
           p.link_layer.empty() ? "?" : p.link_layer, p.lid ? fmt::format("{:#x}", *p.lid) : "-",
           d.hca_type.empty() ? "-" : d.hca_type, d.fw_ver.empty() ? "-" : d.fw_ver,
           d.pci ? d.pci->address : "?", d.pci ? Numa(d.pci->numa_node) : "?", Join(d.netdevs),
           std::to_string(errors)});
    }
  }
  if (!scan.present) t.notes.push_back("no /sys/class/infiniband: no RDMA driver is loaded here");
  return t;
}

Table NetTable(const net::Scan& scan) {
  Table t{"NETWORK INTERFACES", {"NAME", "STATE", "SPEED", "MTU", "PCI", "NUMA"}, {}, {}};
  for (const auto& n : scan.netdevs) {
    t.rows.push_back({n.name, n.operstate.empty() ? "?" : n.operstate,
                      n.speed_mbps ? fmt::format("{}Mb/s", *n.speed_mbps) : "-",
                      n.mtu ? std::to_string(*n.mtu) : "-",
                      n.pci ? n.pci->address : (n.is_virtual ? "virtual" : "-"),
                      n.pci ? Numa(n.pci->numa_node) : "-"});
  }
  return t;
}

Table GpuTable(const Inventory& inv) {
  Table t{"GPUS", {"PCI", "DEVICE", "MODEL", "NUMA", "NEAREST NIC", "PATH"}, {}, {}};
  for (const auto& g : inv.gpus.gpus) {
    std::string model = "-";
    auto it = inv.gpus.nvml.devices.find(g.pci_address);
    if (it != inv.gpus.nvml.devices.end() && !it->second.name.empty()) model = it->second.name;
    std::string nic = "-", path = "-";
    for (const auto& a : inv.affinity) {
      if (a.gpu == g.pci_address && !a.nic.empty()) {
        nic = a.nic;
        path = std::string(PciPathTypeName(a.path));
      }
    }
    t.rows.push_back(
        {g.pci_address, g.device_id, model, g.pci ? Numa(g.pci->numa_node) : "?", nic, path});
  }
  const auto& nvml = inv.gpus.nvml;
  std::string note = "NVML: " + nvml.status;
  if (!nvml.detail.empty()) note += " (" + nvml.detail + ")";
  if (!nvml.driver_version.empty()) note += ", driver " + nvml.driver_version;
  t.notes.push_back(note);
  return t;
}

Table StorageTable(const storage::Scan& scan) {
  Table t{"SHARED FILESYSTEMS", {"MOUNT", "TYPE", "SOURCE"}, {}, {}};
  for (const auto& m : scan.mounts.mounts) {
    if (storage::IsSharedMount(m)) t.rows.push_back({m.mount_point, m.fstype, m.source});
  }
  t.notes.push_back(
      fmt::format("{} mounts read from {}", scan.mounts.mounts.size(), scan.mounts_path));
  return t;
}

Table LustreTable(const storage::Scan& scan) {
  Table t{"LUSTRE IMPORTS", {"DEVICE", "TARGET", "STATE", "CONNECTION"}, {}, {}};
  for (const auto& d : scan.lustre_devices) {
    t.rows.push_back(
        {d.name, d.import ? d.import->target : "?", d.import ? d.import->state : "?",
         d.import && !d.import->current_connection.empty() ? d.import->current_connection : "-"});
  }
  return t;
}

}  // namespace

std::vector<Table> InventoryTables(const Inventory& inv) {
  std::vector<Table> tables = {RdmaTable(inv.rdma), NetTable(inv.net), GpuTable(inv),
                               StorageTable(inv.storage)};
  if (!inv.storage.lustre_devices.empty()) tables.push_back(LustreTable(inv.storage));
  return tables;
}

}  // namespace tocsin::node
