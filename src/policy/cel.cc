// The CEL of the admission policies: the audit's job checks (src/audit/jobs.cc) over a job's top
// object and its pod templates. Only standard CEL and its macros (has, exists, all, filter, map,
// matches, contains, startsWith), so that the Kubernetes API server and the parity test's
// evaluator (tests/k8s/policy_parity_test.py) read it the same way.
#include <fmt/format.h>

#include "audit/catalog.h"
#include "policy/policy.h"

namespace tocsin::policy {
namespace {

// Whether container `c` asks for a non-zero quantity of a resource whose name `n` passes `pred`
// (audit's RequestsAny).
std::string Requests(const std::string& pred) {
  auto in = [&](const char* field) {
    return fmt::format(
        "(has(c.resources.{0}) && c.resources.{0}.exists(n, ({1}) && "
        "string(c.resources.{0}[n]) != '0'))",
        field, pred);
  };
  return fmt::format("(has(c.resources) && ({} || {}))", in("limits"), in("requests"));
}

// audit's IsRdmaResource, with the params' names.
constexpr char kIsRdma[] =
    "n.startsWith('rdma/') || n == 'vpc.amazonaws.com/efa' || (n.startsWith('nvidia.com/') && "
    "(n.contains('rdma') || n.contains('hostdev') || n.contains('mlnx'))) || "
    "(has(params.data.rdmaResources) && (',' + params.data.rdmaResources + ',').contains(',' + n "
    "+ ','))";

// The pod sets of each kind (k8s/decode_jobs.cc): count, launcher, partial (TrainJob), the
// template, and JobSet's per-replicatedJob topology annotation. Values are dyn: the map's
// values differ in type.
std::string PodSets() {
  auto set = [](const std::string& count, const std::string& launcher, const std::string& partial,
                const std::string& tmpl, const std::string& topology) {
    return fmt::format(
        "{{'count': dyn({}), 'launcher': dyn({}), 'partial': dyn({}), "
        "'template': dyn({}), 'topology': dyn({})}}",
        count, launcher, partial, tmpl, topology);
  };
  auto replica_specs = [&](const char* field) {
    std::string spec = fmt::format("object.spec.{}[k]", field);
    return fmt::format(
        "(has(object.spec.{0}) ? object.spec.{0} : {{}}).map(k, {1})", field,
        set(fmt::format("has({0}.replicas) ? {0}.replicas : 1", spec),
            "object.kind == 'MPIJob' && k == 'Launcher'", "false", spec + ".template", "false"));
  };
  // fmt, not "[" + std::string: GCC 12 warns -Wrestrict (wrongly) on that at -O3.
  std::string job =
      fmt::format("[{}]", set("has(object.spec.parallelism) ? object.spec.parallelism : 1", "false",
                              "false", "object.spec.template", "false"));
  std::string jobset =
      "(has(object.spec.replicatedJobs) ? object.spec.replicatedJobs : []).map(r, " +
      set("(has(r.replicas) ? r.replicas : 1) * (has(r.template.spec.parallelism) ? "
          "r.template.spec.parallelism : 1)",
          "false", "false", "r.template.spec.template",
          "has(r.template.metadata) && has(r.template.metadata.annotations) && "
          "r.template.metadata.annotations.exists(a, a in variables.topologyAnnotations)") +
      ")";
  std::string trainer = "object.spec.trainer";
  std::string trainjob = fmt::format(
      "[{}]",
      set(fmt::format("has({0}) && has({0}.numNodes) ? {0}.numNodes : 1", trainer), "false", "true",
          fmt::format("{{'spec': {{'containers': [{{'resources': has({0}) && "
                      "has({0}.resourcesPerNode) ? dyn({0}.resourcesPerNode) : dyn({{}}), "
                      "'env': has({0}) && has({0}.env) ? dyn({0}.env) : dyn([])}}]}}}}",
                      trainer),
          "false"));
  return fmt::format(
      "(object.kind == 'Job' ? {} : object.kind == 'JobSet' ? {} : object.kind == 'PyTorchJob' "
      "? {} : object.kind == 'MPIJob' ? {} : object.kind == 'TrainJob' ? {} : []).filter(s, "
      "s.count > 0)",
      job, jobset, replica_specs("pytorchReplicaSpecs"), replica_specs("mpiReplicaSpecs"),
      trainjob);
}

// Pod set `s` asks for the fabric (audit's Requests): an RDMA resource or GKE's interfaces.
std::string Fabric() {
  return "((has(s.template.metadata) && has(s.template.metadata.annotations) && "
         "'networking.gke.io/interfaces' in s.template.metadata.annotations) || " +
         std::string("s.template.spec.containers.exists(c, ") + Requests(kIsRdma) + "))";
}

// Every container of pod set `s`.
std::string AnyContainer(const std::string& cond) {
  return "s.template.spec.containers.exists(c, " + cond + ")";
}

std::string Env(const std::string& cond) { return "(has(c.env) && c.env.exists(e, " + cond + "))"; }

// A placement constraint that names the topology label L (audit's HasTopologyConstraint).
std::string Placed() {
  const std::string L = "params.data.topologyLabel";
  const std::string spec = "s.template.spec";
  const std::string aff = spec + ".affinity";
  return fmt::format(
      "s.topology || (has(s.template.metadata) && has(s.template.metadata.annotations) && "
      "s.template.metadata.annotations.exists(a, a in variables.topologyAnnotations)) || "
      "(has({0}.nodeSelector) && {1} in {0}.nodeSelector) || "
      "(has({0}.topologySpreadConstraints) && {0}.topologySpreadConstraints.exists(t, "
      "t.topologyKey == {1})) || "
      "(has({0}.affinity) && ("
      "(has({2}.nodeAffinity) && "
      "has({2}.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution) "
      "&& "
      "{2}.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms.exists(t, "
      "has(t.matchExpressions) && t.matchExpressions.exists(x, x.key == {1}))) || "
      "(has({2}.podAffinity) && ("
      "(has({2}.podAffinity.requiredDuringSchedulingIgnoredDuringExecution) && "
      "{2}.podAffinity.requiredDuringSchedulingIgnoredDuringExecution.exists(t, t.topologyKey == "
      "{1})) || "
      "(has({2}.podAffinity.preferredDuringSchedulingIgnoredDuringExecution) && "
      "{2}.podAffinity.preferredDuringSchedulingIgnoredDuringExecution.exists(w, "
      "w.podAffinityTerm.topologyKey == {1}))))))",
      spec, L, aff);
}

std::string Message(const char* check, const std::string& text) {
  return fmt::format("'{}: ' + object.kind + ' ' + object.metadata.name + ': {}'", check, text);
}

}  // namespace

const std::vector<std::pair<std::string, std::string>>& Variables() {
  static const std::vector<std::pair<std::string, std::string>> vars = {
      {"topologyAnnotations",
       "['kueue.x-k8s.io/podset-required-topology', 'kueue.x-k8s.io/podset-preferred-topology', "
       "'alpha.jobset.sigs.k8s.io/exclusive-topology']"},
      {"podSets", PodSets()},
      // Pods that run ranks: all but an MPI launcher that asks for neither a GPU nor the fabric.
      {"training", "variables.podSets.filter(s, !s.launcher || " +
                       AnyContainer(Requests("n.contains('gpu')")) + " || " + Fabric() + ")"},
      {"multiNode",
       "variables.training.size() > 1 || variables.training.exists(s, s.count > 1) || "
       "variables.podSets.exists(s, " +
           AnyContainer(Env("e.name == 'WORLD_SIZE' && has(e.value) && "
                            "e.value.matches('^[0-9]+$') && int(e.value) > 1")) +
           ")"},
      {"partial", "variables.podSets.exists(s, s.partial)"},
      {"rdma", "variables.training.exists(s, " + Fabric() + ")"},
      {"topAnnotated",
       "has(object.metadata.annotations) && object.metadata.annotations.exists(a, a in "
       "variables.topologyAnnotations)"},
  };
  return vars;
}

const std::vector<Rule>& Rules() {
  static const std::vector<Rule> rules = {
      {audit::kJobRdmaNotRequested, "!variables.multiNode || variables.rdma",
       Message(audit::kJobRdmaNotRequested,
               "a multi-node job whose pods request no RDMA resource: NCCL falls back to TCP "
               "sockets without an error (about half the throughput); this cluster advertises: ") +
           " + (has(params.data.advertisedRdmaResources) ? params.data.advertisedRdmaResources : "
           "'')"},
      {audit::kJobNcclFallbackEnv,
       "!variables.multiNode || !variables.podSets.exists(s, " +
           AnyContainer(Env("has(e.value) && ((e.name == 'NCCL_IB_DISABLE' && e.value == '1') "
                            "|| (e.name == 'NCCL_NET' && e.value.matches('(?i)^socket$')))")) +
           ")",
       Message(audit::kJobNcclFallbackEnv,
               "the pod spec sets NCCL_IB_DISABLE=1 or NCCL_NET=Socket: NCCL will not use the "
               "fabric")},
      {audit::kJobRdmaNoNetwork,
       "!variables.multiNode || variables.partial || !has(params.data.fabricNetwork) || "
       "params.data.fabricNetwork == '' || variables.training.all(s, has(s.template.metadata) && "
       "has(s.template.metadata.annotations) && 'k8s.v1.cni.cncf.io/networks' in "
       "s.template.metadata.annotations && "
       "s.template.metadata.annotations['k8s.v1.cni.cncf.io/networks'].contains("
       "params.data.fabricNetwork))",
       Message(audit::kJobRdmaNoNetwork,
               "pods do not attach the fabric network (k8s.v1.cni.cncf.io/networks) ") +
           " + params.data.fabricNetwork"},
      {audit::kJobRdmaNoIpcLock,
       "!variables.multiNode || variables.partial || !variables.rdma || "
       "(has(params.data.ipcLockNeeded) && params.data.ipcLockNeeded == 'false') || "
       "variables.training.all(s, " +
           AnyContainer("has(c.securityContext) && ((has(c.securityContext.privileged) && "
                        "c.securityContext.privileged) || (has(c.securityContext.capabilities) && "
                        "has(c.securityContext.capabilities.add) && "
                        "c.securityContext.capabilities.add.exists(x, x in ['IPC_LOCK', "
                        "'CAP_IPC_LOCK', 'ALL'])))") +
           ")",
       Message(audit::kJobRdmaNoIpcLock,
               "pods request RDMA without IPC_LOCK (or privileged): RDMA memory registration "
               "needs locked memory")},
      {audit::kJobRdmaHostpathDevices,
       "!variables.multiNode || variables.partial || !variables.training.exists(s, "
       "has(s.template.spec.volumes) && s.template.spec.volumes.exists(v, has(v.hostPath) && "
       "(v.hostPath.path.matches('^/dev(/infiniband)?/*$') || "
       "v.hostPath.path.startsWith('/dev/infiniband/'))))",
       Message(audit::kJobRdmaHostpathDevices,
               "pods mount /dev/infiniband (or /dev) by hostPath: the devices bypass the device "
               "plugin (not allocated, not counted, not isolated); request the RDMA resource "
               "instead")},
      {audit::kJobPlacementNoTopology,
       "!variables.multiNode || variables.partial || !has(params.data.topologyLabel) || "
       "params.data.topologyLabel == '' || variables.topAnnotated || "
       "variables.training.exists(s, " +
           Placed() + ")",
       Message(audit::kJobPlacementNoTopology,
               "no pod constrains its placement by the topology label ") +
           " + params.data.topologyLabel + ' (nodeSelector, node or pod affinity, "
           "topologySpreadConstraints, Kueue or JobSet topology annotations): the scheduler may "
           "spread it over blocks'"},
  };
  return rules;
}

}  // namespace tocsin::policy
