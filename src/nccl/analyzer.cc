#include "nccl/analyzer.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "nccl/log_line.h"

namespace tocsin::nccl {
namespace {

constexpr size_t kMaxListItems = 64;
constexpr size_t kMaxWarnings = 20;
constexpr size_t kMaxProcesses = 100000;

template <typename T>
void PushCapped(std::vector<T>& v, T item, size_t cap = kMaxListItems) {
  if (v.size() < cap && std::find(v.begin(), v.end(), item) == v.end())
    v.push_back(std::move(item));
}

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

// A process that re-creates its communicator logs the same rank again: keep one.
void AddRank(Process& p, const InitComplete& init) {
  bool known = std::any_of(p.ranks.begin(), p.ranks.end(), [&](const Rank& r) {
    return r.rank == init.rank && r.nranks == init.nranks && r.comm_id == init.comm_id;
  });
  if (!known && p.ranks.size() < kMaxListItems) {
    p.ranks.push_back({init.rank, init.nranks, init.cuda_dev, std::string(init.comm_id)});
  }
}

void AddRank(Process& p, const Rank& r) {
  AddRank(p, InitComplete{r.rank, r.nranks, r.cuda_dev, {}, r.comm_id});
}

inline bool SameText(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

std::string RankList(const Process& p) {
  std::string out;
  for (const auto& r : p.ranks) out += (out.empty() ? "" : ",") + std::to_string(r.rank);
  return out;
}

}  // namespace

uint64_t Process::NetChannelCount() const {
  uint64_t n = 0;
  for (const auto& [net, count] : net_channels) n += count;
  return n;
}

std::string Process::InterNodeNetwork() const {
  std::string best;
  uint64_t best_count = 0;
  for (const auto& [net, count] : net_channels) {
    if (count > best_count) {
      best = net;
      best_count = count;
    }
  }
  return best.empty() ? network : best;
}

bool Process::HasInterNodeTraffic() const {
  return NetChannelCount() > 0 || (intra_channels == 0 && !network.empty());
}

std::string Process::TransportLabel() const {
  if (HasInterNodeTraffic()) {
    std::string net = InterNodeNetwork();
    return net.empty() ? "unknown" : net;
  }
  return intra_channels > 0 ? "intra-node only" : "unknown";
}

std::string Process::Subject() const {
  if (ranks.empty()) return fmt::format("{}/pid {}", host, pid);
  return host + "/" + RankList(*this);
}

nlohmann::json FollowEvent(const Process& p, const std::string& what) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& r : p.ranks) ranks.push_back({{"rank", r.rank}, {"nranks", r.nranks}});
  return {{"event", what},
          {"host", p.host},
          {"pid", p.pid},
          {"ranks", ranks},
          {"network", p.network},
          {"inter_node", p.InterNodeNetwork()},
          {"gdr", p.gdr_channels > 0},
          {"nics", p.nics}};
}

void Analyzer::BeginInput(std::string name) {
  inputs_.push_back({std::move(name), 0, 0, 0});
  pending_version_.clear();
}

Process& Analyzer::ProcessFor(std::string_view host, int64_t pid) {
  CacheSlot& slot = cache_[static_cast<uint64_t>(pid) % kCacheSlots];
  if (slot.process != nullptr && slot.pid == pid && slot.host == host) return *slot.process;
  Process& p = LookUp(host, pid);
  slot.pid = pid;
  slot.host.assign(host);
  slot.process = &p;  // std::map nodes never move
  return p;
}

Process& Analyzer::LookUp(std::string_view host, int64_t pid) {
  auto key = std::make_pair(std::string(host), pid);
  auto it = processes_.find(key);
  if (it != processes_.end()) return it->second;
  if (processes_.size() >= kMaxProcesses) return processes_.begin()->second;  // degenerate input
  Process& p = processes_[key];
  p.host = key.first;
  p.pid = pid;
  p.source = inputs_.empty() ? "" : inputs_.back().name;
  p.version = pending_version_;
  return p;
}

void Analyzer::FeedLine(std::string_view line, std::vector<nlohmann::json>* events,
                        size_t keyword_at) {
  if (inputs_.empty()) BeginInput("-");
  InputStats& in = inputs_.back();
  auto parsed = parser_.Parse(line, keyword_at);
  if (!parsed) {
    if (perf_enabled_) {
      perf_.Feed(line);
    } else {
      other_lines_++;
    }
    return;
  }
  in.nccl_lines++;
  if (parsed->kind == LineKind::kVersion || parsed->host.empty()) {
    if (auto v = ParseVersion(parsed->message)) pending_version_ = *v;
    if (parsed->kind == LineKind::kInfo) info_lines_++;
    return;
  }
  // Lines of one thread come in bursts: the parser says when this is the memo's process again.
  Process* current = memo_process_;
  if (!parser_.same_header() || current == nullptr) {
    current = &ProcessFor(parsed->host, parsed->pid);
    if (parser_.header_memoized()) memo_process_ = current;
  }
  Process& p = *current;
  if (parsed->kind == LineKind::kWarn) {
    p.warning_count++;
    PushCapped(p.warnings, std::string(parsed->message), kMaxWarnings);
    return;
  }
  info_lines_++;
  HandleInfo(p, parsed->message, events);
}

void Analyzer::HandleInfo(Process& p, std::string_view msg, std::vector<nlohmann::json>* events) {
  if (msg.empty()) return;
  // Most frequent first: a big log is mostly channel lines. Then the parsers are picked by the
  // message's first byte (each one's prefix starts with it), in the order they were written.
  if (msg[0] == 'C' || msg[0] == 'R') {
    if (auto ch = ParseChannel(msg)) {
      if (ch->link == Link::kNet) {
        // A process has one or two plugins: a scan with an inline compare beats the tree's.
        auto it = std::find_if(p.net_channels.begin(), p.net_channels.end(),
                               [&](const auto& entry) { return SameText(entry.first, ch->net); });
        if (it == p.net_channels.end()) {
          if (p.net_channels.size() >= kMaxListItems) return;  // garbage: keep memory bounded
          it = p.net_channels.emplace(std::string(ch->net), 0).first;
        }
        it->second++;
        if (ch->gdr) p.gdr_channels++;
        if (events && !p.follow_net_reported) {
          p.follow_net_reported = true;
          events->push_back(FollowEvent(p, "inter-node transport"));
        }
      } else if (ch->link == Link::kIntraNode) {
        p.intra_channels++;
      }
      return;
    }
  }
  if (auto init = ParseInitComplete(msg)) {  // any first byte: told by its end
    AddRank(p, *init);
    if (events && !p.follow_reported) {
      p.follow_reported = true;
      events->push_back(FollowEvent(p, "init complete"));
    }
    return;
  }
  switch (msg[0]) {
    case 'U':
      if (auto net = ParseUsingNetwork(msg)) p.network = *net;
      return;
    case 'F':
      if (auto failed = ParsePluginFailure(msg)) PushCapped(p.plugin_failures, *failed);
      return;
    case 'C':
    case 'N':
      break;
    default:
      return;
  }
  if (auto ib = ParseIbDevices(msg)) {
    for (const auto& d : *ib) {  // "mlx5_0:1/IB", built in a reused buffer (a line per process)
      nic_.assign(d.name);
      nic_ += ':';
      char port[16];
      nic_.append(port,
                  static_cast<size_t>(std::to_chars(port, port + sizeof(port), d.port).ptr - port));
      nic_ += '/';
      nic_.append(d.link_layer);
      if (p.nics.size() < kMaxListItems &&
          std::find(p.nics.begin(), p.nics.end(), nic_) == p.nics.end()) {
        p.nics.push_back(nic_);
      }
    }
    return;
  }
  if (IsIbNoDevice(msg)) {
    p.ib_no_device = true;
    return;
  }
  if (auto sock = ParseSocketDevices(msg)) {
    for (auto& d : *sock) PushCapped(p.nics, d);
    return;
  }
  if (auto prov = ParseOfiProvider(msg)) {
    p.ofi_provider = *prov;
    return;
  }
  if (auto env = ParseEnvSetting(msg)) {
    if (p.env.size() < kMaxListItems) p.env[env->name] = env->value;
    return;
  }
  if (auto v = ParseVersion(msg)) p.version = *v;
}

void Analyzer::MergeFrom(Analyzer&& later) {
  for (auto& in : later.inputs_) {
    if (!inputs_.empty() && inputs_.back().name == in.name) {
      inputs_.back().bytes += in.bytes;
      inputs_.back().nccl_lines += in.nccl_lines;
      inputs_.back().long_lines += in.long_lines;
    } else {
      inputs_.push_back(std::move(in));
    }
  }
  for (auto& [key, lp] : later.processes_) {
    auto it = processes_.find(key);
    if (it == processes_.end()) {
      if (lp.version.empty()) lp.version = pending_version_;  // a bare version line before
      processes_.emplace(key, std::move(lp));
      continue;
    }
    Process& p = it->second;
    if (!lp.version.empty()) p.version = lp.version;
    if (!lp.network.empty()) p.network = lp.network;
    for (auto& n : lp.nics) PushCapped(p.nics, std::move(n));
    p.ib_no_device = p.ib_no_device || lp.ib_no_device;
    for (auto& f : lp.plugin_failures) PushCapped(p.plugin_failures, std::move(f));
    if (!lp.ofi_provider.empty()) p.ofi_provider = lp.ofi_provider;
    for (const auto& r : lp.ranks) AddRank(p, r);
    for (const auto& [net, count] : lp.net_channels) p.net_channels[net] += count;
    p.gdr_channels += lp.gdr_channels;
    p.intra_channels += lp.intra_channels;
    for (const auto& [k, v] : lp.env) {
      if (p.env.size() < kMaxListItems || p.env.count(k)) p.env[k] = v;
    }
    for (auto& w : lp.warnings) PushCapped(p.warnings, std::move(w), kMaxWarnings);
    p.warning_count += lp.warning_count;
  }
  if (!later.pending_version_.empty()) pending_version_ = later.pending_version_;
  other_lines_ += later.other_lines_;
  info_lines_ += later.info_lines_;
}

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
            {"ranks", RankList(p)},
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
            {"transports", transports}}},
          {"processes", procs},
          {"nccl_tests", perf}};
}

}  // namespace tocsin::nccl
