#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <optional>
#include <thread>

#include "base/strings.h"
#include "bench/transport.h"

namespace tocsin::bench {
namespace {

using ranks::Fd;

// 0: the kernel autotunes the buffers (to tcp_rmem/tcp_wmem max); fixing them measured slower.
constexpr int kSocketBuffer = 0;

std::string Errno() { return strerror(errno); }

class TcpTransport : public Transport {
 public:
  TcpTransport(Fd listener, TransportInfo info, int rank, int abort_fd, TcpOptions options)
      : options_(options),
        listener_(std::move(listener)),
        info_(std::move(info)),
        rank_(rank),
        abort_fd_(abort_fd) {}

  const TransportInfo& info() const override { return info_; }
  std::string address() const override {
    return info_.ip + ":" + std::to_string(ranks::LocalPort(listener_.get()));
  }

  // Every connection opens with the connecting rank's number and the run's secret; one that
  // does not (a stranger who found the port) is dropped and the wait goes on.
  Status Connect(const std::vector<ranks::Peer>& peers, const std::string& secret,
                 Deadline deadline) override {
    peers_ = peers;
    socks_.resize(peers.size());
    lowat_.assign(peers.size(), 1);
    // Lower ranks accept, higher ranks connect: one connection per pair.
    for (size_t j = rank_ + 1; j < peers.size(); ++j) {
      auto hp = ranks::SplitHostPort(peers[j].address);
      if (!hp.ok()) return hp.status().WithPrefix(peers[j].Name());
      auto fd = ranks::ConnectRetry(hp->first, hp->second, deadline);
      if (!fd.ok()) return fd.status().WithPrefix(peers[j].Name());
      ranks::TuneStream(fd->get(), kSocketBuffer);
      std::string hello = std::to_string(rank_) + " " + secret;
      hello.resize(kHelloBytes, ' ');
      Status st = ranks::WriteAll(fd->get(), hello.data(), hello.size(), deadline, peers[j].Name());
      if (!st.ok()) return st;
      socks_[j] = std::move(*fd);
    }
    return AcceptLowerRanks(secret, deadline);
  }

  // Tries the socket calls first and polls only when every transfer would block, so a
  // streaming transfer costs one syscall per kernel buffer's worth of data. With slices, a
  // receive reads at most to the end of its slice and hands it over at once: the kernel keeps
  // filling the socket buffer with the next slice meanwhile.
  Status Exchange(std::span<const Transfer> xs, size_t slice, const SliceDone& on_slice,
                  Deadline deadline) override {
    if (xs.size() > kMaxTransfers) return Status::InvalidArgument("too many transfers");
    if (!on_slice) slice = 0;
    size_t done[kMaxTransfers] = {}, handed[kMaxTransfers] = {};
    std::optional<ranks::SteadyClock::time_point> idle_since;  // no progress since then
    auto finished = [&] {
      for (size_t i = 0; i < xs.size(); ++i) {
        if (done[i] < xs[i].len) return false;
      }
      return true;
    };
    while (!finished()) {
      bool progress = false;
      for (size_t i = 0; i < xs.size(); ++i) {
        const Transfer& x = xs[i];
        if (done[i] == x.len) continue;
        char* p = static_cast<char*>(x.buf) + done[i];
        size_t want = x.len - done[i];
        if (!x.send && slice > 0) want = std::min(want, slice - done[i] % slice);
        ssize_t k = x.send ? send(socks_[x.peer].get(), p, want, MSG_NOSIGNAL)
                           : recv(socks_[x.peer].get(), p, want, 0);
        if (k > 0) {
          done[i] += static_cast<size_t>(k);
          progress = true;
          while (slice > 0 && !x.send && handed[i] < done[i] &&
                 (done[i] - handed[i] >= slice || done[i] == x.len)) {
            size_t len = std::min(slice, x.len - handed[i]);
            on_slice(i, handed[i], len);
            handed[i] += len;
          }
        } else if ((k == 0 && !x.send) || (k < 0 && errno != EAGAIN && errno != EINTR)) {
          failed_peer_ = x.peer;
          return Status::IoError(peers_[x.peer].Name() +
                                 (k == 0 ? ": connection closed"
                                         : (x.send ? ": send: " : ": recv: ") + Errno()));
        }
      }
      if (progress) {
        idle_since.reset();
        continue;
      }
      // Nothing moved: try again for up to spin_us before sleeping in poll. A peer on another
      // core has the next bytes within microseconds, and a sleep costs a wake-up each time (as
      // NCCL's socket threads, which loop over their sockets while a transfer is in flight).
      if (options_.spin_us > 0) {
        auto now = ranks::SteadyClock::now();
        if (!idle_since) idle_since = now;
        if (now - *idle_since < std::chrono::microseconds(options_.spin_us)) continue;
        idle_since.reset();
      }
      // One entry per socket (a peer both sent to and received from shares one), then the abort.
      pollfd fds[kMaxTransfers + 1];
      int n = 0;
      for (size_t i = 0; i < xs.size(); ++i) {
        if (done[i] == xs[i].len) continue;
        int fd = socks_[xs[i].peer].get();
        short ev = xs[i].send ? POLLOUT : POLLIN;
        if (!xs[i].send) WakeAt(xs[i].peer, WakeBytes(xs[i], done[i], slice));
        int j = 0;
        while (j < n && fds[j].fd != fd) ++j;
        if (j == n) fds[n++] = {fd, 0, 0};
        fds[j].events |= ev;
      }
      int ai = n;
      fds[n++] = {abort_fd_, POLLIN, 0};
      int r = poll(fds, n, ranks::MillisLeft(deadline));
      if (r == 0) return Stalled(xs, done);
      if (r < 0 && errno != EINTR) return Status::IoError("poll: " + Errno());
      if (r > 0 && fds[ai].revents) return Status(StatusCode::kUnavailable, "aborted");
    }
    for (size_t i = 0; i < xs.size() && slice > 0; ++i) {  // an empty receive: one empty slice
      if (!xs[i].send && xs[i].len == 0) on_slice(i, 0, 0);
    }
    return Status::Ok();
  }

 private:
  // The deadline passed with no progress: names the peer a receive waits on (else a send's).
  Status Stalled(std::span<const Transfer> xs, const size_t* done) {
    size_t w = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      if (done[i] < xs[i].len && (done[w] == xs[w].len || (!xs[i].send && xs[w].send))) w = i;
    }
    const Transfer& x = xs[w];
    failed_peer_ = x.peer;
    return Status::Timeout(
        (x.send ? "sending to " : "receiving from ") + peers_[x.peer].Name() +
        ": no progress before the deadline (" + std::to_string(done[w]) + " of " +
        std::to_string(x.len) + " bytes " + (x.send ? "sent" : "received") + ")");
  }

  // How many bytes a receive waits for before poll wakes it: what is left of its slice (or of
  // it), at most options_.wake_bytes. Fewer wake-ups, each taking a bigger piece.
  size_t WakeBytes(const Transfer& x, size_t done, size_t slice) const {
    size_t want = x.len - done;
    if (slice > 0) want = std::min(want, slice - done % slice);
    return std::max<size_t>(1, std::min(want, options_.wake_bytes));
  }
  // SO_RCVLOWAT, set only when it changes. The kernel still wakes the poll at once on an
  // error, the peer's close, or memory pressure. Should the call fail, the kernel's default (1)
  // is put back, so that a larger value left from before cannot hold up a smaller receive.
  void WakeAt(int peer, size_t bytes) {
    int v = static_cast<int>(std::min<size_t>(bytes, INT_MAX));
    if (lowat_[peer] == v) return;
    int fd = socks_[peer].get();
    if (setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &v, sizeof v) == 0) {
      lowat_[peer] = v;
      return;
    }
    int one = 1;
    lowat_[peer] = setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &one, sizeof one) == 0 ? 1 : -1;
  }

  TcpOptions options_;
  Fd listener_;
  TransportInfo info_;
  int rank_;
  int abort_fd_;
  // "RANK SECRET", space-padded: what a connecting rank sends first.
  static constexpr size_t kHelloBytes = 16 + ranks::kRunSecretBytes;

  // A connection that has not yet presented the run's secret.
  struct Joining {
    Fd fd;
    Deadline expires;
    std::string hello;  // what it sent so far, at most kHelloBytes
  };
  static constexpr size_t kMaxJoining = 64;  // the oldest gives way
  static constexpr std::chrono::milliseconds kHelloWait{2000};

  // Admission, as the coordinator's: poll-driven, every joining connection read as its bytes
  // arrive (kHelloBytes at most), dropped when it does not present the secret within
  // kHelloWait, so silent strangers wait side by side and never hold up a real rank.
  Status AcceptLowerRanks(const std::string& secret, Deadline deadline) {
    // A burst of accepts stops at EAGAIN, never blocks.
    fcntl(listener_.get(), F_SETFL, fcntl(listener_.get(), F_GETFL) | O_NONBLOCK);
    std::vector<Joining> joining;
    int accepted = 0, strangers = 0;
    std::optional<Deadline> accept_paused_until;  // after EMFILE and the like: retried
    auto drop = [&strangers](Joining& j) {
      j.fd = Fd();
      ++strangers;
    };
    while (accepted < rank_) {
      Deadline now = ranks::SteadyClock::now();
      if (accept_paused_until && now >= *accept_paused_until) accept_paused_until.reset();
      std::vector<pollfd> fds = {{accept_paused_until ? -1 : listener_.get(), POLLIN, 0},
                                 {abort_fd_, POLLIN, 0}};
      Deadline wake = std::min(deadline, accept_paused_until.value_or(deadline));
      for (const auto& j : joining) {
        fds.push_back({j.fd.get(), POLLIN, 0});
        wake = std::min(wake, j.expires);
      }
      int r = poll(fds.data(), fds.size(), ranks::MillisLeft(wake));
      if (r < 0 && errno != EINTR) return Status::IoError("poll: " + Errno());
      now = ranks::SteadyClock::now();
      if (r > 0 && fds[1].revents) return Status(StatusCode::kUnavailable, "aborted");
      if (now >= deadline) {
        return Status::Timeout(
            "waiting for lower ranks to connect: " + std::to_string(rank_ - accepted) + " of " +
            std::to_string(rank_) + " did not" +
            (strangers ? " (" + std::to_string(strangers) +
                             " connection(s) without the run's secret were dropped)"
                       : std::string()));
      }
      for (size_t i = 0; i < joining.size(); ++i) {
        Joining& j = joining[i];
        if (r > 0 && (fds[2 + i].revents & (POLLIN | POLLHUP | POLLERR))) {
          char buf[kHelloBytes];
          ssize_t k = recv(j.fd.get(), buf, kHelloBytes - j.hello.size(), 0);
          if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR)) {
            drop(j);
            continue;
          }
          if (k > 0) j.hello.append(buf, static_cast<size_t>(k));
          if (j.hello.size() == kHelloBytes) {
            int who = Authenticate(j.hello, secret);
            if (who < 0 || socks_[who].valid()) {
              drop(j);
            } else {
              socks_[who] = std::move(j.fd);
              ++accepted;
            }
            continue;
          }
        }
        if (now >= j.expires) drop(j);
      }
      std::erase_if(joining, [](const Joining& j) { return !j.fd.valid(); });
      if (r > 0 && (fds[0].revents & POLLIN)) {
        for (int burst = 0; burst < 16; ++burst) {  // then the joining ones get their turn
          int fd = accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
          if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK) {
              // Out of descriptors (EMFILE) or the like: pause rather than spin, and let the
              // oldest joining connection give its descriptor back.
              accept_paused_until = ranks::DeadlineIn(std::chrono::milliseconds(50));
              if (!joining.empty()) {
                drop(joining.front());
                joining.erase(joining.begin());
              }
            }
            break;
          }
          Fd conn(fd);
          ranks::TuneStream(conn.get(), kSocketBuffer);
          if (joining.size() >= kMaxJoining) {  // the oldest has had the longest
            drop(joining.front());
            joining.erase(joining.begin());
          }
          joining.push_back({std::move(conn), ranks::DeadlineIn(kHelloWait), ""});
        }
      }
    }
    return Status::Ok();
  }

  // The connecting rank's number when `hello` carries the run's secret and a lower rank; -1 else.
  int Authenticate(const std::string& hello, const std::string& secret) const {
    size_t space = hello.find(' ');
    if (space == std::string::npos) return -1;
    auto who = ParseInt64(hello.substr(0, space));
    std::string_view presented = Trim(std::string_view(hello).substr(space + 1));
    if (!ranks::ConstantTimeEquals(secret, presented) || !who || *who < 0 || *who >= rank_) {
      return -1;
    }
    return static_cast<int>(*who);
  }

  std::vector<ranks::Peer> peers_;
  std::vector<Fd> socks_;
  std::vector<int> lowat_;  // SO_RCVLOWAT per peer's socket (1: the kernel's default)
};

}  // namespace

std::string InterfaceOf(const std::string& ip) {
  if (ip.empty()) return "";
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "";
  std::string name;
  for (ifaddrs* a = list; a != nullptr && name.empty(); a = a->ifa_next) {
    if (a->ifa_addr == nullptr) continue;
    char buf[INET6_ADDRSTRLEN] = {0};
    if (a->ifa_addr->sa_family == AF_INET) {
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, buf, sizeof buf);
    } else if (a->ifa_addr->sa_family == AF_INET6) {
      inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(a->ifa_addr)->sin6_addr, buf,
                sizeof buf);
    }
    if (ip == buf) name = a->ifa_name;
  }
  freeifaddrs(list);
  return name;
}

Status Transport::SendRecv(int to, const void* sbuf, size_t slen, int from, void* rbuf,
                           size_t rlen, Deadline deadline) {
  Transfer xs[2];
  size_t n = 0;
  if (from >= 0) xs[n++] = {from, false, rbuf, rlen};
  if (to >= 0) xs[n++] = {to, true, const_cast<void*>(sbuf), slen};
  return Exchange(std::span<const Transfer>(xs, n), 0, nullptr, deadline);
}

void HandOverSlices(std::span<const Transfer> xs, size_t slice, const SliceDone& on_slice) {
  for (size_t i = 0; i < xs.size() && slice > 0 && on_slice; ++i) {
    if (xs[i].send) continue;
    size_t off = 0;
    do {
      size_t len = std::min(slice, xs[i].len - off);
      on_slice(i, off, len);
      off += len;
    } while (off < xs[i].len);
  }
}

std::string TransportInfo::Describe() const {
  std::string where =
      (interface.empty() ? "" : " on " + interface) + (ip.empty() ? "" : " (" + ip + ")");
  if (kind == "tcp") return "tcp sockets" + where;
  return "libfabric " + provider + " domain " + domain + where;
}

bool IsRdmaProvider(const std::string& provider) {
  // The core provider is the first name; utility layers (ofi_rxm, ofi_rxd) follow after ';'.
  std::string core = provider.substr(0, provider.find(';'));
  for (const char* p : {"verbs", "efa", "cxi", "psm2", "psm3", "opx", "usnic", "gni", "bgq"}) {
    if (core == p) return true;
  }
  return false;
}

int DefaultSpinUs(const ranks::WorldOptions& world) {
  auto hp = ranks::SplitHostPort(world.coordinator);
  bool one_host = hp.ok() && (hp->first == "localhost" || hp->first == "::1" ||
                              hp->first.starts_with("127."));
  if (!one_host || world.world_size <= 1) return TcpOptions::kDefaultSpinUs;
  // The CPUs this process may run on (a cpuset or taskset may allow fewer than are online).
  cpu_set_t set;
  unsigned cores = sched_getaffinity(0, sizeof set, &set) == 0
                       ? static_cast<unsigned>(CPU_COUNT(&set))
                       : std::thread::hardware_concurrency();
  cores = std::max(1u, cores);
  return static_cast<unsigned>(world.world_size) > cores ? 0 : TcpOptions::kDefaultSpinUs;
}

Result<std::unique_ptr<Transport>> CreateTcpTransport(const std::string& ip, int rank,
                                                      int abort_fd, const TcpOptions& options) {
  auto listener = ranks::Listen(ip, 0);
  if (!listener.ok()) return listener.status();
  TransportInfo info;
  info.kind = "tcp";
  info.ip = ip;
  info.interface = InterfaceOf(ip);
  info.rdma = false;
  info.sources_checked = true;  // every connection presents the run's secret
  info.spin_us = options.spin_us;
  info.wake_bytes = options.wake_bytes;
  return std::unique_ptr<Transport>(
      new TcpTransport(std::move(*listener), std::move(info), rank, abort_fd, options));
}

}  // namespace tocsin::bench
