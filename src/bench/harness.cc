#include "bench/harness.h"

#include "bench/latency.h"

namespace tocsin::bench {

Stragglers FindStragglers(const std::vector<double>& values, double ratio) {
  Stragglers out;
  out.median = Median(values);
  if (values.size() < kMinStragglerValues) return out;
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] < ratio * out.median) out.slow.push_back(i);
  }
  return out;
}

Finding RankFailedFinding(const std::string& check, const std::string& reason, int reported_by_rank,
                          const std::string& culprit) {
  return {.check = check,
          .severity = Severity::kCritical,
          .subject = culprit.empty() ? "job" : culprit,
          .message = reason,
          .since = std::nullopt,
          .evidence = {{"reported_by_rank", reported_by_rank}}};
}

Report BenchReport(const std::string& command, const std::string& host) {
  Report report;
  report.command = command;
  report.host = host;
  report.generated_at = Clock::now();
  return report;
}

Table SetupTable(const std::vector<ranks::Peer>& peers, const std::string& note) {
  Table setup{"SETUP", {"RANK", "HOST", "IP"}, {}, {}};
  for (const auto& p : peers) setup.rows.push_back({std::to_string(p.rank), p.host, p.ip});
  if (!note.empty()) setup.notes.push_back(note);
  return setup;
}

nlohmann::json RanksJson(const std::vector<ranks::Peer>& peers) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& p : peers) {
    ranks.push_back({{"rank", p.rank},
                     {"host", p.host},
                     {"ip", p.ip},
                     {"node", p.node.empty() ? nlohmann::json() : nlohmann::json(p.node)},
                     {"node_dropped", p.node_dropped}});
  }
  return ranks;
}

}  // namespace tocsin::bench
