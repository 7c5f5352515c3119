#include "cli/nccl_command.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <memory>

#include "cli/report_flags.h"
#include "nccl/analyzer.h"
#include "nccl/render.h"
#include "sys/line_reader.h"

namespace tocsin::cli {
namespace {

struct NcclFlags {
  ReportFlags report;
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
    text = "[follow] " + e["host"].get<std::string>() + " pid " +
           std::to_string(e["pid"].get<int64_t>()) + " rank " + (ranks.empty() ? "?" : ranks) +
           ": " + e["event"].get<std::string>() + ": network " + e["network"].get<std::string>() +
           ", inter-node " + e["inter_node"].get<std::string>() +
           (e["gdr"].get<bool>() ? " (GPUDirect RDMA)" : "") + "\n";
  }
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

int RunNccl(CLI::App* cmd, const NcclFlags& f) {
  nccl::Options options;
  options.expect_rdma = f.expect == "rdma";
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
    int fd = ::open(name.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || ::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
      std::string why = fd < 0 ? std::strerror(errno) : "is a directory";
      for (int open_fd : fds) {
        if (open_fd != STDIN_FILENO) ::close(open_fd);
      }
      if (fd >= 0) ::close(fd);
      return UsageError(name + ": " + why);
    }
    fds.push_back(fd);
  }
  nccl::Analyzer analyzer(options);
  std::vector<nlohmann::json> events;
  bool json = f.report.output == "json";
  for (size_t i = 0; i < files.size(); ++i) {
    analyzer.BeginInput(files[i]);
    LineReader reader(fds[i]);
    std::string_view line;
    bool truncated = false;
    while (true) {
      auto more = analyzer.WantsEveryLine()
                      ? reader.Next(&line, &truncated)
                      : reader.NextContaining("NCCL ", '#', &line, &truncated);
      if (!more.ok()) {
        if (fds[i] != STDIN_FILENO) ::close(fds[i]);
        return UsageError(files[i] + ": " + more.status().message());
      }
      if (!*more) break;
      if (truncated) analyzer.NoteLongLine();
      analyzer.FeedLine(line, f.follow ? &events : nullptr);
      for (const auto& e : events) PrintEvent(e, json);
      events.clear();
    }
    analyzer.EndInput(reader.bytes_read());
    if (fds[i] != STDIN_FILENO) ::close(fds[i]);
  }
  Report report;
  report.command = "nccl";
  char host[256] = {};
  report.host = ::gethostname(host, sizeof(host) - 1) == 0 ? host : "unknown";
  report.generated_at = Clock::now();
  report.findings = analyzer.Findings();
  SortFindings(report.findings);
  report.inventory = analyzer.Inventory();
  report.tables = nccl::Tables(analyzer);
  return f.report.Emit(report);
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
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--follow", flags->follow,
                "Print each rank's transport as soon as it is known (for kubectl logs -f)");
  return {cmd, [cmd, flags] { return RunNccl(cmd, *flags); }};
}

}  // namespace tocsin::cli
