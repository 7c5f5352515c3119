#include "rdma/inventory.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/strings.h"

namespace tocsin::rdma {
namespace {

// Counter files under ports/<p>/counters that the inventory reads (missing ones are skipped:
// the set depends on the device and the kernel).
constexpr const char* kCounters[] = {
    "symbol_error",
    "link_error_recovery",
    "link_downed",
    "port_rcv_errors",
    "port_rcv_remote_physical_errors",
    "port_rcv_switch_relay_errors",
    "port_xmit_discards",
    "port_xmit_constraint_errors",
    "port_rcv_constraint_errors",
    "local_link_integrity_errors",
    "excessive_buffer_overrun_errors",
    "VL15_dropped",
    "port_xmit_data",
    "port_rcv_data",
    "port_xmit_packets",
    "port_rcv_packets",
    "port_xmit_wait",
};

template <typename T, typename Parser>
std::optional<T> ReadParsed(Env& env, const std::string& path, const char* field,
                            std::vector<ReadIssue>& issues, Parser parse) {
  auto text = ReadAttribute(env, path);
  if (!text.ok()) {
    issues.push_back({field, path, text.status()});
    return std::nullopt;
  }
  Result<T> parsed = parse(*text);
  if (!parsed.ok()) {
    issues.push_back({field, path, parsed.status().WithPrefix(path)});
    return std::nullopt;
  }
  return std::move(parsed).value();
}

// Optional string attribute: missing is fine (not every driver has hca_type/board_id).
std::string ReadOptional(Env& env, const std::string& path) {
  return ReadAttribute(env, path).value_or("");
}

void ReadGids(Env& env, const std::string& port_dir, Port& port) {
  auto names = env.ListDir(port_dir + "/gids");
  if (!names.ok()) {
    if (names.status().code() != StatusCode::kNotFound) {
      port.issues.push_back({"gids", port_dir + "/gids", names.status()});
    }
    return;
  }
  for (const auto& name : *names) {
    auto index = ParseInt64(name);
    if (!index) continue;
    std::string path = port_dir + "/gids/" + name;
    auto text = ReadAttribute(env, path);
    // An unpopulated RoCE GID slot may fail to read; that is not a fault.
    if (!text.ok()) continue;
    auto gid = ParseGid(*text);
    if (!gid.ok()) {
      port.issues.push_back({"gids/" + name, path, gid.status().WithPrefix(path)});
      continue;
    }
    if (IsZeroGid(*gid)) continue;
    Gid g;
    g.index = static_cast<int>(*index);
    g.gid = *gid;
    g.type = ReadOptional(env, port_dir + "/gid_attrs/types/" + name);
    g.ndev = ReadOptional(env, port_dir + "/gid_attrs/ndevs/" + name);
    port.gids.push_back(std::move(g));
  }
  std::sort(port.gids.begin(), port.gids.end(),
            [](const Gid& a, const Gid& b) { return a.index < b.index; });
}

void ReadCounters(Env& env, const std::string& port_dir, Port& port) {
  std::string dir = port_dir + "/counters";
  if (!env.IsDirectory(dir)) return;
  for (const char* name : kCounters) {
    std::string path = dir + "/" + name;
    auto text = ReadAttribute(env, path);
    if (!text.ok()) {
      if (text.status().code() != StatusCode::kNotFound) {
        port.issues.push_back({std::string("counters/") + name, path, text.status()});
      }
      continue;
    }
    auto value = ParseCounter(name, *text);
    if (!value.ok()) {
      port.issues.push_back(
          {std::string("counters/") + name, path, value.status().WithPrefix(path)});
      continue;
    }
    port.counters[name] = *value;
  }
}

Port ReadPort(Env& env, const std::string& dev_dir, const std::string& name, int number) {
  Port port;
  port.number = number;
  std::string dir = dev_dir + "/ports/" + name;
  port.state = ReadParsed<CodedState>(env, dir + "/state", "state", port.issues, ParseCodedState);
  port.phys_state =
      ReadParsed<CodedState>(env, dir + "/phys_state", "phys_state", port.issues, ParseCodedState);
  port.rate =
      ReadParsed<LinkRate>(env, dir + "/rate", "rate", port.issues, [&port](std::string_view text) {
        port.rate_text = std::string(text);
        return ParseRate(text);
      });
  auto ll = ReadAttribute(env, dir + "/link_layer");
  if (ll.ok()) {
    port.link_layer = *ll;
  } else {
    port.issues.push_back({"link_layer", dir + "/link_layer", ll.status()});
  }
  auto lid = ReadAttribute(env, dir + "/lid");
  if (lid.ok()) {
    auto v = ParseHex(*lid);
    if (v) {
      port.lid = *v;
    } else {
      port.issues.push_back(
          {"lid", dir + "/lid",
           Status::ParseError(dir + "/lid: expected 0x<hex>, got " + Quote(*lid))});
    }
  }
  ReadGids(env, dir, port);
  ReadCounters(env, dir, port);
  return port;
}

Device ReadDevice(Env& env, const std::string& name) {
  Device dev;
  dev.name = name;
  std::string dir = std::string(kClassDir) + "/" + name;
  dev.hca_type = ReadOptional(env, dir + "/hca_type");
  dev.fw_ver = ReadOptional(env, dir + "/fw_ver");
  dev.board_id = ReadOptional(env, dir + "/board_id");
  auto guid = ReadAttribute(env, dir + "/node_guid");
  if (guid.ok()) {
    auto parsed = ParseGuid(*guid);
    if (parsed.ok()) {
      dev.node_guid = *parsed;
    } else {
      dev.issues.push_back({"node_guid", dir + "/node_guid", parsed.status()});
    }
  }
  auto node_type = ReadAttribute(env, dir + "/node_type");
  if (node_type.ok()) dev.node_type = *node_type;

  auto pci = ResolvePciDevice(env, dir + "/device");
  if (pci.ok()) {
    dev.pci = *pci;
    auto nets = env.ListDir(dir + "/device/net");
    if (nets.ok()) dev.netdevs = *nets;
  } else {
    dev.issues.push_back({"device", dir + "/device", pci.status()});
  }

  auto ports = env.ListDir(dir + "/ports");
  if (!ports.ok()) {
    dev.issues.push_back({"ports", dir + "/ports", ports.status()});
    return dev;
  }
  for (const auto& p : *ports) {
    auto number = ParseInt64(p);
    if (!number || *number <= 0) continue;
    dev.ports.push_back(ReadPort(env, dir, p, static_cast<int>(*number)));
  }
  std::sort(dev.ports.begin(), dev.ports.end(),
            [](const Port& a, const Port& b) { return a.number < b.number; });
  return dev;
}

nlohmann::json CounterJson(const CounterValue& v) {
  if (!v.value) return "N/A (no PMA)";
  if (v.saturated) return {{"at_least", *v.value}};
  return *v.value;
}

nlohmann::json OptionalState(const std::optional<CodedState>& s) {
  if (!s) return nullptr;
  return std::to_string(s->code) + ": " + s->name;
}

}  // namespace

std::optional<uint64_t> Port::xmit_bytes() const {
  auto it = counters.find("port_xmit_data");
  if (it == counters.end() || !it->second.value) return std::nullopt;
  return *it->second.value * 4;
}

std::optional<uint64_t> Port::rcv_bytes() const {
  auto it = counters.find("port_rcv_data");
  if (it == counters.end() || !it->second.value) return std::nullopt;
  return *it->second.value * 4;
}

Scan ScanDevices(Env& env) {
  Scan scan;
  auto names = env.ListDir(kClassDir);
  if (!names.ok()) {
    if (names.status().code() != StatusCode::kNotFound) {
      scan.present = true;
      scan.error = ReadIssue{"devices", kClassDir, names.status()};
    }
    return scan;
  }
  scan.present = true;
  for (const auto& name : *names) scan.devices.push_back(ReadDevice(env, name));
  return scan;
}

nlohmann::json ToJson(const Scan& scan) {
  nlohmann::json devices = nlohmann::json::array();
  for (const auto& d : scan.devices) {
    nlohmann::json ports = nlohmann::json::array();
    for (const auto& p : d.ports) {
      nlohmann::json gids = nlohmann::json::array();
      for (const auto& g : p.gids) {
        gids.push_back({{"index", g.index}, {"gid", g.gid}, {"type", g.type}, {"ndev", g.ndev}});
      }
      nlohmann::json counters = nlohmann::json::object();
      for (const auto& [name, v] : p.counters) counters[name] = CounterJson(v);
      nlohmann::json port = {
          {"port", p.number},
          {"state", OptionalState(p.state)},
          {"phys_state", OptionalState(p.phys_state)},
          {"rate_gbps", p.rate ? nlohmann::json(p.rate->gbps) : nullptr},
          {"width", p.rate && p.rate->width ? nlohmann::json(p.rate->width) : nullptr},
          {"speed", p.rate && !p.rate->speed.empty() ? nlohmann::json(p.rate->speed) : nullptr},
          {"link_layer",
           p.link_layer.empty() ? nlohmann::json(nullptr) : nlohmann::json(p.link_layer)},
          {"lid", p.lid ? nlohmann::json(fmt::format("{:#x}", *p.lid)) : nullptr},
          {"gids", gids},
          {"counters", counters},
          {"xmit_bytes", p.xmit_bytes() ? nlohmann::json(*p.xmit_bytes()) : nullptr},
          {"rcv_bytes", p.rcv_bytes() ? nlohmann::json(*p.rcv_bytes()) : nullptr},
          {"read_errors", ToJson(p.issues)},
      };
      ports.push_back(std::move(port));
    }
    devices.push_back({
        {"name", d.name},
        {"hca_type", d.hca_type},
        {"fw_ver", d.fw_ver},
        {"node_guid", d.node_guid},
        {"board_id", d.board_id},
        {"node_type", d.node_type},
        {"pci_address", d.pci ? nlohmann::json(d.pci->address) : nullptr},
        {"numa_node", d.pci ? nlohmann::json(d.pci->numa_node) : nullptr},
        {"pcie_path", d.pci ? nlohmann::json(d.pci->path) : nullptr},
        {"netdevs", d.netdevs},
        {"ports", ports},
        {"read_errors", ToJson(d.issues)},
    });
  }
  nlohmann::json out = {{"present", scan.present}, {"devices", devices}};
  if (scan.error) out["read_errors"] = ToJson(std::vector<ReadIssue>{*scan.error});
  return out;
}

}  // namespace tocsin::rdma
