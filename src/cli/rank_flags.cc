#include "cli/rank_flags.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <random>
#include <thread>

#include "base/strings.h"
#include "sys/env.h"

namespace tocsin::cli {

constexpr int kMaxLocalRanks = 256;
namespace {

std::vector<std::string>& ProcessArgs() {
  static std::vector<std::string> args;
  return args;
}

// Starts ranks 1..n-1 of this same command against the coordinator, their output to /dev/null
// (rank 0 reports for all); they die with this process.
std::vector<pid_t> StartLocalRanks(int n, const std::string& coordinator,
                                   const std::string& token) {
  std::vector<std::string> base;
  const auto& args = ProcessArgs();
  for (size_t i = 1; i < args.size(); ++i) {
    // --token is not repeated: the ranks get the token in their environment (and would warn).
    if (args[i] == "--local" || args[i] == "--token") {
      ++i;
      continue;
    }
    if (args[i].rfind("--local=", 0) == 0 || args[i].rfind("--token=", 0) == 0) continue;
    base.push_back(args[i]);
  }
  std::vector<pid_t> pids;
  for (int r = 1; r < n; ++r) {
    std::vector<std::string> argv = {"/proc/self/exe"};
    argv.insert(argv.end(), base.begin(), base.end());
    // A file each rank writes at exit (--verdict-file PATH): rank r's is PATH.r.
    for (size_t i = 1; i < argv.size(); ++i) {
      if (argv[i] == "--verdict-file" && i + 1 < argv.size()) {
        argv[++i] += "." + std::to_string(r);
      } else if (argv[i].rfind("--verdict-file=", 0) == 0) {
        argv[i] += "." + std::to_string(r);
      }
    }
    for (std::string a : {std::string("--rank"), std::to_string(r), std::string("--world-size"),
                          std::to_string(n), std::string("--coordinator"), coordinator}) {
      argv.push_back(a);
    }
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    // The environment is built here: between fork and exec the child of this multi-threaded
    // process may only make async-signal-safe calls. (It used putenv, which can allocate: under
    // ASan, whose allocator lock another thread may hold at fork, a rank then hung before exec
    // and "did not join".)
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
      if (std::strncmp(*e, "TOCSIN_BENCH_TOKEN=", 19) != 0) env.emplace_back(*e);
    }
    env.push_back("TOCSIN_BENCH_TOKEN=" + token);
    std::vector<char*> cenv;
    for (auto& e : env) cenv.push_back(e.data());
    cenv.push_back(nullptr);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(1);
      int devnull = open("/dev/null", O_WRONLY);
      dup2(devnull, 1);
      execve("/proc/self/exe", cargv.data(), cenv.data());
      _exit(127);
    }
    if (pid > 0) pids.push_back(pid);
  }
  return pids;
}

}  // namespace

// Waits for the local ranks (they finish with rank 0, or were told to abort), then kills any
// left after `grace`.
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

void SetProcessArgs(int argc, char** argv) { ProcessArgs().assign(argv, argv + argc); }

void RankFlags::AddTo(CLI::App* cmd) {
  cmd->add_option("--local", local, "Start N ranks on this machine (rank 0 reports)");
  cmd->add_option("--rank", rank, "This rank (default: $RANK, $JOB_COMPLETION_INDEX)");
  cmd->add_option("--world-size", world_size, "Number of ranks (default: $WORLD_SIZE)");
  cmd->add_option("--coordinator", coordinator,
                  "HOST:PORT of rank 0 (default: $MASTER_ADDR:$MASTER_PORT)");
  cmd->add_option("--token-file", token_file,
                  "File holding the secret every rank must present (default: "
                  "$TOCSIN_BENCH_TOKEN; required with more than one rank)");
  cmd->add_option("--token", token,
                  "The secret itself (visible in ps: prefer --token-file or $TOCSIN_BENCH_TOKEN)");
  cmd->add_flag("--insecure-no-token", insecure_no_token,
                "Run ranks without a token: anyone who reaches the coordinator can join");
}

namespace {

// The token from --token-file: the file's text without surrounding whitespace.
Result<std::string> ReadTokenFile(const std::string& path) {
  std::error_code ec;
  std::string abs = std::filesystem::absolute(path, ec).lexically_normal().string();
  auto text = NewRootedEnv()->ReadFile(ec ? path : abs, 4096);
  if (!text.ok()) return text.status().WithPrefix("--token-file");
  std::string token(Trim(*text));
  if (token.empty()) return Status::InvalidArgument("--token-file " + path + " is empty");
  return token;
}

}  // namespace

Status RankFlags::Apply(ranks::WorldOptions& world,
                        std::function<void(const std::string&)>* on_coordinator,
                        std::vector<pid_t>* children) const {
  world.rank = rank;
  world.world_size = world_size;
  world.coordinator = coordinator;
  world.token = token;
  world.insecure_no_token = insecure_no_token;
  if (!token.empty() && !token_file.empty()) {
    return Status::InvalidArgument("--token and --token-file: give one");
  }
  if (!token.empty()) {
    std::cerr << "tocsin: warning: --token shows the secret to every user of this machine (ps, "
                 "/proc); use --token-file or TOCSIN_BENCH_TOKEN\n";
  }
  if (!token_file.empty()) {
    auto t = ReadTokenFile(token_file);
    if (!t.ok()) return t.status();
    world.token = *t;
  }
  if (local <= 0) return ranks::ApplyEnvironment(world, ranks::RankEnvironment());
  if (rank >= 0 || world_size >= 0 || !coordinator.empty()) {
    return Status::InvalidArgument(
        "--local starts every rank itself: drop --rank/--world-size/--coordinator");
  }
  if (local > kMaxLocalRanks) {
    return Status::InvalidArgument("--local " + std::to_string(local) + ": at most " +
                                   std::to_string(kMaxLocalRanks) +
                                   " ranks on one machine (each is a process with its sockets)");
  }
  world.rank = 0;
  world.world_size = local;
  world.coordinator = "127.0.0.1:0";
  if (world.token.empty()) {
    std::random_device rd;
    world.token = std::to_string(rd()) + std::to_string(rd());
  }
  *on_coordinator = [children, n = local, t = world.token](const std::string& c) {
    *children = StartLocalRanks(n, c, t);
  };
  return Status::Ok();
}

}  // namespace tocsin::cli
