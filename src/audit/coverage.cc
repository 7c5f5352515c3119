#include "audit/coverage.h"

#include <fmt/format.h>

#include <map>
#include <string>

#include "audit/catalog.h"

namespace tocsin::audit {

namespace {

constexpr const char* kSnapshotCommand = "kubectl get nodes,pods,daemonsets,configmaps -A -o json";

std::string Held(const k8s::Snapshot& snap) {
  std::map<std::string, int> kinds = snap.other_kinds;
  if (!snap.configmaps.empty()) kinds["ConfigMap"] += static_cast<int>(snap.configmaps.size());
  if (kinds.empty()) return "no objects";
  std::string out;
  for (const auto& [kind, count] : kinds) {
    if (!out.empty()) out += ", ";
    out += fmt::format("{} {}", count, kind);
  }
  return out;
}

}  // namespace

Status CheckSnapshotUsable(const k8s::Snapshot& snap) {
  if (!snap.nodes.empty() || !snap.pods.empty() || !snap.daemonsets.empty()) return Status::Ok();
  return Status::InvalidArgument(fmt::format(
      "the snapshot holds no Node, Pod or DaemonSet object ({}): there is nothing to audit; make "
      "one with: {}",
      Held(snap), kSnapshotCommand));
}

void CheckCoverage(const k8s::Snapshot& snap, const Options& opt, std::vector<Finding>& out) {
  // One message for the live API and a snapshot: the same cluster gives the same findings.
  if (snap.nodes.empty()) {
    out.push_back(
        {.check = kInputIncomplete,
         .severity = Severity::kWarning,
         .subject = "nodes",
         .message = fmt::format("no Node objects were read (a cluster without nodes, or a snapshot "
                                "without them: {}): node.not-ready, node.rdma.unadvertised, "
                                "daemonset.coverage and job placement did not run",
                                kSnapshotCommand),
         .evidence = {{"nodes", 0}, {"pods", snap.pods.size()}}});
  }
  if (snap.pods.empty()) {
    out.push_back({.check = kInputIncomplete,
                   .severity = Severity::kInfo,
                   .subject = "pods",
                   .message = fmt::format(
                       "no Pod objects were read (a snapshot without them: {}): crash loops, "
                       "device-plugin pods and jobs were not checked",
                       kSnapshotCommand),
                   .evidence = {{"pods", 0}, {"nodes", snap.nodes.size()}}});
  }
  if (snap.nodes.empty()) return;
  for (const auto& n : snap.nodes) {
    if (IsFabricNode(n, opt)) return;
  }
  std::string rule = opt.fabric_selector.empty()
                         ? fmt::format("a label {}=true (Node Feature Discovery)",
                                       fmt::join(FabricNodeLabels(), "=true or "))
                         : "the --fabric-nodes selector";
  out.push_back(
      {.check = kFabricNone,
       .severity = Severity::kInfo,
       .subject = "cluster",
       .message = fmt::format("none of the {} nodes was recognised as a fabric node ({}): the "
                              "fabric checks had nothing to check; name them with --fabric-nodes",
                              snap.nodes.size(), rule),
       .evidence = {{"nodes", snap.nodes.size()},
                    {"labels", FabricNodeLabels()},
                    {"selector", opt.fabric_selector}}});
}

}  // namespace tocsin::audit
