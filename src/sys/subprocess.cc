#include "sys/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
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

std::vector<std::string> MergedEnv(const std::vector<std::string>& extra) {
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

int WaitStatusToCode(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

Result<ProcessResult> RunProcess(const std::vector<std::string>& argv,
                                 const ProcessOptions& options) {
  if (argv.empty()) return Status::InvalidArgument("RunProcess: empty command");
  const std::string& name = argv[0];
  std::vector<std::string> env = MergedEnv(options.extra_env);
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);

  int out_pipe[2], err_pipe[2], exec_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0)
    return Status::IoError("pipe: " + std::string(strerror(errno)));
  if (pipe2(err_pipe, O_CLOEXEC) != 0 || pipe2(exec_pipe, O_CLOEXEC) != 0) {
    return Status::IoError("pipe: " + std::string(strerror(errno)));
  }
  pid_t pid = fork();
  if (pid < 0) return Status::IoError("fork: " + std::string(strerror(errno)));
  if (pid == 0) {
    setpgid(0, 0);
    int devnull = open("/dev/null", O_RDONLY);
    dup2(devnull, 0);
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    execvpe(cargv[0], cargv.data(), cenv.data());
    int e = errno;
    (void)!write(exec_pipe[1], &e, sizeof e);
    _exit(127);
  }
  setpgid(pid, pid);  // also from the parent, so a kill cannot race the child's own call
  close(out_pipe[1]);
  close(err_pipe[1]);
  close(exec_pipe[1]);
  int exec_errno = 0;
  ssize_t n = read(exec_pipe[0], &exec_errno, sizeof exec_errno);
  close(exec_pipe[0]);
  if (n == sizeof exec_errno) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    waitpid(pid, nullptr, 0);
    return Status::NotFound("cannot run \"" + name + "\": " + strerror(exec_errno));
  }

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
