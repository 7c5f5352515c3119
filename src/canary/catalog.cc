#include "canary/catalog.h"

namespace tocsin::canary {
namespace {

constexpr CheckInfo kChecks[] = {
    {kUnschedulable, Severity::kError, "", "a canary rank Pending past its deadline"},
    {kAdmission, Severity::kWarning, "",
     "a canary Job made no pod in time (a queue or an admission refused it)"},
    {kNodeAdmission, Severity::kError, "", "the kubelet refused the canary pod"},
    {kSandbox, Severity::kError, "", "a canary pod scheduled but not started in time (CNI)"},
    {kImage, Severity::kError, "", "the canary image cannot be pulled"},
    {kRankFailed, Severity::kError, "",
     "a canary rank exited non-zero, without a verdict, or hit its deadline"},
    {kTransportNotRdma, Severity::kError, "",
     "the canary ranks ran over sockets while RDMA was expected"},
    {kBusbwLow, Severity::kWarning, "", "a canary test's bus bandwidth below its floor"},
    {kPlacement, Severity::kWarning, "", "a canary rank ran elsewhere than planned"},
    {kStale, Severity::kWarning, "", "no passing canary on a fabric node for too long"},
    {kSetup, Severity::kError, "",
     "canaries cannot run: RBAC, reference, history or no node advertises the resource"},
};

}  // namespace

const CheckCatalog& Catalog() {
  static const CheckCatalog catalog{"canary", kChecks};
  return catalog;
}

}  // namespace tocsin::canary
