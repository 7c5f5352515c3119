#include "cli/bench_command.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>

#include "base/strings.h"
#include "bench/catalog.h"
#include "bench/net_bench.h"
#include "bench/storage_bench.h"
#include "bench/storage_child.h"
#include "bench/verdict.h"
#include "cli/number_flags.h"
#include "cli/rank_flags.h"
#include "cli/report_flags.h"

namespace tocsin::cli {
namespace {

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

// Progress rows (table output only: JSON stays one document) to stdout as they come; `printed`
// says whether any came, so that a blank line parts them from the report.
std::function<void(const std::string&)> ProgressPrinter(const ReportFlags& flags, bool* printed) {
  if (flags.output == "json") return nullptr;
  return [printed](const std::string& text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    *printed = true;
  };
}

// The report, after a blank line when progress rows came before it.
int EmitAfterProgress(const ReportFlags& flags, Report report, bool progress_printed) {
  if (progress_printed) std::fputs("\n", stdout);
  return flags.Emit(std::move(report));
}

struct NetFlags {
  ReportFlags report;
  std::vector<std::string> tests = {"allreduce"};
  std::string min_size = "1K", max_size = "64M";
  std::string slice = std::to_string(bench::RingOptions::kDefaultSlice);
  int factor = 2, rings = bench::RingOptions().rings;
  int warmup = 5, iters = 20, check = 1;
  int spin_us = -1;  // -1: the default for where the ranks run
  RankFlags ranks;
  std::string transport = "tcp", provider, require, bind;
  std::string verdict_file;
  double timeout_s = 30, min_busbw = 0, straggler = 0.5;
};

// The run itself; `report` is what it ended with (none after a usage error, which is `error`).
int RunNetOnce(const NetFlags& f, bench::NetBenchOptions& o, std::optional<Report>& report,
               std::string& error) {
  auto usage = [&error](const std::string& message) {
    error = message;
    return UsageError(message);
  };
  o.transport = f.transport;
  o.tests = f.tests;
  auto b = ParseSize(f.min_size), e = ParseSize(f.max_size);
  if (!b) return usage("-b: not a size: \"" + f.min_size + "\" (e.g. 1K, 8M)");
  if (!e) return usage("-e: not a size: \"" + f.max_size + "\" (e.g. 64M)");
  o.min_bytes = *b;
  o.max_bytes = *e;
  auto slice = ParseSize(f.slice);
  if (!slice) return usage("--slice: not a size: \"" + f.slice + "\" (e.g. 256K, 1M)");
  o.ring.slice_bytes = *slice;
  o.ring.rings = f.rings;
  o.factor = f.factor;
  o.warmup = f.warmup;
  o.iters = f.iters;
  o.check = f.check != 0;
  o.provider = f.provider;
  if (!f.require.empty() && f.require != "rdma") return usage("--require takes \"rdma\"");
  o.require_rdma = f.require == "rdma";
  o.min_busbw = f.min_busbw;
  o.straggler_ratio = f.straggler;
  o.bind_ip = f.bind;
  if (f.timeout_s <= 0) return usage("--timeout must be > 0");
  o.world.timeout = std::chrono::milliseconds(static_cast<int64_t>(f.timeout_s * 1000));
  std::vector<pid_t> children;
  if (Status st = f.ranks.Apply(o.world, &o.on_coordinator, &children); !st.ok()) {
    return usage(st.message());
  }
  if (o.world.world_size == 1 && o.world.coordinator.empty()) o.world.coordinator = "127.0.0.1:0";
  o.tcp.spin_us = f.spin_us >= 0 ? f.spin_us : bench::DefaultSpinUs(o.world);
  if (Status st = bench::ValidateNetBench(o); !st.ok()) {
    return usage(st.message());
  }
  bool progress = false;
  o.on_progress = ProgressPrinter(f.report, &progress);
  auto result = bench::RunNetBench(o);
  // After a failure or a refusal the other ranks were told to stop (or stop by themselves): a
  // rank that does not exit at once is the hung one.
  bool failed = !result.ok() || !result->inventory.contains("tests");
  if (!children.empty()) {
    ReapLocalRanks(children, failed ? std::chrono::milliseconds(1000)
                                    : o.world.timeout + std::chrono::seconds(5));
  }
  if (!result.ok()) return usage(result.status().message());
  report = std::move(*result);
  // A copy: RunNet still reads the report for the verdict file.
  if (o.world.rank == 0) return EmitAfterProgress(f.report, *report, progress);
  // Other ranks: why they stopped on stderr (in a pod's log); the report is rank 0's.
  for (const auto& finding : report->findings) {
    if (finding.check != bench::kNetRankFailed && finding.check != bench::kNetTransportNotRdma)
      continue;
    // One write per line: local ranks share the terminal (or a pod's log) and must not interleave.
    std::cerr << ("tocsin: bench net rank " + std::to_string(o.world.rank) + ": " + finding.check +
                  ": " + finding.message + "\n");
  }
  return ExitCodeFor(*report, ParseSeverity(f.report.fail_on).value_or(Severity::kError),
                     f.report.observe_only);
}

int RunNet(const NetFlags& f) {
  bench::NetBenchOptions o;
  std::optional<Report> report;
  std::string error;
  int code = RunNetOnce(f, o, report, error);
  if (f.verdict_file.empty()) return code;
  // The canary's verdict, whatever happened: the controller reads it from the pod.
  bench::Verdict v =
      bench::VerdictOf(report ? *report : Report{}, o.world.rank, o.world.world_size, code,
                       o.transport, {o.world.rank, ranks::Hostname(), ranks::NodeName()});
  v.error = error;
  if (Status st = bench::WriteVerdictFile(f.verdict_file, bench::EncodeVerdict(v)); !st.ok()) {
    int failed = UsageError(st.message());
    return std::max(code, failed);
  }
  return code;
}

struct StorageFlags {
  ReportFlags report;
  std::string path, size = "256M", block = "1M";
  int jobs = 1, files = 1000, fsync_ops = 200, randread_ops = 20000, check = 1;
  bool direct = false, shared_file = false;
  std::vector<std::string> phases = {"write", "read", "randread", "fsync", "meta"};
  double op_timeout_s = 10, timeout_s = 300;
  double min_read = 0, min_write = 0, max_fsync_p99 = 0, max_meta_p99 = 0, straggler = 0.5;
  RankFlags ranks;
};

// The probe itself (in the child process): runs, prints, returns the exit code.
int RunStorageChild(const StorageFlags& f, bench::StorageBenchOptions& o,
                    std::vector<pid_t>& children) {
  bench::HandleProbeSignals(o);
  bool progress = false;
  o.on_progress = ProgressPrinter(f.report, &progress);
  auto result = bench::RunStorageBench(o);
  if (!children.empty()) {
    bool done = result.ok() && !result->hung && result->report.inventory.contains("aggregate");
    ReapLocalRanks(children, done ? o.world.timeout : std::chrono::milliseconds(2000));
  }
  if (!result.ok()) return UsageError(result.status().message());
  int rank = o.distributed ? o.world.rank : 0;
  int code = 0;
  if (rank == 0) {
    code = EmitAfterProgress(f.report, std::move(result->report), progress);
  } else {
    for (const auto& finding : result->report.findings) {
      std::cerr << ("tocsin: bench storage rank " + std::to_string(rank) + ": " + finding.check +
                    ": " + finding.message + "\n");
    }
    code = ExitCodeFor(result->report, ParseSeverity(f.report.fail_on).value_or(Severity::kError),
                       f.report.observe_only);
  }
  return result->interrupted ? 130 : code;
}

int RunStorage(const StorageFlags& f) {
  bench::StorageBenchOptions o;
  o.path = f.path;
  auto size = ParseSize(f.size), block = ParseSize(f.block);
  if (!size) return UsageError("--size: not a size: \"" + f.size + "\"");
  if (!block) return UsageError("--block: not a size: \"" + f.block + "\"");
  o.probe.size = *size;
  o.probe.block = *block;
  o.probe.jobs = f.jobs;
  o.probe.direct = f.direct;
  o.probe.shared_file = f.shared_file;
  o.probe.check = f.check != 0;
  o.probe.files = f.files;
  o.probe.fsync_ops = f.fsync_ops;
  o.probe.randread_ops = f.randread_ops;
  if (f.op_timeout_s <= 0 || f.timeout_s <= 0) return UsageError("timeouts must be > 0");
  o.probe.op_timeout = std::chrono::milliseconds(static_cast<int64_t>(f.op_timeout_s * 1000));
  o.probe.phase_timeout = std::chrono::milliseconds(static_cast<int64_t>(f.timeout_s * 1000));
  o.phases = f.phases;
  o.min_read_gbps = f.min_read;
  o.min_write_gbps = f.min_write;
  o.max_fsync_p99_ms = f.max_fsync_p99;
  o.max_meta_p99_ms = f.max_meta_p99;
  o.straggler_ratio = f.straggler;
  o.world.timeout = o.probe.phase_timeout;
  std::vector<pid_t> children;
  if (Status st = f.ranks.Apply(o.world, &o.on_coordinator, &children); !st.ok()) {
    return UsageError(st.message());
  }
  o.distributed = f.ranks.local > 0 || o.world.world_size > 1;
  if (Status st = bench::ValidateStorageBench(o); !st.ok()) return UsageError(st.message());
  // In a child process: a hung mount may keep it from ever exiting (bench/storage_child.h).
  auto code = bench::RunInProbeChild([&] { return RunStorageChild(f, o, children); });
  if (code.ok()) return *code;
  if (code.status().code() != StatusCode::kInternal) return UsageError(code.status().message());
  std::cerr << "tocsin: error: " << code.status().message() << "\n";
  return kExitInternal;
}

}  // namespace

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
  net->add_option("--slice", f->slice,
                  "allreduce: each ring step is received and reduced in slices of this size, "
                  "the next arriving while one is reduced")
      ->capture_default_str();
  net->add_option("--rings", f->rings,
                  "allreduce: 2 runs two rings in opposite directions, each on half the data, "
                  "with 3 ranks or more; 1: one ring")
      ->capture_default_str();
  net->add_option("--spin-us", f->spin_us,
                  "tcp: microseconds a rank with nothing to do keeps polling its sockets before "
                  "it sleeps (default 50; 0 when the ranks meet at a loopback coordinator, as "
                  "--local's do, and outnumber the CPUs; set 0 when ranks started separately "
                  "share cores)")
      ->check(Count(0, 100000));
  f->ranks.AddTo(net);
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
      ->check(Seconds())
      ->capture_default_str();
  net->add_option("--min-busbw", f->min_busbw,
                  "GB/s: a test averaging below it, or a p2p pair below it, fails (exit 1)")
      ->check(Number(0, 1e9));
  net->add_option("--straggler-ratio", f->straggler,
                  "A p2p pair below this share of the median pair is a straggler")
      ->check(Number(0, 1))
      ->capture_default_str();
  net->add_option("--verdict-file", f->verdict_file,
                  "Write this rank's verdict there at exit: compact JSON of at most 4096 bytes "
                  "for a Kubernetes termination message (/dev/termination-log); with --local, "
                  "rank N>0 writes PATH.N");
  auto sf = std::make_shared<StorageFlags>();
  CLI::App* st = bench->add_subcommand(
      "storage",
      "What training feels from a (shared) filesystem: sequential write with fsync, read, 4K "
      "random read, fsync latency, metadata rates; bounded on a hung mount; from many nodes at "
      "once");
  sf->report.AddTo(st);
  st->add_option("--path", sf->path, "Directory to probe (a folder of its own is made in it)")
      ->required();
  st->add_option("-j,--jobs", sf->jobs, "Worker threads")->capture_default_str();
  st->add_option("--size", sf->size, "Bytes per worker (K/M/G)")->capture_default_str();
  st->add_option("--block", sf->block, "Block size of sequential I/O")->capture_default_str();
  st->add_flag("--direct", sf->direct, "O_DIRECT (bypass the page cache) where allowed");
  st->add_flag("--shared-file", sf->shared_file, "One file, a region per worker");
  st->add_option("--phase", sf->phases, "write, read, randread, fsync, meta (repeatable)")
      ->capture_default_str();
  st->add_option("--files", sf->files, "meta: files per worker")->capture_default_str();
  st->add_option("--fsync-ops", sf->fsync_ops, "fsync: 4K write+fsync per worker")
      ->capture_default_str();
  st->add_option("--randread-ops", sf->randread_ops, "randread: 4K reads per worker")
      ->capture_default_str();
  st->add_option("-c,--check", sf->check, "Verify data on read: 1 or 0")->capture_default_str();
  st->add_option("--op-timeout", sf->op_timeout_s,
                 "Seconds one operation may take before storage.timeout")
      ->check(Seconds())
      ->capture_default_str();
  st->add_option("--timeout", sf->timeout_s,
                 "Seconds a phase (and a wait for another rank) may take")
      ->check(Seconds())
      ->capture_default_str();
  st->add_option("--min-read-gbps", sf->min_read, "GB/s: a slower read phase fails")
      ->check(Number(0, 1e6));
  st->add_option("--min-write-gbps", sf->min_write, "GB/s: a slower write phase fails")
      ->check(Number(0, 1e6));
  st->add_option("--max-fsync-p99-ms", sf->max_fsync_p99, "ms: a slower fsync p99 fails")
      ->check(Number(0, 86400000));
  st->add_option("--max-meta-p99-ms", sf->max_meta_p99, "ms: a slower metadata p99 fails")
      ->check(Number(0, 86400000));
  st->add_option("--straggler-ratio", sf->straggler,
                 "A node below this share of the median node is slow (3+ nodes)")
      ->check(Number(0, 1))
      ->capture_default_str();
  sf->ranks.AddTo(st);
  return {{net, [f] { return RunNet(*f); }}, {st, [sf] { return RunStorage(*sf); }}};
}

}  // namespace tocsin::cli
