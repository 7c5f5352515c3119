#pragma once

// Canary attribution: from finished pairs to verdicts on nodes and block pairs. Pure; every time
// comes from the results or the caller.
//
// Words: a node is *exonerated* from a failure when it passed (with anyone) at or after the
// failure. A *recent* pass is one within `window` of the newest result. A node is a *good partner*
// in a failure f = (x, p) when p is not blamed, p passed recently, and either p passed at or after
// f or f is p's only failure not exonerated. The *path* of f is ok when x and p share a block, or
// when a pair across their two blocks passed at or after f.
//
// Rules (Record applies them after every result, RecordRound after a round's results, until
// nothing changes):
//  1. kPass of (a, b): a and b get their last pass, their streaks and NodeVerdicts are cleared; the
//     block pair (when the blocks differ) gets its last pass, its streak and BlockPairVerdict are
//     cleared. A node passing a canary clears its verdict, so a fixed node is exonerated by its
//     first pass.
//  2. kNodeFault pinned on n: n is blamed at once (cause, partner = the other node). Its partner
//     gets nothing.
//  3. kPairFault on (a, b): a and b start a streak (onset kept until they pass), so does the block
//     pair; the failure is a *suspect* until one of:
//     a. a or b is blamed (now or later): the failure is explained and dropped;
//     b. a is not exonerated, b is a good partner, the path is ok, and b passed at or after f or a
//        is not a good partner itself: a is blamed (and symmetrically b). Two nodes that both
//        passed before and fail only with each other blame neither: the re-test decides;
//     c. both exonerated, blocks differ and no pair across the two blocks passed at or after f:
//        the block pair is blamed (BlockPairVerdict; the pair is listed);
//     d. both exonerated otherwise (same block, or the block pair passed since): a transient,
//        dropped without a verdict;
//     e. older than `window`: forgotten (dropped without a verdict).
//  So no node is blamed on a failure across blocks whose path has not passed since, and no node
//  is blamed on a failure with a partner that is itself in doubt: a healthy node is blamed only
//  when its partner is good and the path is ok, which a faulty node or block pair does not fake.
//  A single transient failure followed by the partner's pass elsewhere does blame a node until
//  its own re-test passes (the planner re-tests blamed nodes every round). A node alone in its
//  block whose failures are all across blocks stays a suspect (the node and its block's path
//  cannot be told apart): only its own kNodeFault blames it.
//  `since` is the onset of the streak: the first failure since the last pass, kept across rounds.

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "base/time.h"
#include "canary/history.h"

namespace tocsin::canary {

// Adds a result and applies the rules above; prunes the failures older than `window` before the
// result (rule e) and the oldest beyond kMaxFailures. Rejects (and leaves the history alone) a
// result without both names, a pair of a node with itself, a kNodeFault whose node is neither a
// nor b, or a failure without a cause.
Status Record(History& history, const PairResult& result, std::chrono::seconds window);

// The results of a round at once: each applied as Record does, then the rules once over every
// failure (a round in which the whole fabric fails costs one pass, not one per result). Invalid
// results are left out (the others are recorded); the error names the first and the count.
Status RecordRound(History& history, const std::vector<PairResult>& results,
                   std::chrono::seconds window);

// Once a round (it walks every record): prunes failures as Record does, and node or block-pair
// records with nothing in force (no verdict, no failure, no streak within the window) whose last
// pass is older than kStaleWindows windows (until then they order the planner's "oldest pass
// first"; after, such a node counts as never passed). Keeps the state bounded as nodes come and go.
inline constexpr int kStaleWindows = 8;
void PruneStale(History& history, TimePoint now, std::chrono::seconds window);

struct NodeVerdict {
  std::string node;
  std::string cause;
  TimePoint since;
  std::vector<std::string> partners;
};

struct BlockPairVerdict {
  std::string block_a, block_b;  // block_a < block_b
  std::string cause;
  TimePoint since;
  std::vector<NodePair> pairs;
};

struct Suspect {  // a pair failure not yet attributed
  std::string a, b;
  std::string cause;
  TimePoint since;  // when it failed
};

struct Verdicts {
  std::vector<NodeVerdict> nodes;             // by node name
  std::vector<BlockPairVerdict> block_pairs;  // by block names
  std::vector<Suspect> suspects;              // oldest first
};

// The verdicts in force for the nodes in `all` (verdicts on nodes or blocks no longer there are
// left out) and the suspects that failed at or before `now`.
Verdicts Attribute(const std::vector<NodeInfo>& all, const History& history, TimePoint now);

struct Coverage {
  size_t nodes_passed = 0, nodes_total = 0;
  size_t block_pairs_passed = 0, block_pairs_total = 0;  // pairs of distinct blocks in `all`
  double node_ratio() const;                             // 1 when there is nothing to cover
  double block_pair_ratio() const;  // 1 when there is nothing to cover (one block)
};

// What passed within `window` before `now`, out of the nodes and block pairs of `all`.
Coverage ComputeCoverage(const std::vector<NodeInfo>& all, const History& history, TimePoint now,
                         std::chrono::seconds window);

std::optional<TimePoint> LastPass(const History& history, const std::string& node);

}  // namespace tocsin::canary
