// Multi-node training jobs: grouping pods into jobs and the job.* checks.
#include "audit/jobs.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "audit/catalog.h"
#include "base/strings.h"

namespace tocsin::audit {
namespace {

using k8s::Pod;

const std::string* Label(const k8s::StringMap& labels, const char* key) {
  auto it = labels.find(key);
  return it == labels.end() ? nullptr : &it->second;
}

std::string Lower(std::string s) {
  for (auto& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

// "kind/namespace/name" of the job a pod belongs to; empty for pods outside a job.
std::string JobKey(const Pod& p) {
  if (auto* v = Label(p.labels, "training.kubeflow.org/job-name")) {
    return "kubeflow/" + p.ns + "/" + *v;
  }
  if (auto* v = Label(p.labels, "jobset.sigs.k8s.io/jobset-name"))
    return "jobset/" + p.ns + "/" + *v;
  for (const auto& o : p.owners) {
    if (o.kind == "Job") return "job/" + p.ns + "/" + o.name;
  }
  if (auto* v = Label(p.labels, "batch.kubernetes.io/job-name")) return "job/" + p.ns + "/" + *v;
  if (auto* v = Label(p.labels, "job-name")) return "job/" + p.ns + "/" + *v;
  return "";
}

// Whether a container of the pod asks for a non-zero quantity of a resource `wanted` accepts.
template <typename Wanted>
bool RequestsAny(const Pod& p, Wanted wanted) {
  for (const auto& c : p.containers) {
    for (const auto* m : {&c.requests, &c.limits}) {
      for (const auto& [name, qty] : *m) {
        auto v = ParseInt64(qty);
        if (wanted(name) && (!v || *v > 0)) return true;
      }
    }
  }
  return false;
}

bool Requests(const Pod& p, const Options& opt) {
  return RequestsAny(p, [&](const std::string& name) { return IsRdmaResource(name, opt); });
}

// An MPI launcher only runs mpirun; the workers hold the GPUs and the fabric. mpi-operator v2
// labels it training.kubeflow.org/job-role=launcher, training-operator's MPIJob
// training.kubeflow.org/replica-type=launcher (docs/FORMATS.md, "Training operators"). A launcher
// that asks for a GPU runs ranks too (mpi-operator's isGPULauncher: a limit named *.com/gpu or
// containing "gpu"), and so does one that asks for the fabric: those count as training pods.
bool IsTrainingPod(const Pod& p, const Options& opt) {
  bool launcher = false;
  for (const char* key : {"training.kubeflow.org/job-role", "training.kubeflow.org/replica-type"}) {
    if (auto* v = Label(p.labels, key)) launcher |= Lower(*v) == "launcher";
  }
  if (!launcher) return true;
  return Requests(p, opt) || RequestsAny(p, [](const std::string& name) {
           return name.find("gpu") != std::string::npos;
         });
}

bool HasIpcLock(const Pod& p) {
  for (const auto& c : p.containers) {
    if (c.privileged) return true;
    for (const auto& cap : c.capabilities_add) {
      if (cap == "IPC_LOCK" || cap == "CAP_IPC_LOCK" || cap == "ALL") return true;
    }
  }
  return false;
}

std::string EnvValue(const Pod& p, const std::string& name) {
  for (const auto& c : p.containers) {
    auto it = c.env.find(name);
    if (it != c.env.end()) return it->second;
  }
  return "";
}

struct Job {
  std::string key;
  std::vector<const Pod*> pods;
  std::vector<const Pod*> training;    // pods that run ranks (IsTrainingPod)
  std::vector<std::string> launchers;  // the others: MPI launchers that only run mpirun
  std::set<std::string> nodes;         // the training pods' nodes
  int64_t world_size = 0;
  std::optional<TimePoint> since;  // the earliest pod creation
};

std::string Subject(const Job& j) { return j.key; }

}  // namespace

void CheckJobs(const k8s::Snapshot& snap, const Options& opt, std::vector<Finding>& out) {
  std::map<std::string, Job> jobs;
  for (const auto& p : snap.pods) {
    if (p.phase == "Succeeded" || p.phase == "Failed") continue;
    std::string key = JobKey(p);
    if (key.empty()) continue;
    Job& j = jobs[key];
    j.key = key;
    j.pods.push_back(&p);
    if (IsTrainingPod(p, opt)) {
      j.training.push_back(&p);
      if (!p.node_name.empty()) j.nodes.insert(p.node_name);
    } else {
      j.launchers.push_back(p.name);
    }
    if (auto ws = ParseInt64(EnvValue(p, "WORLD_SIZE"))) j.world_size = std::max(j.world_size, *ws);
    if (p.created && (!j.since || *p.created < *j.since)) j.since = p.created;
  }
  std::map<std::string, const k8s::Node*> nodes;
  bool any_fabric = false;
  for (const auto& n : snap.nodes) {
    nodes[n.name] = &n;
    any_fabric |= IsFabricNode(n, opt);
  }
  for (const auto& [key, j] : jobs) {
    // Placement and the fabric are judged by the pods that run ranks (not an MPI launcher).
    if (j.nodes.size() < 2 && j.world_size <= 1) continue;  // single-node: no fabric needed
    std::string shape = fmt::format(
        "{} pods on {} nodes{}{}", j.training.size(), j.nodes.size(),
        j.world_size > 1 ? fmt::format(", WORLD_SIZE={}", j.world_size) : "",
        j.launchers.empty() ? ""
                            : fmt::format(" (and {} MPI launcher{})", j.launchers.size(),
                                          j.launchers.size() == 1 ? "" : "s"));
    bool rdma = std::any_of(j.training.begin(), j.training.end(),
                            [&](const Pod* p) { return Requests(*p, opt); });
    if (!rdma) {
      out.push_back({.check = kJobRdmaNotRequested,
                     .severity = Severity::kError,
                     .subject = Subject(j),
                     .message = shape +
                                ": no pod requests an RDMA resource, so NCCL falls back to TCP "
                                "sockets without an error (about half the throughput)",
                     .since = j.since,
                     .evidence = {{"pods", j.training.size()}, {"nodes", j.nodes}}});
    }
    // NCCL settings in the pod spec that turn the fabric off.
    std::set<std::string> bad_env;
    for (const Pod* p : j.pods) {
      if (EnvValue(*p, "NCCL_IB_DISABLE") == "1") bad_env.insert("NCCL_IB_DISABLE=1");
      std::string net = EnvValue(*p, "NCCL_NET");
      if (Lower(net) == "socket") bad_env.insert("NCCL_NET=" + net);
    }
    if (!bad_env.empty()) {
      std::vector<std::string> list(bad_env.begin(), bad_env.end());
      out.push_back({.check = kJobNcclFallbackEnv,
                     .severity = Severity::kError,
                     .subject = Subject(j),
                     .message = shape + ": the pod spec sets " + Join(list, ", ") +
                                ": NCCL will not use the fabric",
                     .since = j.since,
                     .evidence = {{"env", list}}});
    }
    if (!opt.fabric_network.empty()) {
      std::vector<std::string> missing;
      for (const Pod* p : j.training) {
        auto it = p->annotations.find("k8s.v1.cni.cncf.io/networks");
        if (it == p->annotations.end() ||
            it->second.find(opt.fabric_network) == std::string::npos) {
          missing.push_back(p->name);
        }
      }
      if (!missing.empty()) {
        out.push_back(
            {.check = kJobRdmaNoNetwork,
             .severity = Severity::kError,
             .subject = Subject(j),
             .message = fmt::format("{} of {} pods do not attach the fabric network {} "
                                    "(k8s.v1.cni.cncf.io/networks)",
                                    missing.size(), j.training.size(), opt.fabric_network),
             .since = j.since,
             .evidence = {{"pods_without_network", missing}}});
      }
    }
    if (rdma) {
      std::vector<std::string> no_lock;
      for (const Pod* p : j.training) {
        if (!HasIpcLock(*p)) no_lock.push_back(p->name);
      }
      if (!no_lock.empty()) {
        out.push_back(
            {.check = kJobRdmaNoIpcLock,
             .severity = Severity::kWarning,
             .subject = Subject(j),
             .message = fmt::format("{} of {} pods request RDMA without IPC_LOCK (or privileged): "
                                    "RDMA memory registration needs locked memory",
                                    no_lock.size(), j.training.size()),
             .since = j.since,
             .evidence = {{"pods", no_lock}}});
      }
    }
    // Placement: topology blocks and nodes without the fabric.
    std::vector<const k8s::Node*> job_nodes;
    for (const auto& n : j.nodes) job_nodes.push_back(nodes.count(n) ? nodes.at(n) : nullptr);
    std::string label = TopologyLabel(job_nodes, opt.topology_label);
    if (!label.empty()) {
      std::map<std::string, int> blocks;
      for (const auto& n : j.nodes) {
        if (nodes.count(n) && nodes.at(n)->labels.count(label))
          blocks[nodes.at(n)->labels.at(label)]++;
      }
      if (blocks.size() > 1) {
        out.push_back(
            {.check = kJobPlacementSpread,
             .severity = Severity::kWarning,
             .subject = Subject(j),
             .message = fmt::format("{} spans {} topology blocks ({}): collectives cross the "
                                    "spine",
                                    shape, blocks.size(), label),
             .since = j.since,
             .evidence = {{"label", label}, {"nodes_per_block", blocks}}});
      }
    }
    if (any_fabric) {
      std::vector<std::string> off;
      for (const auto& n : j.nodes) {
        if (nodes.count(n) && !IsFabricNode(*nodes.at(n), opt)) off.push_back(n);
      }
      if (!off.empty()) {
        out.push_back({.check = kJobPlacementNonFabric,
                       .severity = Severity::kError,
                       .subject = Subject(j),
                       .message = fmt::format("{} of its {} nodes {} no RDMA fabric: {}",
                                              off.size(), j.nodes.size(),
                                              off.size() == 1 ? "has" : "have", Join(off, ", ")),
                       .since = j.since,
                       .evidence = {{"nodes", off}, {"launchers_not_counted", j.launchers}}});
      }
    }
    bool shared = std::any_of(j.pods.begin(), j.pods.end(),
                              [](const Pod* p) { return !p->shared_volumes.empty(); });
    if (!shared) {
      out.push_back({.check = kJobStorageNoSharedVolume,
                     .severity = Severity::kWarning,
                     .subject = Subject(j),
                     .message = shape +
                                ": no pod mounts a shared volume (PVC, NFS, CSI): checkpoints and "
                                "data stay on node-local disks",
                     .since = j.since});
    }
  }
}

}  // namespace tocsin::audit
