#include "ranks/local_ranks.h"

#include <signal.h>
#include <sys/wait.h>

#include <thread>

#include "sys/subprocess.h"

namespace tocsin::ranks {

std::vector<std::string> LocalRankArgs(const std::vector<std::string>& args, int rank,
                                       int world_size, const std::string& coordinator) {
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    // --token is not repeated: the ranks get the token in their environment (and would warn).
    if (a == "--local" || a == "--token") {
      ++i;
      continue;
    }
    if (a.starts_with("--local=") || a.starts_with("--token=")) continue;
    out.push_back(a);
    // A file each rank writes at exit (--verdict-file PATH): rank r's is PATH.r.
    if (a == "--verdict-file" && i + 1 < args.size()) {
      out.push_back(args[++i] + "." + std::to_string(rank));
    } else if (a.starts_with("--verdict-file=")) {
      out.back() += '.';  // not "." + to_string(rank): a GCC 12 -Wrestrict false positive
      out.back() += std::to_string(rank);
    }
  }
  for (std::string a : {std::string("--rank"), std::to_string(rank), std::string("--world-size"),
                        std::to_string(world_size), std::string("--coordinator"), coordinator}) {
    out.push_back(std::move(a));
  }
  return out;
}

Result<std::vector<pid_t>> StartLocalRanks(const std::string& exe,
                                           const std::vector<std::string>& args, int world_size,
                                           const std::string& coordinator,
                                           const std::string& token) {
  std::vector<pid_t> pids;
  for (int r = 1; r < world_size; ++r) {
    sys::SpawnSpec spec;
    spec.argv = {exe};
    for (auto& a : LocalRankArgs(args, r, world_size, coordinator)) spec.argv.push_back(a);
    spec.env = sys::EnvironmentWith({"TOCSIN_BENCH_TOKEN=" + token});
    spec.stdout_fd = sys::SpawnSpec::kDevNull;
    spec.die_with_parent = true;
    auto pid = sys::Spawn(spec);
    if (!pid.ok()) {
      ReapLocalRanks(pids, std::chrono::milliseconds(0));
      return pid.status().WithPrefix("local rank " + std::to_string(r));
    }
    pids.push_back(*pid);
  }
  return pids;
}

void ReapLocalRanks(const std::vector<pid_t>& pids, std::chrono::milliseconds grace) {
  auto deadline = std::chrono::steady_clock::now() + grace;
  std::vector<bool> done(pids.size(), false);
  size_t left = pids.size();
  while (left > 0 && std::chrono::steady_clock::now() < deadline) {
    for (size_t i = 0; i < pids.size(); ++i) {
      if (!done[i] && waitpid(pids[i], nullptr, WNOHANG) == pids[i]) {
        done[i] = true;
        --left;
      }
    }
    if (left > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (size_t i = 0; i < pids.size(); ++i) {
    if (!done[i]) {
      kill(pids[i], SIGKILL);
      waitpid(pids[i], nullptr, 0);
    }
  }
}

}  // namespace tocsin::ranks
