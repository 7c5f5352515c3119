#include "agent/pods_task.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <set>

#include "agent/families.h"
#include "audit/jobs.h"
#include "base/strings.h"
#include "podresources/client.h"

namespace tocsin::agent {
namespace {

constexpr const char* kNvidiaGpus = "/proc/driver/nvidia/gpus";
constexpr const char* kPciDevices = "/sys/bus/pci/devices";

struct Resolved {
  std::string kind;    // "gpu" or "rdma"
  std::string device;  // the GPU's PCI address, or the RDMA device
};

// "0000:05:00.2" or "05:00.2" (the domain 0000 then): lower-case hex, as sysfs names functions.
std::optional<std::string> PciAddress(std::string_view id) {
  std::string s(id);
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s.size() == 7) s = "0000:" + s;
  if (s.size() != 12 || s[4] != ':' || s[7] != ':' || s[10] != '.') return std::nullopt;
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9, 11}) {
    if (!std::isxdigit(static_cast<unsigned char>(s[i]))) return std::nullopt;
  }
  return s;
}

// What the device IDs of one run name on this node: read once per run, on first need.
class Resolver {
 public:
  explicit Resolver(Env& env) : env_(env) {}

  std::optional<Resolved> Resolve(const std::string& id) {
    if (id.starts_with("GPU-")) {
      LoadGpus();
      auto it = gpu_by_uuid_.find(id);
      if (it == gpu_by_uuid_.end()) return std::nullopt;
      return Resolved{"gpu", it->second};
    }
    auto pci = PciAddress(id);
    if (!pci) return std::nullopt;  // MIG devices, indices, shared-plugin IDs: not a device here
    // An RDMA function (an HCA, an SR-IOV VF): its device under infiniband/.
    if (auto names = env_.ListDir(std::string(kPciDevices) + "/" + *pci + "/infiniband");
        names.ok() && !names->empty()) {
      std::sort(names->begin(), names->end());
      return Resolved{"rdma", names->front()};
    }
    // A GPU given by its PCI address (passthrough plugins).
    if (env_.IsDirectory(std::string(kNvidiaGpus) + "/" + *pci)) return Resolved{"gpu", *pci};
    return std::nullopt;
  }

 private:
  // The driver's information file of each GPU: "GPU UUID:" and "Bus Location:" lines; the
  // folder's name is the PCI address.
  void LoadGpus() {
    if (gpus_loaded_) return;
    gpus_loaded_ = true;
    auto dirs = env_.ListDir(kNvidiaGpus);
    if (!dirs.ok()) return;
    for (const auto& dir : *dirs) {
      auto pci = PciAddress(dir);
      if (!pci) continue;
      auto text = env_.ReadFile(std::string(kNvidiaGpus) + "/" + dir + "/information");
      if (!text.ok()) continue;
      for (auto line : Split(*text, '\n')) {
        size_t colon = line.find(':');
        if (colon == std::string_view::npos || Trim(line.substr(0, colon)) != "GPU UUID") continue;
        std::string uuid(Trim(line.substr(colon + 1)));
        if (uuid.starts_with("GPU-")) gpu_by_uuid_[uuid] = *pci;
      }
    }
  }

  Env& env_;
  bool gpus_loaded_ = false;
  std::map<std::string, std::string> gpu_by_uuid_;
};

// The job of each pod by "ns/name" ("" outside a job), from the last list of this node's pods.
struct State {
  std::mutex mu;  // runs never overlap; the lock documents it
  std::map<std::string, std::string> job_of;
  std::optional<std::chrono::steady_clock::time_point> listed;
};

void Relist(const PodsTaskOptions& o, State& state, const podresources::PodList& pods) {
  auto now = std::chrono::steady_clock::now();
  bool unknown = std::any_of(pods.pods.begin(), pods.pods.end(), [&](const podresources::Pod& p) {
    return !state.job_of.count(p.ns + "/" + p.name);
  });
  bool old = !state.listed || now - *state.listed >= o.relist_every;
  if (!unknown && !old) return;
  auto listed = o.list_pods();
  if (!listed.ok()) return;  // the last names stay for the pods the kubelet still runs
  state.listed = now;
  state.job_of.clear();
  for (const auto& p : *listed) state.job_of[p.ns + "/" + p.name] = audit::JobName(p);
}

}  // namespace

TaskSpec PodsTask(const std::string& root, PodsTaskOptions options) {
  return PodsTask([root] { return NewRootedEnv(root); }, std::move(options));
}

TaskSpec PodsTask(std::function<std::unique_ptr<Env>()> new_env, PodsTaskOptions options) {
  TaskSpec t;
  t.name = "pods";
  auto state = std::make_shared<State>();
  t.run = [new_env, o = std::move(options), state]() -> Result<TaskOutput> {
    std::lock_guard<std::mutex> lock(state->mu);
    TaskOutput out;
    Families fam;
    Result<podresources::PodList> list =
        o.list_resources ? o.list_resources()
        : o.self_exe.empty()
            ? podresources::List(o.socket_path, o.call_timeout, o.limits)
            : podresources::ListInChild(o.self_exe, o.socket_path, o.call_timeout, o.limits);
    fam.Family("tocsin_podresources_up",
               "1 while the kubelet's PodResources socket answers List; 0: no attribution is "
               "exported (never the last one).",
               prometheus::MetricType::Gauge)
        .Add({}, list.ok() ? 1 : 0);
    if (!list.ok()) {
      state->job_of.clear();  // a pod seen again is listed again
      state->listed.reset();
      out.families = fam.Take();
      return out;
    }
    auto env = new_env();
    std::string node = o.node_name.empty() ? HostName(*env) : o.node_name;
    uint64_t unresolved = 0, unlabelled = 0;
    if (o.list_pods) {
      Relist(o, *state, *list);
    }
    // Pods gone from the kubelet's answer are forgotten.
    std::set<std::string> present;
    for (const auto& p : list->pods) present.insert(p.ns + "/" + p.name);
    std::erase_if(state->job_of, [&](const auto& kv) { return !present.count(kv.first); });

    Resolver resolver(*env);
    fam.Family("tocsin_pod_info",
               "Constant 1 per pod on this node that belongs to a training job (the grouping "
               "labels tocsin audit uses); job_name is the job's name.",
               prometheus::MetricType::Gauge);
    for (const auto& p : list->pods) {
      if (!o.list_pods) continue;
      auto it = state->job_of.find(p.ns + "/" + p.name);
      if (it == state->job_of.end()) {
        unlabelled++;
        continue;
      }
      if (it->second.empty()) continue;  // not a training job's pod
      fam.Add({{"namespace", p.ns}, {"pod", p.name}, {"job_name", it->second}, {"node", node}}, 1);
    }
    fam.Family("tocsin_pod_device_info",
               "Constant 1 per device a pod on this node holds (the kubelet's PodResources): "
               "device_kind gpu with the GPU's PCI address, rdma with the RDMA device.",
               prometheus::MetricType::Gauge);
    for (const auto& p : list->pods) {
      std::set<std::pair<std::string, std::string>> seen;
      for (const auto& d : p.devices) {
        auto r = resolver.Resolve(d.id);
        if (!r) {
          unresolved++;
          continue;
        }
        if (!seen.insert({r->kind, r->device}).second) continue;
        fam.Add(
            {{"namespace", p.ns}, {"pod", p.name}, {"device_kind", r->kind}, {"device", r->device}},
            1);
      }
    }
    fam.Family("tocsin_pod_attribution_dropped",
               "What the pods task left out of the last PodResources answer: pods past 256, "
               "devices past 64 a pod, invalid names or IDs, device IDs that name no GPU or RDMA "
               "device of this node (unresolved), pods whose labels could not be read "
               "(unlabelled).",
               prometheus::MetricType::Gauge)
        .Add({{"what", "pods"}}, static_cast<double>(list->dropped.pods))
        .Add({{"what", "devices"}}, static_cast<double>(list->dropped.devices))
        .Add({{"what", "invalid"}}, static_cast<double>(list->dropped.invalid))
        .Add({{"what", "unresolved"}}, static_cast<double>(unresolved))
        .Add({{"what", "unlabelled"}}, static_cast<double>(unlabelled));
    out.families = fam.Take();
    std::erase_if(out.families, [](const auto& f) { return f.metric.empty(); });
    return out;
  };
  return t;
}

}  // namespace tocsin::agent
