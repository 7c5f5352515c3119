#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/finding.h"
#include "base/report.h"
#include "k8s/objects.h"

namespace tocsin::audit {

// RDMA resource names read from the device plugins' ConfigMaps (plugin_config.h).
struct PluginConfig {
  std::vector<std::string> rdma_resources;  // sorted, unique
  // Each RDMA pool's own fields but its name and prefix (selectors, rdmaHcaMax, ...), as compact
  // JSON with sorted keys, by resource name (the first document that declares it wins).
  std::map<std::string, std::string> pools;
  std::vector<std::string> sources;  // "NS/CONFIGMAP KEY" documents read
  std::vector<std::string> errors;   // documents that are not JSON objects
};

struct Options {
  TimePoint now;                            // --now, or the clock
  std::vector<std::string> device_plugins;  // --device-plugin NS/NAME
  k8s::StringMap fabric_selector;           // --fabric-nodes k=v,k2=v2 ("k" alone: has label)
  std::vector<std::string> rdma_resources;  // --rdma-resource NAME
  std::string fabric_network;  // --fabric-network NAME (Multus attachment of the fabric)
  std::string topology_label;  // --topology-label (default: GKE, NVIDIA, AWS, zone labels)
  PluginConfig plugin_config;  // WithPluginConfig (plugin_config.h)
  bool ipc_lock_needed = true;  // false: --ipc-lock-not-needed (the platform locks memory itself)
};

// The Node Feature Discovery labels that mark a fabric node (any of them "true").
std::vector<std::string> FabricNodeLabels();

// Fabric nodes: --fabric-nodes, else Node Feature Discovery's Mellanox PCI / RDMA labels.
bool IsFabricNode(const k8s::Node& node, const Options& options);
// RDMA device-plugin DaemonSets: --device-plugin, else recognised by name or image (Mellanox
// k8s-rdma-shared-dev-plugin, SR-IOV network device plugin, AWS EFA device plugin).
bool IsDevicePlugin(const k8s::DaemonSet& ds, const Options& options);
// RDMA extended resources: rdma/*, vpc.amazonaws.com/efa, nvidia.com/* RDMA/hostdev pools,
// --rdma-resource, or a pool the device plugins' config declares (plugin_config).
bool IsRdmaResource(const std::string& name, const Options& options);

// daemonset.not-ready, daemonset.coverage, node.rdma.unadvertised, pod.crashloop, node.not-ready,
// the job.* checks (jobs.h) and what the input did not let them see (coverage.h), in
// FindingOrder::kBySubject.
std::vector<Finding> Run(const k8s::Snapshot& snapshot, const Options& options);
// Every check id Run can report (public API; `tocsin controller` exports a status for each).
const std::vector<std::string>& CheckIds();

nlohmann::json Inventory(const k8s::Snapshot& snapshot, const Options& options);
std::vector<Table> Tables(const k8s::Snapshot& snapshot, const Options& options);
// One row per check id with its count and worst severity (--summary).
Table SummaryTable(const std::vector<Finding>& findings);

// The label that names a node's topology block: `configured` (--topology-label) when given, else
// the first well-known one (GKE's block, NVIDIA's, AWS's network layer 1, the zone) that every
// one of `nodes` carries (a null entry is a node not known: none then); "" when none fits.
std::string TopologyLabel(const std::vector<const k8s::Node*>& nodes,
                          const std::string& configured);

// The topology label of the cluster's fabric nodes (TopologyLabel over them); "" without any.
std::string ClusterTopologyLabel(const k8s::Snapshot& snapshot, const Options& options);

// "k=v,k2=v2" or "k" (label present) -> map; an error names the bad term.
Result<k8s::StringMap> ParseSelector(const std::string& text);

}  // namespace tocsin::audit
