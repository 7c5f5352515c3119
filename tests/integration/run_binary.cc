#include "run_binary.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

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
  char out_path[] = "/tmp/tocsin-run-out-XXXXXX";
  char err_path[] = "/tmp/tocsin-run-err-XXXXXX";
  int out_fd = ::mkstemp(out_path);
  int err_fd = ::mkstemp(err_path);
  std::vector<std::string> argv_s = {binary};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_s;
  for (char** e = environ; *e; ++e) env_s.emplace_back(*e);
  env_s.insert(env_s.end(), extra_env.begin(), extra_env.end());
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, stdin_path.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_fd, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_fd, STDERR_FILENO);
  pid_t pid = 0;
  RunResult result;
  if (posix_spawn(&pid, binary.c_str(), &actions, nullptr, argv.data(), envp.data()) == 0) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_fd);
  ::close(err_fd);
  result.out = Slurp(out_path);
  result.err = Slurp(err_path);
  ::unlink(out_path);
  ::unlink(err_path);
  return result;
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
