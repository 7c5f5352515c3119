#pragma once

#include <sys/types.h>

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
};

// Runs argv[0] (looked up in PATH) with stdin from /dev/null and captures stdout and stderr.
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
