#pragma once

#include <functional>
#include <memory>
#include <string>

#include "agent/scheduler.h"
#include "sys/env.h"

namespace tocsin::agent {

// The `nccl` task: reads the container logs of the pods on this node as they grow
// (`<root>/var/log/pods/<namespace>_<pod>_<uid>/<container>/<n>.log`, the kubelet's CRI log
// layout) with `tocsin nccl`'s analyzer, one per log file, from where the last run stopped
// (at most `max_bytes_per_run` per file and run; a rotated or truncated file starts over).
// While this node has an ACTIVE RDMA port, a rank that reached other nodes over sockets is
// `nccl.transport.socket`: the silent fallback, named by pod. Also nccl.transport.mixed,
// nccl.init.failed, nccl.env.risky and nccl.wrong (nccl-tests output in a pod's log).
// A log that cannot be read makes that pod's checks unknown, with the error, until a read succeeds.
TaskSpec NcclLogTask(const std::string& root, uint64_t max_bytes_per_run = 64ull << 20);
// The same, with the node's files read through the Env that `new_env` makes for each run.
TaskSpec NcclLogTask(std::function<std::unique_ptr<Env>()> new_env,
                     uint64_t max_bytes_per_run = 64ull << 20);

}  // namespace tocsin::agent
