#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"

namespace tocsin::sys {

struct ProcessResult {
  int exit_code = -1;  // the exit status, or 128 + signal
  std::string out;
  std::string err;
};

struct ProcessOptions {
  std::vector<std::string> extra_env;  // "NAME=value", added to (or replacing in) our environment
  std::chrono::milliseconds timeout{10000};
  size_t max_output = 16 << 20;  // per stream; more is an error, not a silent cut
  // The child's stdin: these bytes, then end of file (empty: /dev/null). Written as the child
  // reads them, while its output is read, so a child that fills its stdout pipe before it reads
  // all of its input cannot deadlock the call; a child that exits or closes its stdin without
  // reading it all is not an error (what it did is in its exit code). Bounded by `timeout`.
  std::string input;
  // Killed (SIGKILL) when the thread that started it ends, e.g. with the process: a child that
  // outlives an abandoned call never lingers after its parent (PR_SET_PDEATHSIG).
  bool die_with_parent = false;
  // When it turns true, the child's group is killed and the call ends (Unavailable, "stopped")
  // within about 100 ms, as it does at `timeout`; nullptr: never.
  const std::atomic<bool>* stop = nullptr;
};

// How Spawn starts a child. Everything is built before the fork: between fork and exec the child
// of a multi-threaded process may only make async-signal-safe calls (under ASan, a child that
// allocated there could hang on the allocator's lock, held by another thread at the fork).
struct SpawnSpec {
  static constexpr int kDevNull = -1;
  static constexpr int kInherit = -2;

  std::vector<std::string> argv;  // argv[0]: a path, or a name looked up in PATH
  std::vector<std::string> env;   // the child's whole environment ("NAME=value")
  int stdin_fd = kDevNull;        // each: a descriptor to dup2 there, kDevNull or kInherit
  int stdout_fd = kInherit;
  int stderr_fd = kInherit;
  bool own_group = false;        // its own process group: kill(-pid) reaches what it starts
  bool die_with_parent = false;  // killed (SIGKILL) when this process dies
};

// Our environment with `extra` ("NAME=value") added or replacing, in order.
std::vector<std::string> EnvironmentWith(const std::vector<std::string>& extra);

// Starts spec.argv: the one place tocsin forks. Returns the child's pid once its exec succeeded;
// NotFound naming the command when the exec failed (the child is reaped). The caller waits for
// the pid.
Result<pid_t> Spawn(const SpawnSpec& spec);

// Runs argv[0] (looked up in PATH) with stdin from options.input (or /dev/null) and captures
// stdout and stderr.
// The child runs in its own process group; when `timeout` runs out the whole group is killed and
// a Timeout status names the command. A command that cannot be started gives NotFound.
Result<ProcessResult> RunProcess(const std::vector<std::string>& argv,
                                 const ProcessOptions& options = {});

// Forks a child that runs `child_main` and ends with what it returns (std::_Exit: the atexit
// handlers and static destructors are the parent's). stdout and stderr are flushed first, so
// that nothing buffered is written twice. Returns the child's pid; the caller waits for it.
// The child of a multi-threaded process may only make async-signal-safe calls until it execs.
Result<pid_t> ForkCall(const std::function<int()>& child_main);

}  // namespace tocsin::sys
