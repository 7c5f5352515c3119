// JobReport: the job's nodes side by side and its verdicts, in the report contract.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/strings.h"
#include "jobview/catalog.h"
#include "jobview/job_view.h"

namespace tocsin::jobview {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

nlohmann::json Number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nullptr; }

std::string Rate(double bps) {
  if (!std::isfinite(bps)) return "-";
  if (bps >= 1e9) return fmt::format("{:.1f} GB/s", bps / 1e9);
  return fmt::format("{:.1f} MB/s", bps / 1e6);
}
std::string Seconds(double s) {
  if (!std::isfinite(s)) return "-";
  return s >= 1 ? fmt::format("{:.2f} s", s) : fmt::format("{:.1f} ms", s * 1e3);
}
std::string Percent(double r) { return std::isfinite(r) ? fmt::format("{:.0f}%", r * 100) : "-"; }

std::string Transports(const NodeView& n) {
  std::vector<std::string> parts;
  for (const auto& [t, count] : n.transports) parts.push_back(fmt::format("{} x{}", t, count));
  return parts.empty() ? "-" : Join(parts, ", ");
}

using Values = NodeValues;

nlohmann::json ToJson(const Values& v) {
  return {{kGpuUtilization, Number(v.gpu)},     {kRdmaRate, Number(v.rdma)},
          {kEthernetRate, Number(v.ethernet)},  {kStorageP99, Number(v.storage_p99)},
          {kLustreWait, Number(v.lustre_wait)}, {kSocketProcesses, Number(v.socket_processes)}};
}

std::string Message(const Episode& e, const JobView& view, const Values& v, double peers) {
  std::string job = view.options.job.ToString();
  std::string when =
      e.ongoing
          ? ""
          : " (over since " + FormatRfc3339(FromUnixSeconds(static_cast<int64_t>(e.end))) + ")";
  std::string check = e.verdict->check;
  if (check == kFabricFallback) {
    if (std::isfinite(v.socket_processes) && v.socket_processes > 0) {
      return fmt::format("job {} runs NCCL over sockets on {}: {:.0f} process(es) say Socket{}",
                         job, e.node, v.socket_processes, when);
    }
    return fmt::format(
        "job {} falls back to sockets on {}: GPUs at {} while Ethernet carried {} "
        "and RDMA {}{}",
        job, e.node, Percent(v.gpu), Rate(v.ethernet), Rate(v.rdma), when);
  }
  if (check == kStorageStall) {
    return fmt::format(
        "job {} waits on storage on {}: GPUs at {} while the storage probe's p99 "
        "reached {} and the Lustre wait {}{}",
        job, e.node, Percent(v.gpu), Seconds(v.storage_p99), Seconds(v.lustre_wait), when);
  }
  return fmt::format("{} moves {} in job {}, under half the median of its {} nodes ({}){}", e.node,
                     Rate(v.rdma + v.ethernet), job, view.nodes.size(), Rate(peers), when);
}

}  // namespace

Report JobReport(const JobView& view, const std::string& host, TimePoint generated_at) {
  Report report;
  report.command = "job";
  report.host = host;
  report.generated_at = generated_at;
  auto at = [](double t) { return FormatRfc3339(FromUnixSeconds(static_cast<int64_t>(t))); };

  std::map<std::string, std::vector<std::string>> verdicts_of;
  for (const Episode& e : view.episodes) {
    const Values& v = e.values;
    double peers = e.peers_median;
    Finding f;
    f.check = e.verdict->check;
    f.severity = e.verdict->severity;
    f.subject = e.node;
    f.since = FromUnixSeconds(static_cast<int64_t>(e.start));
    f.message = Message(e, view, v, peers);
    f.evidence = {{"job", view.options.job.ToString()},
                  {"node", e.node},
                  {"alert", e.verdict->alert},
                  {"rule", e.verdict->expr},
                  {"until", at(e.end)},
                  {"ongoing", e.ongoing},
                  {"episodes", e.runs},
                  {"series", ToJson(v)},
                  {"series_over", e.over_window ? "window" : "episode"}};
    if (f.check == kNetworkStraggler) f.evidence["peers_median_bytes_per_second"] = Number(peers);
    verdicts_of[e.node].push_back(f.check);
    report.findings.push_back(std::move(f));
  }
  SortFindings(report.findings);

  Table table{"JOB " + view.options.job.ToString() + " (" + at(view.start) + " to " + at(view.end) +
                  ", step " + std::to_string(view.step) + " s)",
              {"NODE", "GPU", "RDMA", "ETHERNET", "STORAGE P99", "LUSTRE WAIT", "NCCL TRANSPORT",
               "VERDICT"},
              {},
              {"GPU, RDMA and ETHERNET: means over the window; STORAGE P99 (the probe's "
               "write+fsync) and LUSTRE WAIT: the worst; NCCL TRANSPORT: processes seen.",
               "Nodes: those whose agent attributed a pod of the job (tocsin_pod_info); a node "
               "whose agent was down the whole window is not listed.",
               view.recorded ? "Series: the tocsin-job rules' recorded series."
                             : "Series: the tocsin-job rules' expressions over the agents' series "
                               "(no recorded series cover the whole window)."}};
  nlohmann::json nodes = nlohmann::json::object();
  for (const auto& [name, n] : view.nodes) {
    const Values& v = n.window;
    auto verdicts = verdicts_of.find(name);
    std::string verdict = verdicts == verdicts_of.end() ? "-" : Join(verdicts->second, ", ");
    table.rows.push_back({name, Percent(v.gpu), Rate(v.rdma), Rate(v.ethernet),
                          Seconds(v.storage_p99), Seconds(v.lustre_wait), Transports(n), verdict});
    nodes[name] = {{"series", ToJson(v)}, {"nccl_transports", n.transports}};
  }
  // Silence is not health: a node whose inputs are missing gets no verdict, and says why.
  for (const auto& [name, n] : view.nodes) {
    const Values& v = n.window;
    std::vector<std::string> missing;
    if (!std::isfinite(v.gpu)) missing.push_back(kGpuUtilization);
    if (!std::isfinite(v.rdma)) missing.push_back(kRdmaRate);
    if (!std::isfinite(v.ethernet)) missing.push_back(kEthernetRate);
    Finding f;
    f.check = kDataMissing;
    f.severity = Severity::kWarning;
    f.subject = name;
    if (!missing.empty()) {
      f.message = fmt::format(
          "{} holds pods of job {} but Prometheus has no {} for it from {} to {}: its verdicts "
          "cannot be judged (is its agent, or the task behind the series, running?)",
          name, view.options.job.ToString(), Join(missing, ", "), at(view.start), at(view.end));
      f.evidence = {{"job", view.options.job.ToString()}, {"node", name}, {"missing", missing}};
    } else if (n.inputs_missing_since) {
      // Some of the window only: the bitmask record's 8 says when.
      f.since = FromUnixSeconds(static_cast<int64_t>(*n.inputs_missing_since));
      f.message = fmt::format(
          "{} holds pods of job {} but its GPU, RDMA or Ethernet record was missing for {} "
          "step(s) of {} s from {} on: its verdicts could not be judged then (an agent's task "
          "down, a GPU-less pod of the job there, or a rule failing: see Prometheus's "
          "prometheus_rule_evaluation_failures_total)",
          name, view.options.job.ToString(), n.inputs_missing_steps, view.step,
          at(*n.inputs_missing_since));
      f.evidence = {{"job", view.options.job.ToString()},
                    {"node", name},
                    {"missing_steps", n.inputs_missing_steps},
                    {"record", kVerdictBitmask}};
    } else {
      continue;
    }
    report.findings.push_back(std::move(f));
  }
  SortFindings(report.findings);
  if (view.drops.total() > 0) {
    table.notes.push_back(fmt::format(
        "Prometheus's answers held {} series and {} points that were malformed or over the "
        "caps: left out.",
        view.drops.series, view.drops.points));
  }
  report.tables.push_back(std::move(table));
  report.inventory = {
      {"job", view.options.job.ToString()},
      {"window", {{"start", at(view.start)}, {"end", at(view.end)}, {"step_seconds", view.step}}},
      {"queries", view.queries},
      {"source", view.recorded ? "recorded" : "expressions"},
      {"dropped", {{"series", view.drops.series}, {"points", view.drops.points}}},
      {"nodes", nodes}};
  return report;
}

}  // namespace tocsin::jobview
