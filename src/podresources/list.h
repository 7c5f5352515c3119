#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace tocsin::podresources {

// What the agent keeps of the kubelet's PodResources `List` answer: the kubelet is trusted, but
// what it returns is written by device plugins and pod specs, so it is capped like any answer.
struct Limits {
  size_t max_pods = 256;            // the kubelet's default is 110 pods a node
  size_t max_devices_per_pod = 64;  // 8 GPUs, 8 HCAs and their VFs fit many times
  size_t max_name_bytes = 253;      // a namespace or pod name (a DNS subdomain at most)
  size_t max_id_bytes = 128;        // a resource name or device ID
};

struct Device {
  std::string resource;  // "nvidia.com/gpu", "rdma/hca_shared_devices_a", "nvidia.com/sriov_rdma"
  std::string id;        // as the device plugin gave it: a GPU UUID, a PCI address, ...
};

struct Pod {
  std::string ns, name;
  std::vector<Device> devices;  // of all its containers, in the order given, duplicates removed
};

// What the caps and the checks on values left out.
struct Dropped {
  uint64_t pods = 0;     // pods past max_pods
  uint64_t devices = 0;  // devices past max_devices_per_pod
  uint64_t invalid = 0;  // pods and devices whose names or IDs are empty, too long or not
                         // Kubernetes names / printable ASCII (never cut: a cut name joins nothing)
};

struct PodList {
  std::vector<Pod> pods;
  Dropped dropped;
};

// Decodes a v1.ListPodResourcesResponse (protobuf wire format; the fields of
// podresources/api.proto, every other field skipped by its wire type). A message that is not
// well-formed protobuf is an error naming the byte offset; values over the limits are dropped
// and counted, never cut.
Result<PodList> ParseListResponse(std::string_view bytes, const Limits& limits = {});

}  // namespace tocsin::podresources
