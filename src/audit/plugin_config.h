#pragma once

#include "audit/checks.h"

namespace tocsin::audit {

// The RDMA resources that the device plugins' own ConfigMaps declare (docs/FORMATS.md, "RDMA
// device plugins"): the ConfigMaps mounted by the RDMA device-plugin DaemonSets (IsDevicePlugin),
// as found in the snapshot. SR-IOV network device plugin pools with isRdma are
// <resourcePrefix or --resource-prefix, default intel.com>/<resourceName>; every pool of the
// shared RDMA plugin is <resourcePrefix, default rdma>/<resourceName>.
PluginConfig ReadPluginConfig(const k8s::Snapshot& snapshot, const Options& options);

// `options` with plugin_config read from the snapshot: call before Run, Inventory and Tables.
Options WithPluginConfig(const k8s::Snapshot& snapshot, Options options);

}  // namespace tocsin::audit
