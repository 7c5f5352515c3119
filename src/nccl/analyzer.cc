#include "nccl/analyzer.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <limits>

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

}  // namespace

void Warnings::Add(std::string_view text) {
  count++;
  WarnKind kind = ClassifyWarn(text);
  switch (kind) {
    case WarnKind::kBenign:
      benign++;
      break;
    case WarnKind::kFatal:
      fatal++;
      break;
    case WarnKind::kUnknown:
      pending++;
      break;
  }
  for (auto& w : kept) {
    if (SameText(w.text, text)) {
      w.init_complete_after = false;  // its last occurrence is this one
      return;
    }
  }
  if (kept.size() < kMaxWarnings) kept.push_back({std::string(text), kind, false});
}

void Warnings::InitComplete() {
  inits++;
  resolved += pending;
  pending = 0;
  for (auto& w : kept) w.init_complete_after = true;
}

void Warnings::MergeLater(Warnings&& later) {
  if (later.inits > 0) {  // an Init COMPLETE among the later lines follows all of these
    resolved += pending;
    pending = 0;
    for (auto& w : kept) w.init_complete_after = true;
  }
  count += later.count;
  benign += later.benign;
  fatal += later.fatal;
  resolved += later.resolved;
  pending += later.pending;
  inits += later.inits;
  for (auto& lw : later.kept) {
    auto it = std::find_if(kept.begin(), kept.end(),
                           [&](const Warning& w) { return w.text == lw.text; });
    if (it != kept.end()) {
      it->init_complete_after = lw.init_complete_after;
    } else if (kept.size() < kMaxWarnings) {
      kept.push_back(std::move(lw));
    }
  }
}

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

std::string Process::RankList() const {
  std::string out;
  for (const auto& r : ranks) {
    if (!out.empty()) out += ',';
    out += std::to_string(r.rank);
  }
  return out;
}

std::string Process::Subject() const {
  const std::string& who = host.empty() ? source : host;
  if (!ranks.empty()) return who + "/" + RankList();
  if (pid >= 0) return fmt::format("{}/pid {}", who, pid);
  return fmt::format("{}/device {}", who, cuda_dev);
}

nlohmann::json FollowEvent(const Process& p, const std::string& what) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& r : p.ranks) ranks.push_back({{"rank", r.rank}, {"nranks", r.nranks}});
  return {{"event", what},
          {"host", p.host},
          {"pid", p.pid >= 0 ? nlohmann::json(p.pid) : nullptr},
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
  return p;
}

// Keyed apart from every full header: a negative pid that orders by device, and for lines
// without a host the input's name behind a byte no host name holds (the same device in two
// inputs is two processes).
Process& Analyzer::PartialProcess(std::string_view host, int cuda_dev) {
  std::string key_host = host.empty() ? "\x1f" + inputs_.back().name : std::string(host);
  int64_t key_pid = std::numeric_limits<int64_t>::min() + cuda_dev;
  auto it = processes_.find(std::make_pair(key_host, key_pid));
  if (it != processes_.end()) return it->second;
  if (processes_.size() >= kMaxProcesses) return processes_.begin()->second;
  Process& p = processes_[std::make_pair(std::move(key_host), key_pid)];
  p.host = std::string(host);
  p.cuda_dev = cuda_dev;
  p.source = inputs_.back().name;
  return p;
}

void Analyzer::NoteBareVersion(std::string_view message) {
  auto v = ParseVersion(message);
  if (!v) return;
  pending_version_ = *v;
  if (bare_versions_.size() < kMaxListItems) bare_versions_.insert(*v);
}

// The rare lines without a full header (see LogLine): their own path, off the hot one.
void Analyzer::FeedPartial(const LogLine& line, std::vector<nlohmann::json>* events) {
  if (line.kind == LineKind::kVersion) {
    NoteBareVersion(line.message);
    return;
  }
  if (line.kind == LineKind::kInfo) info_lines_++;
  if (line.cuda_dev < 0) {  // nothing to pin it on
    InputStats& in = inputs_.back();
    if (line.kind == LineKind::kWarn) {
      in.unattributed_warnings.Add(line.message);
    } else {
      in.unattributed_lines++;
      NoteBareVersion(line.message);  // "... NCCL INFO NCCL version 2.x" with its header cut
    }
    return;
  }
  Process& p = PartialProcess(line.host, line.cuda_dev);
  if (line.kind == LineKind::kWarn) {
    p.warnings.Add(line.message);
  } else {
    HandleInfo(p, line.message, events);
  }
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
  if (parsed->pid < 0) {
    FeedPartial(*parsed, events);
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
    p.warnings.Add(parsed->message);
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
    p.warnings.InitComplete();
    inputs_.back().unattributed_warnings.InitComplete();
    if (init->rank == 0 && p.version.empty()) {
      if (!pending_version_.empty()) {
        p.version = pending_version_;
      } else {
        p.awaits_bare_version = true;
      }
    }
    if (events && !p.follow_reported) {
      p.follow_reported = true;
      events->push_back(FollowEvent(p, "init complete"));
    }
    return;
  }
  switch (msg[0]) {
    case 'U':
      if (auto net = ParseUsingNetwork(msg)) p.network = std::move(*net);
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
    // "mlx5_0:1/IB" and its flags ("mlx5_0:1/IB/SHARP"), built in a reused buffer (a line
    // per process).
    for (const auto& d : *ib) {
      nic_.assign(d.name);
      nic_ += ':';
      char port[16];
      nic_.append(port,
                  static_cast<size_t>(std::to_chars(port, port + sizeof(port), d.port).ptr - port));
      nic_ += '/';
      nic_.append(d.link_layer);
      if (!d.flags.empty()) {
        nic_ += '/';
        nic_.append(d.flags);
      }
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
      InputStats& mine = inputs_.back();
      mine.bytes += in.bytes;
      mine.nccl_lines += in.nccl_lines;
      mine.long_lines += in.long_lines;
      mine.unattributed_lines += in.unattributed_lines;
      mine.unattributed_warnings.MergeLater(std::move(in.unattributed_warnings));
    } else {
      inputs_.push_back(std::move(in));
    }
  }
  for (auto& [key, lp] : later.processes_) {
    // A rank 0 that completed init in the later lines before any bare version line there takes
    // the bare version these lines ended with, as reading in order would have given it.
    bool bare = lp.awaits_bare_version && !pending_version_.empty();
    auto it = processes_.find(key);
    if (it == processes_.end()) {
      if (bare) lp.version = pending_version_;
      processes_.emplace(key, std::move(lp));
      continue;
    }
    Process& p = it->second;
    if (!lp.version.empty()) {
      p.version = lp.version;
    } else if (bare && p.version.empty()) {
      p.version = pending_version_;
    }
    p.awaits_bare_version = p.awaits_bare_version || (lp.awaits_bare_version && p.version.empty());
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
    p.warnings.MergeLater(std::move(lp.warnings));
  }
  if (!later.pending_version_.empty()) pending_version_ = later.pending_version_;
  for (const auto& v : later.bare_versions_) {
    if (bare_versions_.size() < kMaxListItems) bare_versions_.insert(v);
  }
  other_lines_ += later.other_lines_;
  info_lines_ += later.info_lines_;
}

}  // namespace tocsin::nccl
