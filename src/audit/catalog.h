#pragma once

#include "base/check_catalog.h"

namespace tocsin::audit {

// The checks of `tocsin audit` (src/audit/checks.cc, jobs.cc, coverage.cc), also the controller's.
inline constexpr char kDaemonSetNotReady[] = "daemonset.not-ready";
inline constexpr char kDaemonSetCoverage[] = "daemonset.coverage";
inline constexpr char kNodeRdmaUnadvertised[] = "node.rdma.unadvertised";
inline constexpr char kPodCrashloop[] = "pod.crashloop";
inline constexpr char kNodeNotReady[] = "node.not-ready";
inline constexpr char kInputIncomplete[] = "audit.input.incomplete";
inline constexpr char kFabricNone[] = "audit.fabric.none";
inline constexpr char kJobRdmaNotRequested[] = "job.rdma.not-requested";
inline constexpr char kJobNcclFallbackEnv[] = "job.nccl.fallback-env";
inline constexpr char kJobRdmaNoNetwork[] = "job.rdma.no-network";
inline constexpr char kJobRdmaNoIpcLock[] = "job.rdma.no-ipc-lock";
inline constexpr char kJobRdmaHostpathDevices[] = "job.rdma.hostpath-devices";
inline constexpr char kJobPlacementNoTopology[] = "job.placement.no-topology";
inline constexpr char kJobPlacementSpread[] = "job.placement.spread";
inline constexpr char kJobPlacementNonFabric[] = "job.placement.non-fabric";
inline constexpr char kJobStorageNoSharedVolume[] = "job.storage.no-shared-volume";

const CheckCatalog& Catalog();

}  // namespace tocsin::audit
