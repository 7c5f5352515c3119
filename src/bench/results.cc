#include "bench/results.h"

#include <fmt/format.h>

#include <algorithm>

#include "bench/harness.h"
#include "bench/catalog.h"

namespace tocsin::bench {
namespace {

using nlohmann::json;

// nccl-tests' getFloatStr: %.2f, else %.1f, else %.0f, to fit the width.
std::string Num(double v, int width) {
  for (int prec = 2; prec >= 0; --prec) {
    std::string s = fmt::format("{:.{}f}", v, prec);
    if (static_cast<int>(s.size()) <= width) return s;
  }
  return fmt::format("{:.1e}", v);
}

std::string PairName(const std::vector<ranks::Peer>& peers, int a, int b) {
  return peers[a].Name() + " <-> " + peers[b].Name();
}

}  // namespace

double TestResult::CpuSecondsPerGb(const SweepRow& r) const {
  return r.bytes > 0 && factor > 0 ? r.cpu_us * 1e3 / (static_cast<double>(r.bytes) * factor) : 0;
}

double TestResult::AvgBusBw() const {
  if (rows.empty()) return 0;
  double sum = 0;
  for (const auto& r : rows) sum += r.busbw;
  return sum / rows.size();
}

Finding NotRdmaFinding(const TransportInfo& info, const std::string& subject) {
  Finding f;
  f.check = kNetTransportNotRdma;
  f.severity = Severity::kError;
  f.subject = subject;
  f.message = "--require rdma, but the selected path is " + info.Describe() +
              ", which is not RDMA: refusing to measure a fallback (use --transport fabric with "
              "an RDMA provider such as verbs, efa or cxi)";
  f.evidence = {{"transport", info.kind},
                {"provider", info.provider},
                {"domain", info.domain},
                {"interface", info.interface},
                {"ip", info.ip}};
  return f;
}

const std::vector<std::string>& SweepColumns() {
  static const std::vector<std::string> kColumns = {
      "SIZE(B)", "COUNT", "TYPE", "REDOP", "TIME(us)", "ALGBW(GB/s)", "BUSBW(GB/s)", "#WRONG"};
  return kColumns;
}

std::vector<std::string> SweepCells(const std::string& redop, const SweepRow& r) {
  return {std::to_string(r.bytes), std::to_string(r.count), "float", redop,
          Num(r.time_us, 7),       Num(r.algbw, 6),         Num(r.busbw, 6),
          r.wrong < 0 ? "N/A" : std::to_string(r.wrong)};
}

std::string ProgressLine(const std::vector<std::string>& cells, bool comment) {
  std::string line = comment ? "#" : " ";
  for (const auto& c : cells) line += fmt::format(" {:>11}", c);
  return line + "\n";
}

nlohmann::json TransportJson(const TransportInfo& t) {
  return {{"kind", t.kind},           {"provider", t.provider},
          {"fabric", t.fabric},       {"domain", t.domain},
          {"interface", t.interface}, {"ip", t.ip},
          {"rdma", t.rdma},           {"sources_checked", t.sources_checked},
          {"spin_us", t.spin_us},     {"wake_bytes", t.wake_bytes},
          {"description", t.Describe()}};
}

void FillReport(const BenchOutcome& o, double min_busbw, double straggler_ratio, Report& report) {
  int n = static_cast<int>(o.peers.size());
  report.tables.push_back(SetupTable(
      o.peers, "transport: " + o.transport.Describe() + "; " + std::to_string(n) + " ranks"));
  json tests = json::object();
  for (const auto& t : o.tests) {
    Table table{fmt::format("{} (float32{}, busbw = algbw x {:.3f})", t.name,
                            t.redop == "none" ? "" : " " + t.redop, t.factor),
                SweepColumns(),
                {},
                {}};
    json rows = json::array();
    int64_t wrong_total = 0;
    for (const auto& r : t.rows) {
      table.rows.push_back(SweepCells(t.redop, r));
      rows.push_back({{"size", r.bytes},
                      {"count", r.count},
                      {"type", "float"},
                      {"redop", t.redop},
                      {"time_us", r.time_us},
                      {"algbw_gbps", r.algbw},
                      {"busbw_gbps", r.busbw},
                      {"wrong", r.wrong < 0 ? json() : json(r.wrong)},
                      {"cpu_s_per_gb", t.CpuSecondsPerGb(r)}});
      if (r.wrong > 0) wrong_total += r.wrong;
    }
    double avg = t.AvgBusBw();
    table.notes.push_back(fmt::format("Avg bus bandwidth: {} GB/s", Num(avg, 8)));
    if (!t.rows.empty()) {
      table.notes.push_back(fmt::format(
          "CPU (user + sys, all ranks) at {} B: {:.3f} s per GB of bus traffic",
          t.rows.back().bytes, t.CpuSecondsPerGb(t.rows.back())));
    }
    if (t.rings > 0) {
      table.notes.push_back(fmt::format("Ring: {} ring(s), reduced in slices of {} B", t.rings,
                                        t.slice_bytes));
    }
    report.tables.push_back(table);
    tests[t.name] = {{"busbw_factor", t.factor}, {"rows", rows}, {"avg_busbw_gbps", avg}};
    if (t.rings > 0) {
      tests[t.name]["rings"] = t.rings;
      tests[t.name]["slice_bytes"] = t.slice_bytes;
    }
    if (wrong_total > 0) {
      report.findings.push_back(
          {kNetWrong,
           Severity::kError,
           t.name,
           fmt::format("{}: {} wrong elements: the data arrived corrupted", t.name, wrong_total),
           std::nullopt,
           {{"wrong", wrong_total}}});
    }
    if (min_busbw > 0 && avg < min_busbw) {
      report.findings.push_back(
          {kNetBusbwLow,
           Severity::kError,
           t.name,
           fmt::format("{}: average bus bandwidth {:.2f} GB/s is below --min-busbw {:.2f} over {}",
                       t.name, avg, min_busbw, o.transport.Describe()),
           std::nullopt,
           {{"avg_busbw_gbps", avg}, {"min_busbw_gbps", min_busbw}}});
    }
  }
  json pairs = json::array();
  if (!o.pairs.empty()) {
    std::vector<double> all;
    for (const auto& p : o.pairs) all.push_back(p.gbps());
    Stragglers stragglers = FindStragglers(all, straggler_ratio);
    double median = stragglers.median;
    Table table{"P2P PAIRS (largest size; each direction measured alone)",
                {"PAIR", "A->B(GB/s)", "B->A(GB/s)", "LATENCY(us)", "STATUS"},
                {},
                {fmt::format("median pair: {:.2f} GB/s", median)}};
    for (size_t i = 0; i < o.pairs.size(); ++i) {
      const PairResult& p = o.pairs[i];
      bool straggler = std::find(stragglers.slow.begin(), stragglers.slow.end(), i) !=
                       stragglers.slow.end();
      std::string status = "ok";
      std::string subject = PairName(o.peers, p.a, p.b);
      json ev = {{"a_to_b_gbps", p.ab_gbps},
                 {"b_to_a_gbps", p.ba_gbps},
                 {"latency_us", p.latency_us},
                 {"median_pair_gbps", median}};
      if (min_busbw > 0 && p.gbps() < min_busbw) {
        status = "slow";
        ev["min_busbw_gbps"] = min_busbw;
        report.findings.push_back(
            {kNetLinkSlow, Severity::kError, subject,
             fmt::format("{:.2f} GB/s (slower direction) is below --min-busbw {:.2f}", p.gbps(),
                         min_busbw),
             std::nullopt, ev});
      } else if (straggler) {
        status = "straggler";
        ev["straggler_ratio"] = straggler_ratio;
        report.findings.push_back(
            {kNetLinkSlow, Severity::kWarning, subject,
             fmt::format("{:.2f} GB/s (slower direction) is under {:.0f}% of the median pair "
                         "({:.2f} GB/s): a straggler link",
                         p.gbps(), straggler_ratio * 100, median),
             std::nullopt, ev});
      }
      table.rows.push_back(
          {subject, Num(p.ab_gbps, 6), Num(p.ba_gbps, 6), Num(p.latency_us, 7), status});
      pairs.push_back({{"a", p.a},
                       {"b", p.b},
                       {"a_to_b_gbps", p.ab_gbps},
                       {"b_to_a_gbps", p.ba_gbps},
                       {"latency_us", p.latency_us},
                       {"status", status}});
    }
    report.tables.push_back(table);
  }
  report.inventory = {{"transport", TransportJson(o.transport)},
                      {"world_size", n},
                      {"ranks", RanksJson(o.peers)},
                      {"tests", tests},
                      {"pairs", pairs}};
}

}  // namespace tocsin::bench
