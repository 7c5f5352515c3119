#include "nccl/render.h"

#include <fmt/format.h>

#include <algorithm>

namespace tocsin::nccl {
namespace {

std::string JoinCapped(const std::vector<std::string>& v, size_t cap) {
  std::string out;
  for (size_t i = 0; i < v.size() && i < cap; ++i) out += (i ? " " : "") + v[i];
  if (v.size() > cap) out += fmt::format(" (+{})", v.size() - cap);
  return out.empty() ? "-" : out;
}

}  // namespace

std::vector<Table> Tables(const Analyzer& analyzer) {
  Table procs{"NCCL PROCESSES",
              {"HOST", "PID", "RANKS", "NCCL", "NETWORK", "INTER-NODE", "GDR", "NICS"},
              {},
              {}};
  for (const auto& [key, p] : analyzer.processes()) {
    std::vector<std::string> ranks;
    for (const auto& r : p.ranks) ranks.push_back(fmt::format("{}/{}", r.rank, r.nranks));
    std::string inter = p.TransportLabel();
    std::string gdr = p.NetChannelCount() == 0 || !IsRdmaNetwork(inter)
                          ? "-"
                          : (p.gdr_channels > 0 ? "yes" : "no");
    procs.rows.push_back({p.host.empty() ? "-" : p.host,
                          p.pid >= 0 ? std::to_string(p.pid) : fmt::format("? (dev {})", p.cuda_dev),
                          JoinCapped(ranks, 4),
                          p.version.empty() ? "?" : p.version, p.network.empty() ? "?" : p.network,
                          inter, gdr, JoinCapped(p.nics, 4)});
  }
  std::vector<Table> tables = {procs};
  if (!analyzer.perf_runs().empty()) {
    Table perf{"NCCL-TESTS", {"TEST", "SIZES", "MAX BUSBW", "AVG BUSBW", "#WRONG"}, {}, {}};
    for (const auto& run : analyzer.perf_runs()) {
      double max_bus = 0;
      int64_t wrong = 0;
      bool counted = false;  // a "#wrong" column (old layouts print an error value instead)
      for (const auto& r : run.rows) {
        max_bus = std::max({max_bus, r.out_of_place.busbw, r.in_place.busbw});
        wrong += r.out_of_place.wrong.value_or(0) + r.in_place.wrong.value_or(0);
        counted = counted || r.out_of_place.wrong || r.in_place.wrong;
      }
      auto avg = run.avg_busbw ? run.avg_busbw : run.ComputedAvgBusbw();
      std::string wrong_text = counted ? std::to_string(wrong)
                               : run.out_of_bounds
                                   ? fmt::format("{} out of bounds", *run.out_of_bounds)
                                   : "-";
      perf.rows.push_back({run.test.empty() ? "?" : run.test, std::to_string(run.rows.size()),
                           fmt::format("{:g} GB/s", max_bus),
                           avg ? fmt::format("{:g} GB/s", *avg) : "-", wrong_text});
    }
    tables.push_back(perf);
  }
  return tables;
}

}  // namespace tocsin::nccl
