#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agent/scheduler.h"
#include "k8s/objects.h"
#include "podresources/list.h"
#include "sys/env.h"

namespace tocsin::agent {

struct PodsTaskOptions {
  std::string socket_path;  // the kubelet's PodResources socket (in the agent's own filesystem)
  std::chrono::milliseconds call_timeout{5000};
  std::string node_name;  // the `node` label of tocsin_pod_info ("": the host name)
  podresources::Limits limits;
  // This node's pods with their labels (the job owner); null without Kubernetes: no job names,
  // so no tocsin_pod_info. Called when the kubelet names a pod not listed yet, else every
  // `relist_every`.
  std::function<Result<std::vector<k8s::Pod>>()> list_pods;
  std::chrono::milliseconds relist_every{std::chrono::minutes(5)};
  // Non-empty: the call is made by a child process of this binary (podresources::ListInChild),
  // so that the agent never maps gRPC; empty: in this process (podresources::List).
  std::string self_exe;
  // Tests: the answer instead of the socket (null: the above).
  std::function<Result<podresources::PodList>()> list_resources;
};

// The `pods` task: which pod holds which GPUs and RDMA devices, from the kubelet's PodResources
// `List` (podresources::ListInChild: a child process loads the module tocsin-podresources.so, so
// the agent never maps gRPC), and which training job each pod belongs to (audit::JobName of the
// pod's labels). Exports tocsin_pod_info, tocsin_pod_device_info, tocsin_podresources_up and
// tocsin_pod_attribution_dropped. A GPU's device-plugin ID (its UUID) becomes its PCI address by
// the driver's /proc/driver/nvidia/gpus/<addr>/information; a PCI address (SR-IOV VFs, RDMA
// device plugins) becomes the RDMA device under /sys/bus/pci/devices/<addr>/infiniband/. A
// socket that does not answer gives tocsin_podresources_up 0 and no attribution at all, never
// the last one. It has no check of its own: its series are the job's view's input.
TaskSpec PodsTask(std::function<std::unique_ptr<Env>()> new_env, PodsTaskOptions options);
TaskSpec PodsTask(const std::string& root, PodsTaskOptions options);

}  // namespace tocsin::agent
