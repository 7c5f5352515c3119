// RDMA resource names declared by the device plugins' own ConfigMaps.
#include "audit/plugin_config.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "base/strings.h"

namespace tocsin::audit {
namespace {

// The SR-IOV network device plugin's --resource-prefix (default "intel.com"); the shared RDMA
// plugin's prefix is per resource (default "rdma").
constexpr const char* kSriovDefaultPrefix = "intel.com";
constexpr const char* kSharedDefaultPrefix = "rdma";

std::string ResourcePrefixFlag(const k8s::DaemonSet& ds) {
  constexpr std::string_view kFlag = "-resource-prefix";
  std::vector<std::string_view> tokens;
  for (const auto& arg : ds.args) {
    for (auto t : SplitWhitespace(arg)) tokens.push_back(t);
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    std::string_view t = tokens[i];
    while (!t.empty() && t.front() == '-') t.remove_prefix(1);
    if (t.substr(0, kFlag.size() - 1) != kFlag.substr(1)) continue;
    std::string_view rest = t.substr(kFlag.size() - 1);
    if (!rest.empty() && rest.front() == '=') return std::string(rest.substr(1));
    if (rest.empty() && i + 1 < tokens.size()) return std::string(tokens[i + 1]);
  }
  return kSriovDefaultPrefix;
}

bool True(const nlohmann::json& obj, const char* key) {
  return obj.is_object() && obj.contains(key) && obj[key].is_boolean() && obj[key].get<bool>();
}

// isRdma on the pool (older releases) or in its selectors (an object or a list of objects).
bool PoolIsRdma(const nlohmann::json& pool) {
  if (True(pool, "isRdma")) return true;
  if (!pool.contains("selectors")) return false;
  const auto& sel = pool["selectors"];
  if (sel.is_object()) return True(sel, "isRdma");
  if (sel.is_array()) {
    return std::any_of(sel.begin(), sel.end(), [](const auto& s) { return True(s, "isRdma"); });
  }
  return false;
}

std::string Str(const nlohmann::json& obj, const char* key) {
  return obj.contains(key) && obj[key].is_string() ? obj[key].get<std::string>() : "";
}

void AddPool(const nlohmann::json& pool, const std::string& resource, PluginConfig& out) {
  out.rdma_resources.push_back(resource);
  nlohmann::json rest = pool;  // nlohmann::json keeps object keys sorted: dump() is canonical
  rest.erase("resourceName");
  rest.erase("resourcePrefix");
  out.pools.emplace(resource, rest.dump());
}

// One config document: "resourceList" (SR-IOV plugin, pools with isRdma) or "configList" (the
// shared RDMA plugin, every pool is RDMA).
void ReadConfig(const nlohmann::json& doc, const std::string& sriov_prefix, PluginConfig& out) {
  if (doc.contains("resourceList") && doc["resourceList"].is_array()) {
    for (const auto& pool : doc["resourceList"]) {
      std::string name = Str(pool, "resourceName");
      if (name.empty() || !PoolIsRdma(pool)) continue;
      std::string prefix = Str(pool, "resourcePrefix");
      AddPool(pool, (prefix.empty() ? sriov_prefix : prefix) + "/" + name, out);
    }
  }
  if (doc.contains("configList") && doc["configList"].is_array()) {
    for (const auto& pool : doc["configList"]) {
      std::string name = Str(pool, "resourceName");
      if (name.empty()) continue;
      std::string prefix = Str(pool, "resourcePrefix");
      AddPool(pool, (prefix.empty() ? kSharedDefaultPrefix : prefix) + "/" + name, out);
    }
  }
}

}  // namespace

PluginConfig ReadPluginConfig(const k8s::Snapshot& snap, const Options& opt) {
  PluginConfig out;
  for (const auto& ds : snap.daemonsets) {
    if (!IsDevicePlugin(ds, opt)) continue;
    std::string prefix = ResourcePrefixFlag(ds);
    for (const auto& cm_name : ds.config_maps) {
      for (const auto& cm : snap.configmaps) {
        if (cm.ns != ds.ns || cm.name != cm_name) continue;
        for (const auto& [key, text] : cm.data) {
          std::string where = cm.ns + "/" + cm.name + " " + key;
          auto doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
          if (doc.is_discarded() || !doc.is_object()) {
            out.errors.push_back(where + ": not a JSON object");
            continue;
          }
          out.sources.push_back(where);
          ReadConfig(doc, prefix, out);
        }
      }
    }
  }
  // The network operator's NicClusterPolicy holds the same documents (docs/FORMATS.md, "Fabric
  // configuration"): read when the snapshot has one.
  for (const auto& policy : snap.nic_policies) {
    for (const auto& c : policy.components) {
      if (c.config.empty()) continue;
      std::string where = "NicClusterPolicy " + policy.name + " " + c.name;
      auto doc = nlohmann::json::parse(c.config, nullptr, /*allow_exceptions=*/false);
      if (doc.is_discarded() || !doc.is_object()) {
        out.errors.push_back(where + ": not a JSON object");
        continue;
      }
      out.sources.push_back(where);
      ReadConfig(doc, kSriovDefaultPrefix, out);
    }
  }
  out.errors.insert(out.errors.end(), snap.load_errors.begin(), snap.load_errors.end());
  std::sort(out.rdma_resources.begin(), out.rdma_resources.end());
  out.rdma_resources.erase(std::unique(out.rdma_resources.begin(), out.rdma_resources.end()),
                           out.rdma_resources.end());
  return out;
}

Options WithPluginConfig(const k8s::Snapshot& snap, Options options) {
  options.plugin_config = ReadPluginConfig(snap, options);
  return options;
}

}  // namespace tocsin::audit
