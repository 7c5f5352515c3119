#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "agent/scheduler.h"
#include "node/node.h"

namespace tocsin::agent {

// The tasks that repeat `tocsin node`'s reads and checks, each exporting what it read:
//   rdma:    port state, rate and counters, checks rdma.*; the fabric facts (agent/facts.h)
//   gpu:     GPUs on the PCI bus, NVML utilisation and memory, GPU-NIC affinity; gpu.count,
//            gpu.nvml, gpu.nic.affinity
//   storage: shared-filesystem mounts, Lustre imports and llite/osc stats; storage.mount.*,
//            lustre.import.state
// Each builds its own Env over `root`, so runs on different threads share nothing.
TaskSpec RdmaTask(const std::string& root, const node::Options& options);
TaskSpec GpuTask(const std::string& root, const node::Options& options);
TaskSpec StorageTask(const std::string& root, const node::Options& options);

}  // namespace tocsin::agent
