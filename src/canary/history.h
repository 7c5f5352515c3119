#pragma once

// What the canary runner remembers between rounds (and between leaders): per node and per block
// pair the last pass and the current failure streak, the verdicts in force, and the pair failures
// not yet attributed. Never the list of all results: the state stays small for thousands of nodes
// (docs/BENCHMARKS.md, "Canary planner": 4,096 nodes in 64 blocks).
//
// The rules that change it are in attribution.h; the planner (planner.h) only reads it.

#include <chrono>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "base/time.h"

namespace tocsin::canary {

// A fabric node and its topology block (the value of the cluster's block label). Every node whose
// block is unknown ("") belongs to one block named "": unknown placement is treated as one place,
// so such nodes are paired "intra-block" with each other and never make block-pair verdicts among
// themselves.
struct NodeInfo {
  std::string name;
  std::string block;
};

enum class Outcome {
  kPass,
  kNodeFault,  // the runner pinned the fault on one node (`node`), e.g. its rank failed alone
  kPairFault,  // the pair failed and nothing says which side (or the path between them)
};

// One finished canary pair, as the runner judged it. Record() normalises a < b (swapping the
// blocks with them).
struct PairResult {
  std::string a, b;
  std::string block_a, block_b;  // the blocks of a and b when the pair was planned
  Outcome outcome = Outcome::kPass;
  std::string cause;  // a check id when not kPass: "canary.transport.not-rdma", "canary.busbw.low"
  std::string node;   // kNodeFault: the node the fault is pinned to (a or b)
  TimePoint at;
};

using BlockPair = std::pair<std::string, std::string>;  // first < second (never equal)
using NodePair = std::pair<std::string, std::string>;   // first < second

struct NodeRecord {
  std::optional<TimePoint> last_pass;
  // Onset of the current streak: the first failure (either kind) since the last pass.
  std::optional<TimePoint> fail_since;
  bool blamed = false;                // a NodeVerdict is in force
  std::string cause;                  // when blamed
  std::vector<std::string> partners;  // when blamed: whom it failed with (at most kMaxPartners)
};

struct BlockPairRecord {
  std::optional<TimePoint> last_pass;   // a pass of a pair across the two blocks
  std::optional<TimePoint> fail_since;  // the first pair failure across them since that pass
  bool blamed = false;                  // a BlockPairVerdict is in force
  std::string cause;
  std::vector<NodePair> pairs;  // when blamed: the failed pairs that made it (at most kMaxPairs)
};

// A kPairFault not yet attributed: a suspect.
struct Failure {
  std::string a, b;              // a < b
  std::string block_a, block_b;  // their blocks
  std::string cause;
  TimePoint at;
};

struct History {
  std::map<std::string, NodeRecord> nodes;
  std::map<BlockPair, BlockPairRecord> block_pairs;
  std::vector<Failure> failures;  // oldest first
};

// Caps, for Record() and for what DecodeHistory() accepts.
inline constexpr size_t kMaxPartners = 8;
inline constexpr size_t kMaxPairs = 8;
inline constexpr size_t kMaxFailures = 4096;
inline constexpr size_t kMaxNodes = 65536;
inline constexpr size_t kMaxBlockPairs = 131072;
inline constexpr size_t kMaxHistoryInput = 1 << 20;  // a ConfigMap holds at most 1 MiB
inline constexpr size_t kDefaultHistoryBytes = 512 * 1024;

// Compact JSON (times as Unix seconds):
//   {"version":1,
//    "nodes":[{"n":NAME,"p":LAST_PASS,"f":FAIL_SINCE,"c":CAUSE,"w":[PARTNER...]}...],
//    "blocks":[{"a":BLOCK,"b":BLOCK,"p":..,"f":..,"c":..,"w":[[A,B]...]}...],
//    "failures":[{"a":A,"b":B,"x":BLOCK_A,"y":BLOCK_B,"c":CAUSE,"t":AT}...]}
// "p", "f", "c" and "w" only when set; "c" present means blamed. At most `max_bytes`: what is kept
// first is what a new leader cannot learn again quickly (verdicts, streaks, failures), then node
// passes (newest first), then block-pair passes (newest first); the rest is left out and counted in
// `*dropped` (entries; may be null).
std::string EncodeHistory(const History& history, size_t max_bytes = kDefaultHistoryBytes,
                          size_t* dropped = nullptr);

// Hostile input (anyone who may edit the ConfigMap wrote it): at most kMaxHistoryInput bytes; every
// field's type checked; node names DNS subdomains (<= 253 bytes of [a-z0-9.-]); blocks label
// values (<= 63 bytes of [A-Za-z0-9._-], may be empty); causes check ids (<= 128 bytes of
// [A-Za-z0-9._-]); times Unix seconds within 1900..2200; pairs ordered (a < b); no duplicate node
// or block pair; counts within the caps above. Any violation is a parse error naming it.
Result<History> DecodeHistory(std::string_view text);

bool ValidNodeName(std::string_view s);
bool ValidBlock(std::string_view s);
bool ValidCause(std::string_view s);

}  // namespace tocsin::canary
