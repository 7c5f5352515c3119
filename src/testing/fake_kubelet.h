#pragma once

#include <sys/types.h>

#include <string>

namespace tocsin::testing {

// The fake kubelet PodResources server (tests/podresources/fake_kubelet.py, python3-grpcio)
// serving `List` on the unix socket `socket`, its answer read from `answer_file` (JSON, see the
// script) at every call. Waits (bounded: 30 s) for the script's "ready" line; ok() says whether
// it came, error() why not. Stopped (SIGTERM, waited for) by Stop() or the destructor.
class FakeKubelet {
 public:
  FakeKubelet(const std::string& socket, const std::string& answer_file);
  ~FakeKubelet();
  FakeKubelet(const FakeKubelet&) = delete;
  FakeKubelet& operator=(const FakeKubelet&) = delete;

  bool ok() const { return pid_ > 0; }
  const std::string& error() const { return error_; }
  // Stops the server and removes its socket (the kubelet gone).
  void Stop();

 private:
  std::string socket_;
  pid_t pid_ = -1;
  std::string error_;
};

}  // namespace tocsin::testing
