#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/finding.h"
#include "nccl/log_line.h"
#include "nccl/messages.h"
#include "nccl/perf_output.h"

namespace tocsin::nccl {

// What one analyzer keeps at most, whatever its input: processes (a real job's size; a log with
// more is hostile or several jobs) and bytes of what they logged (an estimate of the memory the
// bookkeeping takes). NCCL lines beyond either are counted (dropped_lines), not analysed.
constexpr size_t kDefaultMaxProcesses = 4096;
constexpr size_t kDefaultMaxBytes = 16ull << 20;
constexpr size_t kMaxHostBytes = 255;  // a DNS name's limit
constexpr size_t kMaxTextBytes = 128;  // each kept text (NIC, setting, warning, ...) is cut here

struct Options {
  bool expect_rdma = false;         // --expect rdma
  // With expect_rdma: a whole log in which no process showed its inter-node transport is
  // nccl.transport.unknown (`tocsin nccl`; the agent reads logs as they grow, and a job that has
  // not set up its channels yet is no finding).
  bool undetermined_is_finding = false;
  bool expect_gdr = false;          // --expect-gdr
  std::optional<double> min_busbw;  // --min-busbw (GB/s)
  size_t max_processes = kDefaultMaxProcesses;
  size_t max_bytes = kDefaultMaxBytes;
};

// A rank of one communicator, from an "Init COMPLETE" line.
struct Rank {
  int rank = -1;
  int nranks = -1;
  int cuda_dev = -1;
  std::string comm_id;  // 2.19+; empty before
};

// One distinct NCCL WARN text and what it did to init.
struct Warning {
  std::string text;  // at most kMaxTextBytes
  WarnKind kind = WarnKind::kUnknown;
  bool init_complete_after = false;  // an Init COMPLETE followed its last occurrence
};

// The NCCL WARN lines of one process (or of the lines of an input that no process could be
// pinned on), each judged by what NCCL does after printing it (ClassifyWarn) and, when that is
// not known, by whether an Init COMPLETE followed it. Counters cover every line; the texts are
// cut at kMaxTextBytes, capped in number, and each new one is kept only when the analyzer's
// byte budget allows it.
struct Warnings {
  // Asked before a new text is kept, with the bytes it takes: false when the budget is spent
  // (the text is not kept; the counters still count its line).
  using Budget = std::function<bool(size_t)>;

  std::vector<Warning> kept;  // the first distinct texts, in order
  uint64_t count = 0;
  uint64_t benign = 0;    // NCCL goes on after these
  uint64_t fatal = 0;     // NCCL returns an error after these
  uint64_t resolved = 0;  // neither, and an Init COMPLETE followed
  uint64_t pending = 0;   // neither, and no Init COMPLETE followed (yet)
  uint64_t inits = 0;     // Init COMPLETE lines seen

  void Add(std::string_view text, const Budget& budget);
  void InitComplete();
  // Folds in the lines that came after these.
  void MergeLater(Warnings&& later, const Budget& budget);
  // A fatal WARN, or one after which init never completed.
  bool FailedInit() const { return fatal + pending > 0; }
};

// What one NCCL process (host, pid) said about itself. Every list and text is capped, so memory
// stays bounded however long the log is. A process whose lines had no pid (redacted by whoever
// posted the log, or no header but " [dev] NCCL ...") is known by its host (or input) and
// device: pid -1 and cuda_dev set.
struct Process {
  std::string host;  // at most kMaxHostBytes (a longer "host" is not a host: the line is dropped)
  int64_t pid = -1;
  int cuda_dev = -1;   // for a process without pid: the device its lines carried
  std::string source;  // the input it came from
  std::string version;
  // Its rank 0 completed init while its version was unknown and no bare "NCCL version" line had
  // been seen before in its input (a bare line from an earlier chunk of the input then applies).
  bool awaits_bare_version = false;
  std::string network;            // "Using network X"
  std::vector<std::string> nics;  // "mlx5_0:1/IB" or "eth0:10.0.0.1"
  bool ib_no_device = false;
  std::vector<std::string> plugin_failures;
  std::string ofi_provider;
  std::vector<Rank> ranks;
  std::map<std::string, uint64_t, std::less<>> net_channels;  // plugin -> NET channel lines
  uint64_t gdr_channels = 0;
  uint64_t intra_channels = 0;  // P2P / SHM
  std::map<std::string, std::string> env;
  Warnings warnings;
  bool follow_reported = false;
  bool follow_net_reported = false;
  uint64_t lines = 0;  // NCCL lines of this process
  size_t bytes = 0;    // the analyzer's estimate of this process's memory

  uint64_t NetChannelCount() const;
  // The network inter-node traffic used: the busiest NET channel plugin, else "Using network".
  std::string InterNodeNetwork() const;
  // True when NET channels were seen, or no channel lines at all (then the chosen network is
  // all we know).
  bool HasInterNodeTraffic() const;
  std::string RankList() const;  // "0,1" (every rank it holds)
  // "host/rank" (all ranks), "host/pid N", or "host/device N" without pid (the input's name in
  // place of a host it did not log).
  std::string Subject() const;
  // For reports: the inter-node network, "intra-node only", or "unknown" (never connected).
  std::string TransportLabel() const;
};

struct InputStats {
  std::string name;
  uint64_t bytes = 0;
  uint64_t nccl_lines = 0;
  uint64_t long_lines = 0;  // cut at the line-length cap
  // NCCL INFO lines with neither host, pid nor device to pin them on.
  uint64_t unattributed_lines = 0;
  // The WARN lines among them; any Init COMPLETE of the input counts as following them (a
  // communicator's init completes on no rank when one rank fails it).
  Warnings unattributed_warnings;
};

// Streams NCCL debug logs and nccl-tests output; jobs.h tells the jobs of several inputs apart.
class Analyzer {
 public:
  explicit Analyzer(Options options) : options_(options) {}

  void BeginInput(std::string name);
  // Feeds one line (without the newline). When `events` is given, appends a line for each rank
  // whose transport just became known (for --follow). keyword_at: where the caller already found
  // the line's first "NCCL " (LineReader::word_at), or npos; same_prefix: LineReader::same_prefix
  // (see LineParser::Parse).
  void FeedLine(std::string_view line, std::vector<nlohmann::json>* events = nullptr,
                size_t keyword_at = std::string_view::npos, bool same_prefix = false);
  void NoteLongLine() { inputs_.back().long_lines++; }
  void EndInput(uint64_t bytes) { inputs_.back().bytes = bytes; }
  // For the chunks of a file read in parallel: only NCCL lines are analysed; nccl-tests output
  // is parsed by one sequential pass (FeedPerf), since its tables span chunks.
  void DisablePerf() { perf_enabled_ = false; }
  bool SawOtherLines() const { return other_lines_ > 0; }
  // The sequential nccl-tests pass feeds the analyzer's own parser (earlier inputs' runs stay).
  void FeedPerf(std::string_view line) { perf_.Feed(line); }
  bool PerfInTable() const { return perf_.in_table(); }
  // Folds in the analyzer of the chunk that follows this one, so the result is what reading
  // both chunks in order would give (merged per process, in first-seen order).
  void MergeFrom(Analyzer&& later);
  // False while only lines holding "NCCL " or '#' can matter (the caller may skip the others).
  bool WantsEveryLine() const { return perf_enabled_ && perf_.in_table(); }

  // What this analyzer knows about `keys` (one job's processes, see jobs.h); with `everything`,
  // also what belongs to no process (the inputs' unattributed lines, nccl-tests runs, versions).
  Analyzer Part(const std::set<std::pair<std::string, int64_t>>& keys, bool everything) const;

  std::vector<Finding> Findings() const;
  nlohmann::json Inventory() const;
  const std::map<std::pair<std::string, int64_t>, Process>& processes() const { return processes_; }
  const std::vector<PerfRun>& perf_runs() const { return perf_.runs(); }

  // The caps may change between inputs (the agent shares one budget among its log files); what
  // is already kept stays.
  void SetLimits(size_t max_processes, size_t max_bytes) {
    options_.max_processes = max_processes;
    options_.max_bytes = max_bytes;
  }
  // NCCL lines not analysed because a cap was reached (their process was not kept, or what they
  // said did not fit), and nccl-tests rows, runs and devices left out: the result is incomplete.
  uint64_t dropped_lines() const { return dropped_lines_; }
  uint64_t dropped_perf() const { return perf_.dropped(); }
  bool Capped() const { return dropped_lines_ > 0 || perf_.dropped() > 0; }
  size_t stored_bytes() const { return bytes_; }

 private:
  // Null when the process is not kept (a cap was reached, or the host is no host name).
  Process* ProcessFor(std::string_view host, int64_t pid);
  Process* LookUp(std::string_view host, int64_t pid);
  // Keeps a new process under `key` if the caps allow it.
  Process* Admit(std::pair<std::string, int64_t> key, Process fresh);
  // A line without pid: its host (or input) and device make the process.
  void FeedPartial(const LogLine& line, std::vector<nlohmann::json>* events);
  Process* PartialProcess(std::string_view host, int cuda_dev);
  void NoteBareVersion(std::string_view message);
  // Takes `n` bytes from the budget (for `p`), or counts the line as dropped and returns false.
  bool Charge(size_t n);
  bool Charge(Process& p, size_t n);
  void PushCapped(Process& p, std::vector<std::string>& v, std::string_view item, size_t cap);
  // A process that re-creates its communicator logs the same rank again: kept once.
  void AddRank(Process& p, int rank, int nranks, int cuda_dev, std::string_view comm_id);
  void SetEnv(Process& p, std::string_view name, std::string_view value);
  void HandleInfo(Process& p, std::string_view msg, std::vector<nlohmann::json>* events);
  void FindingsForWarnings(std::vector<Finding>& out) const;
  void FindingsForTransport(std::vector<Finding>& out) const;
  void FindingsForPerf(std::vector<Finding>& out) const;

  // Lines of one process come in runs; a small pid-indexed cache skips the map lookup.
  struct CacheSlot {
    int64_t pid = -1;
    std::string host;
    Process* process = nullptr;
  };
  static constexpr size_t kCacheSlots = 1024;

  Options options_;
  LineParser parser_;
  std::string nic_;                  // HandleInfo's scratch for a NIC's name
  std::vector<IbDevice> ib_;         // HandleInfo's scratch for a line's IB devices
  Process* memo_process_ = nullptr;  // the process of the header in parser_'s memo
  // kCacheSlots (48 KiB), allocated with the first process: the agent keeps an analyzer per pod
  // log file, and most pods are not NCCL jobs.
  std::vector<CacheSlot> cache_;
  std::vector<InputStats> inputs_;
  std::map<std::pair<std::string, int64_t>, Process> processes_;
  // The last bare "NCCL version" line of the current input. NCCL prints it with printf (or at
  // NCCL_DEBUG=VERSION) from ncclCommInitRank when myrank == 0, before that rank's init
  // completes: it is given to the process whose rank 0 completes init next.
  std::string pending_version_;
  std::set<std::string> bare_versions_;  // every bare version seen (capped in number and size)
  PerfParser perf_;
  bool perf_enabled_ = true;
  uint64_t other_lines_ = 0;  // non-NCCL lines seen while perf is disabled
  uint64_t info_lines_ = 0;
  uint64_t dropped_lines_ = 0;
  // The sum of the kept processes' `bytes` and of the inputs' kept unattributed WARN texts.
  size_t bytes_ = 0;
};

nlohmann::json FollowEvent(const Process& p, const std::string& what);

}  // namespace tocsin::nccl
