#pragma once

#include <chrono>
#include <string>

#include "base/status.h"

namespace tocsin::ranks {

using SteadyClock = std::chrono::steady_clock;
using Deadline = SteadyClock::time_point;

inline Deadline DeadlineIn(std::chrono::milliseconds d) { return SteadyClock::now() + d; }
// Milliseconds left for poll(): 0 when past (never negative, which would mean "forever").
int MillisLeft(Deadline deadline);

// A file descriptor closed on destruction.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd();
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() {
    int f = fd_;
    fd_ = -1;
    return f;
  }
  bool valid() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// "host:port" (IPv4 literal, name, or [IPv6]:port) split; errors name the text.
Result<std::pair<std::string, int>> SplitHostPort(const std::string& text);

// A listening TCP socket on `host` (empty or "0.0.0.0": all IPv4) and `port` (0: any).
Result<Fd> Listen(const std::string& host, int port, int backlog = 128);
// The port and address a socket is bound to (getsockname), as "addr:port".
int LocalPort(int fd);
std::string LocalAddress(int fd);  // the IP only
std::string PeerAddress(int fd);   // the remote IP (getpeername)

// Accepts one connection before `deadline`; Timeout otherwise.
Result<Fd> Accept(int listener, Deadline deadline);

// Connects to host:port, retrying refused/unreachable connections every 50-200 ms until
// `deadline` (the peer may not listen yet). The error names the peer and the last errno.
Result<Fd> ConnectRetry(const std::string& host, int port, Deadline deadline);

// Sets TCP_NODELAY and non-blocking mode; optional socket buffer sizes.
void TuneStream(int fd, int buffer_bytes = 0);

// Writes/reads exactly `len` bytes on a non-blocking socket before `deadline`. `what` names the
// peer in errors ("rank 2 (10.0.0.3:4242)"). Read returns IoError on EOF.
Status WriteAll(int fd, const void* data, size_t len, Deadline deadline, const std::string& what);
Status ReadAll(int fd, void* data, size_t len, Deadline deadline, const std::string& what);

// Length-prefixed frames (u32 little-endian length, then the bytes), at most 64 MiB.
Status WriteFrame(int fd, const std::string& payload, Deadline deadline, const std::string& what);
Result<std::string> ReadFrame(int fd, Deadline deadline, const std::string& what);

}  // namespace tocsin::ranks
