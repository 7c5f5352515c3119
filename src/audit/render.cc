// The audit's JSON inventory and tables.
#include <fmt/format.h>

#include <map>

#include "audit/checks.h"

namespace tocsin::audit {

nlohmann::json Inventory(const k8s::Snapshot& snap, const Options& opt) {
  int fabric = 0;
  for (const auto& n : snap.nodes) fabric += IsFabricNode(n, opt) ? 1 : 0;
  nlohmann::json plugins = nlohmann::json::array();
  for (const auto& ds : snap.daemonsets) {
    if (!IsDevicePlugin(ds, opt)) continue;
    plugins.push_back({{"daemonset", ds.ns + "/" + ds.name},
                       {"images", ds.images},
                       {"node_selector", ds.node_selector},
                       {"desired", ds.desired},
                       {"ready", ds.ready}});
  }
  return {{"sources", snap.sources},
          {"now", FormatRfc3339(opt.now)},
          {"nodes", snap.nodes.size()},
          {"fabric_nodes", fabric},
          {"pods", snap.pods.size()},
          {"daemonsets", snap.daemonsets.size()},
          {"device_plugins", plugins},
          {"other_kinds", snap.other_kinds},
          {"plugin_config",
           {{"rdma_resources", opt.plugin_config.rdma_resources},
            {"sources", opt.plugin_config.sources},
            {"errors", opt.plugin_config.errors}}}};
}

std::vector<Table> Tables(const k8s::Snapshot& snap, const Options& opt) {
  Table nodes{"FABRIC NODES", {"NODE", "READY", "RDMA RESOURCES"}, {}, {}};
  for (const auto& n : snap.nodes) {
    if (!IsFabricNode(n, opt)) continue;
    const k8s::Condition* ready = n.FindCondition("Ready");
    std::string rdma;
    for (const auto& [name, qty] : n.allocatable) {
      if (IsRdmaResource(name, opt)) rdma += (rdma.empty() ? "" : " ") + name + "=" + qty;
    }
    nodes.rows.push_back({n.name, ready ? ready->status : "?", rdma.empty() ? "-" : rdma});
  }
  Table plugins{"RDMA DEVICE PLUGINS", {"DAEMONSET", "DESIRED", "READY", "NODE SELECTOR"}, {}, {}};
  for (const auto& ds : snap.daemonsets) {
    if (!IsDevicePlugin(ds, opt)) continue;
    std::string sel;
    for (const auto& [k, v] : ds.node_selector) sel += (sel.empty() ? "" : ",") + k + "=" + v;
    plugins.rows.push_back({ds.ns + "/" + ds.name, std::to_string(ds.desired),
                            std::to_string(ds.ready), sel.empty() ? "-" : sel});
  }
  return {nodes, plugins};
}

Table SummaryTable(const std::vector<Finding>& findings) {
  std::map<std::string, std::pair<int, Severity>> by_check;
  for (const auto& f : findings) {
    auto& [count, worst] = by_check.try_emplace(f.check, 0, f.severity).first->second;
    ++count;
    worst = std::max(worst, f.severity);
  }
  Table t{"SUMMARY", {"CHECK", "FINDINGS", "WORST"}, {}, {}};
  for (const auto& [check, cw] : by_check) {
    t.rows.push_back({check, std::to_string(cw.first), std::string(SeverityName(cw.second))});
  }
  return t;
}

}  // namespace tocsin::audit
