#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "base/status.h"

namespace tocsin::ranks {

// `--local N`: ranks 1..N-1 of a command started on this machine by its rank 0.

// Rank `rank`'s arguments (without argv[0]) from the command's own `args` (without argv[0]):
// --local and --token dropped (the token goes in the environment, where `ps` does not show it),
// each --verdict-file PATH made PATH.<rank>, and --rank, --world-size and --coordinator added.
std::vector<std::string> LocalRankArgs(const std::vector<std::string>& args, int rank,
                                       int world_size, const std::string& coordinator);

// Starts ranks 1..world_size-1 of `exe` with LocalRankArgs against `coordinator`, the token in
// $TOCSIN_BENCH_TOKEN, their output to /dev/null (rank 0 reports for all); they die with this
// process. Returns the pids of those started; the first that could not be started is an error
// (the ones before it are killed and reaped).
Result<std::vector<pid_t>> StartLocalRanks(const std::string& exe,
                                           const std::vector<std::string>& args, int world_size,
                                           const std::string& coordinator,
                                           const std::string& token);

// Waits for the local ranks (they finish with rank 0, or were told to abort), then kills any
// left after `grace`.
void ReapLocalRanks(const std::vector<pid_t>& pids, std::chrono::milliseconds grace);

}  // namespace tocsin::ranks
