#pragma once

// The canary round planner: which disjoint node pairs run a 2-rank `tocsin bench net` now. Pure and
// deterministic for a seed (std::mt19937_64, no global state).
//
// A plan never holds a node twice, never a node with itself, only eligible nodes, and at most
// max_nodes nodes (rounded down to even). Pairs are chosen in this order until nodes or budget run
// out (a node's *recent* pass is one at or after now - window; a node is *suspected* when it is an
// endpoint of a suspect failure (attribution.h) and has not passed since, *blamed* when a
// NodeVerdict is in force; a *good* node passed recently and is neither):
//  1. "retest": each suspected node, oldest failure first, paired with a good partner of its own
//     block (a pass there while it failed across blocks points at the path), else a good partner of
//     any block, else any node neither suspected nor blamed. Then each blamed node the same way, so
//     that a fixed node passes and is cleared.
//  2. "node": nodes without a recent pass, never-passed first, then oldest pass first; each paired
//     with a node of a block whose block pair with it has no recent pass and is not yet planned
//     this round (of those blocks the one with most unplanned nodes left; in a block, nodes without
//     a recent pass first), else with the next node of this same list, else with any node.
//  3. "block-pair": block pairs without a recent pass and not yet planned this round, never-passed
//     first, then oldest pass first: one node of each block.
//  4. "intra-block": the nodes left, paired within their block.
// Ties are broken by the seeded PRNG: the same inputs and seed give the same plan.
// For 64 blocks of 64 nodes rule 2 covers every node and nearly every block pair in one round and
// rule 3 the rest in the next (planner_test.cc, the simulation).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/time.h"
#include "canary/history.h"

namespace tocsin::canary {

struct PlanOptions {
  size_t max_nodes = 0;
  uint64_t seed = 0;
  TimePoint now;
  std::chrono::seconds window{3600};
};

struct PlannedPair {
  std::string a, b;  // a < b
  std::string why;   // "retest", "node", "block-pair", "intra-block"
};

// eligible: the nodes that may run a canary now (idle fabric nodes; duplicates count once); all:
// every fabric node (blocks of nodes named in the history but not in eligible).
std::vector<PlannedPair> Plan(const std::vector<NodeInfo>& eligible,
                              const std::vector<NodeInfo>& all, const History& history,
                              const PlanOptions& options);

}  // namespace tocsin::canary
