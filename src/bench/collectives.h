#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "bench/transport.h"

namespace tocsin::bench {

// One collective over float32 (nccl-tests' definitions): how many elements a size sweeps, how
// big the send and receive buffers are, the bus-bandwidth factor (nccl-tests PERFORMANCE.md),
// deterministic input, the operation itself over a Transport, and its verification.
class Collective {
 public:
  virtual ~Collective() = default;
  virtual std::string name() const = 0;
  virtual std::string redop() const { return "none"; }
  // Elements for a requested size in bytes (rounded down to a multiple of n where the
  // collective splits its buffer, as nccl-tests does).
  virtual size_t Count(size_t bytes, int n) const;
  virtual double BusBwFactor(int n) const = 0;
  virtual size_t SendCount(size_t count, int n) const = 0;
  virtual size_t RecvCount(size_t count, int /*n*/) const { return count; }
  virtual size_t TmpCount(size_t /*count*/, int /*n*/) const { return 0; }
  virtual void Init(float* send, size_t count, int rank, int n) const = 0;
  virtual Status Run(Transport& t, const float* send, float* recv, float* tmp, size_t count,
                     int rank, int n, Deadline deadline) const = 0;
  // Elements of `recv` that differ from the expected result.
  virtual size_t Wrong(const float* recv, size_t count, int rank, int n) const = 0;
};

// The input value of element `i` of rank `r`: small integers, so float sums over ranks are exact
// and verification can compare for equality.
inline float InputValue(int r, size_t i) {
  return static_cast<float>(((r + 1) * 7 + (i % 1000003) * 13) % 97);
}

// How the allreduce's ring runs. Each reduce-scatter step is received in slices of
// `slice_bytes`, each reduced as soon as it is in while the next one arrives (the transport
// permitting). `rings` 2: two rings in opposite directions, each on half the data, so every
// link carries data both ways (3 ranks or more; 2 ranks run one ring). Defaults tuned by
// measurement (docs/BENCHMARKS.md).
struct RingOptions {
  static constexpr size_t kDefaultSlice = 1 << 20;
  size_t slice_bytes = kDefaultSlice;
  int rings = 2;
  int RingsFor(int n) const { return rings == 2 && n > 2 ? 2 : 1; }
};

// ring: reduce-scatter then all-gather; sum
std::unique_ptr<Collective> MakeAllReduce(const RingOptions& ring = {});
std::unique_ptr<Collective> MakeAllGather();  // ring
std::unique_ptr<Collective> MakeAllToAll();   // pairwise exchange, n-1 steps

// "allreduce", "allgather", "alltoall"; nullptr for anything else.
std::unique_ptr<Collective> MakeCollective(const std::string& name, const RingOptions& ring = {});

}  // namespace tocsin::bench
