#pragma once

#include <vector>

#include "audit/checks.h"

namespace tocsin::audit {

// Pods grouped into jobs (Kubeflow training-operator and JobSet labels, Job owners); jobs on 2+
// nodes or with WORLD_SIZE > 1 get job.rdma.not-requested, job.nccl.fallback-env,
// job.rdma.no-network (with --fabric-network), job.rdma.no-ipc-lock, job.placement.spread,
// job.placement.non-fabric and job.storage.no-shared-volume. `since` is the job's first pod.
// Nodes, placement, RDMA requests, networks and IPC_LOCK are judged by the pods that run ranks:
// an MPI launcher that asks for neither a GPU nor the fabric only runs mpirun and is left out.
void CheckJobs(const k8s::Snapshot& snapshot, const Options& options, std::vector<Finding>& out);

}  // namespace tocsin::audit
