#pragma once

#include <functional>

#include "base/status.h"
#include "bench/storage_bench.h"

namespace tocsin::bench {

// `bench storage` runs its probe in a child process. A thread stuck in uninterruptible I/O on a
// hung mount keeps its process from ever finishing its exit; here that is the child, left behind
// (and reaped by init when the filesystem answers), while the parent reports and exits.

// Runs `child` (the benchmark and its output; it returns the exit code) in a child process and
// returns that code, which the child sends through a pipe before its possibly endless exit,
// after closing stdout and stderr (what a shell waits on). SIGINT and SIGTERM sent to this
// process are passed on to the child, which stops, cleans up and reports. IoError: no child
// could be started. A child that ended without sending its code: its own exit code when that is
// over 128 (a signal while the ranks met; it says so itself), else Internal naming how it died.
Result<int> RunInProbeChild(const std::function<int()>& child);

// In the child: SIGINT and SIGTERM set the flag `options.interrupted` points to afterwards (the
// probe stops at its next operation, cleans up and reports); while the ranks meet
// (`options.on_rendezvous`, a wait the flag cannot cut short) a signal ends the process at once
// with 128 + the signal, removing the run's still empty folder first.
void HandleProbeSignals(StorageBenchOptions& options);

}  // namespace tocsin::bench
