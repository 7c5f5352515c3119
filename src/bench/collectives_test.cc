#include "bench/collectives.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "testing/status_matchers.h"

namespace tocsin::bench {
namespace {

// In-memory mailboxes between threads: sends never block, receives wait for their message.
class Mailboxes {
 public:
  explicit Mailboxes(int n) : n_(n), boxes_(n * n) {}
  void Put(int from, int to, const void* p, size_t len) {
    std::lock_guard<std::mutex> l(mu_);
    boxes_[from * n_ + to].emplace_back(static_cast<const char*>(p),
                                        static_cast<const char*>(p) + len);
    cv_.notify_all();
  }
  Status Take(int from, int to, void* p, size_t len, Deadline deadline) {
    std::unique_lock<std::mutex> l(mu_);
    auto& q = boxes_[from * n_ + to];
    if (!cv_.wait_until(l, deadline, [&] { return !q.empty(); })) {
      return Status::Timeout("no message");
    }
    if (q.front().size() != len) return Status::Internal("size mismatch");
    if (len > 0) std::memcpy(p, q.front().data(), len);
    q.pop_front();
    return Status::Ok();
  }

 private:
  int n_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::deque<std::vector<char>>> boxes_;
};

class MemTransport : public Transport {
 public:
  MemTransport(Mailboxes& m, int rank) : m_(m), rank_(rank) { info_.kind = "mem"; }
  const TransportInfo& info() const override { return info_; }
  std::string address() const override { return ""; }
  Status Connect(const std::vector<ranks::Peer>&, const std::string&, Deadline) override {
    return Status::Ok();
  }
  Status SendRecv(int to, const void* s, size_t slen, int from, void* r, size_t rlen,
                  Deadline deadline) override {
    if (to >= 0) m_.Put(rank_, to, s, slen);
    if (from >= 0) return m_.Take(from, rank_, r, rlen, deadline);
    return Status::Ok();
  }

 private:
  Mailboxes& m_;
  int rank_;
  TransportInfo info_;
};

// Runs `c` on n ranks over in-memory mailboxes; returns the wrong count of every rank.
std::vector<size_t> RunAll(const Collective& c, int n, size_t count) {
  Mailboxes boxes(n);
  std::vector<size_t> wrong(n, 99);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      MemTransport t(boxes, r);
      std::vector<float> send(c.SendCount(count, n) + 1), recv(c.RecvCount(count, n) + 1, -1),
          tmp(c.TmpCount(count, n) + 1);
      c.Init(send.data(), count, r, n);
      Status st = c.Run(t, send.data(), recv.data(), tmp.data(), count, r, n,
                        ranks::DeadlineIn(std::chrono::seconds(10)));
      ASSERT_OK(st);
      wrong[r] = c.Wrong(recv.data(), count, r, n);
    });
  }
  for (auto& t : threads) t.join();
  return wrong;
}

TEST(CollectivesTest, EveryCollectiveIsCorrectForManyShapes) {
  for (const char* name : {"allreduce", "allgather", "alltoall"}) {
    auto c = MakeCollective(name);
    ASSERT_NE(c, nullptr);
    for (int n : {1, 2, 3, 4, 5}) {
      for (size_t bytes : {size_t{4}, size_t{60}, size_t{1024}, size_t{4100}, size_t{1} << 18}) {
        size_t count = c->Count(bytes, n);
        if (count == 0) continue;
        auto wrong = RunAll(*c, n, count);
        for (int r = 0; r < n; ++r) {
          EXPECT_EQ(wrong[r], 0u) << name << " n=" << n << " bytes=" << bytes << " rank " << r;
        }
      }
    }
  }
}

TEST(CollectivesTest, VerificationCatchesCorruption) {
  auto c = MakeAllReduce();
  std::vector<float> recv(100, 0.0f);
  EXPECT_GT(c->Wrong(recv.data(), 100, 0, 2), 0u);
}

TEST(CollectivesTest, BusBandwidthFactorsAndCounts) {
  // nccl-tests PERFORMANCE.md: allreduce 2(n-1)/n, allgather and alltoall (n-1)/n.
  EXPECT_DOUBLE_EQ(MakeAllReduce()->BusBwFactor(4), 1.5);
  EXPECT_DOUBLE_EQ(MakeAllGather()->BusBwFactor(4), 0.75);
  EXPECT_DOUBLE_EQ(MakeAllToAll()->BusBwFactor(8), 0.875);
  EXPECT_EQ(MakeAllReduce()->Count(1024, 3), 256u);
  EXPECT_EQ(MakeAllGather()->Count(1024, 3), 255u);  // a multiple of n
  EXPECT_EQ(MakeCollective("broadcast"), nullptr);
}

}  // namespace
}  // namespace tocsin::bench
