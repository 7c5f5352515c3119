#include "rdma/catalog.h"

namespace tocsin::rdma {
namespace {

constexpr CheckInfo kChecks[] = {
    {kDeviceMissing, Severity::kError, "info without --expect-rdma-ports",
     "fewer ACTIVE RDMA ports than expected, or no RDMA at all"},
    {kPortDown, Severity::kError, "warning when administratively disabled",
     "a port not ACTIVE or not LinkUp"},
    {kPortRate, Severity::kError,
     "warning when only slower than the other ports of the same HCA model",
     "a degraded link: lanes or speed grade lost"},
    {kPortLinkLayer, Severity::kError, "", "a port whose link layer is not the expected one"},
    {kPortErrors, Severity::kWarning, "", "non-zero error counters on a port"},
};

}  // namespace

const CheckCatalog& Catalog() {
  static const CheckCatalog catalog{"rdma", kChecks};
  return catalog;
}

}  // namespace tocsin::rdma
