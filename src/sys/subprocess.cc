#include "sys/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

extern char** environ;

namespace tocsin::sys {
namespace {

using Clock = std::chrono::steady_clock;

int WaitStatusToCode(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

std::vector<char*> CStrings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (const auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

}  // namespace

std::vector<std::string> EnvironmentWith(const std::vector<std::string>& extra) {
  std::map<std::string, std::string> vars;
  std::vector<std::string> order;
  auto add = [&](const std::string& entry) {
    std::string name = entry.substr(0, entry.find('='));
    if (vars.emplace(name, entry).second) {
      order.push_back(name);
    } else {
      vars[name] = entry;
    }
  };
  for (char** e = environ; *e != nullptr; ++e) add(*e);
  for (const auto& e : extra) add(e);
  std::vector<std::string> out;
  for (const auto& name : order) out.push_back(vars[name]);
  return out;
}

Result<pid_t> Spawn(const SpawnSpec& spec) {
  if (spec.argv.empty()) return Status::InvalidArgument("Spawn: empty command");
  std::vector<char*> cargv = CStrings(spec.argv);
  std::vector<char*> cenv = CStrings(spec.env);
  const char* file = cargv[0];
  bool path_lookup = std::strchr(file, '/') == nullptr;
  int exec_pipe[2];
  if (pipe2(exec_pipe, O_CLOEXEC) != 0) {
    return Status::IoError("pipe: " + std::string(strerror(errno)));
  }
  pid_t parent = getpid();
  // The child does only what is safe between fork and exec in a threaded process.
  auto child = [&]() -> int {
    if (spec.die_with_parent) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) return 1;  // the parent died before the prctl
    }
    if (spec.own_group) setpgid(0, 0);
    int fds[3] = {spec.stdin_fd, spec.stdout_fd, spec.stderr_fd};
    for (int target = 0; target < 3; ++target) {
      if (fds[target] == SpawnSpec::kInherit) continue;
      int from = fds[target] == SpawnSpec::kDevNull
                     ? open("/dev/null", target == 0 ? O_RDONLY : O_WRONLY)
                     : fds[target];
      if (from != target) dup2(from, target);
    }
    if (path_lookup) {
      execvpe(file, cargv.data(), cenv.data());
    } else {
      execve(file, cargv.data(), cenv.data());
    }
    int e = errno;
    (void)!write(exec_pipe[1], &e, sizeof e);
    return 127;
  };
  Result<pid_t> forked = ForkCall(child);  // the one fork
  if (!forked.ok()) {
    close(exec_pipe[0]);
    close(exec_pipe[1]);
    return forked.status();
  }
  pid_t pid = *forked;
  if (spec.own_group) setpgid(pid, pid);  // also from here, so a kill cannot race the child's
  close(exec_pipe[1]);
  int exec_errno = 0;
  ssize_t n;
  do {
    n = read(exec_pipe[0], &exec_errno, sizeof exec_errno);
  } while (n < 0 && errno == EINTR);
  close(exec_pipe[0]);
  if (n == sizeof exec_errno) {
    waitpid(pid, nullptr, 0);
    return Status::NotFound("cannot run \"" + spec.argv[0] + "\": " + strerror(exec_errno));
  }
  return pid;
}

Result<ProcessResult> RunProcess(const std::vector<std::string>& argv,
                                 const ProcessOptions& options) {
  if (argv.empty()) return Status::InvalidArgument("RunProcess: empty command");
  const std::string& name = argv[0];
  // stdout, stderr and (with input) stdin; [0] is ours, [1] the child's. stdin is a socket pair,
  // not a pipe, so that writing to a child that went away is EPIPE without a SIGPIPE
  // (MSG_NOSIGNAL), whatever this process does with the signal.
  int pipes[3][2] = {{-1, -1}, {-1, -1}, {-1, -1}};
  auto close_all = [&pipes] {
    for (auto& p : pipes) {
      for (int& fd : p) {
        if (fd >= 0) close(fd);
        fd = -1;
      }
    }
  };
  bool with_input = !options.input.empty();
  for (int i = 0; i < 3; ++i) {
    int rc = i < 2
                 ? pipe2(pipes[i], O_CLOEXEC)
                 : (with_input ? socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pipes[i]) : 0);
    if (rc != 0) {
      int e = errno;
      close_all();
      return Status::IoError("pipe: " + std::string(strerror(e)));
    }
  }
  SpawnSpec spec;
  spec.argv = argv;
  spec.env = EnvironmentWith(options.extra_env);
  if (with_input) spec.stdin_fd = pipes[2][1];
  spec.stdout_fd = pipes[0][1];
  spec.stderr_fd = pipes[1][1];
  spec.own_group = true;
  spec.die_with_parent = options.die_with_parent;
  auto spawned = Spawn(spec);
  for (auto& p : pipes) {
    if (p[1] >= 0) close(p[1]);
    p[1] = -1;
  }
  if (!spawned.ok()) {
    close_all();
    return spawned.status();
  }
  pid_t pid = *spawned;
  int in_fd = pipes[2][0];
  if (in_fd >= 0) shutdown(in_fd, SHUT_RD);

  ProcessResult result;
  Status error;
  auto deadline = Clock::now() + options.timeout;
  auto stopped = [&] { return options.stop != nullptr && options.stop->load(); };
  pollfd fds[3] = {{pipes[0][0], POLLIN, 0}, {pipes[1][0], POLLIN, 0}, {in_fd, POLLOUT, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  size_t written = 0;
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0 && error.ok()) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      error = Status::Timeout("\"" + name + "\" did not finish within " +
                              std::to_string(options.timeout.count()) + " ms; killed");
      break;
    }
    if (stopped()) {
      error = Status::Unavailable("\"" + name + "\" stopped; killed");
      break;
    }
    int r = poll(fds, 3, static_cast<int>(options.stop ? std::min<int64_t>(left.count(), 100)
                                                       : left.count()));
    if (r < 0 && errno != EINTR) {
      error = Status::IoError("poll: " + std::string(strerror(errno)));
      break;
    }
    if (fds[2].fd >= 0 && fds[2].revents != 0) {
      // What the socket takes now, never blocking; all of it written (or the child gone: it
      // will say so in its exit code), the end of file.
      ssize_t n = send(fds[2].fd, options.input.data() + written, options.input.size() - written,
                       MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) written += static_cast<size_t>(n);
      if (written == options.input.size() ||
          (n < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)) {
        close(fds[2].fd);
        fds[2].fd = -1;
        pipes[2][0] = -1;
      }
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      ssize_t got = read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        sinks[i]->append(buf, static_cast<size_t>(got));
        if (sinks[i]->size() > options.max_output) {
          error = Status::IoError("\"" + name + "\" wrote more than " +
                                  std::to_string(options.max_output) + " bytes; killed");
        }
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        close(fds[i].fd);
        fds[i].fd = -1;
        pipes[i][0] = -1;
        --open_fds;
      }
    }
  }
  close_all();
  int status = 0;
  if (!error.ok()) {
    kill(-pid, SIGKILL);
    waitpid(pid, &status, 0);
    return error;
  }
  // Both pipes closed: the child is exiting (or handed its pipes to a daemon; bound that too).
  while (true) {
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) return Status::IoError("waitpid: " + std::string(strerror(errno)));
    if (Clock::now() >= deadline || stopped()) {
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      if (stopped()) return Status::Unavailable("\"" + name + "\" stopped; killed");
      return Status::Timeout("\"" + name + "\" did not exit within " +
                             std::to_string(options.timeout.count()) + " ms; killed");
    }
    pollfd none{};
    poll(&none, 0, 5);
  }
  result.exit_code = WaitStatusToCode(status);
  return result;
}

Result<pid_t> ForkCall(const std::function<int()>& child_main) {
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) return Status::IoError("fork: " + std::string(strerror(errno)));
  if (pid == 0) std::_Exit(child_main());
  return pid;
}

}  // namespace tocsin::sys
