#include "net/netdev.h"

#include "base/strings.h"

namespace tocsin::net {
namespace {

constexpr const char* kClassDir = "/sys/class/net";

std::optional<int64_t> ReadInt(Env& env, const std::string& path, const char* field,
                               std::vector<ReadIssue>& issues) {
  auto text = ReadAttribute(env, path);
  if (!text.ok()) {
    // A missing file, or EINVAL from a driver that has no value (speed of a down link), is
    // "unknown", not a fault.
    return std::nullopt;
  }
  auto v = ParseInt64(*text);
  if (!v) {
    issues.push_back(
        {field, path, Status::ParseError(path + ": expected an integer, got " + Quote(*text))});
  }
  return v;
}

Netdev ReadNetdev(Env& env, const std::string& name) {
  Netdev dev;
  dev.name = name;
  std::string dir = std::string(kClassDir) + "/" + name;
  dev.operstate = ReadAttribute(env, dir + "/operstate").value_or("");
  dev.address = ReadAttribute(env, dir + "/address").value_or("");
  auto speed = ReadInt(env, dir + "/speed", "speed", dev.issues);
  if (speed && *speed >= 0) dev.speed_mbps = speed;
  dev.mtu = ReadInt(env, dir + "/mtu", "mtu", dev.issues);
  dev.type = ReadInt(env, dir + "/type", "type", dev.issues);
  for (auto [file, out] : {std::pair{"rx_bytes", &dev.rx_bytes}, {"tx_bytes", &dev.tx_bytes}}) {
    auto v = ReadInt(env, dir + "/statistics/" + file, file, dev.issues);
    if (v && *v >= 0) *out = static_cast<uint64_t>(*v);
  }
  auto real = env.RealPath(dir);
  if (real.ok()) dev.is_virtual = real->find("/devices/virtual/") != std::string::npos;
  if (!dev.is_virtual) {
    auto pci = ResolvePciDevice(env, dir + "/device");
    if (pci.ok()) {
      dev.pci = *pci;
    } else if (pci.status().code() == StatusCode::kParseError) {
      dev.issues.push_back({"device", dir + "/device", pci.status()});
    }
  }
  return dev;
}

}  // namespace

Scan ScanNetdevs(Env& env) {
  Scan scan;
  auto names = env.ListDir(kClassDir);
  if (!names.ok()) {
    scan.error = ReadIssue{"netdevs", kClassDir, names.status()};
    return scan;
  }
  for (const auto& n : *names) scan.netdevs.push_back(ReadNetdev(env, n));
  return scan;
}

nlohmann::json ToJson(const Scan& scan) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& d : scan.netdevs) {
    out.push_back({
        {"name", d.name},
        {"operstate", d.operstate},
        {"speed_mbps", d.speed_mbps ? nlohmann::json(*d.speed_mbps) : nullptr},
        {"mtu", d.mtu ? nlohmann::json(*d.mtu) : nullptr},
        {"rx_bytes", d.rx_bytes ? nlohmann::json(*d.rx_bytes) : nullptr},
        {"tx_bytes", d.tx_bytes ? nlohmann::json(*d.tx_bytes) : nullptr},
        {"address", d.address},
        {"type", d.type ? nlohmann::json(*d.type) : nullptr},
        {"virtual", d.is_virtual},
        {"pci_address", d.pci ? nlohmann::json(d.pci->address) : nullptr},
        {"numa_node", d.pci ? nlohmann::json(d.pci->numa_node) : nullptr},
        {"read_errors", ToJson(d.issues)},
    });
  }
  return out;
}

}  // namespace tocsin::net
