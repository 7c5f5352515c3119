#pragma once

#include <string>
#include <vector>

#include "audit/checks.h"

namespace tocsin::audit {

// Pods grouped into jobs (Kubeflow training-operator and JobSet labels, Job owners); jobs on 2+
// nodes or with WORLD_SIZE > 1 get job.rdma.not-requested, job.nccl.fallback-env,
// job.rdma.no-network (with --fabric-network), job.rdma.no-ipc-lock (unless
// --ipc-lock-not-needed), job.rdma.hostpath-devices, job.placement.no-topology (when the job's
// nodes carry a topology label), job.placement.spread, job.placement.non-fabric and
// job.storage.no-shared-volume. `since` is the job's first pod.
// Nodes, placement, RDMA requests, networks and IPC_LOCK are judged by the pods that run ranks:
// an MPI launcher that asks for neither a GPU nor the fabric only runs mpirun and is left out.
// A top object (Snapshot::jobs) without pods, not finished and not owned by another is judged by
// CheckJobObject with the cluster's topology label.
// "kind/namespace/name" of the job a pod belongs to ("kubeflow/", "jobset/", "job/"), by the
// training operators' and JobSet's labels, then a Job owner or the Job's labels; "" for a pod
// outside a job. JobName: its name alone (the agent's `job_name` label).
std::string JobKey(const k8s::Pod& p);
std::string JobName(const k8s::Pod& p);

void CheckJobs(const k8s::Snapshot& snapshot, const Options& options, std::vector<Finding>& out);

// The job checks of one top object from its pod templates, before any pod exists (the audit of a
// job not running yet; the admission webhook): multi-node when its training pods number 2 or
// more or WORLD_SIZE > 1; no placement checks but job.placement.no-topology (by
// `topology_label`, none when ""); a TrainJob only job.rdma.not-requested and
// job.nccl.fallback-env (its runtime holds the rest). Subjects as the audit names the job's pods'
// job ("kubeflow/NS/NAME", "jobset/NS/NAME", "job/NS/NAME").
std::vector<Finding> CheckJobObject(const k8s::ObjectRef& top, const Options& options,
                                    const std::string& topology_label);

}  // namespace tocsin::audit
