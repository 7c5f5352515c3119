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
    {kDataMissing, Severity::kWarning, "",
     "a node of the job has no GPU, RDMA or Ethernet series in the window: its verdicts cannot "
     "be judged (an agent or a task down, no attribution)"},
};

}  // namespace

const CheckCatalog& Catalog() {
  static const CheckCatalog catalog{"jobview", kChecks};
  return catalog;
}

}  // namespace tocsin::jobview
