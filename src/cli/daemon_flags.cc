#include "cli/daemon_flags.h"

#include <cstdlib>

#include "audit/catalog.h"
#include "base/time.h"

namespace tocsin::cli {

Status ParseDurationFlag(const std::string& flag, const std::string& text,
                         std::chrono::milliseconds& out) {
  auto d = ParseDuration(text);
  if (!d) {
    return Status::InvalidArgument(flag + ": not a duration: \"" + text +
                                   "\" (e.g. 500ms, 15s, 2m; at most 24h)");
  }
  if (d->count() <= 0) return Status::InvalidArgument(flag + ": must be more than 0");
  out = *d;
  return Status::Ok();
}

Status ParseListen(const std::string& text, std::string& host, int& port) {
  auto colon = text.rfind(':');
  char* end = nullptr;
  long p = colon == std::string::npos ? -1 : std::strtol(text.c_str() + colon + 1, &end, 10);
  if (colon == std::string::npos || end == nullptr || end == text.c_str() + colon + 1 ||
      *end != '\0' || p < 0 || p > 65535) {
    return Status::InvalidArgument("--listen \"" + text + "\": expected HOST:PORT (port 0: any)");
  }
  host = colon == 0 ? "0.0.0.0" : text.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);  // [::]:9464
  }
  port = static_cast<int>(p);
  return Status::Ok();
}

void AuditCheckFlags::AddTo(CLI::App* cmd) {
  cmd->add_option("--device-plugin", device_plugins,
                  "RDMA device-plugin DaemonSet NAMESPACE/NAME (repeatable; default: recognised "
                  "by name or image)");
  cmd->add_option("--fabric-nodes", fabric_nodes,
                  "Label selector k=v[,k2=v2] for nodes with RDMA hardware (default: Node Feature "
                  "Discovery labels)");
  cmd->add_option("--rdma-resource", rdma_resources,
                  "Extended resource that grants the fabric (repeatable; rdma/*, "
                  "vpc.amazonaws.com/efa, nvidia.com/*rdma*|*hostdev* and the pools the device "
                  "plugins' ConfigMaps declare are known)");
  cmd->add_option("--fabric-network", fabric_network,
                  "Multus network that carries the fabric: multi-node job pods must attach it");
  cmd->add_option("--topology-label", topology_label,
                  "Node label whose values are topology blocks (default: "
                  "cloud.google.com/gce-topology-block, network.topology.nvidia.com/block, "
                  "topology.k8s.aws/network-node-layer-1, topology.kubernetes.io/zone)");
  cmd->add_flag("--ipc-lock-not-needed", ipc_lock_not_needed,
                "The platform lets RDMA pods lock memory without IPC_LOCK: no " +
                    std::string(audit::kJobRdmaNoIpcLock));
}

Status AuditCheckFlags::Apply(audit::Options& options) const {
  for (const auto& dp : device_plugins) {
    if (dp.find('/') == std::string::npos) {
      return Status::InvalidArgument("--device-plugin wants NAMESPACE/NAME, got \"" + dp + "\"");
    }
  }
  options.device_plugins = device_plugins;
  options.rdma_resources = rdma_resources;
  options.fabric_network = fabric_network;
  options.topology_label = topology_label;
  options.ipc_lock_needed = !ipc_lock_not_needed;
  if (!fabric_nodes.empty()) {
    auto sel = audit::ParseSelector(fabric_nodes);
    if (!sel.ok()) return sel.status();
    options.fabric_selector = *sel;
  }
  return Status::Ok();
}

}  // namespace tocsin::cli
