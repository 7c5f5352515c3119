// What `tocsin audit`, `tocsin snapshot` and `tocsin diff` list from a live cluster.
#include <string>

#include "k8s/api_client.h"
#include "k8s/decode.h"

namespace tocsin::k8s {
namespace {

struct Collection {
  const char* path;
  const char* kind;
};

// The collections the audit reads: always served.
constexpr Collection kAuditCollections[] = {
    {"/api/v1/nodes", "Node"}, {"/api/v1/pods", "Pod"}, {"/apis/apps/v1/daemonsets", "DaemonSet"}};

// What drift compares (docs/FORMATS.md, "Fabric configuration"). Custom resources and newer
// versions may not be served: a 404 goes on to the next alternative of the same kind, or to the
// next kind (CronJob is batch/v1beta1 before 1.21).
constexpr Collection kFabricCollections[] = {
    {"/api/v1/nodes", "Node"},
    {"/apis/apps/v1/daemonsets", "DaemonSet"},
    {"/apis/k8s.cni.cncf.io/v1/network-attachment-definitions", "NetworkAttachmentDefinition"},
    {"/apis/sriovnetwork.openshift.io/v1/sriovnetworknodepolicies", "SriovNetworkNodePolicy"},
    {"/apis/mellanox.com/v1alpha1/nicclusterpolicies", "NicClusterPolicy"},
    {"/apis/batch/v1/jobs", "Job"},
    {"/apis/batch/v1/cronjobs", "CronJob"},
    {"/apis/batch/v1beta1/cronjobs", "CronJob"},
    {"/apis/kubeflow.org/v1/pytorchjobs", "PyTorchJob"},
    {"/apis/kubeflow.org/v2beta1/mpijobs", "MPIJob"},
    {"/apis/kubeflow.org/v1/mpijobs", "MPIJob"},
    {"/apis/jobset.x-k8s.io/v1alpha2/jobsets", "JobSet"},
};

// Lists each collection (one source per cluster, not per page); with `optional`, a collection
// that is not served (404) is skipped, and a kind already listed is not listed again from an
// older version.
// With `partial`, its `have` kinds are not listed and a kind that fails (other than 404) is
// recorded there instead of failing the load.
template <size_t N>
Status ListAll(ApiClient& client, const Collection (&collections)[N], bool optional,
               Snapshot& out, FabricLoad* partial = nullptr) {
  std::string listed = ",";  // ",Kind,Kind,"
  if (partial != nullptr) {
    for (const std::string& kind : partial->have) listed += kind + ",";
  }
  for (const Collection& c : collections) {
    std::string key = std::string(c.kind) + ",";
    if (listed.find("," + key) != std::string::npos) continue;
    SnapshotMark mark(out);
    size_t sources = out.sources.size();
    Status st = client.List(c.path, c.kind, out);
    if (optional && st.code() == StatusCode::kNotFound) {
      mark.Restore(out);
      continue;
    }
    if (!st.ok() && partial != nullptr && !client.aborted()) {
      mark.Restore(out);
      partial->unreadable.emplace_back(c.kind, st.message());
      listed += key;  // an older version of the same kind is not tried after a refusal
      continue;
    }
    if (!st.ok()) return st;
    listed += key;
    out.sources.resize(sources);
  }
  return Status::Ok();
}

// GETs the ConfigMaps mounted by the DaemonSets `read_configs_of` accepts.
void ReadConfigs(ApiClient& client, Snapshot& out,
                 const std::function<bool(const DaemonSet&)>& read_configs_of) {
  size_t sources = out.sources.size();
  size_t daemonsets = out.daemonsets.size();  // a body of another kind must not extend the loop
  for (size_t i = 0; read_configs_of && i < daemonsets; ++i) {
    if (!read_configs_of(out.daemonsets[i])) continue;
    std::string ns = out.daemonsets[i].ns;
    std::vector<std::string> names = out.daemonsets[i].config_maps;  // copied: decoding appends
    for (const std::string& name : names) {
      auto body = client.Get("/api/v1/namespaces/" + ns + "/configmaps/" + name);
      Status st = body.ok() ? DecodeJson(*body, ns + "/" + name, out) : body.status();
      if (!st.ok() && st.code() != StatusCode::kNotFound) out.load_errors.push_back(st.message());
    }
  }
  out.sources.resize(sources);
}

}  // namespace

Status LoadCluster(ApiClient& client, Snapshot& out,
                   const std::function<bool(const DaemonSet&)>& read_configs_of) {
  TOCSIN_RETURN_IF_ERROR(ListAll(client, kAuditCollections, false, out));
  ReadConfigs(client, out, read_configs_of);
  out.sources.push_back(client.access().server);
  return Status::Ok();
}

Status LoadFabric(ApiClient& client, Snapshot& out,
                  const std::function<bool(const DaemonSet&)>& read_configs_of,
                  FabricLoad* partial) {
  TOCSIN_RETURN_IF_ERROR(ListAll(client, kFabricCollections, true, out, partial));
  ReadConfigs(client, out, read_configs_of);
  out.sources.push_back(client.access().server);
  return Status::Ok();
}

}  // namespace tocsin::k8s
