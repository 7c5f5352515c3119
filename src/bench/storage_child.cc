#include "bench/storage_child.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "sys/subprocess.h"

namespace tocsin::bench {
namespace {

std::atomic<bool> g_interrupted{false};
volatile sig_atomic_t g_signal = 0;  // the last one that came
extern "C" void OnInterrupt(int sig) {
  g_signal = sig;
  g_interrupted.store(true);
}

// While the ranks meet, a signal ends the process at once: the run's folder, still empty, is
// removed first (rmdir and write are async-signal-safe).
char g_rendezvous_dir[8192] = {};
extern "C" void OnInterruptWhileMeeting(int sig) {
  if (g_rendezvous_dir[0] != '\0') (void)!rmdir(g_rendezvous_dir);
  const char msg[] = "tocsin: interrupted while waiting for the other ranks\n";
  (void)!write(2, msg, sizeof msg - 1);
  _exit(128 + sig);
}

void Meeting(const std::string& dir) {
  if (!dir.empty() && dir.size() < sizeof g_rendezvous_dir) {
    std::memcpy(g_rendezvous_dir, dir.c_str(), dir.size() + 1);
    std::signal(SIGINT, OnInterruptWhileMeeting);
    std::signal(SIGTERM, OnInterruptWhileMeeting);
    if (g_interrupted.load()) OnInterruptWhileMeeting(g_signal);  // one that came just before
  } else {
    std::signal(SIGINT, OnInterrupt);
    std::signal(SIGTERM, OnInterrupt);
    g_rendezvous_dir[0] = '\0';
  }
}

volatile sig_atomic_t g_probe_child = 0;
extern "C" void ForwardToProbe(int sig) {
  if (g_probe_child > 0) kill(g_probe_child, sig);
}

}  // namespace

void HandleProbeSignals(StorageBenchOptions& o) {
  o.interrupted = &g_interrupted;
  std::signal(SIGINT, OnInterrupt);
  std::signal(SIGTERM, OnInterrupt);
  o.on_rendezvous = Meeting;
}

Result<int> RunInProbeChild(const std::function<int()>& child) {
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0)
    return Status::IoError("pipe: " + std::string(strerror(errno)));
  auto pid = sys::ForkCall([&] {
    close(pipe_fds[0]);
    int code = child();
    std::fflush(stdout);
    std::fflush(stderr);
    // Close what the shell waits on before a possibly endless exit.
    close(1);
    close(2);
    (void)!write(pipe_fds[1], &code, sizeof code);
    close(pipe_fds[1]);
    return code;
  });
  if (!pid.ok()) {
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    return pid.status();
  }
  close(pipe_fds[1]);
  // Ctrl-C reaches both processes; a signal sent to this one alone (a supervisor's SIGTERM) is
  // passed on. Either way the child stops, cleans up and reports.
  g_probe_child = *pid;
  auto old_int = std::signal(SIGINT, ForwardToProbe);
  auto old_term = std::signal(SIGTERM, ForwardToProbe);
  int code = 0;
  ssize_t n;
  do {
    n = read(pipe_fds[0], &code, sizeof code);
  } while (n < 0 && errno == EINTR);
  close(pipe_fds[0]);
  std::signal(SIGINT, old_int);
  std::signal(SIGTERM, old_term);
  g_probe_child = 0;
  if (n != sizeof code) {
    int status = 0;
    waitpid(*pid, &status, 0);
    // Stopped by a signal while the ranks met (it says so on stderr): its exit code stands.
    if (WIFEXITED(status) && WEXITSTATUS(status) > 128) return WEXITSTATUS(status);
    return Status::Internal("the storage probe died (" +
                            (WIFSIGNALED(status) ? "signal " + std::to_string(WTERMSIG(status))
                                                 : "exit " + std::to_string(WEXITSTATUS(status))) +
                            ")");
  }
  waitpid(*pid, nullptr, WNOHANG);  // reaped now if it could exit; never waited for
  return code;
}

}  // namespace tocsin::bench
