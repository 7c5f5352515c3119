#include "nccl/analyzer.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <limits>

#include "nccl/analyzer_caps.h"
#include "nccl/log_line.h"

namespace tocsin::nccl {
namespace {

using internal::Cut;
using internal::kEntryBytes;
using internal::kMaxListItems;
using internal::SameText;

// A process's fixed part: the struct, its map node and key, its cache slot, its source and the
// texts it holds one of (version, network, provider).
size_t BaseBytes(const Process& p, const std::string& key_host) {
  return sizeof(Process) + 3 * kEntryBytes + 2 * p.host.size() + key_host.size() + p.source.size() +
         3 * kMaxTextBytes;
}

}  // namespace

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

Process* Analyzer::ProcessFor(std::string_view host, int64_t pid) {
  if (cache_.empty()) cache_.resize(kCacheSlots);
  CacheSlot& slot = cache_[static_cast<uint64_t>(pid) % kCacheSlots];
  if (slot.process != nullptr && slot.pid == pid && slot.host == host) return slot.process;
  Process* p = LookUp(host, pid);
  if (p == nullptr) return nullptr;
  slot.pid = pid;
  slot.host.assign(host);
  slot.process = p;  // std::map nodes never move
  return p;
}

Process* Analyzer::LookUp(std::string_view host, int64_t pid) {
  if (host.size() > kMaxHostBytes) return nullptr;
  auto key = std::make_pair(std::string(host), pid);
  auto it = processes_.find(key);
  if (it != processes_.end()) return &it->second;
  Process fresh;
  fresh.host = key.first;
  fresh.pid = pid;
  fresh.source = inputs_.empty() ? "" : inputs_.back().name;
  return Admit(std::move(key), std::move(fresh));
}

Process* Analyzer::Admit(std::pair<std::string, int64_t> key, Process fresh) {
  if (processes_.size() >= options_.max_processes) return nullptr;
  fresh.bytes = BaseBytes(fresh, key.first);
  if (bytes_ + fresh.bytes > options_.max_bytes) return nullptr;
  bytes_ += fresh.bytes;
  return &processes_.emplace(std::move(key), std::move(fresh)).first->second;
}

bool Analyzer::Charge(size_t n) {
  if (bytes_ + n > options_.max_bytes) {
    dropped_lines_++;
    return false;
  }
  bytes_ += n;
  return true;
}

bool Analyzer::Charge(Process& p, size_t n) {
  if (!Charge(n)) return false;
  p.bytes += n;
  return true;
}

void Analyzer::PushCapped(Process& p, std::vector<std::string>& v, std::string_view item,
                          size_t cap) {
  item = Cut(item);
  if (v.size() < cap && std::find(v.begin(), v.end(), item) == v.end() &&
      Charge(p, item.size() + kEntryBytes)) {
    v.emplace_back(item);
  }
}

void Analyzer::AddRank(Process& p, int rank, int nranks, int cuda_dev, std::string_view comm_id) {
  comm_id = Cut(comm_id);
  bool known = std::any_of(p.ranks.begin(), p.ranks.end(), [&](const Rank& k) {
    return k.rank == rank && k.nranks == nranks && k.comm_id == comm_id;
  });
  if (!known && p.ranks.size() < kMaxListItems &&
      Charge(p, sizeof(Rank) + comm_id.size() + kEntryBytes)) {
    p.ranks.push_back({rank, nranks, cuda_dev, std::string(comm_id)});
  }
}

void Analyzer::SetEnv(Process& p, std::string_view name, std::string_view value) {
  name = Cut(name);
  value = Cut(value);
  auto it = p.env.find(std::string(name));
  if (it != p.env.end()) {
    it->second = value;  // its slot was charged at its first value's largest size
    return;
  }
  if (p.env.size() < kMaxListItems && Charge(p, name.size() + kMaxTextBytes + kEntryBytes)) {
    p.env.emplace(name, value);
  }
}

// Keyed apart from every full header: a negative pid that orders by device, and for lines
// without a host the input's name behind a byte no host name holds (the same device in two
// inputs is two processes). Admitted under the same caps as a full header's process: null when
// not kept.
Process* Analyzer::PartialProcess(std::string_view host, int cuda_dev) {
  if (host.size() > kMaxHostBytes) return nullptr;
  std::string key_host = host.empty() ? "\x1f" + inputs_.back().name : std::string(host);
  int64_t key_pid = std::numeric_limits<int64_t>::min() + cuda_dev;
  auto key = std::make_pair(std::move(key_host), key_pid);
  auto it = processes_.find(key);
  if (it != processes_.end()) return &it->second;
  Process fresh;
  fresh.host = std::string(host);
  fresh.cuda_dev = cuda_dev;
  fresh.source = inputs_.back().name;
  return Admit(std::move(key), std::move(fresh));
}

void Analyzer::NoteBareVersion(std::string_view message) {
  auto v = ParseVersion(message);
  if (!v) return;
  pending_version_ = Cut(*v);
  if (bare_versions_.size() < kMaxListItems) bare_versions_.insert(pending_version_);
}

// The rare lines without a full header (see LogLine): their own path, off the hot one.
void Analyzer::FeedPartial(const LogLine& line, std::vector<nlohmann::json>* events) {
  if (line.kind == LineKind::kVersion) {
    NoteBareVersion(line.message);
    return;
  }
  if (line.cuda_dev < 0) {  // nothing to pin it on
    InputStats& in = inputs_.back();
    if (line.kind == LineKind::kWarn) {
      in.unattributed_warnings.Add(line.message, [this](size_t n) { return Charge(n); });
    } else {
      info_lines_++;
      in.unattributed_lines++;
      NoteBareVersion(line.message);  // "... NCCL INFO NCCL version 2.x" with its header cut
    }
    return;
  }
  Process* current = PartialProcess(line.host, line.cuda_dev);
  if (current == nullptr) {  // not kept: a cap was reached
    dropped_lines_++;
    return;
  }
  Process& p = *current;
  p.lines++;
  if (line.kind == LineKind::kWarn) {
    p.warnings.Add(line.message, [&](size_t n) { return Charge(p, n); });
  } else {
    info_lines_++;
    HandleInfo(p, line.message, events);
  }
}

void Analyzer::FeedLine(std::string_view line, std::vector<nlohmann::json>* events,
                        size_t keyword_at, bool same_prefix) {
  if (inputs_.empty()) BeginInput("-");
  InputStats& in = inputs_.back();
  // Most lines of a big log: an INFO line of the thread before it, its header the memo's. What the
  // rest of this function does for it, without building the line's fields.
  if (same_prefix && memo_process_ != nullptr) {
    if (auto msg = parser_.ReusedInfoMessage(line, keyword_at)) {
      in.nccl_lines++;
      memo_process_->lines++;
      info_lines_++;
      HandleInfo(*memo_process_, *msg, events);
      return;
    }
  }
  auto parsed = parser_.Parse(line, keyword_at, same_prefix);
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
    current = ProcessFor(parsed->host, parsed->pid);
    if (parser_.header_memoized()) memo_process_ = current;
    if (current == nullptr) {  // not kept: a cap was reached
      dropped_lines_++;
      return;
    }
  }
  Process& p = *current;
  p.lines++;
  if (parsed->kind == LineKind::kWarn) {
    p.warnings.Add(parsed->message, [&](size_t n) { return Charge(p, n); });
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
          std::string_view net = Cut(ch->net);
          if (p.net_channels.size() >= kMaxListItems || !Charge(p, net.size() + kEntryBytes)) {
            return;  // garbage: keep memory bounded
          }
          it = p.net_channels.emplace(std::string(net), 0).first;
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
    AddRank(p, init->rank, init->nranks, init->cuda_dev, init->comm_id);
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
      if (auto net = ParseUsingNetwork(msg)) p.network = Cut(*net);
      return;
    case 'F':
      if (auto failed = ParsePluginFailure(msg))
        PushCapped(p, p.plugin_failures, *failed, kMaxListItems);
      return;
    case 'C':
    case 'N':
      break;
    default:
      return;
  }
  if (ParseIbDevices(msg, ib_)) {
    // "mlx5_0:1/IB" and its flags ("mlx5_0:1/IB/SHARP"), built in a reused buffer (a line
    // per process).
    for (const auto& d : ib_) {
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
      PushCapped(p, p.nics, nic_, kMaxListItems);
    }
    return;
  }
  if (IsIbNoDevice(msg)) {
    p.ib_no_device = true;
    return;
  }
  if (auto sock = ParseSocketDevices(msg)) {
    for (auto& d : *sock) PushCapped(p, p.nics, d, kMaxListItems);
    return;
  }
  if (auto prov = ParseOfiProvider(msg)) {
    p.ofi_provider = Cut(*prov);
    return;
  }
  if (auto env = ParseEnvSetting(msg)) {
    SetEnv(p, env->name, env->value);
    return;
  }
  if (auto v = ParseVersion(msg)) p.version = Cut(*v);
}

void Analyzer::MergeFrom(Analyzer&& later) {
  for (auto& in : later.inputs_) {
    if (!inputs_.empty() && inputs_.back().name == in.name) {
      InputStats& mine = inputs_.back();
      mine.bytes += in.bytes;
      mine.nccl_lines += in.nccl_lines;
      mine.long_lines += in.long_lines;
      mine.unattributed_lines += in.unattributed_lines;
      mine.unattributed_warnings.MergeLater(std::move(in.unattributed_warnings),
                                            [this](size_t n) { return Charge(n); });
    } else {
      // Its kept WARN texts were charged to the later analyzer's budget: charged again to this
      // one's as they move over.
      Warnings later_warnings = std::move(in.unattributed_warnings);
      in.unattributed_warnings = Warnings{};
      inputs_.push_back(std::move(in));
      inputs_.back().unattributed_warnings.MergeLater(std::move(later_warnings),
                                                      [this](size_t n) { return Charge(n); });
    }
  }
  for (auto& [key, lp] : later.processes_) {
    // A rank 0 that completed init in the later lines before any bare version line there takes
    // the bare version these lines ended with, as reading in order would have given it.
    bool bare = lp.awaits_bare_version && !pending_version_.empty();
    auto it = processes_.find(key);
    if (it == processes_.end()) {
      if (bare) lp.version = pending_version_;
      if (processes_.size() >= options_.max_processes || bytes_ + lp.bytes > options_.max_bytes) {
        dropped_lines_ += lp.lines;  // not kept: as if its lines had come after the cap
        continue;
      }
      bytes_ += lp.bytes;
      processes_.emplace(key, std::move(lp));
      continue;
    }
    Process& p = it->second;
    p.lines += lp.lines;
    if (!lp.version.empty()) {
      p.version = lp.version;
    } else if (bare && p.version.empty()) {
      p.version = pending_version_;
    }
    p.awaits_bare_version = p.awaits_bare_version || (lp.awaits_bare_version && p.version.empty());
    if (!lp.network.empty()) p.network = lp.network;
    for (auto& n : lp.nics) PushCapped(p, p.nics, n, kMaxListItems);
    p.ib_no_device = p.ib_no_device || lp.ib_no_device;
    for (auto& f : lp.plugin_failures) PushCapped(p, p.plugin_failures, f, kMaxListItems);
    if (!lp.ofi_provider.empty()) p.ofi_provider = lp.ofi_provider;
    for (const auto& r : lp.ranks) AddRank(p, r.rank, r.nranks, r.cuda_dev, r.comm_id);
    for (const auto& [net, count] : lp.net_channels) {
      auto nit = p.net_channels.find(net);
      if (nit != p.net_channels.end()) {
        nit->second += count;
      } else if (p.net_channels.size() < kMaxListItems && Charge(p, net.size() + kEntryBytes)) {
        p.net_channels.emplace(net, count);
      }
    }
    p.gdr_channels += lp.gdr_channels;
    p.intra_channels += lp.intra_channels;
    for (const auto& [k, v] : lp.env) SetEnv(p, k, v);
    p.warnings.MergeLater(std::move(lp.warnings), [&](size_t n) { return Charge(p, n); });
  }
  dropped_lines_ += later.dropped_lines_;
  if (!later.pending_version_.empty()) pending_version_ = later.pending_version_;
  for (const auto& v : later.bare_versions_) {
    if (bare_versions_.size() < kMaxListItems) bare_versions_.insert(v);
  }
  other_lines_ += later.other_lines_;
  info_lines_ += later.info_lines_;
}

Analyzer Analyzer::Part(const std::set<std::pair<std::string, int64_t>>& keys,
                        bool everything) const {
  Analyzer part(options_);
  part.inputs_ = inputs_;
  for (const auto& [key, p] : processes_) {
    if (!keys.count(key)) continue;
    part.processes_.emplace(key, p);
    part.bytes_ += p.bytes;
  }
  part.info_lines_ = info_lines_;
  if (everything) {
    part.perf_ = perf_;
    part.bare_versions_ = bare_versions_;
    part.dropped_lines_ = dropped_lines_;
  } else {
    for (auto& in : part.inputs_) in.unattributed_warnings = Warnings{};
  }
  return part;
}

}  // namespace tocsin::nccl
