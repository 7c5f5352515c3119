#include "run_binary.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string_view>

extern char** environ;

namespace tocsin::testing {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

RunResult RunBinary(const std::string& binary, const std::vector<std::string>& args,
                    const std::vector<std::string>& extra_env, const std::string& stdin_path) {
  std::vector<std::string> argv = {binary};
  argv.insert(argv.end(), args.begin(), args.end());
  return Process(argv, extra_env, stdin_path).Wait();
}

RunResult RunBinaryWithin(int seconds, const std::string& binary,
                          const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"timeout", "-s", "KILL", std::to_string(seconds), binary};
  argv.insert(argv.end(), args.begin(), args.end());
  return Process(argv).Wait();
}

::testing::AssertionResult InOrder(const std::string& text, const std::vector<std::string>& pieces,
                                   size_t before) {
  size_t at = 0;
  for (const auto& piece : pieces) {
    size_t found = text.find(piece, at);
    if (found == std::string::npos || (before != std::string::npos && found >= before)) {
      return ::testing::AssertionFailure() << "\"" << piece << "\" is not where it belongs in:\n"
                                           << text;
    }
    at = found + piece.size();
  }
  return ::testing::AssertionSuccess();
}

std::string ProgressCells(const std::vector<std::string>& cells) {
  std::string out;
  for (const auto& c : cells) out += std::string(c.size() < 12 ? 12 - c.size() : 1, ' ') + c;
  return out;
}

Process::Process(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env,
                 const std::string& stdin_path) {
  char out_path[] = "/tmp/tocsin-proc-out-XXXXXX";
  char err_path[] = "/tmp/tocsin-proc-err-XXXXXX";
  int out_fd = ::mkstemp(out_path);
  int err_fd = ::mkstemp(err_path);
  out_path_ = out_path;
  err_path_ = err_path;
  std::vector<std::string> argv_s = argv;
  std::vector<char*> cargv;
  for (auto& a : argv_s) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  // The extra entries replace the environment's own of the same name (glibc and the sanitizers'
  // runtimes take the first of two).
  std::vector<std::string> env_s;
  for (char** e = environ; *e; ++e) {
    std::string_view entry(*e);
    std::string_view name = entry.substr(0, entry.find('=') + 1);
    bool replaced = std::any_of(extra_env.begin(), extra_env.end(), [&](const std::string& x) {
      return !name.empty() && x.compare(0, name.size(), name) == 0;
    });
    if (!replaced) env_s.emplace_back(entry);
  }
  env_s.insert(env_s.end(), extra_env.begin(), extra_env.end());
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, stdin_path.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_fd, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_fd, STDERR_FILENO);
  if (posix_spawnp(&pid_, cargv[0], &actions, nullptr, cargv.data(), envp.data()) != 0) pid_ = -1;
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_fd);
  ::close(err_fd);
}

RunResult Process::Wait() {
  RunResult r;
  if (pid_ > 0 && !waited_) {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    waited_ = true;
  }
  r.out = Slurp(out_path_);
  r.err = Slurp(err_path_);
  return r;
}

Process::~Process() {
  if (pid_ > 0 && !waited_) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  ::unlink(out_path_.c_str());
  ::unlink(err_path_.c_str());
}

Server::Server(const std::vector<std::string>& argv) {
  int fds[2];
  if (::pipe(fds) != 0) return;
  std::vector<std::string> argv_s = argv;
  std::vector<char*> cargv;
  for (auto& a : argv_s) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  if (posix_spawnp(&pid_, cargv[0], &actions, nullptr, cargv.data(), environ) != 0) pid_ = -1;
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  // The first line is "PORT <n>"; wait for it at most 20 s.
  std::string line;
  pollfd pfd{fds[0], POLLIN, 0};
  while (pid_ > 0 && line.find('\n') == std::string::npos && ::poll(&pfd, 1, 20000) > 0) {
    char buf[256];
    ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n <= 0) break;
    line.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  if (line.starts_with("PORT ")) port_ = std::atoi(line.c_str() + 5);
}

Server::~Server() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

JsonRun RunTocsinJson(const std::vector<std::string>& args,
                      const std::vector<std::string>& extra_env) {
  RunResult r = RunBinary(TOCSIN_BINARY, args, extra_env);
  EXPECT_TRUE(r.err.empty()) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << "not JSON: " << r.out;
  return {r.exit_code, j};
}

}  // namespace tocsin::testing
