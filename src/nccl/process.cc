#include "nccl/analyzer.h"

#include <fmt/format.h>

#include <algorithm>

#include "nccl/analyzer_caps.h"

// What one NCCL process said about itself: its WARN lines (judged by what NCCL does after each) and
// what its channels, ranks and network tell (analyzer.h).
namespace tocsin::nccl {

using internal::Cut;
using internal::kMaxWarnings;
using internal::SameText;
using internal::WarningBytes;

void Warnings::Add(std::string_view text, const Budget& budget) {
  count++;
  WarnKind kind = ClassifyWarn(text);
  text = Cut(text);
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
  if (kept.size() < kMaxWarnings && budget(WarningBytes(text))) {
    kept.push_back({std::string(text), kind, false});
  }
}

void Warnings::InitComplete() {
  inits++;
  resolved += pending;
  pending = 0;
  for (auto& w : kept) w.init_complete_after = true;
}

void Warnings::MergeLater(Warnings&& later, const Budget& budget) {
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
    auto it =
        std::find_if(kept.begin(), kept.end(), [&](const Warning& w) { return w.text == lw.text; });
    if (it != kept.end()) {
      it->init_complete_after = lw.init_complete_after;
    } else if (kept.size() < kMaxWarnings && budget(WarningBytes(lw.text))) {
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

}  // namespace tocsin::nccl
