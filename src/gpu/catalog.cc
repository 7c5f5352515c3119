#include "gpu/catalog.h"

namespace tocsin::gpu {
namespace {

constexpr CheckInfo kChecks[] = {
    {kCount, Severity::kError, "warning if more GPUs than expected; info if none",
     "fewer GPUs than expected, or NVML sees fewer than the PCI bus"},
    {kNvml, Severity::kWarning, "", "NVML failed to initialise or did not answer in time"},
    {kNicAffinity, Severity::kError,
     "warning if the nearest RDMA NIC is only through the host bridge (PHB/NODE)",
     "a GPU whose nearest RDMA NIC is on another NUMA node"},
};

}  // namespace

const CheckCatalog& Catalog() {
  static const CheckCatalog catalog{"gpu", kChecks};
  return catalog;
}

}  // namespace tocsin::gpu
