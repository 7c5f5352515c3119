#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/status.h"
#include "bench/latency.h"

namespace tocsin::bench {

// What training does to a shared filesystem, as timed phases over `jobs` worker threads.
struct ProbeOptions {
  std::string dir;  // this run's own folder (created and removed by the caller)
  int jobs = 1;
  uint64_t size = 256ull << 20;  // bytes per worker (file-per-worker) or per worker's region
  uint64_t block = 1ull << 20;
  bool direct = false;
  bool shared_file = false;
  bool check = true;
  int files = 1000;          // meta: files per worker
  int fsync_ops = 200;       // fsync: 4 KiB write + fsync per op
  int randread_ops = 20000;  // randread: 4 KiB reads per worker (at most the file's blocks)
  std::chrono::milliseconds op_timeout{10000};
  std::chrono::milliseconds phase_timeout{300000};
  const std::atomic<bool>* interrupted = nullptr;  // Ctrl-C: stop at the next operation
};

struct PhaseResult {
  std::string name;  // write, read, randread, fsync, meta-create, meta-stat, meta-unlink
  uint64_t bytes = 0;
  uint64_t ops = 0;
  double seconds = 0;
  Percentiles latency;
  int64_t wrong = -1;  // read: blocks whose content differs (-1: not checked)
  std::string note;    // e.g. how much of the file was in the page cache before reading
  double gbps() const { return seconds > 0 ? bytes / seconds / 1e9 : 0; }
  double iops() const { return seconds > 0 ? ops / seconds : 0; }
};

// A phase that did not finish: an operation outlived op_timeout (the filesystem stopped
// answering) or the phase outlived phase_timeout. Its worker threads may be stuck in the
// kernel for good: the process must report and exit without joining them.
struct ProbeTimeout {
  std::string phase;
  std::string path;
  double waited_s = 0;
};

// Runs phases one after another in worker threads watched by the calling thread. `between`
// runs before each phase (a barrier across nodes); a non-ok status from it stops the probe.
// Stops early on a timeout (filled in `timeout`) or when `stop` becomes true (Ctrl-C).
class StorageProbe {
 public:
  explicit StorageProbe(ProbeOptions options);
  Result<PhaseResult> Run(const std::string& phase);
  const std::optional<ProbeTimeout>& timeout() const { return timeout_; }
  // Files and folders this probe created, for cleanup (never anything else).
  std::vector<std::string> Created() const;
  std::atomic<bool>* stop_flag();

  struct Shared;  // state shared with (possibly stuck) worker threads

 private:
  Result<PhaseResult> Pass(const std::string& phase);  // one watched pass of worker threads

  std::shared_ptr<Shared> s_;
  std::optional<ProbeTimeout> timeout_;
};

// Removes what the probe created (files, then its folders), bounded by `deadline_ms` so that
// a hung filesystem cannot hold the process. Returns false when it did not finish.
bool RemoveCreated(const std::vector<std::string>& paths, int deadline_ms);

}  // namespace tocsin::bench
