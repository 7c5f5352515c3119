#pragma once

#include <prometheus/registry.h>

#include <chrono>
#include <memory>
#include <string>

#include "agent/scheduler.h"

namespace tocsin::agent {

struct ProbeTaskOptions {
  std::string path;         // a directory on the shared filesystem (the probe makes its own folder)
  std::string self_exe;     // this binary: the probe is `tocsin bench storage` in a child process
  double max_fsync_ms = 0;  // > 0: a slower write+fsync is storage.latency.high
  double max_meta_ms = 0;   // > 0: a slower create/stat/unlink is storage.latency.high
  std::chrono::milliseconds interval{60000};
  std::chrono::milliseconds timeout{20000};  // the whole run, the child's start included
};

// The `storage-probe:<path>` task: one 4 KiB write, read (cache dropped), write+fsync, create,
// stat and unlink per run, by `tocsin bench storage` in a child process, so that a thread stuck
// on a hung mount is the child's, never the agent's. Each operation's latency goes into the
// histogram tocsin_storage_probe_duration_seconds{path,op} of `registry`. A mount that does not
// answer within the task's timeout makes the run time out (its checks go unknown).
TaskSpec StorageProbeTask(const ProbeTaskOptions& options,
                          std::shared_ptr<prometheus::Registry> registry);

}  // namespace tocsin::agent
