#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "bench/storage_probe.h"

namespace tocsin::bench {

// What each rank measured, as rank 0 gathers it. Another rank's bytes are hostile input: every
// decoder checks types, ranges and counts against what this rank ran (all ranks ran the same
// parameters), and says what is wrong; the caller blames the rank that sent it.

// One collective size as one rank timed it.
struct SizeResult {
  uint64_t bytes = 0;
  uint64_t count = 0;
  double us = 0;
  int64_t wrong = -1;
  double cpu_us = 0;  // this rank's CPU time (user + sys) per iteration
};
std::string EncodeSizeResults(const std::vector<SizeResult>& rows);
// Exactly `want` rows of the same sizes, in order.
Result<std::vector<SizeResult>> DecodeSizeResults(std::string_view text,
                                                  const std::vector<SizeResult>& want);

// One p2p measurement: a pair's latency, one direction at one size (by its sender), or a
// rank's count of wrong elements.
struct P2pRecord {
  enum class Kind { kLatency, kStream, kWrong };
  Kind kind = Kind::kWrong;
  int a = -1, b = -1, from = -1;
  uint64_t bytes = 0;
  double us = 0;
  int64_t wrong = -1;
  double cpu_us = 0;  // this rank's CPU time (user + sys) per iteration
};
std::string EncodeP2p(const std::vector<P2pRecord>& records);
// Records of `sender` in a world of `world_size`, at the sizes in `sizes`: a sender reports
// only pairs it leads (latency) or directions it sent.
Result<std::vector<P2pRecord>> DecodeP2p(std::string_view text, int sender, int world_size,
                                         const std::vector<size_t>& sizes);

// A phase as the report's inventory and the gathered payload show it.
nlohmann::json PhaseJson(const PhaseResult& phase);
// A storage node's phases, in the order `names` (this rank's own, which every rank ran).
std::string EncodePhases(const std::string& host, const std::vector<PhaseResult>& phases);
Result<std::vector<PhaseResult>> DecodePhases(std::string_view text,
                                              const std::vector<std::string>& names);

// Test hook: TOCSIN_TEST_FAULT="payload:RANK:TEXT" makes rank RANK send TEXT instead of its
// results (end-to-end tests of a rank that sends garbage). `payload` otherwise.
std::string MaybeCorrupt(int rank, std::string payload);

}  // namespace tocsin::bench
