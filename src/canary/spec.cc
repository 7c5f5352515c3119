#include "canary/spec.h"

#include <fmt/format.h>

namespace tocsin::canary {

using nlohmann::json;

std::string JobName(const std::string& round, int pair, int rank) {
  return fmt::format("tocsin-canary-{}-{}-r{}", round, pair, rank);
}

bool FabricEnv(const std::string& name) {
  return name.starts_with("NCCL_") || name.starts_with("FI_") || name.starts_with("UCX_");
}

json JobFor(const CanaryConfig& c, const RankPlan& p) {
  std::string name = JobName(p.round, p.pair, p.rank);
  json labels = {{"app.kubernetes.io/name", "tocsin-canary"},
                 {"app.kubernetes.io/managed-by", "tocsin-controller"},
                 {kCanaryLabel, "true"},
                 {kRoundLabel, p.round},
                 {kPairLabel, std::to_string(p.pair)},
                 {kRankLabel, std::to_string(p.rank)}};
  json annotations = {{kNodeAnnotation, p.node}, {kPartnerAnnotation, p.partner},
                      {kWhyAnnotation, p.why}};
  json pod_annotations = annotations;
  if (!c.network.empty()) pod_annotations["k8s.v1.cni.cncf.io/networks"] = c.network;

  std::string coordinator =
      p.rank == 0 ? fmt::format("$(POD_IP):{}", c.port) : fmt::format("{}:{}", p.coordinator_ip, c.port);
  json args = {"--rank", std::to_string(p.rank), "--world-size", "2", "--coordinator",
               coordinator, "--transport", c.transport, "--timeout",
               std::to_string(c.bench_timeout_s), "-b", c.min_bytes, "-e", c.max_bytes,
               "--verdict-file", "/dev/termination-log", "-o", "json"};
  for (const std::string& t : c.tests) {
    args.push_back("-t");
    args.push_back(t);
  }
  if (!c.provider.empty()) args.insert(args.end(), {"--provider", c.provider});
  if (c.expect == "rdma") args.insert(args.end(), {"--require", "rdma"});
  if (c.min_busbw > 0) args.insert(args.end(), {"--min-busbw", fmt::format("{}", c.min_busbw)});

  json env = json::array();
  for (const auto& [k, v] : c.env) env.push_back({{"name", k}, {"value", v}});
  env.push_back({{"name", "POD_IP"},
                 {"valueFrom", {{"fieldRef", {{"fieldPath", "status.podIP"}}}}}});
  env.push_back({{"name", "TOCSIN_NODE_NAME"},
                 {"valueFrom", {{"fieldRef", {{"fieldPath", "spec.nodeName"}}}}}});
  env.push_back({{"name", "TOCSIN_BENCH_TOKEN"},
                 {"valueFrom",
                  {{"secretKeyRef", {{"name", c.token_secret}, {"key", "token"}}}}}});

  json limits = {{"memory", "2Gi"}};
  json requests = {{"cpu", "500m"}, {"memory", "512Mi"}};
  for (const auto& [res, qty] : c.resources) {
    limits[res] = qty;
    requests[res] = qty;
  }
  json security = {{"allowPrivilegeEscalation", false},
                   {"readOnlyRootFilesystem", true},
                   {"capabilities", {{"drop", {"ALL"}}}}};
  if (c.ipc_lock) {
    security["capabilities"]["add"] = {"IPC_LOCK"};
    // The image runs as user 65532, and an added capability is effective for root only (no
    // ambient capabilities in a pod): as deploy/examples' benchmark Job does.
    security["runAsUser"] = 0;
  } else {
    security["runAsNonRoot"] = true;
  }

  json pod_spec = {
      {"restartPolicy", "Never"},
      {"automountServiceAccountToken", false},
      {"enableServiceLinks", false},
      {"terminationGracePeriodSeconds", 5},
      {"securityContext", {{"seccompProfile", {{"type", "RuntimeDefault"}}}}},
      {"affinity",
       {{"nodeAffinity",
         {{"requiredDuringSchedulingIgnoredDuringExecution",
           {{"nodeSelectorTerms",
             {{{"matchFields",
                {{{"key", "metadata.name"}, {"operator", "In"}, {"values", {p.node}}}}}}}}}}}}}},
      {"containers",
       {{{"name", "bench"},
         {"image", c.image},
         {"command", {"tocsin", "bench", "net"}},
         {"args", args},
         {"env", env},
         {"ports", {{{"name", "coordinator"}, {"containerPort", c.port}}}},
         {"resources", {{"limits", limits}, {"requests", requests}}},
         {"securityContext", security},
         {"terminationMessagePath", "/dev/termination-log"},
         {"terminationMessagePolicy", "File"}}}}};
  if (!c.priority_class.empty()) pod_spec["priorityClassName"] = c.priority_class;
  if (!c.tolerations.empty()) pod_spec["tolerations"] = c.tolerations;

  json job_labels = labels;
  // Kueue admits a Job by this label (its webhook suspends the Job until the queue admits it): a
  // canary that waits in the queue past the deadline is canary.admission.
  if (!c.queue.empty()) job_labels["kueue.x-k8s.io/queue-name"] = c.queue;
  json meta = {{"name", name}, {"namespace", c.ns}, {"labels", job_labels},
               {"annotations", annotations}};
  if (!c.owner_uid.empty()) {
    meta["ownerReferences"] = {{{"apiVersion", "v1"},
                                {"kind", "ConfigMap"},
                                {"name", c.owner_name},
                                {"uid", c.owner_uid},
                                {"blockOwnerDeletion", false}}};
  }
  return {{"apiVersion", "batch/v1"},
          {"kind", "Job"},
          {"metadata", meta},
          {"spec",
           {{"backoffLimit", 0},
            {"parallelism", 1},
            {"completions", 1},
            {"activeDeadlineSeconds", c.active_deadline_s},
            {"ttlSecondsAfterFinished", c.ttl_after_finished_s},
            {"template",
             {{"metadata", {{"labels", labels}, {"annotations", pod_annotations}}},
              {"spec", pod_spec}}}}}};
}

namespace {

const json* At(const json& j, std::initializer_list<const char*> path) {
  const json* cur = &j;
  for (const char* k : path) {
    if (!cur->is_object() || !cur->contains(k)) return nullptr;
    cur = &(*cur)[k];
  }
  return cur;
}

// The pod template of a workload object, or null.
const json* PodTemplate(const json& o, const std::string& kind) {
  if (kind == "Job") return At(o, {"spec", "template"});
  if (kind == "CronJob") return At(o, {"spec", "jobTemplate", "spec", "template"});
  if (kind == "PyTorchJob") {
    for (const char* role : {"Worker", "Master"}) {
      if (auto* t = At(o, {"spec", "pytorchReplicaSpecs", role, "template"})) return t;
    }
  }
  if (kind == "MPIJob") return At(o, {"spec", "mpiReplicaSpecs", "Worker", "template"});
  if (kind == "JobSet") {
    auto* rj = At(o, {"spec", "replicatedJobs"});
    if (rj && rj->is_array() && !rj->empty()) return At((*rj)[0], {"template", "spec", "template"});
  }
  return nullptr;
}

}  // namespace

Result<Reference> ReadReference(const json& o) {
  if (!o.is_object()) return Status::InvalidArgument("the reference is not an object");
  std::string kind = o.value("kind", "");
  Reference r;
  if (kind == "ConfigMap") {
    auto* data = At(o, {"data"});
    if (data && data->is_object()) {
      for (const auto& [k, v] : data->items()) {
        if (FabricEnv(k) && v.is_string()) r.env[k] = v.get<std::string>();
      }
    }
    return r;
  }
  const json* tmpl = PodTemplate(o, kind);
  if (tmpl == nullptr) {
    return Status::InvalidArgument("the reference is a " + (kind.empty() ? "kindless object" : kind) +
                                   " with no pod template: give a ConfigMap, Job, CronJob, "
                                   "PyTorchJob, MPIJob or JobSet");
  }
  auto* containers = At(*tmpl, {"spec", "containers"});
  if (!containers || !containers->is_array() || containers->empty()) {
    return Status::InvalidArgument("the reference's pod template has no containers");
  }
  if (auto* env = At((*containers)[0], {"env"}); env && env->is_array()) {
    for (const json& e : *env) {
      if (!e.is_object() || !e.contains("name") || !e["name"].is_string()) continue;
      std::string name = e["name"].get<std::string>();
      if (!FabricEnv(name)) continue;
      if (e.contains("value") && e["value"].is_string()) {
        r.env[name] = e["value"].get<std::string>();
      } else {
        ++r.skipped;
      }
    }
  }
  if (auto* tol = At(*tmpl, {"spec", "tolerations"}); tol && tol->is_array()) r.tolerations = *tol;
  return r;
}

}  // namespace tocsin::canary
