#include "nccl/catalog.h"

namespace tocsin::nccl {
namespace {

constexpr CheckInfo kChecks[] = {
    {kTransportSocket, Severity::kError, "",
     "a rank whose inter-node traffic goes over TCP sockets while RDMA is expected"},
    {kTransportMixed, Severity::kError, "", "ranks of one communicator on different networks"},
    {kTransportUnknown, Severity::kWarning, "",
     "RDMA expected and no process logged its inter-node network"},
    {kGdrAbsent, Severity::kWarning, "",
     "RDMA channels without GPUDirect RDMA while it is expected"},
    {kInitFailed, Severity::kError, "", "an NCCL WARN that failed a communicator's init"},
    {kWarn, Severity::kInfo, "", "an NCCL WARN that did not fail init, with its text"},
    {kLogNoDebug, Severity::kWarning, "", "no NCCL INFO line at all: cannot tell"},
    {kLogCapped, Severity::kWarning, "",
     "more input than the analyzer keeps: the rest was not analysed"},
    {kEnvRisky, Severity::kWarning, "",
     "the log shows a setting that disables or degrades the fabric"},
    {kBusbwLow, Severity::kError, "", "nccl-tests bus bandwidth below its floor"},
    {kWrong, Severity::kError, "", "nccl-tests found wrong results"},
};

}  // namespace

const CheckCatalog& Catalog() {
  static const CheckCatalog catalog{"nccl", kChecks};
  return catalog;
}

}  // namespace tocsin::nccl
