#include "cli/nccl_command.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <thread>

#include "cli/number_flags.h"
#include "cli/report_flags.h"
#include "nccl/analyzer.h"
#include "nccl/jobs.h"
#include "nccl/reader.h"
#include "sys/env.h"
#include "sys/huge_heap.h"

namespace tocsin::cli {
namespace {

struct NcclFlags {
  ReportFlags report;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::string> files;
  std::string expect = "any";
  bool expect_gdr = false;
  double min_busbw = 0;
  bool follow = false;
};

void PrintEvent(const nlohmann::json& e, bool json) {
  std::string text;
  if (json) {
    text = e.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  } else {
    std::string ranks;
    for (const auto& r : e["ranks"]) {
      ranks += (ranks.empty() ? "" : ",") + std::to_string(r["rank"].get<int>()) + "/" +
               std::to_string(r["nranks"].get<int>());
    }
    std::string pid = e["pid"].is_null() ? "?" : std::to_string(e["pid"].get<int64_t>());
    text = "[follow] " + e["host"].get<std::string>() + " pid " + pid + " rank " +
           (ranks.empty() ? "?" : ranks) + ": " + e["event"].get<std::string>() + ": network " +
           e["network"].get<std::string>() + ", inter-node " + e["inter_node"].get<std::string>() +
           (e["gdr"].get<bool>() ? " (GPUDirect RDMA)" : "") + "\n";
  }
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

int RunNccl(CLI::App* cmd, const NcclFlags& f) {
  nccl::Options options;
  options.expect_rdma = f.expect == "rdma";
  options.undetermined_is_finding = true;  // the whole log is read: silence is not "ok"
  options.expect_gdr = f.expect_gdr;
  if (cmd->count("--min-busbw")) options.min_busbw = f.min_busbw;
  std::vector<std::string> files = f.files.empty() ? std::vector<std::string>{"-"} : f.files;
  // Open everything first: a missing file is a usage error before any output.
  std::vector<int> fds;
  for (const auto& name : files) {
    if (name == "-") {
      fds.push_back(STDIN_FILENO);
      continue;
    }
    // Never blocks (a FIFO without a writer would); a pipe goes to stdin: `... | tocsin nccl -`.
    auto fd = OpenRegularFile(name);
    if (!fd.ok()) {
      for (int open_fd : fds) {
        if (open_fd != STDIN_FILENO) ::close(open_fd);
      }
      struct stat st;
      bool fifo = ::stat(name.c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
      return UsageError(fd.status().message() + (fifo ? "; pipe it to stdin (-)" : ""));
    }
    fds.push_back(*fd);
  }
  // The report is built on this thread once the readers are done: in huge pages (a 4 KiB first
  // touch is slow on a VM; sys/huge_heap.h). 64 MiB of address space, used as it is touched.
  sys::HugeMainHeap(*NewRootedEnv(), 64u << 20);
  nccl::Analyzer analyzer(options);
  bool json = f.report.output == "json";
  nccl::ReadOptions read_options;
  read_options.analyzer = options;
  if (f.follow) read_options.on_event = [json](const nlohmann::json& e) { PrintEvent(e, json); };
  for (size_t i = 0; i < files.size(); ++i) {
    read_options.threads = fds[i] == STDIN_FILENO ? 1 : f.threads;  // stdin: in order, as it is
    Status read = nccl::ReadLog(fds[i], files[i], read_options, analyzer);
    if (fds[i] != STDIN_FILENO) ::close(fds[i]);
    if (!read.ok()) return UsageError(files[i] + ": " + read.message());
  }
  Report report;
  report.command = "nccl";
  report.host = HostName(*NewRootedEnv());
  if (report.host.empty()) report.host = "unknown";
  report.generated_at = Clock::now();
  nccl::FillReport(analyzer, report);
  ReportFlags out = f.report;
  out.json_lines = f.follow;  // the events were JSON Lines: the report is one more line
  return out.Emit(std::move(report));
}

}  // namespace

Command AddNcclCommand(CLI::App& parent) {
  auto flags = std::make_shared<NcclFlags>();
  CLI::App* cmd = parent.add_subcommand(
      "nccl",
      "Read NCCL_DEBUG=INFO logs and nccl-tests output: which transport each rank really used");
  flags->report.AddTo(cmd);
  cmd->add_option("files", flags->files,
                  "Log files (several ranks may be interleaved); - or none reads stdin");
  cmd->add_option("--expect", flags->expect,
                  "rdma: a rank on TCP sockets is an error even if no rank uses RDMA")
      ->check(CLI::IsMember({"any", "rdma"}))
      ->capture_default_str();
  cmd->add_flag("--expect-gdr", flags->expect_gdr,
                "Warn when RDMA channels do not use GPUDirect RDMA");
  cmd->add_option("--min-busbw", flags->min_busbw,
                  "nccl-tests: average bus bandwidth below this (GB/s) is an error")
      ->check(Number(0.000001, 1e9));
  cmd->add_option("--threads", flags->threads,
                  "Threads for large regular files (default: all cores; 1 reads in order)")
      ->check(Count(1, 1024))
      ->capture_default_str();
  cmd->add_flag("--follow", flags->follow,
                "Print each rank's transport as soon as it is known (for kubectl logs -f)");
  return {cmd, [cmd, flags] { return RunNccl(cmd, *flags); }};
}

}  // namespace tocsin::cli
