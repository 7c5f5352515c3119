#include "audit/coverage.h"

#include <fmt/format.h>

#include <string>

namespace tocsin::audit {

namespace {

constexpr const char* kSnapshotCommand = "kubectl get nodes,pods,daemonsets,configmaps -A -o json";

std::string Held(const k8s::Snapshot& snap) {
  if (snap.other_kinds.empty()) return "no objects";
  std::string out;
  for (const auto& [kind, count] : snap.other_kinds) {
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
  bool live = opt.live;
  if (snap.nodes.empty()) {
    out.push_back(
        {.check = "audit.input.incomplete",
         .severity = Severity::kWarning,
         .subject = "nodes",
         .message =
             live ? std::string("the cluster has no nodes: no node-level check could run")
                  : fmt::format("the snapshot has no Node objects: node-level checks "
                                "(node.not-ready, node.rdma.unadvertised, daemonset.coverage, "
                                "job placement) did not run; include them: {}",
                                kSnapshotCommand),
         .evidence = {{"nodes", 0}, {"pods", snap.pods.size()}}});
  }
  if (snap.pods.empty()) {
    out.push_back({.check = "audit.input.incomplete",
                   .severity = Severity::kInfo,
                   .subject = "pods",
                   .message = live ? std::string("the cluster has no pods: crash loops, device-"
                                                 "plugin pods and jobs had nothing to check")
                                   : fmt::format("the snapshot has no Pod objects: crash loops, "
                                                 "device-plugin pods and jobs were not checked; "
                                                 "include them: {}",
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
      {.check = "audit.fabric.none",
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
