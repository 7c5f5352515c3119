#include "bench/collectives.h"

#include <algorithm>
#include <cstring>
#include <span>

namespace tocsin::bench {
namespace {

// Chunk k of a buffer of `count` elements split in n: [Begin(k), Begin(k+1)).
size_t Begin(size_t count, int n, int k) { return count * static_cast<size_t>(k) / n; }

// dst[i] += src[i]: the reduction, vectorized by the compiler.
void Add(float* __restrict dst, const float* __restrict src, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] += src[i];
}

// One ring of an allreduce over elements [begin, begin + count): this rank's position in it
// and its neighbours there.
struct Ring {
  size_t begin, count;
  int pos, next, prev, n;
  size_t Off(int k) const { return begin + Begin(count, n, k); }
  size_t Bytes(int k) const { return (Begin(count, n, k + 1) - Begin(count, n, k)) * sizeof(float); }
};

class AllReduce : public Collective {
 public:
  explicit AllReduce(const RingOptions& o) : o_(o) {
    o_.slice_bytes = std::max(sizeof(float), o_.slice_bytes / sizeof(float) * sizeof(float));
  }
  std::string name() const override { return "allreduce"; }
  std::string redop() const override { return "sum"; }
  size_t Count(size_t bytes, int /*n*/) const override { return bytes / sizeof(float); }
  double BusBwFactor(int n) const override { return 2.0 * (n - 1) / n; }
  size_t SendCount(size_t count, int) const override { return count; }
  size_t TmpCount(size_t count, int n) const override { return count / n + 1; }
  void Init(float* send, size_t count, int rank, int) const override {
    for (size_t i = 0; i < count; ++i) send[i] = InputValue(rank, i);
  }
  // No copy of the input: reduce-scatter step 0 sends from it, and every other step reduces a
  // received slice with the input in place (after n-1 steps rank r holds the sum of chunk
  // (r+1) % n); the all-gather then overwrites every other chunk.
  Status Run(Transport& t, const float* send, float* recv, float*, size_t count, int r, int n,
             Deadline deadline) const override {
    if (n == 1) {
      std::memcpy(recv, send, count * sizeof(float));
      return Status::Ok();
    }
    int rings = o_.RingsFor(n);
    size_t half = rings == 2 ? count / 2 : count;
    Ring ring[2] = {{0, half, r, (r + 1) % n, (r + n - 1) % n, n},
                    {half, count - half, (n - r) % n, (r + n - 1) % n, (r + 1) % n, n}};
    Transfer xs[2 * 2];
    size_t at[2];  // where each ring's receive of this step starts (elements)
    auto reduce = [&](size_t i, size_t off, size_t len) {
      size_t e = at[i / 2] + off / sizeof(float);
      Add(recv + e, send + e, len / sizeof(float));
    };
    for (int s = 0; s < n - 1; ++s) {
      for (int g = 0; g < rings; ++g) {
        const Ring& q = ring[g];
        int sc = (q.pos - s + n) % n, rc = (q.pos - s - 1 + n) % n;
        const float* from = (s == 0 ? send : recv) + q.Off(sc);
        at[g] = q.Off(rc);
        xs[2 * g] = {q.prev, false, recv + at[g], q.Bytes(rc)};
        xs[2 * g + 1] = {q.next, true, const_cast<float*>(from), q.Bytes(sc)};
      }
      Status st = t.Exchange(std::span<const Transfer>(xs, 2 * rings), o_.slice_bytes, reduce,
                             deadline);
      if (!st.ok()) return st;
    }
    for (int s = 0; s < n - 1; ++s) {
      for (int g = 0; g < rings; ++g) {
        const Ring& q = ring[g];
        int sc = (q.pos + 1 - s + n) % n, rc = (q.pos - s + n) % n;
        xs[2 * g] = {q.prev, false, recv + q.Off(rc), q.Bytes(rc)};
        xs[2 * g + 1] = {q.next, true, recv + q.Off(sc), q.Bytes(sc)};
      }
      Status st = t.Exchange(std::span<const Transfer>(xs, 2 * rings), 0, nullptr, deadline);
      if (!st.ok()) return st;
    }
    return Status::Ok();
  }
  size_t Wrong(const float* recv, size_t count, int, int n) const override {
    size_t wrong = 0;
    for (size_t i = 0; i < count; ++i) {
      float want = 0;
      for (int r = 0; r < n; ++r) want += InputValue(r, i);
      wrong += recv[i] != want;
    }
    return wrong;
  }

 private:
  RingOptions o_;
};

class AllGather : public Collective {
 public:
  std::string name() const override { return "allgather"; }
  double BusBwFactor(int n) const override { return 1.0 * (n - 1) / n; }
  size_t SendCount(size_t count, int n) const override { return count / n; }
  void Init(float* send, size_t count, int rank, int n) const override {
    for (size_t i = 0; i < count / n; ++i) send[i] = InputValue(rank, i);
  }
  Status Run(Transport& t, const float* send, float* recv, float*, size_t count, int r, int n,
             Deadline deadline) const override {
    size_t c = count / n;
    std::memcpy(recv + r * c, send, c * sizeof(float));
    int next = (r + 1) % n, prev = (r + n - 1) % n;
    for (int s = 0; s < n - 1; ++s) {
      int sc = (r - s + n) % n, rc = (r - s - 1 + n) % n;
      Status st = t.SendRecv(next, recv + sc * c, c * sizeof(float), prev, recv + rc * c,
                             c * sizeof(float), deadline);
      if (!st.ok()) return st;
    }
    return Status::Ok();
  }
  size_t Wrong(const float* recv, size_t count, int, int n) const override {
    size_t c = count / n, wrong = 0;
    for (int src = 0; src < n; ++src) {
      for (size_t i = 0; i < c; ++i) wrong += recv[src * c + i] != InputValue(src, i);
    }
    return wrong;
  }
};

class AllToAll : public Collective {
 public:
  std::string name() const override { return "alltoall"; }
  double BusBwFactor(int n) const override { return 1.0 * (n - 1) / n; }
  size_t SendCount(size_t count, int) const override { return count; }
  void Init(float* send, size_t count, int rank, int) const override {
    for (size_t i = 0; i < count; ++i) send[i] = InputValue(rank, i);
  }
  Status Run(Transport& t, const float* send, float* recv, float*, size_t count, int r, int n,
             Deadline deadline) const override {
    size_t c = count / n;
    std::memcpy(recv + r * c, send + r * c, c * sizeof(float));
    for (int s = 1; s < n; ++s) {
      int to = (r + s) % n, from = (r - s + n) % n;
      Status st = t.SendRecv(to, send + to * c, c * sizeof(float), from, recv + from * c,
                             c * sizeof(float), deadline);
      if (!st.ok()) return st;
    }
    return Status::Ok();
  }
  // Chunk `src` of rank r's output is chunk r of rank src's input.
  size_t Wrong(const float* recv, size_t count, int r, int n) const override {
    size_t c = count / n, wrong = 0;
    for (int src = 0; src < n; ++src) {
      for (size_t i = 0; i < c; ++i) wrong += recv[src * c + i] != InputValue(src, r * c + i);
    }
    return wrong;
  }
};

}  // namespace

size_t Collective::Count(size_t bytes, int n) const {
  size_t count = bytes / sizeof(float);
  return count / n * n;
}

std::unique_ptr<Collective> MakeAllReduce(const RingOptions& ring) {
  return std::make_unique<AllReduce>(ring);
}
std::unique_ptr<Collective> MakeAllGather() { return std::make_unique<AllGather>(); }
std::unique_ptr<Collective> MakeAllToAll() { return std::make_unique<AllToAll>(); }

std::unique_ptr<Collective> MakeCollective(const std::string& name, const RingOptions& ring) {
  if (name == "allreduce") return MakeAllReduce(ring);
  if (name == "allgather") return MakeAllGather();
  if (name == "alltoall") return MakeAllToAll();
  return nullptr;
}

}  // namespace tocsin::bench
