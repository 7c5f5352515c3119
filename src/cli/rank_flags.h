#pragma once

#include <sys/types.h>

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "ranks/local_ranks.h"
#include "ranks/world.h"

namespace tocsin::cli {

// The rank flags every multi-node benchmark takes: --rank, --world-size, --coordinator, the
// token (--token-file, else $TOCSIN_BENCH_TOKEN, or --token, which `ps` shows: a warning) and
// --insecure-no-token (else the torchrun / Indexed Job environment), or --local N to start N
// ranks here.
struct RankFlags {
  int local = 0;
  int rank = -1;
  int world_size = -1;
  std::string coordinator;
  std::string token;
  std::string token_file;
  bool insecure_no_token = false;

  void AddTo(CLI::App* cmd);
  // Fills `world`. With --local, this process is rank 0 on an ephemeral port and
  // `on_coordinator` starts ranks 1..N-1 of this same command (their pids in `children`).
  Status Apply(ranks::WorldOptions& world, std::function<void(const std::string&)>* on_coordinator,
               std::vector<pid_t>* children) const;
};

using ranks::ReapLocalRanks;

// The arguments tocsin was started with (--local starts more ranks of itself with them).
void SetProcessArgs(int argc, char** argv);

}  // namespace tocsin::cli
