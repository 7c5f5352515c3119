#include "k8s/objects.h"

namespace tocsin::k8s {

const Condition* Pod::FindCondition(const std::string& type) const {
  for (const auto& c : conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

bool Pod::IsReady() const {
  const Condition* c = FindCondition("Ready");
  return c != nullptr && c->status == "True";
}

const Condition* Node::FindCondition(const std::string& type) const {
  for (const auto& c : conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

bool IsTopologyAnnotation(std::string_view k) {
  return k == "kueue.x-k8s.io/podset-required-topology" ||
         k == "kueue.x-k8s.io/podset-preferred-topology" ||
         k == "alpha.jobset.sigs.k8s.io/exclusive-topology";
}

bool IsObjectName(std::string_view name) {
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (name.empty() || name.size() > 253 || !alnum(name.front()) || !alnum(name.back())) {
    return false;
  }
  for (char c : name) {
    if (!alnum(c) && c != '-' && c != '.') return false;
  }
  return true;
}

bool IsJobKind(const std::string& kind) {
  return kind == "Job" || kind == "PyTorchJob" || kind == "MPIJob" || kind == "JobSet" ||
         kind == "TrainJob";
}

bool IsWorkloadKind(const std::string& kind) { return IsJobKind(kind) || kind == "CronJob"; }

SnapshotMark::SnapshotMark(const Snapshot& s)
    : nodes_(s.nodes.size()),
      pods_(s.pods.size()),
      daemonsets_(s.daemonsets.size()),
      configmaps_(s.configmaps.size()),
      jobs_(s.jobs.size()),
      networks_(s.networks.size()),
      sriov_(s.sriov_policies.size()),
      nic_(s.nic_policies.size()),
      workloads_(s.workloads.size()),
      raw_(s.raw.size()),
      sources_(s.sources.size()) {}

void SnapshotMark::Restore(Snapshot& s) const {
  s.nodes.resize(nodes_);
  s.pods.resize(pods_);
  s.daemonsets.resize(daemonsets_);
  s.configmaps.resize(configmaps_);
  s.jobs.resize(jobs_);
  s.networks.resize(networks_);
  s.sriov_policies.resize(sriov_);
  s.nic_policies.resize(nic_);
  s.workloads.resize(workloads_);
  s.raw.resize(raw_);
  s.sources.resize(sources_);
}

}  // namespace tocsin::k8s
