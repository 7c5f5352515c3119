#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/time.h"

namespace tocsin::k8s {

// The fields of Kubernetes objects that tocsin's checks read (core/v1, apps/v1); everything else
// is skipped while decoding. Status counters the API omits when zero default to 0.

using StringMap = std::map<std::string, std::string>;

struct Condition {
  std::string type;
  std::string status;  // "True", "False", "Unknown"
  std::string reason;
  std::string message;
  std::optional<TimePoint> last_transition;
};

struct OwnerRef {
  std::string kind;
  std::string name;
  std::string uid;
};

// Decoding keeps what the checks read, so that a 100,000-pod snapshot fits in memory beside its
// text: extended resources only (names with a '/'), NCCL_* and WORLD_SIZE variables only.
struct Container {
  std::string name;
  std::string image;
  StringMap requests;  // extended resources (rdma/..., nvidia.com/gpu, ...)
  StringMap limits;
  StringMap env;  // NCCL_* and WORLD_SIZE; valueFrom entries are kept with an empty value
  std::vector<std::string> capabilities_add;
  bool privileged = false;
};

struct ContainerStatus {
  std::string name;
  std::string image;
  int64_t restart_count = 0;
  bool ready = false;
  std::string waiting_reason;
  std::string waiting_message;
  std::string last_terminated_reason;
  std::optional<int64_t> last_exit_code;
  std::optional<TimePoint> last_terminated_finished;
  // state.terminated: how the container ended (a canary's verdict is its message).
  std::string terminated_reason;
  std::optional<int64_t> exit_code;
  std::optional<TimePoint> finished;
  std::string termination_message;  // kept for tocsin's canary pods only
};

struct Pod {
  std::string ns, name, uid, node_name, phase;
  std::string reason, message;  // status.reason/message (the kubelet's UnexpectedAdmissionError)
  std::string pod_ip;
  // Job-grouping labels only (training.kubeflow.org/, jobset..., job-name) and tocsin.io/ ones.
  StringMap labels;
  StringMap annotations;  // k8s.v1.cni.cncf.io/networks and tocsin.io/ ones only
  std::optional<TimePoint> created;
  std::vector<OwnerRef> owners;
  std::vector<Container> containers;
  std::vector<std::string> host_paths;      // spec.volumes[].hostPath.path
  std::vector<std::string> shared_volumes;  // volumes backed by a PVC, NFS, CSI or similar
  // Label keys the pod's placement names: nodeSelector keys, required node-affinity keys,
  // pod-affinity and topology-spread topologyKeys (job.placement.no-topology).
  std::vector<std::string> topology_keys;
  std::vector<Condition> conditions;
  std::vector<ContainerStatus> statuses;

  const Condition* FindCondition(const std::string& type) const;
  bool IsReady() const;
};

struct Node {
  std::string name, uid;
  StringMap labels;
  StringMap annotations;  // tocsin.io/ ones only (the agent's fabric facts)
  StringMap allocatable;
  // status.nodeInfo: kernelVersion, osImage, containerRuntimeVersion, kubeletVersion,
  // operatingSystem, architecture (machineID, systemUUID and bootID are left out: volatile).
  StringMap node_info;
  std::optional<TimePoint> created;
  bool unschedulable = false;
  std::vector<Condition> conditions;

  const Condition* FindCondition(const std::string& type) const;
};

struct DaemonSet {
  std::string ns, name, uid;
  std::optional<TimePoint> created;
  StringMap node_selector;     // spec.template.spec.nodeSelector
  bool node_affinity = false;  // spec.template.spec.affinity.nodeAffinity is set
  std::vector<std::string> images;
  std::vector<std::string> args;         // the containers' command and args
  std::vector<std::string> config_maps;  // spec.template.spec.volumes[].configMap.name
  int64_t desired = 0;                   // desiredNumberScheduled
  int64_t current = 0;                   // currentNumberScheduled
  int64_t ready = 0;                     // numberReady
  int64_t available = 0;                 // numberAvailable (omitempty)
  int64_t unavailable = 0;               // numberUnavailable (omitempty)
  int64_t misscheduled = 0;              // numberMisscheduled
};

// A ConfigMap's data, only the entries that hold a device plugin's config (a value that
// mentions "resourceList" or "configList"): the rest of a cluster's ConfigMaps is skipped.
struct ConfigMap {
  std::string ns, name;
  StringMap data;
};

// One pod template of a job's top object and how many pods it makes at once (a Job's
// parallelism, a JobSet's replicas x parallelism, a Kubeflow replica spec's replicas, a TrainJob's
// numNodes). docs/FORMATS.md, "Training operators", has each kind's paths.
struct PodSet {
  std::string role;  // "Worker", "Launcher", a JobSet's replicatedJob name; "" for a Job
  int64_t count = 1;
  Pod pod;  // the template as a pod: labels, annotations, containers, volumes, placement
  // TrainJob: the pod comes from its TrainingRuntime, of which the TrainJob holds only the trainer
  // container's resources and env; what the runtime holds (capabilities, networks, volumes,
  // placement) is not judged.
  bool partial = false;
};

// A training job's top object (batch Job, Kubeflow PyTorchJob/MPIJob, JobSet, TrainJob): what
// Events about the job name, and its pod templates (what the audit judges of a job that has no
// pods yet, and what the admission webhook judges).
struct ObjectRef {
  std::string kind, ns, name, uid;
  bool owned = false;     // has an owner (a JobSet's Jobs, a TrainJob's JobSet)
  bool finished = false;  // a condition Complete, Succeeded or Failed is True
  std::vector<PodSet> pod_sets;
};

// GKE multi-networking's annotation that attaches a pod's additional (GPU) NICs: how
// GPUDirect-TCPX/TCPXO jobs ask for the fabric. Kept on pods and templates.
inline constexpr char kGkeInterfacesAnnotation[] = "networking.gke.io/interfaces";

// The kinds decoded into Snapshot::jobs.
bool IsJobKind(const std::string& kind);
// A DNS-1123 subdomain (what names most objects and every namespace: lower-case letters,
// digits, '-' and '.', starting and ending alphanumeric, at most 253 characters): safe in an
// API path.
bool IsObjectName(std::string_view name);
// Annotations that place a job's pods in one topology domain: Kueue's podset-required-topology
// and podset-preferred-topology, JobSet's exclusive-topology (kept on pods and templates).
bool IsTopologyAnnotation(std::string_view key);

// What `tocsin diff` compares beyond the audit's kinds (docs/FORMATS.md, "Fabric configuration").

// A NetworkAttachmentDefinition (k8s.cni.cncf.io/v1): its CNI config, a JSON string in
// spec.config, read by ParseCniConfig (cni.h) while decoding.
struct NetworkAttachment {
  std::string ns, name;
  std::string resource_name;                           // annotation k8s.v1.cni.cncf.io/resourceName
  std::string cni_name, type, master, mtu, ipam_type;  // from the config; "" when absent
  std::string config_error;  // why spec.config could not be read ("" when it could)
};

// An SR-IOV network operator SriovNetworkNodePolicy (sriovnetwork.openshift.io/v1).
struct SriovPolicy {
  std::string ns, name;
  std::string resource_name, device_type, link_type;
  int64_t num_vfs = 0, mtu = 0, priority = 0;
  bool is_rdma = false;
  StringMap node_selector;
  std::vector<std::string> pf_names, root_devices;
  std::string vendor, device_id;
};

// One component of the NVIDIA network operator's NicClusterPolicy (mellanox.com/v1alpha1):
// spec.<name> (ofedDriver, rdmaSharedDevicePlugin, sriovDevicePlugin, nvIpam, ...) or
// spec.secondaryNetwork.<name> ("secondaryNetwork.multus").
struct OperatorComponent {
  std::string name, repository, image, version;
  std::string config;  // the device plugins' config (a JSON string), when given
};
struct NicClusterPolicy {
  std::string name;
  std::vector<OperatorComponent> components;
};

// A workload's pod templates (Job, CronJob, JobSet, PyTorchJob, MPIJob): containers with their
// NCCL_*, UCX_*, FI_* env and extended-resource requests; each container's name is prefixed by
// its replica ("Worker/pytorch"; a Job's and a CronJob's have none).
struct Workload {
  std::string kind, ns, name;
  bool owned = false;  // has an ownerReference (a CronJob's Job, a JobSet's Job): not a template
  std::vector<Container> containers;
};

// The kinds decoded into Snapshot::workloads.
bool IsWorkloadKind(const std::string& kind);

struct Snapshot {
  std::vector<Node> nodes;
  std::vector<Pod> pods;
  std::vector<DaemonSet> daemonsets;
  std::vector<ConfigMap> configmaps;
  std::vector<ObjectRef> jobs;
  std::vector<NetworkAttachment> networks;
  std::vector<SriovPolicy> sriov_policies;
  std::vector<NicClusterPolicy> nic_policies;
  std::vector<Workload> workloads;
  // Keep each decoded object's JSON text (what `tocsin snapshot` writes): set before decoding.
  bool keep_raw = false;
  std::vector<std::string> raw;
  std::vector<std::string> sources;
  std::map<std::string, int> other_kinds;  // kinds seen and not checked (Job, Service, ...)
  std::vector<std::string> load_errors;    // objects that could not be read (LoadCluster)
};

// The sizes of a snapshot's lists, to drop what was appended since (a list restarted).
class SnapshotMark {
 public:
  explicit SnapshotMark(const Snapshot& s);
  void Restore(Snapshot& s) const;

 private:
  size_t nodes_, pods_, daemonsets_, configmaps_, jobs_, networks_, sriov_, nic_, workloads_, raw_,
      sources_;
};

}  // namespace tocsin::k8s
