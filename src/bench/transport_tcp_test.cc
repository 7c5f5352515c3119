// The TCP data plane: a connection that does not open with the run's secret is dropped, and the
// ranks still reach each other.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <future>
#include <memory>
#include <span>
#include <thread>
#include <utility>
#include <vector>

#include "bench/transport.h"
#include "testing/status_matchers.h"

namespace tocsin::bench {
namespace {

using namespace std::chrono_literals;

struct Pipe {
  Pipe() { EXPECT_EQ(pipe(fds), 0); }
  ~Pipe() {
    close(fds[0]);
    close(fds[1]);
  }
  int fds[2] = {-1, -1};
};

ranks::Fd Stranger(const std::string& address, const std::string& first_bytes) {
  auto hp = ranks::SplitHostPort(address);
  EXPECT_TRUE(hp.ok());
  auto fd = ranks::ConnectRetry(hp->first, hp->second, ranks::DeadlineIn(5s));
  EXPECT_TRUE(fd.ok());
  EXPECT_EQ(send(fd->get(), first_bytes.data(), first_bytes.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(first_bytes.size()));
  return std::move(*fd);
}

// Ranks 0 and 1 on loopback.
struct TwoRanks {
  explicit TwoRanks(const TcpOptions& options = {}) {
    auto a = CreateTcpTransport("127.0.0.1", 0, abort0.fds[0], options);
    auto b = CreateTcpTransport("127.0.0.1", 1, abort1.fds[0], options);
    EXPECT_TRUE(a.ok() && b.ok());
    t0 = std::move(*a);
    t1 = std::move(*b);
    peers = {{0, "a", "127.0.0.1", t0->address()}, {1, "b", "127.0.0.1", t1->address()}};
  }

  // Both connect before `within`, then rank 0's bytes reach rank 1.
  void ConnectAndTalk(std::chrono::milliseconds within) {
    auto c1 = std::async(std::launch::async,
                         [&] { return t1->Connect(peers, secret, ranks::DeadlineIn(within)); });
    ASSERT_TRUE(t0->Connect(peers, secret, ranks::DeadlineIn(within)).ok());
    Status st1 = c1.get();
    ASSERT_OK(st1);
    char out[8] = "tocsin!", in[8] = {};
    auto recv1 = std::async(std::launch::async, [&] {
      return t1->SendRecv(-1, nullptr, 0, 0, in, sizeof in, ranks::DeadlineIn(5s));
    });
    ASSERT_TRUE(t0->SendRecv(1, out, sizeof out, -1, nullptr, 0, ranks::DeadlineIn(5s)).ok());
    ASSERT_TRUE(recv1.get().ok());
    EXPECT_STREQ(in, "tocsin!");
  }

  Pipe abort0, abort1;
  std::unique_ptr<Transport> t0, t1;
  std::vector<ranks::Peer> peers;
  const std::string secret = std::string(ranks::kRunSecretBytes, 'k');
};

TEST(TcpTransportTest, ConnectionsWithoutTheRunSecretAreDropped) {
  TwoRanks w;
  // Strangers reach rank 1's port first: one claims to be rank 0 (as the old handshake was: a
  // rank number alone), one gives another secret, one hangs up at once.
  int32_t zero = 0;
  std::vector<ranks::Fd> strangers;
  strangers.push_back(Stranger(w.peers[1].address, std::string(reinterpret_cast<char*>(&zero), 4) +
                                                       std::string(44, ' ')));
  std::string wrong = "0 " + std::string(ranks::kRunSecretBytes, 'x');
  wrong.resize(48, ' ');
  strangers.push_back(Stranger(w.peers[1].address, wrong));
  Stranger(w.peers[1].address, "");
  w.ConnectAndTalk(10s);
}

// Strangers that connect and say nothing wait side by side: they cannot hold up the real rank.
// (Accepted one at a time, each had 2 s: seven of them used up the 3 s here.)
TEST(TcpTransportTest, IdleStrangersDoNotDelayTheRealRanks) {
  TwoRanks w;
  std::vector<ranks::Fd> idle;
  for (int i = 0; i < 6; ++i) idle.push_back(Stranger(w.peers[1].address, ""));
  idle.push_back(Stranger(w.peers[1].address, "0 kkkk"));  // a part of a hello, then silence
  auto start = std::chrono::steady_clock::now();
  w.ConnectAndTalk(3s);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
}

TEST(TcpTransportTest, AnAbortEndsTheWaitForLowerRanks) {
  Pipe abort1;
  auto t1 = CreateTcpTransport("127.0.0.1", 1, abort1.fds[0]);
  ASSERT_TRUE(t1.ok());
  std::vector<ranks::Peer> peers = {{0, "a", "127.0.0.1", "127.0.0.1:1"},
                                    {1, "b", "127.0.0.1", (*t1)->address()}};
  ranks::Fd idle = Stranger(peers[1].address, "");
  ASSERT_EQ(write(abort1.fds[1], "x", 1), 1);
  Status st = (*t1)->Connect(peers, std::string(ranks::kRunSecretBytes, 'k'),
                             ranks::DeadlineIn(30s));
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
}

TEST(TcpTransportTest, OnlyStrangersIsAnErrorThatSaysSo) {
  Pipe abort1;
  auto t1 = CreateTcpTransport("127.0.0.1", 1, abort1.fds[0]);
  ASSERT_TRUE(t1.ok());
  std::vector<ranks::Peer> peers = {{0, "a", "127.0.0.1", "127.0.0.1:1"},
                                    {1, "b", "127.0.0.1", (*t1)->address()}};
  ranks::Fd s = Stranger(peers[1].address, std::string(48, 'x'));
  Status st = (*t1)->Connect(peers, std::string(ranks::kRunSecretBytes, 'k'),
                             ranks::DeadlineIn(500ms));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("1 connection(s) without the run's secret were dropped"),
            std::string::npos)
      << st.ToString();
}

// Returns once thread `tid` of this process sleeps in poll (its wchan says so), or fails.
void WaitUntilInPoll(pid_t tid) {
  auto until = std::chrono::steady_clock::now() + 10s;
  std::string path = "/proc/self/task/" + std::to_string(tid) + "/wchan";
  while (std::chrono::steady_clock::now() < until) {
    std::ifstream f(path);
    std::string wchan;
    std::getline(f, wchan);
    if (wchan.find("poll") != std::string::npos) return;
    std::this_thread::yield();
  }
  FAIL() << "thread " << tid << " never slept in poll";
}

// A receive is woken only once 1 MiB is in (SO_RCVLOWAT), never more than it still expects: the
// last, shorter slice completes, and a peer that closes early ends the wait with an error, not a
// timeout. No spin: every wait goes through poll.
TEST(TcpTransportTest, AReceiveIsWokenForWhatIsLeftOfItsSlice) {
  TwoRanks w(TcpOptions{.spin_us = 0, .wake_bytes = 1 << 20});
  w.ConnectAndTalk(10s);
  std::vector<char> out((3 << 19) + 12, 'x'), in(out.size());  // 1.5 MiB + 12: a short last slice
  std::vector<std::pair<size_t, size_t>> slices;
  std::promise<pid_t> first_slice;  // the receiving thread, once its first slice is in
  auto recv1 = std::async(std::launch::async, [&] {
    Transfer x{0, false, in.data(), in.size()};
    return w.t1->Exchange(std::span<const Transfer>(&x, 1), 1 << 20,
                          [&](size_t, size_t off, size_t len) {
                            slices.emplace_back(off, len);
                            if (off == 0) first_slice.set_value(gettid());
                          },
                          ranks::DeadlineIn(20s));
  });
  // The first slice and 100 bytes; the rest (less than 1 MiB) only once the receiver sleeps
  // waiting for it.
  size_t head = (1 << 20) + 100;
  ASSERT_OK(w.t0->SendRecv(1, out.data(), head, -1, nullptr, 0, ranks::DeadlineIn(20s)));
  auto tid = first_slice.get_future();
  ASSERT_EQ(tid.wait_for(20s), std::future_status::ready) << "no first slice";
  WaitUntilInPoll(tid.get());
  ASSERT_OK(w.t0->SendRecv(1, out.data() + head, out.size() - head, -1, nullptr, 0,
                           ranks::DeadlineIn(20s)));
  Status st = recv1.get();
  ASSERT_OK(st);
  EXPECT_EQ(in, out);
  EXPECT_EQ(slices, (std::vector<std::pair<size_t, size_t>>{{0, 1 << 20}, {1 << 20, (1 << 19) + 12}}));

  auto recv2 = std::async(std::launch::async, [&] {
    return w.t1->SendRecv(-1, nullptr, 0, 0, in.data(), in.size(), ranks::DeadlineIn(20s));
  });
  ASSERT_OK(w.t0->SendRecv(1, out.data(), 1000, -1, nullptr, 0, ranks::DeadlineIn(20s)));
  w.t0.reset();  // closes its sockets with 1000 bytes sent of the 1.5 MiB expected
  st = recv2.get();
  EXPECT_EQ(st.code(), StatusCode::kIoError) << st.ToString();
  EXPECT_NE(st.message().find("connection closed"), std::string::npos) << st.ToString();
}

// With a spin, a peer that sends nothing still ends in the deadline's error, naming it.
TEST(TcpTransportTest, ASpinningReceiveStillKeepsItsDeadline) {
  TwoRanks w(TcpOptions{.spin_us = 100000, .wake_bytes = 1 << 20});
  w.ConnectAndTalk(10s);
  char in[64];
  auto start = std::chrono::steady_clock::now();
  Status st = w.t1->SendRecv(-1, nullptr, 0, 0, in, sizeof in, ranks::DeadlineIn(300ms));
  EXPECT_EQ(st.code(), StatusCode::kTimeout) << st.ToString();
  EXPECT_NE(st.message().find("receiving from"), std::string::npos) << st.ToString();
  // The deadline, overshot by one spin at most (100 ms), with room for a loaded machine.
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  // An abort (the coordinator's) ends the wait too, spin or not.
  ASSERT_EQ(write(w.abort1.fds[1], "x", 1), 1);
  st = w.t1->SendRecv(-1, nullptr, 0, 0, in, sizeof in, ranks::DeadlineIn(30s));
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
}

// Ranks that meet at a loopback coordinator all run here (--local starts its ranks that way):
// more of them than CPUs do not spin, on every rank. Elsewhere one rank per machine is assumed.
TEST(TcpTransportTest, RanksThatOutnumberTheCoresDoNotSpin) {
  auto world = [](int n, const std::string& coordinator) {
    ranks::WorldOptions w;
    w.world_size = n;
    w.coordinator = coordinator;
    return w;
  };
  for (const char* here : {"127.0.0.1:0", "127.0.0.1:29500", "localhost:29500", "[::1]:29500"}) {
    EXPECT_EQ(DefaultSpinUs(world(1 << 20, here)), 0) << here;
    EXPECT_EQ(DefaultSpinUs(world(1, here)), TcpOptions::kDefaultSpinUs) << here;
  }
  EXPECT_EQ(DefaultSpinUs(world(1 << 20, "10.0.0.1:29500")), TcpOptions::kDefaultSpinUs);
  EXPECT_EQ(DefaultSpinUs(world(1 << 20, "node-a:29500")), TcpOptions::kDefaultSpinUs);
}

}  // namespace
}  // namespace tocsin::bench
