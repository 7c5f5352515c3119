#include "jobview/catalog.h"

namespace tocsin::jobview {
namespace {

constexpr CheckInfo kChecks[] = {
    {kFabricFallback, Severity::kError, "",
     "a node of the job runs NCCL over sockets, or its GPUs wait while Ethernet is busy and RDMA "
     "idle"},
    {kStorageStall, Severity::kWarning, "",
     "the job's GPUs on a node drop while its shared storage is slow (a checkpoint that stalls)"},
    {kNetworkStraggler, Severity::kWarning, "",
     "one node of the job moves less than half the median of its peers' fabric bytes"},
};

}  // namespace

const CheckCatalog& Catalog() {
  static const CheckCatalog catalog{"jobview", kChecks};
  return catalog;
}

}  // namespace tocsin::jobview
