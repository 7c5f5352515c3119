#include "bench/storage_results.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "bench/harness.h"
#include "bench/payloads.h"
#include "storage/catalog.h"

namespace tocsin::bench {
namespace {

using nlohmann::json;

std::string Num(double v) { return v >= 100 ? fmt::format("{:.0f}", v) : fmt::format("{:.2f}", v); }

bool IsMeta(const std::string& phase) { return phase.starts_with("meta-"); }

// One phase's throughput, if the phase ran on that node.
std::optional<double> GbpsOf(const std::vector<PhaseResult>& phases, const std::string& name) {
  for (const auto& p : phases) {
    if (p.name == name) return p.gbps();
  }
  return std::nullopt;
}

}  // namespace

const std::vector<std::string>& PhaseColumns() {
  static const std::vector<std::string> kColumns = {"PHASE",   "GB/s",    "IOPS",    "OPS",
                                                    "p50(us)", "p90(us)", "p99(us)", "p99.9(us)",
                                                    "max(us)", "WRONG"};
  return kColumns;
}

std::vector<std::string> PhaseCells(const PhaseResult& p) {
  bool data = p.name == "write" || p.name == "read" || p.name == "randread";
  return {p.name,
          data ? Num(p.gbps()) : "-",
          Num(p.iops()),
          std::to_string(p.ops),
          Num(p.latency.p50),
          Num(p.latency.p90),
          Num(p.latency.p99),
          Num(p.latency.p999),
          Num(p.latency.max),
          p.wrong < 0 ? "-" : std::to_string(p.wrong)};
}

Table PhaseTable(const std::string& title, const std::vector<PhaseResult>& phases) {
  Table t{title, PhaseColumns(), {}, {}};
  for (const auto& p : phases) {
    t.rows.push_back(PhaseCells(p));
    if (!p.note.empty()) t.notes.push_back(p.name + ": " + p.note);
  }
  return t;
}

void AddThresholdFindings(const StorageBenchOptions& o, const std::vector<PhaseResult>& phases,
                          const std::string& subject, Report& report) {
  double meta_p99 = 0;
  for (const auto& p : phases) {
    if (IsMeta(p.name)) meta_p99 = std::max(meta_p99, p.latency.p99 / 1e3);
    double min = p.name == "read" ? o.min_read_gbps : p.name == "write" ? o.min_write_gbps : 0;
    if (min > 0 && p.gbps() < min) {
      report.findings.push_back({storage::kThroughputLow,
                                 Severity::kError,
                                 subject,
                                 fmt::format("{} {:.3f} GB/s is below --min-{}-gbps {:.3f}", p.name,
                                             p.gbps(), p.name, min),
                                 std::nullopt,
                                 {{"phase", p.name}, {"gbps", p.gbps()}, {"min_gbps", min}}});
    }
    if (p.name == "fsync" && o.max_fsync_p99_ms > 0 && p.latency.p99 / 1e3 > o.max_fsync_p99_ms) {
      report.findings.push_back(
          {storage::kLatencyHigh,
           Severity::kError,
           subject,
           fmt::format("write+fsync p99 {:.2f} ms is above --max-fsync-p99-ms {:.2f}",
                       p.latency.p99 / 1e3, o.max_fsync_p99_ms),
           std::nullopt,
           {{"phase", "fsync"}, {"p99_ms", p.latency.p99 / 1e3}, {"max_ms", o.max_fsync_p99_ms}}});
    }
    if (p.wrong > 0) {
      report.findings.push_back(
          {storage::kDataWrong,
           Severity::kError,
           subject,
           fmt::format("{} blocks read back differ from what was written", p.wrong),
           std::nullopt,
           {{"phase", p.name}, {"wrong_blocks", p.wrong}}});
    }
  }
  if (o.max_meta_p99_ms > 0 && meta_p99 > o.max_meta_p99_ms) {
    report.findings.push_back(
        {storage::kLatencyHigh,
         Severity::kError,
         subject,
         fmt::format("metadata p99 {:.2f} ms is above --max-meta-p99-ms {:.2f}", meta_p99,
                     o.max_meta_p99_ms),
         std::nullopt,
         {{"phase", "meta"}, {"p99_ms", meta_p99}, {"max_ms", o.max_meta_p99_ms}}});
  }
}

void AddNodeResults(const StorageBenchOptions& o, const ProbeOptions& po, const FsInfo& fs,
                    const std::vector<PhaseResult>& phases, Report& report) {
  report.tables.push_back({"FILESYSTEM",
                           {"PATH", "TYPE", "MOUNT", "SOURCE", "STRIPING"},
                           {{o.path, fs.type, fs.mount_point, fs.source, fs.striping}},
                           {}});
  report.tables.push_back(PhaseTable("PHASES (this node)", phases));
  json phases_json = json::array();
  for (const auto& p : phases) phases_json.push_back(PhaseJson(p));
  report.inventory = {{"path", o.path},
                      {"filesystem",
                       {{"type", fs.type},
                        {"magic", fmt::format("0x{:x}", fs.magic)},
                        {"mount_point", fs.mount_point},
                        {"source", fs.source},
                        {"striping", fs.striping}}},
                      {"options",
                       {{"jobs", po.jobs},
                        {"size", po.size},
                        {"block", po.block},
                        {"direct", po.direct},
                        {"shared_file", po.shared_file}}},
                      {"phases", phases_json}};
  AddThresholdFindings(o, phases, o.path, report);
}

std::vector<PhaseResult> AggregatePhases(const std::vector<std::vector<PhaseResult>>& nodes) {
  std::vector<PhaseResult> agg;
  if (nodes.empty()) return agg;
  for (size_t i = 0; i < nodes[0].size(); ++i) {
    PhaseResult a;
    a.name = nodes[0][i].name;
    for (const auto& n : nodes) {
      a.bytes += n[i].bytes;
      a.ops += n[i].ops;
      a.seconds = std::max(a.seconds, n[i].seconds);
    }
    agg.push_back(a);
  }
  return agg;
}

void AddAllNodesResults(const std::vector<ranks::Peer>& peers,
                        const std::vector<std::vector<PhaseResult>>& nodes, double straggler_ratio,
                        Report& report) {
  Table per_node{"NODES", {"RANK", "HOST", "WRITE GB/s", "READ GB/s", "FSYNC p99(us)"}, {}, {}};
  json nodes_json = json::array();
  for (size_t r = 0; r < nodes.size(); ++r) {
    double write = GbpsOf(nodes[r], "write").value_or(0);
    double read = GbpsOf(nodes[r], "read").value_or(0);
    std::string fsync_p99 = "-";
    for (const auto& p : nodes[r]) {
      if (p.name == "fsync") fsync_p99 = Num(p.latency.p99);
    }
    per_node.rows.push_back({std::to_string(r), peers[r].host, Num(write), Num(read), fsync_p99});
    nodes_json.push_back({{"rank", r},
                          {"host", peers[r].host},
                          {"ip", peers[r].ip},
                          {"write_gbps", write},
                          {"read_gbps", read}});
  }
  // A straggler among the nodes that ran the phase (all of them: the ranks agreed on the phases).
  for (const char* phase : {"read", "write"}) {
    std::vector<double> values;
    std::vector<size_t> rank_of;
    for (size_t r = 0; r < nodes.size(); ++r) {
      if (auto v = GbpsOf(nodes[r], phase)) {
        values.push_back(*v);
        rank_of.push_back(r);
      }
    }
    Stragglers stragglers = FindStragglers(values, straggler_ratio);
    for (size_t i : stragglers.slow) {
      report.findings.push_back(
          {storage::kNodeSlow,
           Severity::kWarning,
           peers[rank_of[i]].Name(),
           fmt::format("{} {:.3f} GB/s is under {:.0f}% of the median node ({:.3f} GB/s)", phase,
                       values[i], straggler_ratio * 100, stragglers.median),
           std::nullopt,
           {{"phase", phase}, {"gbps", values[i]}, {"median_gbps", stragglers.median}}});
    }
  }
  report.tables.push_back(per_node);
  std::vector<PhaseResult> agg = AggregatePhases(nodes);
  report.tables.push_back(
      PhaseTable("AGGREGATE (all nodes; bytes over the slowest node's time)", agg));
  json agg_json = json::array();
  for (const auto& a : agg) {
    agg_json.push_back({{"phase", a.name},
                        {"bytes", a.bytes},
                        {"seconds", a.seconds},
                        {"gbps", a.gbps()},
                        {"iops", a.iops()}});
  }
  report.inventory["nodes"] = nodes_json;
  report.inventory["aggregate"] = agg_json;
}

}  // namespace tocsin::bench
