#include "testing/fake_kubelet.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <vector>

#include "sys/subprocess.h"

namespace tocsin::testing {

FakeKubelet::FakeKubelet(const std::string& socket, const std::string& answer_file)
    : socket_(socket) {
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) {
    error_ = "pipe failed";
    return;
  }
  sys::SpawnSpec spec;
  // Debian's interpreter: python3-grpcio is a Debian package (a python3 earlier in PATH, such as
  // pyenv's, would not have it).
  spec.argv = {
      "/usr/bin/python3", std::string(TOCSIN_SOURCE_DIR) + "/tests/podresources/fake_kubelet.py",
      "--socket",         socket,
      "--answer",         answer_file};
  spec.env = sys::EnvironmentWith({});
  spec.stdout_fd = out[1];
  spec.stdin_fd = sys::SpawnSpec::kDevNull;
  spec.die_with_parent = true;
  auto pid = sys::Spawn(spec);
  close(out[1]);
  if (!pid.ok()) {
    close(out[0]);
    error_ = pid.status().message();
    return;
  }
  // The "ready PID" line, or the end of its output (it failed: python3-grpcio missing?).
  std::string line;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (line.find('\n') == std::string::npos) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p = {out[0], POLLIN, 0};
    if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    char buf[256];
    ssize_t n = read(out[0], buf, sizeof buf);
    if (n <= 0) break;
    line.append(buf, static_cast<size_t>(n));
  }
  close(out[0]);
  if (!line.starts_with("ready ")) {
    kill(*pid, SIGKILL);
    waitpid(*pid, nullptr, 0);
    error_ = "fake_kubelet.py did not start (python3-grpcio missing? see its stderr): " + line;
    return;
  }
  pid_ = *pid;
}

FakeKubelet::~FakeKubelet() { Stop(); }

void FakeKubelet::Stop() {
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  unlink(socket_.c_str());
}

}  // namespace tocsin::testing
