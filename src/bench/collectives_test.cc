#include "bench/collectives.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include <unistd.h>

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
  // Sends first (they never block), then every receive; slices once all are in.
  Status Exchange(std::span<const Transfer> xs, size_t slice, const SliceDone& on_slice,
                  Deadline deadline) override {
    for (const Transfer& x : xs) {
      if (x.send) m_.Put(rank_, x.peer, x.buf, x.len);
    }
    for (const Transfer& x : xs) {
      if (!x.send) TOCSIN_RETURN_IF_ERROR(m_.Take(x.peer, rank_, x.buf, x.len, deadline));
    }
    HandOverSlices(xs, slice, on_slice);
    return Status::Ok();
  }

 private:
  Mailboxes& m_;
  int rank_;
  TransportInfo info_;
};

// Runs `c` on n ranks, each on the transport `make(r)` gives; returns every rank's wrong count.
template <typename Make>
std::vector<size_t> RunOn(const Collective& c, int n, size_t count, Make make) {
  std::vector<size_t> wrong(n, 99);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      Transport& t = make(r);
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

// Over in-memory mailboxes.
std::vector<size_t> RunAll(const Collective& c, int n, size_t count) {
  Mailboxes boxes(n);
  std::vector<std::unique_ptr<MemTransport>> ts;
  for (int r = 0; r < n; ++r) ts.push_back(std::make_unique<MemTransport>(boxes, r));
  return RunOn(c, n, count, [&](int r) -> Transport& { return *ts[r]; });
}

// n ranks' TCP transports on loopback (port 0), connected to each other.
struct TcpRanks {
  explicit TcpRanks(int n) {
    EXPECT_EQ(pipe(abort_fds), 0);
    for (int r = 0; r < n; ++r) {
      auto t = CreateTcpTransport("127.0.0.1", r, abort_fds[0]);
      EXPECT_OK(t.status());
      ts.push_back(std::move(*t));
      peers.push_back({r, "r" + std::to_string(r), "127.0.0.1", ts.back()->address()});
    }
    std::vector<std::thread> threads;
    std::vector<Status> st(n, Status::Ok());
    for (int r = 0; r < n; ++r) {
      threads.emplace_back([&, r] {
        st[r] = ts[r]->Connect(peers, secret, ranks::DeadlineIn(std::chrono::seconds(10)));
      });
    }
    for (auto& t : threads) t.join();
    for (const auto& s : st) EXPECT_OK(s);
  }
  ~TcpRanks() {
    close(abort_fds[0]);
    close(abort_fds[1]);
  }
  int abort_fds[2] = {-1, -1};
  std::vector<std::unique_ptr<Transport>> ts;
  std::vector<ranks::Peer> peers;
  const std::string secret = std::string(ranks::kRunSecretBytes, 'k');
};

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

// The pipelined allreduce over real sockets: slices handed over as they arrive, one ring or two
// in opposite directions, with counts that divide by neither n nor the slice, and tiny ones.
TEST(CollectivesTest, PipelinedAllReduceOverTcpIsCorrect) {
  for (int n : {2, 3, 4}) {
    TcpRanks world(n);
    for (int rings : {1, 2}) {
      for (size_t slice : {size_t{4}, size_t{1000}, size_t{4096}, size_t{1} << 20}) {
        auto c = MakeAllReduce({slice, rings});
        for (size_t count : {size_t{1}, size_t(n - 1), size_t(n + 1), size_t{1023},
                             size_t{262147}}) {
          auto wrong = RunOn(*c, n, count, [&](int r) -> Transport& { return *world.ts[r]; });
          for (int r = 0; r < n; ++r) {
            EXPECT_EQ(wrong[r], 0u) << "n=" << n << " rings=" << rings << " slice=" << slice
                                    << " count=" << count << " rank " << r;
          }
        }
      }
    }
  }
}

// The same shapes over the in-memory transport, whose slices come once a receive is complete
// (as libfabric's do).
TEST(CollectivesTest, SlicedAllReduceIsCorrectWhenSlicesComeLate) {
  for (int n : {2, 3, 4}) {
    for (int rings : {1, 2}) {
      auto c = MakeAllReduce({12, rings});
      for (size_t count : {size_t{1}, size_t(n - 1), size_t(n + 1), size_t{1001}}) {
        auto wrong = RunAll(*c, n, count);
        for (int r = 0; r < n; ++r) EXPECT_EQ(wrong[r], 0u) << n << " " << rings << " " << count;
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
