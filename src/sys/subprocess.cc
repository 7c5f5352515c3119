#include "sys/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

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
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    return Status::IoError("pipe: " + std::string(strerror(errno)));
  }
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    int e = errno;
    close(out_pipe[0]);
    close(out_pipe[1]);
    return Status::IoError("pipe: " + std::string(strerror(e)));
  }
  SpawnSpec spec;
  spec.argv = argv;
  spec.env = EnvironmentWith(options.extra_env);
  spec.stdout_fd = out_pipe[1];
  spec.stderr_fd = err_pipe[1];
  spec.own_group = true;
  auto spawned = Spawn(spec);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (!spawned.ok()) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    return spawned.status();
  }
  pid_t pid = *spawned;

  ProcessResult result;
  Status error;
  auto deadline = Clock::now() + options.timeout;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0 && error.ok()) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      error = Status::Timeout("\"" + name + "\" did not finish within " +
                              std::to_string(options.timeout.count()) + " ms; killed");
      break;
    }
    int r = poll(fds, 2, static_cast<int>(left.count()));
    if (r < 0 && errno != EINTR) {
      error = Status::IoError("poll: " + std::string(strerror(errno)));
      break;
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
        --open_fds;
      }
    }
  }
  for (auto& f : fds) {
    if (f.fd >= 0) close(f.fd);
  }
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
    if (Clock::now() >= deadline) {
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
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
