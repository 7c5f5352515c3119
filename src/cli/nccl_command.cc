#include "cli/nccl_command.h"
#include "cli/number_flags.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

#include "cli/report_flags.h"
#include "nccl/analyzer.h"
#include "nccl/jobs.h"
#include "nccl/log_line.h"
#include "sys/env.h"
#include "sys/line_reader.h"

namespace tocsin::cli {
namespace {

// Regular files at least this large are read in parallel chunks.
constexpr uint64_t kParallelMinBytes = 32ull << 20;
// Chunks of about this size, and at least four per thread: a thread that finishes early (a faster
// or less loaded core) takes the next one, so no core idles while another has half the file.
constexpr uint64_t kChunkBytes = 32ull << 20;
constexpr size_t kChunksPerThread = 4;

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
           (ranks.empty() ? "?" : ranks) +
           ": " + e["event"].get<std::string>() + ": network " + e["network"].get<std::string>() +
           ", inter-node " + e["inter_node"].get<std::string>() +
           (e["gdr"].get<bool>() ? " (GPUDirect RDMA)" : "") + "\n";
  }
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

// One input in order (stdin, pipes, --follow, small files).
Status ReadSequential(int fd, const std::string& name, bool follow, bool json,
                      nccl::Analyzer& analyzer) {
  analyzer.BeginInput(name);
  LineReader reader(fd);
  std::vector<nlohmann::json> events;
  std::string_view line;
  bool truncated = false;
  while (true) {
    auto more = analyzer.WantsEveryLine() ? reader.Next(&line, &truncated)
                                          : reader.NextContaining("NCCL ", '#', &line, &truncated);
    if (!more.ok()) return more.status();
    if (!*more) break;
    if (truncated) analyzer.NoteLongLine();
    analyzer.FeedLine(line, follow ? &events : nullptr, reader.word_at());
    for (const auto& e : events) PrintEvent(e, json);
    events.clear();
  }
  analyzer.EndInput(reader.bytes_read());
  return Status::Ok();
}

// A large regular file: chunks cut at line starts, taken in order by `threads` threads from a
// shared counter, their NCCL lines analysed, and the chunks' analyzers merged in order as they
// complete (at most a few are alive at once); nccl-tests output (tables span chunks) then parsed by
// one pass that stops only at lines holding '#' (or at every line inside a table). Same result as
// ReadSequential.
Status ReadParallel(int fd, uint64_t size, int threads, const std::string& name,
                    const nccl::Options& options, nccl::Analyzer& analyzer) {
  uint64_t wanted = std::max<uint64_t>(static_cast<uint64_t>(threads) * kChunksPerThread,
                                       (size + kChunkBytes - 1) / kChunkBytes);
  wanted = std::min<uint64_t>(wanted, std::max<uint64_t>(1, size >> 20));  // 1 MiB at least
  std::vector<uint64_t> bounds = {0};
  for (uint64_t t = 1; t < wanted; ++t) {
    uint64_t at = size * t / wanted;
    char buf[1 << 16];
    while (at < size) {
      ssize_t n = ::pread(fd, buf, sizeof(buf), static_cast<off_t>(at));
      if (n <= 0) break;
      const char* nl = static_cast<const char*>(std::memchr(buf, '\n', static_cast<size_t>(n)));
      if (nl != nullptr) {
        at += static_cast<uint64_t>(nl - buf) + 1;
        break;
      }
      at += static_cast<uint64_t>(n);
    }
    if (at > bounds.back() && at < size) bounds.push_back(at);
  }
  bounds.push_back(size);
  size_t n_chunks = bounds.size() - 1;
  // A chunk's result, handed from its worker to the merging thread.
  struct Done {
    std::unique_ptr<nccl::Analyzer> analyzer;
    Status status;
    bool ready = false;
  };
  std::vector<Done> done(n_chunks);
  std::mutex mu;
  std::condition_variable cv;
  size_t next = 0;    // the next chunk to take
  size_t merged = 0;  // chunks merged so far
  bool failed = false;
  const size_t ahead = static_cast<size_t>(threads) * 2;  // bounds the unmerged analyzers
  // The chunks' analyzers alive at once (`ahead` unmerged, one per thread) hold three times the
  // whole's byte budget at most, however many threads.
  nccl::Options chunk_options = options;
  chunk_options.max_bytes =
      std::max<size_t>(1 << 20, options.max_bytes / static_cast<size_t>(threads));
  std::vector<std::thread> workers;
  for (size_t t = 0; t < std::min<size_t>(static_cast<size_t>(threads), n_chunks); ++t) {
    workers.emplace_back([&] {
      while (true) {
        size_t c;
        {
          std::unique_lock<std::mutex> lock(mu);
          cv.wait(lock, [&] { return failed || next >= n_chunks || next < merged + ahead; });
          if (failed || next >= n_chunks) return;
          c = next++;
        }
        auto a = std::make_unique<nccl::Analyzer>(chunk_options);
        a->BeginInput(name);
        a->DisablePerf();
        LineReader reader = LineReader::Range(fd, bounds[c], bounds[c + 1] - bounds[c]);
        Status st = reader.ForEachContaining("NCCL ", '#', [&](std::string_view line, bool cut) {
          if (cut) a->NoteLongLine();
          a->FeedLine(line, nullptr, reader.word_at());
        });
        a->EndInput(reader.bytes_read());
        std::lock_guard<std::mutex> lock(mu);
        done[c] = {std::move(a), st, true};
        failed = failed || !st.ok();
        cv.notify_all();
      }
    });
  }
  bool other_lines = false;
  analyzer.BeginInput(name);
  for (size_t c = 0; c < n_chunks; ++c) {
    std::unique_ptr<nccl::Analyzer> a;
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return done[c].ready || failed; });
      if (failed) break;  // a chunk could not be read: its error is returned below
      a = std::move(done[c].analyzer);
    }
    other_lines = other_lines || a->SawOtherLines();
    analyzer.MergeFrom(std::move(*a));
    a.reset();
    std::lock_guard<std::mutex> lock(mu);
    merged = c + 1;
    cv.notify_all();
  }
  for (auto& w : workers) w.join();
  for (const auto& d : done) {
    if (d.ready && !d.status.ok()) return d.status;
  }
  if (!other_lines) return Status::Ok();
  LineReader pass = LineReader::Range(fd, 0, size);
  std::string_view line;
  bool truncated = false;
  while (true) {
    auto more = analyzer.PerfInTable() ? pass.Next(&line, &truncated)
                                       : pass.NextContaining("", '#', &line, &truncated);
    if (!more.ok()) return more.status();
    if (!*more) break;
    if (!nccl::ParseLogLine(line)) analyzer.FeedPerf(line);
  }
  return Status::Ok();
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
  nccl::Analyzer analyzer(options);
  bool json = f.report.output == "json";
  for (size_t i = 0; i < files.size(); ++i) {
    struct stat st;
    bool parallel = f.threads > 1 && !f.follow && fds[i] != STDIN_FILENO &&
                    ::fstat(fds[i], &st) == 0 && S_ISREG(st.st_mode) &&
                    static_cast<uint64_t>(st.st_size) >= kParallelMinBytes;
    Status read = parallel ? ReadParallel(fds[i], static_cast<uint64_t>(st.st_size), f.threads,
                                          files[i], options, analyzer)
                           : ReadSequential(fds[i], files[i], f.follow, json, analyzer);
    if (fds[i] != STDIN_FILENO) ::close(fds[i]);
    if (!read.ok()) return UsageError(files[i] + ": " + read.message());
  }
  Report report;
  report.command = "nccl";
  char host[256] = {};
  report.host = ::gethostname(host, sizeof(host) - 1) == 0 ? host : "unknown";
  report.generated_at = Clock::now();
  nccl::FillReport(analyzer, report);
  ReportFlags out = f.report;
  out.json_lines = f.follow;  // the events were JSON Lines: the report is one more line
  return out.Emit(report);
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
