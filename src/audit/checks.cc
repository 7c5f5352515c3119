#include "audit/checks.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "audit/catalog.h"
#include "audit/coverage.h"
#include "audit/jobs.h"
#include "base/strings.h"

namespace tocsin::audit {
namespace {

using k8s::DaemonSet;
using k8s::Node;
using k8s::Pod;

constexpr int64_t kDay = 86400;
// A pod whose Ready condition last changed this close to its creation has never been ready:
// that transition is the one the kubelet records when it starts the pod.
constexpr int64_t kNeverReadySlack = 120;

constexpr const char* kFabricLabels[] = {
    "feature.node.kubernetes.io/pci-15b3.present",
    "feature.node.kubernetes.io/rdma.available",
    "feature.node.kubernetes.io/rdma.capable",
};

constexpr const char* kPluginNames[] = {
    "k8s-rdma-shared-dev-plugin",  "rdma-shared-dev-plugin",
    "rdma-shared-device-plugin",   "rdma-shared-dp",
    "sriov-network-device-plugin", "sriov-device-plugin",
    "aws-efa-k8s-device-plugin",   "efa-k8s-device-plugin",
};

int64_t Seconds(TimePoint a, TimePoint b) {
  return std::chrono::duration_cast<std::chrono::seconds>(a - b).count();
}

std::string Days(int64_t seconds) {
  if (seconds >= kDay) return fmt::format("{} days", seconds / kDay);
  if (seconds >= 3600) return fmt::format("{} hours", seconds / 3600);
  return fmt::format("{} minutes", std::max<int64_t>(seconds / 60, 0));
}

bool Owns(const DaemonSet& ds, const Pod& p) {
  for (const auto& o : p.owners) {
    if (o.kind != "DaemonSet") continue;
    if (!o.uid.empty() && !ds.uid.empty()) {
      if (o.uid == ds.uid) return true;
    } else if (o.name == ds.name && p.ns == ds.ns) {
      return true;
    }
  }
  return false;
}

bool SelectorMatches(const k8s::StringMap& selector, const k8s::StringMap& labels,
                     std::string* mismatch) {
  for (const auto& [k, v] : selector) {
    auto it = labels.find(k);
    if (it == labels.end() || (!v.empty() && it->second != v)) {
      if (mismatch) *mismatch = v.empty() ? k : k + "=" + v;
      return false;
    }
  }
  return true;
}

// When a not-ready pod stopped being ready (its Ready transition), or its creation.
std::optional<TimePoint> NotReadySince(const Pod& p) {
  const k8s::Condition* ready = p.FindCondition("Ready");
  if (ready && ready->last_transition) return ready->last_transition;
  return p.created;
}

bool NeverReady(const Pod& p) {
  if (p.IsReady()) return false;
  const k8s::Condition* ready = p.FindCondition("Ready");
  if (!ready || !ready->last_transition || !p.created) return true;
  return Seconds(*ready->last_transition, *p.created) <= kNeverReadySlack;
}

std::optional<TimePoint> Earliest(std::optional<TimePoint> a, std::optional<TimePoint> b) {
  if (!a) return b;
  if (!b) return a;
  return std::min(*a, *b);
}

std::string PodRef(const Pod& p) { return p.ns + "/" + p.name; }

void CheckDaemonSets(const k8s::Snapshot& snap, const Options& opt, std::vector<Finding>& out,
                     std::set<std::string>& reported) {
  for (const auto& ds : snap.daemonsets) {
    if (ds.desired <= 0 || ds.ready >= ds.desired) continue;
    std::vector<const Pod*> pods, not_ready;
    for (const auto& p : snap.pods) {
      if (!Owns(ds, p)) continue;
      pods.push_back(&p);
      if (!p.IsReady()) not_ready.push_back(&p);
    }
    std::optional<TimePoint> since;
    bool never = !pods.empty();
    std::set<std::string> reasons, images;
    int64_t max_restarts = 0;
    nlohmann::json pod_evidence = nlohmann::json::array();
    for (const Pod* p : pods) never = never && NeverReady(*p);
    for (const Pod* p : not_ready) {
      since = Earliest(since, NotReadySince(*p));
      nlohmann::json containers = nlohmann::json::array();
      for (const auto& s : p->statuses) {
        if (!s.waiting_reason.empty()) reasons.insert(s.waiting_reason);
        if (!s.image.empty()) images.insert(s.image);
        max_restarts = std::max(max_restarts, s.restart_count);
        containers.push_back(
            {{"name", s.name},
             {"waiting_reason", s.waiting_reason},
             {"restart_count", s.restart_count},
             {"last_exit_code", s.last_exit_code ? nlohmann::json(*s.last_exit_code) : nullptr}});
      }
      if (pod_evidence.size() < 20) {
        pod_evidence.push_back(
            {{"pod", PodRef(*p)}, {"node", p->node_name}, {"containers", containers}});
      }
    }
    if (images.empty()) images.insert(ds.images.begin(), ds.images.end());
    int64_t missing = ds.desired - ds.ready;
    double share = static_cast<double>(missing) / static_cast<double>(ds.desired);
    int64_t age = since ? Seconds(opt.now, *since) : 0;
    Finding f;
    f.check = kDaemonSetNotReady;
    f.subject = ds.ns + "/" + ds.name;
    f.since = since;
    if (share >= 0.5 && age >= kDay) {
      f.severity = Severity::kCritical;
    } else if (share >= 0.5 || age >= 3600) {
      f.severity = Severity::kError;
    } else {
      f.severity = Severity::kWarning;
    }
    std::string state =
        never ? fmt::format("never became ready ({})", Days(age))
              : (since ? fmt::format("not fully ready for {}", Days(age)) : "not fully ready");
    std::string why;
    if (!reasons.empty()) why += "; pods waiting: " + Join({reasons.begin(), reasons.end()}, ", ");
    if (max_restarts > 0) {
      why += fmt::format("; restart counts up to {} (they grow with back-off and hide the age)",
                         max_restarts);
    }
    f.message = fmt::format("{} of {} pods ready (missing on {:.0f}% of its nodes): {}{}; image {}",
                            ds.ready, ds.desired, share * 100, state, why,
                            Join({images.begin(), images.end()}, ", "));
    f.evidence = {{"desired", ds.desired},
                  {"current", ds.current},
                  {"ready", ds.ready},
                  {"available", ds.available},
                  {"unavailable", ds.unavailable},
                  {"never_ready", never},
                  {"age_days", age / kDay},
                  {"device_plugin", IsDevicePlugin(ds, opt)},
                  {"not_ready_pods", pod_evidence}};
    reported.insert(ds.uid.empty() ? ds.ns + "/" + ds.name : ds.uid);
    out.push_back(std::move(f));
  }
}

bool OwnedByReported(const Pod& p, const std::set<std::string>& reported,
                     const k8s::Snapshot& snap) {
  for (const auto& ds : snap.daemonsets) {
    if (reported.count(ds.uid.empty() ? ds.ns + "/" + ds.name : ds.uid) && Owns(ds, p)) return true;
  }
  return false;
}

void CheckCrashLoops(const k8s::Snapshot& snap, const Options& opt,
                     const std::set<std::string>& reported, std::vector<Finding>& out) {
  for (const auto& p : snap.pods) {
    for (const auto& s : p.statuses) {
      if (s.waiting_reason != "CrashLoopBackOff") continue;
      if (OwnedByReported(p, reported, snap)) break;  // told once, by daemonset.not-ready
      auto since = NotReadySince(p);
      int64_t age = since ? Seconds(opt.now, *since) : 0;
      std::string last = s.last_terminated_reason.empty()
                             ? ""
                             : fmt::format("; last exit {} (code {})", s.last_terminated_reason,
                                           s.last_exit_code.value_or(-1));
      out.push_back(
          {.check = kPodCrashloop,
           .severity = Severity::kError,
           .subject = PodRef(p),
           .message = fmt::format("container {} has been crash looping for {} ({} restarts){}",
                                  s.name, Days(age), s.restart_count, last),
           .since = since,
           .evidence = {{"container", s.name},
                        {"image", s.image},
                        {"node", p.node_name},
                        {"restart_count", s.restart_count},
                        {"message", s.waiting_message}}});
      break;
    }
  }
}

void CheckNodes(const k8s::Snapshot& snap, const Options& opt, std::vector<Finding>& out) {
  for (const auto& n : snap.nodes) {
    const k8s::Condition* ready = n.FindCondition("Ready");
    if (!ready || ready->status == "True") continue;
    int64_t age = ready->last_transition ? Seconds(opt.now, *ready->last_transition) : 0;
    out.push_back({.check = kNodeNotReady,
                   .severity = Severity::kError,
                   .subject = n.name,
                   .message = fmt::format("Ready is {} for {}{}", ready->status, Days(age),
                                          ready->reason.empty() ? "" : " (" + ready->reason + ")"),
                   .since = ready->last_transition,
                   .evidence = {{"status", ready->status},
                                {"reason", ready->reason},
                                {"message", ready->message},
                                {"unschedulable", n.unschedulable}}});
  }
}

void CheckFabricNodes(const k8s::Snapshot& snap, const Options& opt, std::vector<Finding>& out) {
  std::vector<const Node*> fabric;
  for (const auto& n : snap.nodes) {
    if (IsFabricNode(n, opt)) fabric.push_back(&n);
  }
  if (fabric.empty()) return;
  std::vector<const DaemonSet*> plugins;
  for (const auto& ds : snap.daemonsets) {
    if (IsDevicePlugin(ds, opt)) plugins.push_back(&ds);
  }
  if (plugins.empty()) {
    out.push_back(
        {.check = kDaemonSetCoverage,
         .severity = Severity::kError,
         .subject = "cluster",
         .message = fmt::format("{} nodes have RDMA hardware but no RDMA device-plugin DaemonSet "
                                "was found (name it with --device-plugin NS/NAME)",
                                fabric.size()),
         .evidence = {{"fabric_nodes", fabric.size()}}});
  }
  // Device-plugin pods by node, built once (a node-by-pod scan would be quadratic).
  std::map<std::string, std::vector<std::pair<const DaemonSet*, const Pod*>>> plugin_pods;
  for (const auto& p : snap.pods) {
    for (const DaemonSet* ds : plugins) {
      if (Owns(*ds, p)) plugin_pods[p.node_name].push_back({ds, &p});
    }
  }
  // What IsRdmaResource accepts, for the findings that say no RDMA resource was found.
  std::vector<std::string> considered = {"rdma/*", "vpc.amazonaws.com/efa", "nvidia.com/*rdma*",
                                         "nvidia.com/*hostdev*", "nvidia.com/*mlnx*"};
  considered.insert(considered.end(), opt.rdma_resources.begin(), opt.rdma_resources.end());
  considered.insert(considered.end(), opt.plugin_config.rdma_resources.begin(),
                    opt.plugin_config.rdma_resources.end());
  for (const Node* n : fabric) {
    // Coverage: a Ready device-plugin pod on the node.
    if (!plugins.empty()) {
      bool covered = false;
      std::vector<std::string> why;
      std::optional<TimePoint> since;
      for (const DaemonSet* ds : plugins) {
        std::string mismatch;
        if (!SelectorMatches(ds->node_selector, n->labels, &mismatch)) {
          why.push_back(fmt::format("excluded by the nodeSelector of {}/{} (node lacks {})", ds->ns,
                                    ds->name, mismatch));
          if (n->created && ds->created)
            since = Earliest(since, std::max(*n->created, *ds->created));
          continue;
        }
        const Pod* pod = nullptr;
        auto on_node = plugin_pods.find(n->name);
        if (on_node != plugin_pods.end()) {
          for (const auto& [owner, p] : on_node->second) {
            if (owner == ds) pod = p;
          }
        }
        if (pod && pod->IsReady()) {
          covered = true;
          break;
        }
        if (pod) {
          why.push_back(
              fmt::format("pod {} of {}/{} is not ready", PodRef(*pod), ds->ns, ds->name));
          since = Earliest(since, NotReadySince(*pod));
        } else {
          why.push_back(fmt::format("no pod of {}/{} runs there (taints or node affinity?)", ds->ns,
                                    ds->name));
        }
      }
      if (!covered) {
        out.push_back(
            {.check = kDaemonSetCoverage,
             .severity = Severity::kError,
             .subject = n->name,
             .message = "RDMA hardware but no ready RDMA device-plugin pod: " + Join(why, "; "),
             .since = since,
             .evidence = {{"reasons", why}}});
      }
    }
    // Advertised RDMA resources.
    nlohmann::json advertised = nlohmann::json::object();
    bool positive = false;
    for (const auto& [name, qty] : n->allocatable) {
      if (!IsRdmaResource(name, opt)) continue;
      advertised[name] = qty;
      auto v = ParseInt64(qty);
      if (!v || *v > 0) positive = true;  // non-integer quantities ("1k") count as present
    }
    if (!positive) {
      out.push_back(
          {.check = kNodeRdmaUnadvertised,
           .severity = Severity::kError,
           .subject = n->name,
           .message = (advertised.empty()
                           ? "RDMA hardware but allocatable has no RDMA resource: pods cannot "
                             "request the fabric here"
                           : "RDMA hardware but every RDMA resource is 0 in allocatable: the "
                             "device plugin found no devices") +
                      std::string(" (RDMA resources considered: ") + Join(considered, ", ") + ")",
           .evidence = {{"rdma_resources", advertised},
                        {"considered", considered},
                        {"plugin_config_sources", opt.plugin_config.sources},
                        {"plugin_config_errors", opt.plugin_config.errors}}});
    }
  }
}

}  // namespace

std::vector<std::string> FabricNodeLabels() {
  return {std::begin(kFabricLabels), std::end(kFabricLabels)};
}

// Topology labels tried in order when --topology-label is not given (docs/FORMATS.md). AWS:
// layer-1 is the top of the network hierarchy, so pods under different layer-1 nodes are
// certainly in different blocks.
constexpr const char* kTopologyLabels[] = {
    "cloud.google.com/gce-topology-block",
    "network.topology.nvidia.com/block",
    "topology.k8s.aws/network-node-layer-1",
    "topology.kubernetes.io/zone",
};

std::string TopologyLabel(const std::vector<const Node*>& nodes, const std::string& configured) {
  if (!configured.empty() || nodes.empty()) return configured;
  for (const char* candidate : kTopologyLabels) {
    if (std::all_of(nodes.begin(), nodes.end(),
                    [&](const Node* n) { return n != nullptr && n->labels.count(candidate); })) {
      return candidate;
    }
  }
  return "";
}

std::string ClusterTopologyLabel(const k8s::Snapshot& snapshot, const Options& options) {
  std::vector<const Node*> fabric;
  for (const auto& n : snapshot.nodes) {
    if (IsFabricNode(n, options)) fabric.push_back(&n);
  }
  return TopologyLabel(fabric, options.topology_label);
}

bool IsFabricNode(const Node& node, const Options& options) {
  if (!options.fabric_selector.empty()) {
    return SelectorMatches(options.fabric_selector, node.labels, nullptr);
  }
  for (const char* label : kFabricLabels) {
    auto it = node.labels.find(label);
    if (it != node.labels.end() && it->second == "true") return true;
  }
  return false;
}

bool IsDevicePlugin(const DaemonSet& ds, const Options& options) {
  if (!options.device_plugins.empty()) {
    return std::find(options.device_plugins.begin(), options.device_plugins.end(),
                     ds.ns + "/" + ds.name) != options.device_plugins.end();
  }
  for (const char* name : kPluginNames) {
    if (ds.name.find(name) != std::string::npos) return true;
    for (const auto& image : ds.images) {
      if (image.find(name) != std::string::npos) return true;
    }
  }
  return false;
}

bool IsRdmaResource(const std::string& name, const Options& options) {
  for (const auto* names : {&options.rdma_resources, &options.plugin_config.rdma_resources}) {
    if (std::find(names->begin(), names->end(), name) != names->end()) return true;
  }
  if (name.starts_with("rdma/") || name == "vpc.amazonaws.com/efa") return true;
  if (name.starts_with("nvidia.com/")) {
    return name.find("rdma") != std::string::npos || name.find("hostdev") != std::string::npos ||
           name.find("mlnx") != std::string::npos;
  }
  return false;
}

const std::vector<std::string>& CheckIds() {
  static const std::vector<std::string> ids = [] {
    std::vector<std::string> out;
    for (const auto& c : Catalog().checks) out.push_back(c.id);
    return out;
  }();
  return ids;
}

std::vector<Finding> Run(const k8s::Snapshot& snapshot, const Options& options) {
  std::vector<Finding> out;
  std::set<std::string> reported;
  CheckDaemonSets(snapshot, options, out, reported);
  CheckCrashLoops(snapshot, options, reported, out);
  CheckNodes(snapshot, options, out);
  CheckFabricNodes(snapshot, options, out);
  CheckJobs(snapshot, options, out);
  CheckCoverage(snapshot, options, out);
  SortFindings(out, FindingOrder::kBySubject);
  return out;
}

Result<k8s::StringMap> ParseSelector(const std::string& text) {
  k8s::StringMap out;
  for (auto term : Split(text, ',', true)) {
    term = Trim(term);
    size_t eq = term.find('=');
    std::string key(Trim(term.substr(0, eq)));
    if (key.empty() || term.find("!=") != std::string_view::npos) {
      return Status::InvalidArgument("--fabric-nodes: unsupported selector term \"" +
                                     std::string(term) + "\" (use k=v or k)");
    }
    out[key] = eq == std::string_view::npos ? "" : std::string(Trim(term.substr(eq + 1)));
  }
  if (out.empty()) return Status::InvalidArgument("--fabric-nodes: empty selector");
  return out;
}

}  // namespace tocsin::audit
