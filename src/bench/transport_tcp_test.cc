// The TCP data plane: a connection that does not open with the run's secret is dropped, and the
// ranks still reach each other.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <future>

#include "bench/transport.h"

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

TEST(TcpTransportTest, ConnectionsWithoutTheRunSecretAreDropped) {
  Pipe abort0, abort1;
  auto t0 = CreateTcpTransport("127.0.0.1", 0, abort0.fds[0]);
  auto t1 = CreateTcpTransport("127.0.0.1", 1, abort1.fds[0]);
  ASSERT_TRUE(t0.ok() && t1.ok());
  std::vector<ranks::Peer> peers = {{0, "a", "127.0.0.1", (*t0)->address()},
                                    {1, "b", "127.0.0.1", (*t1)->address()}};
  const std::string secret(ranks::kRunSecretBytes, 'k');
  // Strangers reach rank 1's port first: one claims to be rank 0 (as the old handshake was: a
  // rank number alone), one gives another secret, one hangs up at once.
  int32_t zero = 0;
  std::vector<ranks::Fd> strangers;
  strangers.push_back(Stranger(peers[1].address, std::string(reinterpret_cast<char*>(&zero), 4) +
                                                     std::string(44, ' ')));
  std::string wrong = "0 " + std::string(ranks::kRunSecretBytes, 'x');
  wrong.resize(48, ' ');
  strangers.push_back(Stranger(peers[1].address, wrong));
  Stranger(peers[1].address, "");
  auto c1 = std::async(std::launch::async,
                       [&] { return (*t1)->Connect(peers, secret, ranks::DeadlineIn(10s)); });
  ASSERT_TRUE((*t0)->Connect(peers, secret, ranks::DeadlineIn(10s)).ok());
  Status st1 = c1.get();
  ASSERT_TRUE(st1.ok()) << st1.ToString();
  char out[8] = "tocsin!", in[8] = {};
  auto recv1 = std::async(std::launch::async, [&] {
    return (*t1)->SendRecv(-1, nullptr, 0, 0, in, sizeof in, ranks::DeadlineIn(5s));
  });
  ASSERT_TRUE((*t0)->SendRecv(1, out, sizeof out, -1, nullptr, 0, ranks::DeadlineIn(5s)).ok());
  ASSERT_TRUE(recv1.get().ok());
  EXPECT_STREQ(in, "tocsin!");
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

}  // namespace
}  // namespace tocsin::bench
