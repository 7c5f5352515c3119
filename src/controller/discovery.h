#pragma once

#include <string>
#include <vector>

#include "controller/informer.h"
#include "k8s/api_client.h"

namespace tocsin::controller {

// What the controller always watches: nodes, pods, daemonsets, jobs.
std::vector<Resource> CoreResources();

// The training operators' kinds (PyTorchJob, MPIJob: kubeflow.org/v1; JobSet:
// jobset.x-k8s.io/v1alpha2), one discovery GET per group version.
struct CrdDiscovery {
  std::vector<Resource> found;       // served: to be watched
  std::vector<std::string> unknown;  // resources whose discovery failed (not a 404): retried
  std::vector<std::string> absent;   // not served (a 404, or not in the group): looked for again
  std::vector<std::string> errors;   // why, one per failed group version
};
// Looks for the kinds named in `wanted` (resource names; all three when empty).
CrdDiscovery DiscoverCrds(k8s::ApiClient& client, const std::vector<std::string>& wanted = {});

}  // namespace tocsin::controller
