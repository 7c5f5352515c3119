#include "audit/catalog.h"

namespace tocsin::audit {
namespace {

constexpr CheckInfo kChecks[] = {
    {kDaemonSetNotReady, Severity::kWarning,
     "error when half its nodes or more lack a ready pod, or after an hour; critical when both "
     "half and a day",
     "a device-plugin DaemonSet with pods not ready"},
    {kDaemonSetCoverage, Severity::kError, "", "a fabric node with no ready device-plugin pod"},
    {kNodeRdmaUnadvertised, Severity::kError, "",
     "a fabric node whose allocatable has no RDMA resource"},
    {kPodCrashloop, Severity::kError, "", "a pod waiting in CrashLoopBackOff"},
    {kNodeNotReady, Severity::kError, "", "a node whose Ready condition is not True"},
    {kInputIncomplete, Severity::kWarning, "info for subject pods",
     "the input had no Node or no Pod objects: checks did not run"},
    {kFabricNone, Severity::kInfo, "", "no node was recognised as a fabric node"},
    {kJobRdmaNotRequested, Severity::kError, "",
     "no pod of a multi-node job requests an RDMA resource"},
    {kJobNcclFallbackEnv, Severity::kError, "",
     "a pod of the job sets NCCL_IB_DISABLE=1 or NCCL_NET=Socket"},
    {kJobRdmaNoNetwork, Severity::kError, "",
     "pods of the job without the fabric network attachment"},
    {kJobRdmaNoIpcLock, Severity::kWarning, "", "pods request RDMA without IPC_LOCK"},
    {kJobRdmaHostpathDevices, Severity::kWarning, "",
     "training pods mount /dev/infiniband (or /dev) by hostPath, around the device plugin"},
    {kJobPlacementNoTopology, Severity::kWarning, "",
     "no training pod of the job constrains its placement by the topology label"},
    {kJobPlacementSpread, Severity::kWarning, "",
     "the job's nodes span more than one topology block"},
    {kJobPlacementNonFabric, Severity::kError, "",
     "a training pod on a node without RDMA hardware"},
    {kJobStorageNoSharedVolume, Severity::kWarning, "", "no pod of the job mounts a shared volume"},
};

}  // namespace

const CheckCatalog& Catalog() {
  static const CheckCatalog catalog{"audit", kChecks};
  return catalog;
}

}  // namespace tocsin::audit
