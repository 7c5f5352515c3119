#include "cli/bench_command.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <memory>
#include <random>
#include <thread>

#include "base/strings.h"
#include "bench/net_bench.h"
#include "cli/report_flags.h"

namespace tocsin::cli {
namespace {

std::vector<std::string>& ProcessArgs() {
  static std::vector<std::string> args;
  return args;
}

// "64M", "1K", "4096", "1G" (binary multiples, as nccl-tests).
std::optional<size_t> ParseSize(const std::string& text) {
  if (text.empty()) return std::nullopt;
  size_t mult = 1;
  std::string digits = text;
  switch (std::toupper(static_cast<unsigned char>(text.back()))) {
    case 'K':
      mult = 1ull << 10;
      break;
    case 'M':
      mult = 1ull << 20;
      break;
    case 'G':
      mult = 1ull << 30;
      break;
    default:
      break;
  }
  if (mult != 1) digits.pop_back();
  auto v = ParseUint64(digits);
  if (!v || *v > (1ull << 40) / mult) return std::nullopt;
  return *v * mult;
}

struct NetFlags {
  ReportFlags report;
  std::vector<std::string> tests = {"allreduce"};
  std::string min_size = "1K", max_size = "64M";
  int factor = 2;
  int warmup = 5, iters = 20, check = 1;
  int local = 0;
  int rank = -1, world_size = -1;
  std::string coordinator, token, transport = "tcp", provider, require, bind;
  double timeout_s = 30, min_busbw = 0, straggler = 0.5;
};

// Starts ranks 1..n-1 of this same command against the coordinator, their output to /dev/null
// (rank 0 reports for all); they die with this process.
std::vector<pid_t> StartLocalRanks(int n, const std::string& coordinator,
                                   const std::string& token) {
  std::vector<std::string> base;
  const auto& args = ProcessArgs();
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--local") {
      ++i;
      continue;
    }
    if (args[i].rfind("--local=", 0) == 0) continue;
    base.push_back(args[i]);
  }
  std::vector<pid_t> pids;
  for (int r = 1; r < n; ++r) {
    std::vector<std::string> argv = {"/proc/self/exe"};
    argv.insert(argv.end(), base.begin(), base.end());
    for (std::string a : {std::string("--rank"), std::to_string(r), std::string("--world-size"),
                          std::to_string(n), std::string("--coordinator"), coordinator}) {
      argv.push_back(a);
    }
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    std::string env_token = "TOCSIN_BENCH_TOKEN=" + token;
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(1);
      int devnull = open("/dev/null", O_WRONLY);
      dup2(devnull, 1);
      putenv(env_token.data());
      execv("/proc/self/exe", cargv.data());
      _exit(127);
    }
    if (pid > 0) pids.push_back(pid);
  }
  return pids;
}

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

int RunNet(const NetFlags& f) {
  bench::NetBenchOptions o;
  o.tests = f.tests;
  auto b = ParseSize(f.min_size), e = ParseSize(f.max_size);
  if (!b) return UsageError("-b: not a size: \"" + f.min_size + "\" (e.g. 1K, 8M)");
  if (!e) return UsageError("-e: not a size: \"" + f.max_size + "\" (e.g. 64M)");
  o.min_bytes = *b;
  o.max_bytes = *e;
  o.factor = f.factor;
  o.warmup = f.warmup;
  o.iters = f.iters;
  o.check = f.check != 0;
  o.transport = f.transport;
  o.provider = f.provider;
  if (!f.require.empty() && f.require != "rdma") return UsageError("--require takes \"rdma\"");
  o.require_rdma = f.require == "rdma";
  o.min_busbw = f.min_busbw;
  o.straggler_ratio = f.straggler;
  o.bind_ip = f.bind;
  if (f.timeout_s <= 0) return UsageError("--timeout must be > 0");
  o.world.timeout = std::chrono::milliseconds(static_cast<int64_t>(f.timeout_s * 1000));
  o.world.rank = f.rank;
  o.world.world_size = f.world_size;
  o.world.coordinator = f.coordinator;
  o.world.token = f.token;
  std::vector<pid_t> children;
  if (f.local > 0) {
    if (f.rank >= 0 || f.world_size >= 0 || !f.coordinator.empty()) {
      return UsageError("--local starts every rank itself: drop --rank/--world-size/--coordinator");
    }
    o.world.rank = 0;
    o.world.world_size = f.local;
    o.world.coordinator = "127.0.0.1:0";
    if (o.world.token.empty()) {
      std::random_device rd;
      o.world.token = std::to_string(rd()) + std::to_string(rd());
    }
    std::string token = o.world.token;
    o.on_coordinator = [&children, n = f.local, token](const std::string& coordinator) {
      children = StartLocalRanks(n, coordinator, token);
    };
  } else {
    Status env = ranks::ApplyEnvironment(o.world, ranks::RankEnvironment());
    if (!env.ok()) return UsageError(env.message());
    if (o.world.world_size == 1 && o.world.coordinator.empty()) o.world.coordinator = "127.0.0.1:0";
  }
  if (Status st = bench::ValidateNetBench(o); !st.ok()) {
    return UsageError(st.message());
  }
  auto report = bench::RunNetBench(o);
  // After a failure or a refusal the other ranks were told to stop (or stop by themselves): a
  // rank that does not exit at once is the hung one.
  bool failed = !report.ok() || !report->inventory.contains("tests");
  if (!children.empty()) {
    ReapLocalRanks(children, failed ? std::chrono::milliseconds(1000)
                                    : o.world.timeout + std::chrono::seconds(5));
  }
  if (!report.ok()) return UsageError(report.status().message());
  if (o.world.rank == 0) return f.report.Emit(*report);
  // Other ranks: why they stopped on stderr (in a pod's log); the report is rank 0's.
  for (const auto& finding : report->findings) {
    if (finding.check != "net.rank.failed" && finding.check != "net.transport.not-rdma") continue;
    std::cerr << "tocsin: bench net rank " << o.world.rank << ": " << finding.check << ": "
              << finding.message << "\n";
  }
  return ExitCodeFor(*report, ParseSeverity(f.report.fail_on).value_or(Severity::kError),
                     f.report.observe_only);
}

}  // namespace

void SetProcessArgs(int argc, char** argv) { ProcessArgs().assign(argv, argv + argc); }

std::vector<Command> AddBenchCommands(CLI::App& parent) {
  CLI::App* bench = parent.add_subcommand("bench", "Measure the fabric the way training uses it");
  bench->require_subcommand(1);
  auto f = std::make_shared<NetFlags>();
  CLI::App* net = bench->add_subcommand(
      "net",
      "Point-to-point and collective bandwidth across ranks (nccl-tests columns), over TCP "
      "sockets or libfabric; says which transport it used and refuses a fallback with "
      "--require rdma");
  f->report.AddTo(net);
  net->add_option("-t,--test", f->tests, "p2p, allreduce, allgather, alltoall (repeatable)")
      ->capture_default_str();
  net->add_option("-b,--minbytes", f->min_size, "Smallest size (K/M/G: binary)")
      ->capture_default_str();
  net->add_option("-e,--maxbytes", f->max_size, "Largest size (at most 1G)")->capture_default_str();
  net->add_option("-f,--stepfactor", f->factor, "Size multiplier between rows")
      ->capture_default_str();
  net->add_option("-w,--warmup_iters", f->warmup, "Warm-up iterations per size")
      ->capture_default_str();
  net->add_option("-n,--iters", f->iters, "Timed iterations per size")->capture_default_str();
  net->add_option("-c,--check", f->check, "Verify the data (the #wrong column): 1 or 0")
      ->capture_default_str();
  net->add_option("--local", f->local, "Start N ranks on this machine (rank 0 reports)");
  net->add_option("--rank", f->rank, "This rank (default: $RANK, $JOB_COMPLETION_INDEX)");
  net->add_option("--world-size", f->world_size, "Number of ranks (default: $WORLD_SIZE)");
  net->add_option("--coordinator", f->coordinator,
                  "HOST:PORT of rank 0 (default: $MASTER_ADDR:$MASTER_PORT)");
  net->add_option("--token", f->token,
                  "Shared secret every rank must present (default: $TOCSIN_BENCH_TOKEN)");
  net->add_option("--transport", f->transport, "tcp (sockets) or fabric (libfabric)")
      ->capture_default_str();
  net->add_option("--provider", f->provider,
                  "libfabric provider (verbs, efa, cxi, psm3, tcp, shm, ...; default: the first "
                  "one libfabric offers)");
  net->add_option("--require", f->require,
                  "rdma: refuse to run (exit 1, net.transport.not-rdma) unless the path is RDMA");
  net->add_option("--bind", f->bind,
                  "Local IP for the data plane (default: the one that reaches the coordinator)");
  net->add_option("--timeout", f->timeout_s,
                  "Seconds to wait for any rank (joining, each operation, each step)")
      ->capture_default_str();
  net->add_option("--min-busbw", f->min_busbw,
                  "GB/s: a test averaging below it, or a p2p pair below it, fails (exit 1)");
  net->add_option("--straggler-ratio", f->straggler,
                  "A p2p pair below this share of the median pair is a straggler")
      ->capture_default_str();
  return {{net, [f] { return RunNet(*f); }}};
}

}  // namespace tocsin::cli
