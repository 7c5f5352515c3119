#include "agent_process.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <sstream>

extern char** environ;

namespace tocsin::testing {

AgentProcess::AgentProcess(const std::vector<std::string>& args,
                           const std::vector<std::string>& extra_env,
                           const std::vector<std::string>& prefix) {
  std::vector<std::string> argv = prefix;
  argv.push_back(TOCSIN_BINARY);
  argv.push_back("agent");
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  std::vector<std::string> env_s;
  for (char** e = environ; *e; ++e) env_s.push_back(*e);
  env_s.insert(env_s.end(), extra_env.begin(), extra_env.end());
  std::vector<char*> cenv;
  for (auto& e : env_s) cenv.push_back(e.data());
  cenv.push_back(nullptr);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  if (posix_spawnp(&pid_, cargv[0], &actions, nullptr, cargv.data(), cenv.data()) != 0) pid_ = -1;
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  err_fd_ = fds[0];
  reader_ = std::thread([this] {
    char buf[4096];
    while (true) {
      ssize_t n = read(err_fd_, buf, sizeof buf);
      std::lock_guard<std::mutex> lock(mu_);
      if (n <= 0) {
        eof_ = true;
        cv_.notify_all();
        return;
      }
      err_.append(buf, static_cast<size_t>(n));
      cv_.notify_all();
    }
  });
  const std::string marker = "serving /metrics, /healthz, /readyz on ";
  if (!WaitForLog(marker, std::chrono::seconds(30))) return;
  std::string e = err();
  size_t at = e.find(marker) + marker.size();
  std::string addr = e.substr(at, e.find('\n', at) - at);
  size_t colon = addr.rfind(':');
  host_ = addr.substr(0, colon);
  if (host_ == "0.0.0.0") host_ = "127.0.0.1";
  port_ = std::atoi(addr.c_str() + colon + 1);
}

AgentProcess::~AgentProcess() {
  if (pid_ > 0 && !waited_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (reader_.joinable()) reader_.join();
  if (err_fd_ >= 0) close(err_fd_);
}

void AgentProcess::Signal(int sig) {
  if (pid_ > 0 && !waited_) kill(pid_, sig);
}

RunResult AgentProcess::Wait() {
  if (pid_ > 0 && !waited_) {
    int status = 0;
    waitpid(pid_, &status, 0);
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    waited_ = true;
  }
  // stderr ends when every holder of the pipe has gone (a stuck child may keep it open).
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, std::chrono::seconds(2), [&] { return eof_; });
  return {exit_code_, "", err_};
}

std::string AgentProcess::err() const {
  std::lock_guard<std::mutex> lock(mu_);
  return err_;
}

bool AgentProcess::WaitForLog(const std::string& text, std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [&] {
    return err_.find(text) != std::string::npos || eof_;
  }) && err_.find(text) != std::string::npos;
}

std::pair<int, std::string> AgentProcess::Get(const std::string& path) const {
  httplib::Client client(host_, port_);
  client.set_connection_timeout(5, 0);
  client.set_read_timeout(5, 0);
  auto res = client.Get(path);
  if (!res) return {-1, ""};
  return {res->status, res->body};
}

bool AgentProcess::WaitForMetrics(const std::function<bool(const std::string&)>& pred,
                                  std::chrono::milliseconds timeout, std::string* last) const {
  auto until = std::chrono::steady_clock::now() + timeout;
  while (true) {
    auto [status, body] = Get("/metrics");
    if (last) *last = body;
    if (status == 200 && pred(body)) return true;
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // polling a condition
  }
}

std::string CopyFixtureNode(const std::string& name) {
  std::string dir = TempDir("agent-node");
  RunResult r = RunBinary(
      "cp", {"-a", std::string(TOCSIN_SOURCE_DIR) + "/testdata/nodes/" + name + "/.", dir});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return dir;
}

void WriteFile(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

double MetricValue(const std::string& text, const std::string& series) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() > series.size() && line.compare(0, series.size(), series) == 0 &&
        line[series.size()] == ' ') {
      return std::strtod(line.c_str() + series.size() + 1, nullptr);
    }
  }
  return std::nan("");
}

std::vector<std::string> Base(const std::string& root, std::vector<std::string> extra) {
  std::vector<std::string> args = {"--no-kube", "--root", root, "--listen", "127.0.0.1:0"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

bool Ready(const AgentProcess& a) {
  for (int i = 0; i < 600; ++i) {
    if (a.Get("/readyz").first == 200) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

std::string Maps(const AgentProcess& a) {
  std::ifstream in("/proc/" + std::to_string(a.pid()) + "/maps");
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace tocsin::testing
