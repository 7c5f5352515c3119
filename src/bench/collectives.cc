#include "bench/collectives.h"

#include <cstring>

namespace tocsin::bench {
namespace {

// Chunk k of a buffer of `count` elements split in n: [Begin(k), Begin(k+1)).
size_t Begin(size_t count, int n, int k) { return count * static_cast<size_t>(k) / n; }

class AllReduce : public Collective {
 public:
  std::string name() const override { return "allreduce"; }
  std::string redop() const override { return "sum"; }
  size_t Count(size_t bytes, int /*n*/) const override { return bytes / sizeof(float); }
  double BusBwFactor(int n) const override { return 2.0 * (n - 1) / n; }
  size_t SendCount(size_t count, int) const override { return count; }
  size_t TmpCount(size_t count, int n) const override { return count / n + 1; }
  void Init(float* send, size_t count, int rank, int) const override {
    for (size_t i = 0; i < count; ++i) send[i] = InputValue(rank, i);
  }
  Status Run(Transport& t, const float* send, float* recv, float* tmp, size_t count, int r, int n,
             Deadline deadline) const override {
    std::memcpy(recv, send, count * sizeof(float));
    if (n == 1) return Status::Ok();
    int next = (r + 1) % n, prev = (r + n - 1) % n;
    auto len = [&](int k) { return Begin(count, n, k + 1) - Begin(count, n, k); };
    // Reduce-scatter: after n-1 steps rank r holds the sum of chunk (r+1) % n.
    for (int s = 0; s < n - 1; ++s) {
      int sc = (r - s + n) % n, rc = (r - s - 1 + n) % n;
      Status st = t.SendRecv(next, recv + Begin(count, n, sc), len(sc) * sizeof(float), prev, tmp,
                             len(rc) * sizeof(float), deadline);
      if (!st.ok()) return st;
      float* dst = recv + Begin(count, n, rc);
      for (size_t i = 0, e = len(rc); i < e; ++i) dst[i] += tmp[i];
    }
    // All-gather of the reduced chunks.
    for (int s = 0; s < n - 1; ++s) {
      int sc = (r + 1 - s + n) % n, rc = (r - s + n) % n;
      Status st = t.SendRecv(next, recv + Begin(count, n, sc), len(sc) * sizeof(float), prev,
                             recv + Begin(count, n, rc), len(rc) * sizeof(float), deadline);
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

std::unique_ptr<Collective> MakeAllReduce() { return std::make_unique<AllReduce>(); }
std::unique_ptr<Collective> MakeAllGather() { return std::make_unique<AllGather>(); }
std::unique_ptr<Collective> MakeAllToAll() { return std::make_unique<AllToAll>(); }

std::unique_ptr<Collective> MakeCollective(const std::string& name) {
  if (name == "allreduce") return MakeAllReduce();
  if (name == "allgather") return MakeAllGather();
  if (name == "alltoall") return MakeAllToAll();
  return nullptr;
}

}  // namespace tocsin::bench
