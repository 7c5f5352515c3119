// The canary history and the runner's state kept in a ConfigMap (hostile: anyone who may edit it wrote it): decode, then
// encode -> decode round-trips to the same text, and the planner and attribution run on it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "canary/attribution.h"
#include "canary/history.h"
#include "canary/planner.h"
#include "canary/runner_state.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tocsin::canary;  // NOLINT
  // The same ConfigMap's other key, the runner's state: decoded, encoded, decoded.
  auto st = DecodeRunnerState(std::string_view(reinterpret_cast<const char*>(data), size));
  if (st.ok()) {
    auto again = DecodeRunnerState(EncodeRunnerState(*st));
    if (!again.ok()) std::abort();
  }
  auto h = DecodeHistory(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!h.ok()) return 0;
  std::string text = EncodeHistory(*h, kMaxHistoryInput);
  auto back = DecodeHistory(text);
  if (!back.ok() || EncodeHistory(*back, kMaxHistoryInput) != text) std::abort();
  std::vector<NodeInfo> nodes;
  for (const auto& [name, r] : h->nodes) nodes.push_back({name, name.substr(0, 2)});
  for (const Failure& f : h->failures) nodes.push_back({f.a, f.block_a});
  tocsin::TimePoint now = h->failures.empty() ? tocsin::TimePoint{} : h->failures.back().at;
  auto plan = Plan(nodes, nodes, *h, {nodes.size(), 1, now, std::chrono::seconds(3600)});
  Attribute(nodes, *h, now);
  ComputeCoverage(nodes, *h, now, std::chrono::seconds(3600));
  History each = *h, round = *h;
  std::vector<PairResult> results;
  for (const PlannedPair& p : plan) {
    results.push_back({p.a, p.b, "x", "y", Outcome::kPairFault, "canary.fuzz", "", now});
    (void)Record(each, results.back(), std::chrono::seconds(3600));
  }
  (void)RecordRound(round, results, std::chrono::seconds(3600));
  PruneStale(each, now, std::chrono::seconds(3600));
  return 0;
}
