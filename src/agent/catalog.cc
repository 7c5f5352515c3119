#include "agent/catalog.h"

namespace tocsin::agent {
namespace {

constexpr CheckInfo kChecks[] = {
    {kFabricIdleWhileTcpBusy, Severity::kError, "",
     "RDMA data counters idle while TCP moves bulk traffic: a job trains over sockets"},
    {kStorageProbe, Severity::kError, "",
     "the agent's storage probe failed, timed out or could not run"},
};

}  // namespace

const CheckCatalog& Catalog() {
  static const CheckCatalog catalog{"agent", kChecks};
  return catalog;
}

}  // namespace tocsin::agent
