#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/finding.h"
#include "base/report.h"
#include "base/status.h"

namespace tocsin::bench {

// A canary's verdict: what one rank of `tocsin bench net --verdict-file PATH` writes at exit, in
// few enough bytes for a Kubernetes termination message (the kubelet keeps 4096), so that the
// controller reads the result from the pod object. Schema v1 in docs/FORMATS.md, "Canary verdict
// (termination message)".

inline constexpr size_t kMaxVerdictBytes = 4096;  // the kubelet's cap on a termination message
inline constexpr size_t kMaxVerdictRanks = 64;
inline constexpr size_t kMaxVerdictTests = 8;
inline constexpr size_t kMaxVerdictFindings = 32;

struct VerdictTest {
  std::string test;  // p2p, allreduce, allgather, alltoall
  double busbw = 0;  // GB/s: the test's "Avg bus bandwidth" (mean over the sizes run)
  double algbw = 0;  // GB/s: the mean algorithm bandwidth over the same sizes
  uint64_t bytes = 0;  // the largest size run
};

struct VerdictRank {
  int rank = -1;
  std::string host;  // the hostname the rank reported
  std::string node;  // its TOCSIN_NODE_NAME ("" when unset or dropped as invalid)
};

struct VerdictFinding {
  std::string check;
  Severity severity = Severity::kInfo;
  std::string subject;
  std::string message;
};

struct Verdict {
  int v = 1;
  int rank = -1;            // -1 and 0: unknown (a usage error before the flags said)
  int world = 0;
  int exit = 0;             // the process's exit code (0, 1, 2, 3)
  std::string transport;    // "tcp" (sockets) or "fabric" (libfabric); "" after a usage error
                            // that named another
  std::string provider;     // libfabric provider ("verbs;ofi_rxm", ...); "tcp" for sockets
  std::optional<bool> rdma;  // whether the data path is RDMA; nullopt: undetermined
  std::vector<VerdictTest> tests;
  std::vector<VerdictRank> ranks;
  std::vector<VerdictFinding> findings;  // worst first
  uint64_t trimmed = 0;        // entries dropped or texts cut to fit the size cap
  uint64_t nodes_dropped = 0;  // node names peers sent that were not node names (dropped)
  std::string error;           // why the run could not start (exit 2, 3): the usage error
};

// The verdict as JSON in at most `max_bytes` (when the fields alone fit; 4096 always does):
// arrays are capped at the decoder's limits, texts at its lengths, then messages are cut shorter
// and findings, ranks and tests dropped from the end until it fits; `trimmed` counts each entry
// dropped and each text cut.
std::string EncodeVerdict(const Verdict& verdict, size_t max_bytes = kMaxVerdictBytes);

// Reads a verdict a pod wrote (hostile input): at most kMaxVerdictBytes, one JSON object with
// "v": 1, every field typed and bounded (arrays at the caps above, numbers finite and >= 0),
// unknown fields ignored. Errors say which field is wrong.
Result<Verdict> DecodeVerdict(std::string_view text);

// What this rank knows when it exits: the run's report (rank 0's holds every rank; empty when
// the run never started), the exit code, and the transport asked for (what the verdict says when
// the run ended before the transport was up). `self` is this rank (host, node) for a report that
// names no ranks; a node that is not a node name is left out.
Verdict VerdictOf(const Report& report, int rank, int world, int exit, const std::string& transport,
                  const VerdictRank& self);

// Writes `text` to `path` for the kubelet to read after exit: truncated and replaced, never
// through a symlink, fsynced before close.
Status WriteVerdictFile(const std::string& path, std::string_view text);

}  // namespace tocsin::bench
