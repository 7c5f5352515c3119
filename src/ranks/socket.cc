#include "ranks/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "base/strings.h"

namespace tocsin::ranks {
namespace {

std::string Errno(int e) { return strerror(e); }

Status WaitFd(int fd, short events, Deadline deadline, const std::string& what, const char* doing) {
  while (true) {
    pollfd p{fd, events, 0};
    int r = poll(&p, 1, MillisLeft(deadline));
    if (r > 0) return Status::Ok();
    if (r == 0) return Status::Timeout(what + ": " + doing + " timed out");
    if (errno != EINTR) return Status::IoError(what + ": poll: " + Errno(errno));
  }
}

}  // namespace

int MillisLeft(Deadline deadline) {
  // Rounded up: a wait that wakes before its deadline would look like one that timed out early.
  auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - SteadyClock::now());
  if (left.count() <= 0) return 0;
  return left.count() > 1 << 30 ? 1 << 30 : static_cast<int>(left.count());
}

Fd::~Fd() {
  if (fd_ >= 0) ::close(fd_);
}

Fd& Fd::operator=(Fd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.release();
  }
  return *this;
}

Result<std::pair<std::string, int>> SplitHostPort(const std::string& text) {
  std::string host;
  std::string port;
  if (!text.empty() && text[0] == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return Status::InvalidArgument("\"" + text + "\" is not [IPv6]:PORT");
    }
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string::npos)
      return Status::InvalidArgument("\"" + text + "\" is not HOST:PORT");
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  auto p = ParseInt64(port);
  if (!p || *p < 0 || *p > 65535 || host.empty()) {
    return Status::InvalidArgument("\"" + text + "\" is not HOST:PORT");
  }
  return std::make_pair(host, static_cast<int>(*p));
}

Result<Fd> Listen(const std::string& host, int port, int backlog) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  std::string service = std::to_string(port);
  const char* node = host.empty() || host == "0.0.0.0" ? nullptr : host.c_str();
  if (node == nullptr) hints.ai_family = AF_INET;
  int rc = getaddrinfo(node, service.c_str(), &hints, &res);
  if (rc != 0) return Status::InvalidArgument("listen on " + host + ": " + gai_strerror(rc));
  Status last = Status::IoError("listen on " + host + ":" + service + ": no address");
  for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
    Fd fd(socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, 0));
    if (!fd.valid()) continue;
    int one = 1;
    setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd.get(), a->ai_addr, a->ai_addrlen) != 0 || listen(fd.get(), backlog) != 0) {
      last = Status::IoError("listen on " + host + ":" + service + ": " + Errno(errno));
      continue;
    }
    freeaddrinfo(res);
    return fd;
  }
  freeaddrinfo(res);
  return last;
}

int LocalPort(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return 0;
  if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  return 0;
}

namespace {
std::string AddressOf(int fd, bool peer) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  int rc = peer ? getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len)
                : getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  if (rc != 0) return "";
  char buf[INET6_ADDRSTRLEN] = {0};
  if (ss.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&ss)->sin_addr, buf, sizeof buf);
  } else if (ss.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&ss)->sin6_addr, buf, sizeof buf);
  }
  return buf;
}
}  // namespace

std::string LocalAddress(int fd) { return AddressOf(fd, false); }
std::string PeerAddress(int fd) { return AddressOf(fd, true); }

Result<Fd> Accept(int listener, Deadline deadline) {
  while (true) {
    Status st =
        WaitFd(listener, POLLIN, deadline, "listener port " + std::to_string(LocalPort(listener)),
               "waiting for a connection");
    if (!st.ok()) return st;
    int fd = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) return Fd(fd);
    if (errno != EINTR && errno != EAGAIN && errno != ECONNABORTED) {
      return Status::IoError("accept: " + Errno(errno));
    }
  }
}

Result<Fd> ConnectRetry(const std::string& host, int port, Deadline deadline) {
  std::string peer = host + ":" + std::to_string(port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  auto pause = std::chrono::milliseconds(50);
  std::string last = "no attempt";
  while (true) {
    addrinfo* res = nullptr;
    int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
    if (rc != 0) {
      last = std::string("cannot resolve: ") + gai_strerror(rc);
    } else {
      for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
        Fd fd(socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
        if (!fd.valid()) continue;
        int c = connect(fd.get(), a->ai_addr, a->ai_addrlen);
        if (c != 0 && errno == EINPROGRESS) {
          pollfd p{fd.get(), POLLOUT, 0};
          int wait = std::min(MillisLeft(deadline), 5000);
          if (poll(&p, 1, wait) == 1) {
            int err = 0;
            socklen_t len = sizeof err;
            getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
            c = err == 0 ? 0 : -1;
            errno = err;
          } else {
            errno = ETIMEDOUT;
          }
        }
        if (c == 0) {
          freeaddrinfo(res);
          return fd;
        }
        last = Errno(errno);
      }
      freeaddrinfo(res);
    }
    if (SteadyClock::now() + pause >= deadline) {
      return Status::Timeout("cannot connect to " + peer + ": " + last);
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(200));
  }
}

void TuneStream(int fd, int buffer_bytes) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (buffer_bytes > 0) {
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buffer_bytes, sizeof buffer_bytes);
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buffer_bytes, sizeof buffer_bytes);
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

Status WriteAll(int fd, const void* data, size_t len, Deadline deadline, const std::string& what) {
  const char* p = static_cast<const char*>(data);
  while (len > 0) {
    ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
    if (n > 0) {
      p += n;
      len -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      Status st = WaitFd(fd, POLLOUT, deadline, what, "sending");
      if (!st.ok()) return st;
      continue;
    }
    return Status::IoError(what + ": send: " + Errno(errno));
  }
  return Status::Ok();
}

Status ReadAll(int fd, void* data, size_t len, Deadline deadline, const std::string& what) {
  char* p = static_cast<char*>(data);
  while (len > 0) {
    ssize_t n = recv(fd, p, len, 0);
    if (n > 0) {
      p += n;
      len -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return Status::IoError(what + ": connection closed");
    if (errno == EAGAIN || errno == EINTR) {
      Status st = WaitFd(fd, POLLIN, deadline, what, "receiving");
      if (!st.ok()) return st;
      continue;
    }
    return Status::IoError(what + ": recv: " + Errno(errno));
  }
  return Status::Ok();
}

Status WriteFrame(int fd, const std::string& payload, Deadline deadline, const std::string& what) {
  uint32_t n = static_cast<uint32_t>(payload.size());
  unsigned char header[4] = {static_cast<unsigned char>(n), static_cast<unsigned char>(n >> 8),
                             static_cast<unsigned char>(n >> 16),
                             static_cast<unsigned char>(n >> 24)};
  Status st = WriteAll(fd, header, 4, deadline, what);
  if (!st.ok()) return st;
  return WriteAll(fd, payload.data(), payload.size(), deadline, what);
}

Result<std::string> ReadFrame(int fd, Deadline deadline, const std::string& what) {
  unsigned char header[4];
  Status st = ReadAll(fd, header, 4, deadline, what);
  if (!st.ok()) return st;
  uint32_t n = header[0] | (header[1] << 8) | (header[2] << 16) | (uint32_t(header[3]) << 24);
  if (n > (64u << 20)) {
    return Status::ParseError(what + ": frame of " + std::to_string(n) +
                              " bytes (not a tocsin peer?)");
  }
  std::string payload(n, '\0');
  st = ReadAll(fd, payload.data(), n, deadline, what);
  if (!st.ok()) return st;
  return payload;
}

}  // namespace tocsin::ranks
