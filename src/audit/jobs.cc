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

// Whether the pod asks for the fabric: an RDMA resource, or GKE multi-networking's additional
// interfaces (GPUDirect-TCPX/TCPXO attach the GPU NICs so, with no device-plugin resource).
bool Requests(const Pod& p, const Options& opt) {
  return p.annotations.count(k8s::kGkeInterfacesAnnotation) > 0 ||
         RequestsAny(p, [&](const std::string& name) { return IsRdmaResource(name, opt); });
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

bool HasTopologyConstraint(const Pod& p, const std::string& label) {
  for (const auto& [k, v] : p.annotations) {
    if (k8s::IsTopologyAnnotation(k)) return true;
  }
  return std::find(p.topology_keys.begin(), p.topology_keys.end(), label) != p.topology_keys.end();
}

// hostPath volumes that hand the RDMA devices to a container around the device plugin.
bool MountsHostDevices(const Pod& p) {
  for (std::string path : p.host_paths) {
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    if (path == "/dev" || path == "/dev/infiniband" || path.starts_with("/dev/infiniband/")) {
      return true;
    }
  }
  return false;
}

// A pod of the job, or one pod template standing for `count` pods (a job without pods yet).
struct Member {
  const Pod* pod;
  int64_t count = 1;
};

int64_t Count(const std::vector<Member>& members) {
  int64_t n = 0;
  for (const auto& m : members) n += m.count;
  return n;
}

std::vector<std::string> Names(const std::vector<Member>& members) {
  std::vector<std::string> out;
  for (const auto& m : members) out.push_back(m.pod->name);
  return out;
}

struct Job {
  std::string key;
  std::vector<Member> pods;
  std::vector<Member> training;        // pods that run ranks (IsTrainingPod)
  std::vector<Member> launchers;       // the others: MPI launchers that only run mpirun
  std::set<std::string> nodes;         // the training pods' nodes
  int64_t world_size = 0;
  std::optional<TimePoint> since;  // the earliest pod creation
  bool from_template = false;      // judged from its top object's pod templates (no pods yet)
  bool partial = false;            // a TrainJob: its runtime holds most of the pod
  std::string topology_label;      // what no-topology and spread judge by
};

void Add(Job& j, const Pod& p, int64_t count, const Options& opt) {
  j.pods.push_back({&p, count});
  if (IsTrainingPod(p, opt)) {
    j.training.push_back({&p, count});
    if (!p.node_name.empty()) j.nodes.insert(p.node_name);
  } else {
    j.launchers.push_back({&p, count});
  }
  if (auto ws = ParseInt64(EnvValue(p, "WORLD_SIZE"))) j.world_size = std::max(j.world_size, *ws);
  if (p.created && (!j.since || *p.created < *j.since)) j.since = p.created;
}

// The key CheckJobs' JobKey gives the pods the top object will create.
std::string TemplateKey(const k8s::ObjectRef& top) {
  if (top.kind == "Job") return "job/" + top.ns + "/" + top.name;
  if (top.kind == "JobSet" || top.kind == "TrainJob") return "jobset/" + top.ns + "/" + top.name;
  return "kubeflow/" + top.ns + "/" + top.name;
}

bool MultiNode(const Job& j) {
  if (j.world_size > 1) return true;
  return j.from_template ? Count(j.training) > 1 : j.nodes.size() > 1;
}

void Judge(const Job& j, const Options& opt, const std::map<std::string, const k8s::Node*>& nodes,
           bool any_fabric, std::vector<Finding>& out) {
  // Placement and the fabric are judged by the pods that run ranks (not an MPI launcher).
  if (!MultiNode(j)) return;  // single-node: no fabric needed
  int64_t launchers = Count(j.launchers);
  std::string shape = fmt::format(
      "{} pods{}{}{}", Count(j.training),
      j.from_template ? " (from its pod templates)" : fmt::format(" on {} nodes", j.nodes.size()),
      j.world_size > 1 ? fmt::format(", WORLD_SIZE={}", j.world_size) : "",
      launchers == 0
          ? ""
          : fmt::format(" (and {} MPI launcher{})", launchers, launchers == 1 ? "" : "s"));
  auto finding = [&](const char* check, Severity severity, std::string message,
                     nlohmann::json evidence) {
    out.push_back({.check = check,
                   .severity = severity,
                   .subject = j.key,
                   .message = std::move(message),
                   .since = j.since,
                   .evidence = std::move(evidence)});
  };
  auto without = [&](auto bad) {
    std::vector<Member> out_members;
    for (const auto& m : j.training) {
      if (bad(*m.pod)) out_members.push_back(m);
    }
    return out_members;
  };
  bool rdma = std::any_of(j.training.begin(), j.training.end(),
                          [&](const Member& m) { return Requests(*m.pod, opt); });
  if (!rdma) {
    finding(kJobRdmaNotRequested, Severity::kError,
            shape + ": no pod requests an RDMA resource, so NCCL falls back to TCP sockets "
                    "without an error (about half the throughput)",
            {{"pods", Count(j.training)}, {"nodes", j.nodes}});
  }
  // NCCL settings in the pod spec that turn the fabric off.
  std::set<std::string> bad_env;
  for (const auto& m : j.pods) {
    if (EnvValue(*m.pod, "NCCL_IB_DISABLE") == "1") bad_env.insert("NCCL_IB_DISABLE=1");
    std::string net = EnvValue(*m.pod, "NCCL_NET");
    if (Lower(net) == "socket") bad_env.insert("NCCL_NET=" + net);
  }
  if (!bad_env.empty()) {
    std::vector<std::string> list(bad_env.begin(), bad_env.end());
    finding(kJobNcclFallbackEnv, Severity::kError,
            shape + ": the pod spec sets " + Join(list, ", ") + ": NCCL will not use the fabric",
            {{"env", list}});
  }
  if (j.partial) return;  // the rest is in a TrainJob's runtime
  if (!opt.fabric_network.empty()) {
    auto missing = without([&](const Pod& p) {
      auto it = p.annotations.find("k8s.v1.cni.cncf.io/networks");
      return it == p.annotations.end() || it->second.find(opt.fabric_network) == std::string::npos;
    });
    if (!missing.empty()) {
      finding(kJobRdmaNoNetwork, Severity::kError,
              fmt::format("{} of {} pods do not attach the fabric network {} "
                          "(k8s.v1.cni.cncf.io/networks)",
                          Count(missing), Count(j.training), opt.fabric_network),
              {{"pods_without_network", Names(missing)}});
    }
  }
  if (rdma && opt.ipc_lock_needed) {
    auto no_lock = without([](const Pod& p) { return !HasIpcLock(p); });
    if (!no_lock.empty()) {
      finding(kJobRdmaNoIpcLock, Severity::kWarning,
              fmt::format("{} of {} pods request RDMA without IPC_LOCK (or privileged): RDMA "
                          "memory registration needs locked memory",
                          Count(no_lock), Count(j.training)),
              {{"pods", Names(no_lock)}});
    }
  }
  auto host_devices = without(MountsHostDevices);
  if (!host_devices.empty()) {
    finding(kJobRdmaHostpathDevices, Severity::kWarning,
            fmt::format("{} of {} pods mount /dev/infiniband (or /dev) by hostPath: the devices "
                        "bypass the device plugin (not allocated, not counted, not isolated); "
                        "request the RDMA resource instead",
                        Count(host_devices), Count(j.training)),
            {{"pods", Names(host_devices)}});
  }
  const std::string& label = j.topology_label;
  if (!label.empty() && std::none_of(j.training.begin(), j.training.end(), [&](const Member& m) {
        return HasTopologyConstraint(*m.pod, label);
      })) {
    finding(kJobPlacementNoTopology, Severity::kWarning,
            shape + ": no pod constrains its placement by " + label +
                " (nodeSelector, node or pod affinity, topologySpreadConstraints, Kueue or "
                "JobSet topology annotations): the scheduler may spread it over blocks",
            {{"label", label}});
  }
  // Placement: topology blocks and nodes without the fabric.
  if (!label.empty()) {
    std::map<std::string, int> blocks;
    for (const auto& n : j.nodes) {
      if (nodes.count(n) && nodes.at(n)->labels.count(label))
        blocks[nodes.at(n)->labels.at(label)]++;
    }
    if (blocks.size() > 1) {
      finding(kJobPlacementSpread, Severity::kWarning,
              fmt::format("{} spans {} topology blocks ({}): collectives cross the spine", shape,
                          blocks.size(), label),
              {{"label", label}, {"nodes_per_block", blocks}});
    }
  }
  if (any_fabric) {
    std::vector<std::string> off;
    for (const auto& n : j.nodes) {
      if (nodes.count(n) && !IsFabricNode(*nodes.at(n), opt)) off.push_back(n);
    }
    if (!off.empty()) {
      finding(kJobPlacementNonFabric, Severity::kError,
              fmt::format("{} of its {} nodes {} no RDMA fabric: {}", off.size(), j.nodes.size(),
                          off.size() == 1 ? "has" : "have", Join(off, ", ")),
              {{"nodes", off}, {"launchers_not_counted", Names(j.launchers)}});
    }
  }
  bool shared = std::any_of(j.pods.begin(), j.pods.end(),
                            [](const Member& m) { return !m.pod->shared_volumes.empty(); });
  if (!shared) {
    finding(kJobStorageNoSharedVolume, Severity::kWarning,
            shape + ": no pod mounts a shared volume (PVC, NFS, CSI): checkpoints and data stay "
                    "on node-local disks",
            nullptr);
  }
}

// A job from its top object's pod templates (each standing for its count of pods).
Job TemplateJob(const k8s::ObjectRef& top, const Options& opt, const std::string& topology) {
  Job j;
  j.key = TemplateKey(top);
  j.from_template = true;
  j.topology_label = topology;
  for (const auto& set : top.pod_sets) {
    if (set.count <= 0) continue;
    Add(j, set.pod, set.count, opt);
    j.partial |= set.partial;
  }
  return j;
}

}  // namespace

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

std::string JobName(const Pod& p) {
  std::string key = JobKey(p);
  return key.empty() ? key : key.substr(key.rfind('/') + 1);
}

std::vector<Finding> CheckJobObject(const k8s::ObjectRef& top, const Options& opt,
                                    const std::string& topology_label) {
  k8s::ObjectRef named = top;  // each template named as the pods it stands for: NAME/ROLE
  for (auto& set : named.pod_sets) {
    set.pod.name = set.role.empty() ? top.name : top.name + "/" + set.role;
  }
  std::vector<Finding> out;
  Judge(TemplateJob(named, opt, topology_label), opt, {}, false, out);
  return out;
}

void CheckJobs(const k8s::Snapshot& snap, const Options& opt, std::vector<Finding>& out) {
  std::map<std::string, Job> jobs;
  std::set<std::string> with_pods;  // jobs with pods, finished ones too
  for (const auto& p : snap.pods) {
    std::string key = JobKey(p);
    if (key.empty()) continue;
    with_pods.insert(key);
    if (p.phase == "Succeeded" || p.phase == "Failed") continue;
    Job& j = jobs[key];
    j.key = key;
    Add(j, p, 1, opt);
  }
  std::map<std::string, const k8s::Node*> nodes;
  bool any_fabric = false;
  for (const auto& n : snap.nodes) {
    nodes[n.name] = &n;
    any_fabric |= IsFabricNode(n, opt);
  }
  for (auto& [key, j] : jobs) {
    std::vector<const k8s::Node*> job_nodes;
    for (const auto& n : j.nodes) job_nodes.push_back(nodes.count(n) ? nodes.at(n) : nullptr);
    j.topology_label = TopologyLabel(job_nodes, opt.topology_label);
    Judge(j, opt, nodes, any_fabric, out);
  }
  // Jobs not running yet (created, suspended, queued): judged by their templates.
  std::string topology = ClusterTopologyLabel(snap, opt);
  for (const auto& top : snap.jobs) {
    if (top.owned || top.finished || top.pod_sets.empty() || with_pods.count(TemplateKey(top))) {
      continue;
    }
    auto found = CheckJobObject(top, opt, topology);
    out.insert(out.end(), found.begin(), found.end());
  }
}

}  // namespace tocsin::audit
