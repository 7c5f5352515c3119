#include "drift/catalog.h"

namespace tocsin::drift {
namespace {

constexpr CheckInfo kChecks[] = {
    {kClassMixed, Severity::kWarning, "",
     "the nodes of one class on one side disagree on a fact (outliers listed)"},
    {kClassMissing, Severity::kWarning, "", "a node class exists on one side only"},
    {kInputEmpty, Severity::kWarning, "",
     "one side holds nothing diff compares (nothing is compared against it: an error), or no "
     "Node or no DaemonSet objects (that part was not compared: a warning)"},
    {kInputUnreadable, Severity::kWarning, "",
     "the controller's baseline or a kind of its live side cannot be read: tocsin cannot know "
     "whether that part drifted"},
    {kRdmaResource, Severity::kError, "",
     "an RDMA resource's name or count differs: jobs asking for it will not schedule on one side"},
    {kPluginMissing, Severity::kError, "", "an RDMA device plugin runs on one side only"},
    {kPluginImage, Severity::kWarning, "",
     "a device plugin's or network operator component's image version differs"},
    {kPluginConfig, Severity::kWarning, "",
     "a device plugin pool's selectors or other settings differ"},
    {kNetworkAttachment, Severity::kError, "warning when only the IPAM type differs",
     "a network attachment's name, type, master, MTU or resource differs"},
    {kSriovPolicy, Severity::kError, "warning when only the NIC selector differs",
     "an SR-IOV node policy's VFs, MTU, link type, RDMA or device type differs"},
    {kTemplateNccl, Severity::kWarning, "error when one side disables the fabric",
     "a job template's NCCL_IB_HCA, NCCL_SOCKET_IFNAME, NCCL_NET_PLUGIN, NCCL_NET or "
     "NCCL_IB_DISABLE differs"},
    {kTemplateEnv, Severity::kInfo, "", "a job template's other NCCL_*, UCX_* or FI_* differs"},
    {kTemplateResources, Severity::kWarning, "",
     "a job template's extended-resource requests or limits differ"},
    {kTemplateMissing, Severity::kInfo, "", "a job template exists on one side only"},
    {kNodeDriver, Severity::kWarning, "info when only the minor version differs",
     "a node class's GPU driver or MOFED major version differs"},
    {kNodeFirmware, Severity::kWarning, "", "a node class's HCA firmware differs"},
    {kNodeFabric, Severity::kWarning, "error when the link layer differs",
     "a node class's HCA link layer, rate, MTU, board or count differs, or a node's fabric "
     "facts annotation cannot be read"},
    {kNodeSoftware, Severity::kInfo, "",
     "a node class's kernel, OS, runtime, kubelet, CUDA or feature labels differ"},
};

}  // namespace

const CheckCatalog& Catalog() {
  static const CheckCatalog catalog{"drift", kChecks};
  return catalog;
}

}  // namespace tocsin::drift
