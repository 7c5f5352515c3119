// What `tocsin bench net` accepts: the sweep of sizes, and the options refused before a rank
// starts (a run that would measure nothing is refused, never reported as "ok").
#include <algorithm>
#include <string>

#include "bench/collectives.h"
#include "bench/net_bench.h"

namespace tocsin::bench {

namespace {
constexpr size_t kMaxBytes = 1ull << 30;  // every run's traffic is bounded
}  // namespace

std::vector<size_t> SweepSizes(size_t min_bytes, size_t max_bytes, int factor) {
  std::vector<size_t> out;
  for (size_t s = min_bytes; s <= max_bytes && s > 0; s *= factor) {
    out.push_back(s);
    if (factor <= 1) break;
  }
  return out;
}

Status ValidateNetBench(const NetBenchOptions& o) {
  for (const auto& t : o.tests) {
    if (t != "p2p" && !MakeCollective(t)) {
      return Status::InvalidArgument("unknown test \"" + t +
                                     "\" (p2p, allreduce, allgather, alltoall)");
    }
  }
  if (o.tests.empty()) return Status::InvalidArgument("no test given (-t)");
  if (o.min_bytes == 0 || o.max_bytes < o.min_bytes) {
    return Status::InvalidArgument("sizes: want 0 < -b <= -e");
  }
  if (o.max_bytes > kMaxBytes) return Status::InvalidArgument("-e is limited to 1 GiB");
  if (o.factor < 2) return Status::InvalidArgument("-f must be at least 2");
  // A run that would measure nothing is refused, never reported as "ok".
  int n = o.world.world_size;
  for (const auto& t : o.tests) {
    if (t == "p2p") {
      if (n >= 0 && n < 2) {
        return Status::InvalidArgument("-t p2p measures between ranks: it needs at least 2 (" +
                                       std::to_string(n) + " given)");
      }
      continue;
    }
    auto c = MakeCollective(t);
    bool any = false;
    for (size_t bytes : SweepSizes(o.min_bytes, o.max_bytes, o.factor)) {
      any |= c->Count(bytes, std::max(n, 1)) > 0;
    }
    if (!any) {
      return Status::InvalidArgument(
          "-t " + t + " with -e " + std::to_string(o.max_bytes) + " bytes on " +
          std::to_string(std::max(n, 1)) + " rank(s): every size rounds to 0 float32 elements, "
          "nothing would be measured (raise -e to at least " +
          std::to_string(4 * std::max(n, 1)) + ")");
    }
  }
  if (o.iters < 1 || o.iters > 100000 || o.warmup < 0 || o.warmup > 100000) {
    return Status::InvalidArgument("-n must be 1..100000 and -w 0..100000");
  }
  if (o.ring.slice_bytes < sizeof(float) || o.ring.slice_bytes % sizeof(float) != 0 ||
      o.ring.slice_bytes > kMaxBytes) {
    return Status::InvalidArgument("--slice must be a multiple of 4 bytes, at most 1 GiB");
  }
  if (o.ring.rings != 1 && o.ring.rings != 2) return Status::InvalidArgument("--rings is 1 or 2");
  if (o.transport != "tcp" && o.transport != "fabric") {
    return Status::InvalidArgument("--transport is tcp or fabric, not \"" + o.transport + "\"");
  }
  if (!o.provider.empty() && o.transport != "fabric") {
    return Status::InvalidArgument("--provider needs --transport fabric");
  }
  return ranks::Validate(o.world);
}

}  // namespace tocsin::bench
