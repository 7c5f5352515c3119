#pragma once

#include <prometheus/metric_family.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/finding.h"
#include "base/status.h"
#include "base/time.h"

namespace tocsin::agent {

// What one run of a task found: findings (check ids from the task's list) and the metric families
// it read. A task that cannot run at all returns a non-ok Status instead.
struct TaskOutput {
  std::vector<Finding> findings;
  std::vector<prometheus::MetricFamily> families;
  // The rdma task: the node's fabric facts, encoded as the annotation tocsin.io/fabric holds
  // them (k8s::EncodeFabricFacts), for the Kubernetes thread to publish; empty for other tasks.
  std::string fabric_facts;
};

// A named unit of work on its own schedule: it decides `checks` (check ids), runs every
// `interval`, and is given `timeout` per run. Runs of one task never overlap.
struct TaskSpec {
  std::string name;
  std::vector<std::string> checks;
  std::chrono::milliseconds interval{30000};
  std::chrono::milliseconds timeout{10000};
  std::function<Result<TaskOutput>()> run;
};

enum class Outcome {
  kNever,    // not run yet
  kOk,       // finished in time
  kError,    // the task could not read its input (Status)
  kTimeout,  // outlived its timeout; its worker is abandoned
  kStuck,    // not started: the previous run is still running
};
std::string_view OutcomeName(Outcome o);

// The latest state of a task. `output` is the last run's output when it was kOk, else null: a
// task that failed or timed out has no findings or metrics, so nothing stale looks healthy.
struct TaskState {
  std::string name;
  std::vector<std::string> checks;
  std::chrono::milliseconds interval{0}, timeout{0};
  Outcome outcome = Outcome::kNever;
  std::string error;
  std::optional<TimePoint> last_run;  // start of the last run (wall clock)
  std::optional<TimePoint> last_ok;   // start of the last run that finished kOk
  double duration_s = 0;              // of the last run (the timeout when it timed out)
  uint64_t runs = 0, errors = 0, timeouts = 0, stuck = 0;
  std::shared_ptr<const TaskOutput> output;
};

// Runs each task on its own thread loop; each run happens on a worker thread that the loop waits
// for at most `timeout`. A worker stuck in the kernel (a hung mount, a wedged driver) is
// abandoned: its task reports kTimeout, then kStuck until the worker returns. Stop() returns
// within milliseconds whatever the workers do.
class Scheduler {
 public:
  // `now` gives the wall clock for timestamps (tests inject it).
  Scheduler(std::vector<TaskSpec> tasks, std::function<TimePoint()> now);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  void Start();
  void Stop();
  // Wakes every task to run now (SIGHUP), whatever its interval.
  void RunAllNow();

  std::vector<TaskState> States() const;
  // Blocks until every task has finished `runs` runs (any outcome), Stop, or `timeout`.
  bool WaitForRuns(uint64_t runs, std::chrono::milliseconds timeout) const;

  struct Core;  // shared with worker threads, which may outlive the scheduler

 private:
  void Loop(size_t index);

  std::shared_ptr<Core> core_;
  std::vector<TaskSpec> specs_;
  std::vector<std::shared_ptr<std::function<Result<TaskOutput>()>>> runs_;
  std::vector<std::thread> loops_;
};

}  // namespace tocsin::agent
