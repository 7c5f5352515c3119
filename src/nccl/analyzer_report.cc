// The Analyzer's report once the input is read: findings and the inventory.
#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <utility>

#include "nccl/analyzer.h"
#include "nccl/catalog.h"

namespace tocsin::nccl {
namespace {

// NCCL settings that make the job slower or take the fabric away, with why.
struct RiskySetting {
  const char* name;
  const char* value;  // "" matches any value
  const char* why;
};
constexpr RiskySetting kRisky[] = {
    {"NCCL_IB_DISABLE", "1", "disables the InfiniBand/RoCE transport: NCCL falls back to sockets"},
    {"NCCL_NET", "Socket", "forces the TCP socket transport"},
    {"NCCL_NET", "socket", "forces the TCP socket transport"},
    {"NCCL_NET_GDR_LEVEL", "LOC", "disables GPUDirect RDMA"},
    {"NCCL_NET_GDR_LEVEL", "0", "disables GPUDirect RDMA"},
    {"NCCL_NET_PLUGIN", "none", "disables external network plugins (EFA, gIB, ...)"},
    {"NCCL_P2P_DISABLE", "1", "disables NVLink/PCIe peer-to-peer inside the node"},
    {"NCCL_SHM_DISABLE", "1", "disables shared-memory transport inside the node"},
};

nlohmann::json WarningsJson(const Warnings& w) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& k : w.kept) {
    list.push_back({{"text", k.text},
                    {"kind", WarnKindName(k.kind)},
                    {"init_complete_after", k.init_complete_after}});
  }
  return list;
}

// nccl.init.failed for WARN lines that failed init (a fatal one, or one no Init COMPLETE
// followed), else nccl.warn (info) with their text: NCCL printed them during an init that went on.
Finding WarningFinding(const std::string& subject, const Warnings& w, bool initialised,
                       nlohmann::json evidence) {
  evidence["warn_count"] = w.count;
  evidence["warnings"] = WarningsJson(w);
  evidence["fatal"] = w.fatal;
  evidence["benign"] = w.benign;
  evidence["followed_by_init_complete"] = w.resolved;
  evidence["not_followed_by_init_complete"] = w.pending;
  if (w.FailedInit()) {
    const Warning* first = nullptr;
    for (const auto& k : w.kept) {
      if (k.kind == WarnKind::kFatal || (k.kind == WarnKind::kUnknown && !k.init_complete_after)) {
        first = &k;
        break;
      }
    }
    std::string why;
    if (first != nullptr && first->kind == WarnKind::kFatal) {
      why = "NCCL returns an error after it";
    } else if (initialised) {
      why = "no Init COMPLETE followed it (after a communicator had initialised: a runtime error)";
    } else {
      why = "no Init COMPLETE followed it";
    }
    return {.check = kInitFailed,
            .severity = Severity::kError,
            .subject = subject,
            .message = fmt::format("{} NCCL WARN line(s), {}: {}", w.count, why,
                                   first != nullptr ? first->text : "(text not kept)"),
            .evidence = std::move(evidence)};
  }
  const Warning* first = w.kept.empty() ? nullptr : &w.kept.front();
  std::string why = first == nullptr                      ? ""
                    : first->kind == WarnKind::kBenign ? " (NCCL goes on after it)"
                                                       : " (Init COMPLETE followed it)";
  return {.check = kWarn,
          .severity = Severity::kInfo,
          .subject = subject,
          .message = fmt::format("{} NCCL WARN line(s) that did not fail init: {}{}", w.count,
                                 first != nullptr ? first->text : "", why),
          .evidence = std::move(evidence)};
}

}  // namespace

void Analyzer::FindingsForWarnings(std::vector<Finding>& out) const {
  for (const auto& [key, p] : processes_) {
    if (p.warnings.count == 0) continue;
    out.push_back(WarningFinding(p.Subject(), p.warnings, !p.ranks.empty(),
                                 {{"host", p.host},
                                  {"pid", p.pid >= 0 ? nlohmann::json(p.pid) : nullptr},
                                  {"ranks", p.RankList()},
                                  {"source", p.source}}));
  }
  for (const auto& in : inputs_) {
    if (in.unattributed_warnings.count == 0) continue;
    out.push_back(WarningFinding(in.name + " (lines without host, pid or device)",
                                 in.unattributed_warnings, false, {{"source", in.name}}));
  }
}

void Analyzer::FindingsForTransport(std::vector<Finding>& out) const {
  if (options_.expect_rdma && options_.undetermined_is_finding && info_lines_ > 0) {
    std::set<std::string> hosts;
    bool determined = false;
    for (const auto& [key, p] : processes_) {
      hosts.insert(p.host);
      determined |= p.HasInterNodeTraffic() && !p.InterNodeNetwork().empty();
    }
    if (!determined && !processes_.empty()) {
      out.push_back(
          {.check = kTransportUnknown,
           .severity = Severity::kWarning,
           .subject = "job",
           .message = fmt::format(
               "RDMA is expected, but none of the {} processes on {} host(s) logged the "
               "transport of its inter-node traffic ({}): cannot tell",
               processes_.size(), hosts.size(),
               hosts.size() > 1 ? "the log ends before NCCL chose its network and channels"
                                : "one host: no inter-node traffic to judge"),
           .evidence = {{"result", "unknown"},
                        {"processes", processes_.size()},
                        {"hosts", std::vector<std::string>(hosts.begin(), hosts.end())}}});
    }
  }
  int rdma_procs = 0;
  std::map<std::string, int> by_network;
  for (const auto& [key, p] : processes_) {
    if (!p.HasInterNodeTraffic()) continue;
    std::string net = p.InterNodeNetwork();
    if (net.empty()) continue;
    by_network[net]++;
    if (IsRdmaNetwork(net)) rdma_procs++;
  }
  for (const auto& [key, p] : processes_) {
    std::string net = p.InterNodeNetwork();
    if (p.HasInterNodeTraffic() && IsSocketNetwork(net) &&
        (options_.expect_rdma || rdma_procs > 0)) {
      std::string why;
      if (p.env.count("NCCL_IB_DISABLE") && p.env.at("NCCL_IB_DISABLE") == "1") {
        why = "NCCL_IB_DISABLE=1 is set";
      } else if (p.env.count("NCCL_NET")) {
        why = "NCCL_NET=" + p.env.at("NCCL_NET") + " is set";
      } else if (p.ib_no_device) {
        why =
            "NCCL found no RDMA device (\"NET/IB : No device found\"): the pod has no RDMA "
            "resource, /dev/infiniband or IPC_LOCK";
      } else if (!p.plugin_failures.empty()) {
        why = "the " + p.plugin_failures.front() + " network plugin failed to initialise";
      } else {
        why = "NCCL chose the socket transport";
      }
      std::string against =
          options_.expect_rdma
              ? "RDMA is expected"
              : fmt::format("{} other process(es) of this job use RDMA", rdma_procs);
      out.push_back({.check = kTransportSocket,
                     .severity = Severity::kError,
                     .subject = p.Subject(),
                     .message = fmt::format("inter-node traffic goes over TCP sockets while {}: {}",
                                            against, why),
                     .evidence = {{"host", p.host},
                                  {"pid", p.pid >= 0 ? nlohmann::json(p.pid) : nullptr},
                                  {"ranks", p.RankList()},
                                  {"network", p.network},
                                  {"net_channels", p.net_channels},
                                  {"nics", p.nics},
                                  {"ib_no_device", p.ib_no_device},
                                  {"plugin_failures", p.plugin_failures},
                                  {"env", p.env},
                                  {"nccl_version", p.version},
                                  {"source", p.source}}});
    }
    if (options_.expect_gdr && IsRdmaNetwork(net) && p.NetChannelCount() > 0 &&
        p.gdr_channels == 0) {
      out.push_back(
          {.check = kGdrAbsent,
           .severity = Severity::kWarning,
           .subject = p.Subject(),
           .message = fmt::format("{} NET/{} channels without GPUDirect RDMA (no /GDRDMA): data "
                                  "is staged through host memory",
                                  p.NetChannelCount(), net),
           .evidence = {{"net_channels", p.net_channels}, {"gdr_channels", p.gdr_channels}}});
    }
    for (const auto& risky : kRisky) {
      auto it = p.env.find(risky.name);
      if (it == p.env.end() || it->second != risky.value) continue;
      out.push_back({.check = kEnvRisky,
                     .severity = Severity::kWarning,
                     .subject = p.Subject(),
                     .message = fmt::format("{}={}: {}", risky.name, it->second, risky.why),
                     .evidence = {{"name", risky.name}, {"value", it->second}, {"host", p.host}}});
    }
  }
  // nccl.transport.mixed: one communicator (commId; the whole job when NCCL predates commId)
  // whose ranks use different networks.
  std::map<std::string, std::map<std::string, std::vector<std::string>>> comms;
  for (const auto& [key, p] : processes_) {
    if (!p.HasInterNodeTraffic() || p.InterNodeNetwork().empty()) continue;
    std::set<std::string> ids;
    for (const auto& r : p.ranks) ids.insert(r.comm_id.empty() ? "job" : r.comm_id);
    if (ids.empty()) ids.insert("job");
    for (const auto& id : ids) comms[id][p.InterNodeNetwork()].push_back(p.Subject());
  }
  for (const auto& [id, nets] : comms) {
    if (nets.size() < 2) continue;
    std::string list;
    for (const auto& [net, who] : nets) {
      list += fmt::format("{}{} on {}", list.empty() ? "" : ", ", who.size(), net);
    }
    out.push_back({.check = kTransportMixed,
                   .severity = Severity::kError,
                   .subject = id == "job" ? "job" : "comm " + id,
                   .message = "ranks of one communicator use different networks: " + list +
                              "; collectives run at the speed of the slowest",
                   .evidence = {{"networks", nets}}});
  }
}

// nccl.wrong: a row whose check failed ("#wrong" above 0, or an old "error" marked '*'), else a
// run whose "Out of bounds values" line counts failed rows (old layouts without the mark: the
// error column alone is a difference that is fine within the type's tolerance, "1e-06" on a
// passing float run).
void Analyzer::FindingsForPerf(std::vector<Finding>& out) const {
  auto error_json = [](const std::optional<double>& e) {
    return e ? nlohmann::json(*e) : nlohmann::json(nullptr);
  };
  for (const auto& run : perf_.runs()) {
    std::string test = run.test.empty() ? "nccl-tests" : run.test;
    bool row_found = false;
    for (const auto& row : run.rows) {
      int64_t wrong = row.out_of_place.wrong.value_or(0) + row.in_place.wrong.value_or(0);
      bool oob = row.out_of_place.out_of_bounds || row.in_place.out_of_bounds;
      if (wrong <= 0 && !oob) continue;
      row_found = true;
      double max_error =
          std::max(row.out_of_place.max_error.value_or(0), row.in_place.max_error.value_or(0));
      out.push_back(
          {.check = kWrong,
           .severity = Severity::kError,
           .subject = fmt::format("{} size {}", test, row.size),
           .message =
               wrong > 0
                   ? fmt::format("{} wrong elements at {} bytes: the collective corrupted data",
                                 wrong, row.size)
                   : fmt::format("error {:g} at {} bytes, marked out of bounds by nccl-tests: "
                                 "the collective corrupted data",
                                 max_error, row.size),
           .evidence = {{"size", row.size},
                        {"out_of_place_wrong", row.out_of_place.wrong.value_or(0)},
                        {"in_place_wrong", row.in_place.wrong.value_or(0)},
                        {"out_of_place_max_error", error_json(row.out_of_place.max_error)},
                        {"in_place_max_error", error_json(row.in_place.max_error)},
                        {"out_of_bounds", oob}}});
    }
    if (!row_found && run.out_of_bounds.value_or(0) > 0) {
      const PerfRow* worst = nullptr;
      double worst_error = -1;
      for (const auto& row : run.rows) {
        double e = std::max(row.out_of_place.max_error.value_or(-1),
                            row.in_place.max_error.value_or(-1));
        if (e > worst_error) {
          worst_error = e;
          worst = &row;
        }
      }
      nlohmann::json evidence = {{"out_of_bounds", *run.out_of_bounds}, {"rows", run.rows.size()}};
      std::string largest;
      if (worst != nullptr && worst_error >= 0) {
        evidence["largest_error"] = worst_error;
        evidence["largest_error_size"] = worst->size;
        largest = fmt::format(" (largest error {:g}, at {} bytes)", worst_error, worst->size);
      }
      out.push_back(
          {.check = kWrong,
           .severity = Severity::kError,
           .subject = test,
           .message = fmt::format("nccl-tests counted {} row(s) out of bounds{}: the collective "
                                  "corrupted data",
                                  *run.out_of_bounds, largest),
           .evidence = std::move(evidence)});
    }
    auto avg = run.avg_busbw ? run.avg_busbw : run.ComputedAvgBusbw();
    if (options_.min_busbw && avg && *avg < *options_.min_busbw) {
      out.push_back({.check = kBusbwLow,
                     .severity = Severity::kError,
                     .subject = test,
                     .message = fmt::format("average bus bandwidth {:g} GB/s is below {:g} GB/s",
                                            *avg, *options_.min_busbw),
                     .evidence = {{"avg_busbw_gbps", *avg},
                                  {"min_busbw_gbps", *options_.min_busbw},
                                  {"rows", run.rows.size()}}});
    }
  }
}

std::vector<Finding> Analyzer::Findings() const {
  std::vector<Finding> out;
  if (info_lines_ == 0) {
    std::vector<std::string> names;
    for (const auto& in : inputs_) names.push_back(in.name);
    out.push_back({.check = kLogNoDebug,
                   .severity = Severity::kWarning,
                   .subject = "job",
                   .message =
                       "no NCCL INFO lines: cannot tell which transport was used; rerun with "
                       "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET",
                   .evidence = {{"inputs", names}}});
  }
  if (Capped()) {
    out.push_back(
        {.check = kLogCapped,
         .severity = Severity::kWarning,
         .subject = "job",
         .message = fmt::format("{} NCCL lines and {} nccl-tests rows or runs were not analysed: "
                                "more than {} processes or {} MiB of what they logged (a real job "
                                "logs less); cannot tell about them",
                                dropped_lines_, perf_.dropped(), options_.max_processes,
                                options_.max_bytes >> 20),
         .evidence = {{"result", "unknown"},
                      {"dropped_lines", dropped_lines_},
                      {"dropped_perf", perf_.dropped()},
                      {"max_processes", options_.max_processes},
                      {"max_bytes", options_.max_bytes}}});
  }
  FindingsForTransport(out);
  FindingsForWarnings(out);
  FindingsForPerf(out);
  return out;
}

nlohmann::json Analyzer::Inventory() const {
  nlohmann::json inputs = nlohmann::json::array();
  for (const auto& in : inputs_) {
    inputs.push_back({{"name", in.name},
                      {"bytes", in.bytes},
                      {"nccl_lines", in.nccl_lines},
                      {"long_lines_cut", in.long_lines},
                      {"unattributed_lines", in.unattributed_lines},
                      {"unattributed_warnings", WarningsJson(in.unattributed_warnings)}});
  }
  nlohmann::json procs = nlohmann::json::array();
  std::map<std::string, int> transports;
  std::set<std::string> hosts;
  std::set<std::string> versions = bare_versions_;
  int nranks = 0;
  // Built in place, each value moved in: a report on thousands of processes is mostly this.
  for (const auto& [key, p] : processes_) {
    nranks += static_cast<int>(std::max<size_t>(p.ranks.size(), 1));
    if (!p.host.empty()) hosts.insert(p.host);
    if (!p.version.empty()) versions.insert(p.version);
    std::string inter = p.TransportLabel();
    transports[inter] += static_cast<int>(std::max<size_t>(p.ranks.size(), 1));
    nlohmann::json& o = procs.emplace_back(nlohmann::json::object());
    o["host"] = p.host;
    o["pid"] = p.pid >= 0 ? nlohmann::json(p.pid) : nlohmann::json(nullptr);
    o["cuda_dev"] = p.pid >= 0 ? nlohmann::json(nullptr) : nlohmann::json(p.cuda_dev);
    o["source"] = p.source;
    nlohmann::json& ranks = o["ranks"] = nlohmann::json::array();
    for (const auto& r : p.ranks) {
      nlohmann::json& k = ranks.emplace_back(nlohmann::json::object());
      k["rank"] = r.rank;
      k["nranks"] = r.nranks;
      k["cuda_dev"] = r.cuda_dev;
      k["comm_id"] = r.comm_id;
    }
    o["nccl_version"] = p.version;
    o["network"] = p.network;
    o["inter_node_transport"] = std::move(inter);
    o["gdr"] = p.NetChannelCount() > 0 ? nlohmann::json(p.gdr_channels > 0) : nlohmann::json(nullptr);
    o["nics"] = p.nics;
    o["ib_no_device"] = p.ib_no_device;
    o["plugin_failures"] = p.plugin_failures;
    o["ofi_provider"] = p.ofi_provider;
    nlohmann::json& channels = o["channels"] = nlohmann::json::object();
    channels["net"] = p.net_channels;
    channels["net_gdr"] = p.gdr_channels;
    channels["intra_node"] = p.intra_channels;
    o["env"] = p.env;
    o["warnings"] = WarningsJson(p.warnings);
  }
  nlohmann::json perf = nlohmann::json::array();
  for (const auto& run : perf_.runs()) perf.push_back(ToJson(run));
  // Moved in: an lvalue in an initializer list is copied, and the processes are most of it.
  return {{"inputs", std::move(inputs)},
          {"summary",
           {{"processes", processes_.size()},
            {"hosts", hosts.size()},
            {"ranks", nranks},
            {"transports", transports},
            {"nccl_versions", versions},
            {"dropped_lines", dropped_lines_}}},
          {"processes", std::move(procs)},
          {"nccl_tests", std::move(perf)}};
}

}  // namespace tocsin::nccl
