// Times canary::Plan on a simulated cluster (docs/BENCHMARKS.md, "Canary planner").
//
//   taskset -c 0 build/release/src/canary/canary_planner_bench [BLOCKS PER_BLOCK RUNS]
//
// Prints, for BLOCKS x PER_BLOCK nodes (default 64 x 64, 15 runs): the rounds until every node and
// every block pair passed (all healthy, all eligible), the median and worst time of Plan for the
// first round (empty history) and for a steady round (everything passed), and the size of the
// encoded history after coverage; then the time to Record a round in which every pair fails.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "canary/attribution.h"
#include "canary/planner.h"
#include "canary/testing.h"

using namespace tocsin;          // NOLINT
using namespace tocsin::canary;  // NOLINT

namespace {

double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

struct Timing {
  double median_ms, max_ms;
  size_t pairs;
};

Timing Time(const std::vector<NodeInfo>& all, const History& h, TimePoint now, int runs) {
  std::vector<double> ms;
  size_t pairs = 0;
  for (int i = 0; i < runs; ++i) {
    auto start = std::chrono::steady_clock::now();
    auto plan = Plan(all, all, h, {all.size(), static_cast<uint64_t>(i), now, testing::kWindow});
    ms.push_back(MsSince(start));
    pairs = plan.size();
  }
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], ms.back(), pairs};
}

}  // namespace

int main(int argc, char** argv) {
  size_t blocks = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 64;
  size_t per_block = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 64;
  int runs = argc > 3 ? std::atoi(argv[3]) : 15;
  if (blocks == 0 || per_block == 0 || runs <= 0) {
    std::fprintf(stderr, "usage: %s [BLOCKS PER_BLOCK RUNS]\n", argv[0]);
    return 2;
  }
  std::vector<NodeInfo> all = testing::Grid(blocks, per_block);
  std::map<std::string, std::string> block;
  for (const NodeInfo& n : all) block[n.name] = n.block;

  History h;
  Timing first = Time(all, h, testing::T(0), runs);
  int rounds = 0;
  Coverage c;
  do {
    ++rounds;
    TimePoint now = testing::T(rounds * 600);
    for (const PlannedPair& p : Plan(all, all, h, {all.size(), 1, now, testing::kWindow})) {
      Status s =
          Record(h, testing::Pass({p.a, block[p.a]}, {p.b, block[p.b]}, now), testing::kWindow);
      if (!s.ok()) return 1;
    }
    c = ComputeCoverage(all, h, now, testing::kWindow);
    std::printf("after round %d: nodes %zu/%zu, block pairs %zu/%zu\n", rounds, c.nodes_passed,
                c.nodes_total, c.block_pairs_passed, c.block_pairs_total);
  } while (rounds < 20 && (c.node_ratio() < 1 || c.block_pair_ratio() < 1));
  Timing steady = Time(all, h, testing::T(rounds * 600 + 1), runs);
  std::string encoded = EncodeHistory(h);

  // The worst case for Record: the whole fabric fails, round after round (nothing is ever
  // exonerated, the failures pile up to the cap). Record per result, and RecordRound.
  double worst_each_ms = 0, worst_round_ms = 0;
  for (int i = 1; i <= 4; ++i) {
    TimePoint now = testing::T((rounds + i) * 600);
    std::vector<PairResult> results;
    for (const PlannedPair& p : Plan(all, all, h, {all.size(), 1, now, testing::kWindow})) {
      results.push_back(testing::Fail({p.a, block[p.a]}, {p.b, block[p.b]}, now));
    }
    History batch = h;
    auto start = std::chrono::steady_clock::now();
    if (!RecordRound(batch, results, testing::kWindow).ok()) return 1;
    worst_round_ms = std::max(worst_round_ms, MsSince(start));
    start = std::chrono::steady_clock::now();
    for (const PairResult& r : results) {
      if (!Record(h, r, testing::kWindow).ok()) return 1;
    }
    worst_each_ms = std::max(worst_each_ms, MsSince(start));
  }

  Timing down = Time(all, h, testing::T((rounds + 5) * 600), runs);

  std::printf("nodes %zu, blocks %zu, block pairs %zu, runs %d\n", all.size(), blocks,
              c.block_pairs_total, runs);
  std::printf("rounds to full coverage: %d (nodes %zu/%zu, block pairs %zu/%zu)\n", rounds,
              c.nodes_passed, c.nodes_total, c.block_pairs_passed, c.block_pairs_total);
  std::printf("plan, first round: median %.1f ms, max %.1f ms, %zu pairs\n", first.median_ms,
              first.max_ms, first.pairs);
  std::printf("plan, steady round: median %.1f ms, max %.1f ms, %zu pairs\n", steady.median_ms,
              steady.max_ms, steady.pairs);
  std::printf("encoded history: %zu bytes\n", encoded.size());
  std::printf(
      "a round where every pair fails (worst of 4): Record each %.1f ms, RecordRound %.1f ms, "
      "%zu failures kept\n",
      worst_each_ms, worst_round_ms, h.failures.size());
  std::printf("plan, after that (every node suspected): median %.1f ms, max %.1f ms, %zu pairs\n",
              down.median_ms, down.max_ms, down.pairs);
  return 0;
}
