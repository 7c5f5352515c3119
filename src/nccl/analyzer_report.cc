// The Analyzer's report once the input is read: findings and the inventory.
#include <fmt/format.h>

#include <set>

#include "nccl/analyzer.h"

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

}  // namespace

void Analyzer::FindingsForTransport(std::vector<Finding>& out) const {
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
      out.push_back(
          {"nccl.transport.socket",
           Severity::kError,
           p.Subject(),
           fmt::format("inter-node traffic goes over TCP sockets while {}: {}", against, why),
           std::nullopt,
           {{"host", p.host},
            {"pid", p.pid},
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
      out.push_back({"nccl.gdr.absent",
                     Severity::kWarning,
                     p.Subject(),
                     fmt::format("{} NET/{} channels without GPUDirect RDMA (no /GDRDMA): data "
                                 "is staged through host memory",
                                 p.NetChannelCount(), net),
                     std::nullopt,
                     {{"net_channels", p.net_channels}, {"gdr_channels", p.gdr_channels}}});
    }
    for (const auto& risky : kRisky) {
      auto it = p.env.find(risky.name);
      if (it == p.env.end() || it->second != risky.value) continue;
      out.push_back({"nccl.env.risky",
                     Severity::kWarning,
                     p.Subject(),
                     fmt::format("{}={}: {}", risky.name, it->second, risky.why),
                     std::nullopt,
                     {{"name", risky.name}, {"value", it->second}, {"host", p.host}}});
    }
    if (p.warning_count > 0) {
      out.push_back({"nccl.init.failed",
                     Severity::kError,
                     p.Subject(),
                     fmt::format("{} NCCL WARN line(s), first: {}", p.warning_count,
                                 p.warnings.empty() ? "" : p.warnings.front()),
                     std::nullopt,
                     {{"warn_count", p.warning_count}, {"warnings", p.warnings}}});
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
    out.push_back({"nccl.transport.mixed",
                   Severity::kError,
                   id == "job" ? "job" : "comm " + id,
                   "ranks of one communicator use different networks: " + list +
                       "; collectives run at the speed of the slowest",
                   std::nullopt,
                   {{"networks", nets}}});
  }
}

void Analyzer::FindingsForPerf(std::vector<Finding>& out) const {
  for (const auto& run : perf_.runs()) {
    std::string test = run.test.empty() ? "nccl-tests" : run.test;
    for (const auto& row : run.rows) {
      int64_t wrong = row.out_of_place.wrong.value_or(0) + row.in_place.wrong.value_or(0);
      if (wrong <= 0) continue;
      out.push_back({"nccl.wrong",
                     Severity::kError,
                     fmt::format("{} size {}", test, row.size),
                     fmt::format("{} wrong elements at {} bytes: the collective corrupted data",
                                 wrong, row.size),
                     std::nullopt,
                     {{"size", row.size},
                      {"out_of_place_wrong", row.out_of_place.wrong.value_or(0)},
                      {"in_place_wrong", row.in_place.wrong.value_or(0)}}});
    }
    auto avg = run.avg_busbw ? run.avg_busbw : run.ComputedAvgBusbw();
    if (options_.min_busbw && avg && *avg < *options_.min_busbw) {
      out.push_back({"nccl.busbw.low",
                     Severity::kError,
                     test,
                     fmt::format("average bus bandwidth {:g} GB/s is below {:g} GB/s", *avg,
                                 *options_.min_busbw),
                     std::nullopt,
                     {{"avg_busbw_gbps", *avg},
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
    out.push_back({"nccl.log.no-debug",
                   Severity::kWarning,
                   "job",
                   "no NCCL INFO lines: cannot tell which transport was used; rerun with "
                   "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET",
                   std::nullopt,
                   {{"inputs", names}}});
  }
  if (Capped()) {
    out.push_back({"nccl.log.capped",
                   Severity::kWarning,
                   "job",
                   fmt::format("{} NCCL lines and {} nccl-tests rows or runs were not analysed: "
                               "more than {} processes or {} MiB of what they logged (a real job "
                               "logs less); cannot tell about them",
                               dropped_lines_, perf_.dropped(), options_.max_processes,
                               options_.max_bytes >> 20),
                   std::nullopt,
                   {{"result", "unknown"},
                    {"dropped_lines", dropped_lines_},
                    {"dropped_perf", perf_.dropped()},
                    {"max_processes", options_.max_processes},
                    {"max_bytes", options_.max_bytes}}});
  }
  FindingsForTransport(out);
  FindingsForPerf(out);
  return out;
}

nlohmann::json Analyzer::Inventory() const {
  nlohmann::json inputs = nlohmann::json::array();
  for (const auto& in : inputs_) {
    inputs.push_back({{"name", in.name},
                      {"bytes", in.bytes},
                      {"nccl_lines", in.nccl_lines},
                      {"long_lines_cut", in.long_lines}});
  }
  nlohmann::json procs = nlohmann::json::array();
  std::map<std::string, int> transports;
  std::set<std::string> hosts;
  std::set<std::string> versions;
  int nranks = 0;
  for (const auto& [key, p] : processes_) {
    nlohmann::json ranks = nlohmann::json::array();
    for (const auto& r : p.ranks) {
      ranks.push_back({{"rank", r.rank},
                       {"nranks", r.nranks},
                       {"cuda_dev", r.cuda_dev},
                       {"comm_id", r.comm_id}});
    }
    nranks += static_cast<int>(std::max<size_t>(p.ranks.size(), 1));
    hosts.insert(p.host);
    if (!p.version.empty()) versions.insert(p.version);
    std::string inter = p.TransportLabel();
    transports[inter] += static_cast<int>(std::max<size_t>(p.ranks.size(), 1));
    procs.push_back(
        {{"host", p.host},
         {"pid", p.pid},
         {"source", p.source},
         {"ranks", ranks},
         {"nccl_version", p.version},
         {"network", p.network},
         {"inter_node_transport", inter},
         {"gdr", p.NetChannelCount() > 0 ? nlohmann::json(p.gdr_channels > 0) : nullptr},
         {"nics", p.nics},
         {"ib_no_device", p.ib_no_device},
         {"plugin_failures", p.plugin_failures},
         {"ofi_provider", p.ofi_provider},
         {"channels",
          {{"net", p.net_channels}, {"net_gdr", p.gdr_channels}, {"intra_node", p.intra_channels}}},
         {"env", p.env},
         {"warnings", p.warnings}});
  }
  nlohmann::json perf = nlohmann::json::array();
  for (const auto& run : perf_.runs()) perf.push_back(ToJson(run));
  return {{"inputs", inputs},
          {"summary",
           {{"processes", processes_.size()},
            {"hosts", hosts.size()},
            {"ranks", nranks},
            {"transports", transports},
            {"dropped_lines", dropped_lines_}}},
          {"processes", procs},
          {"nccl_tests", perf}};
}

}  // namespace tocsin::nccl
