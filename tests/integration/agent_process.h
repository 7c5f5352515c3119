#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "run_binary.h"

namespace tocsin::testing {

// `tocsin agent ...` running beside a test: its stderr is collected, its address taken from
// the "serving /metrics, /healthz, /readyz on HOST:PORT" line.
class AgentProcess {
 public:
  // `prefix` runs before the binary (e.g. {"ip", "netns", "exec", "ns1"}). Waits up to 30 s for
  // the serving line; port() is 0 when it never came (see err()).
  AgentProcess(const std::vector<std::string>& args, const std::vector<std::string>& extra_env = {},
               const std::vector<std::string>& prefix = {});
  ~AgentProcess();  // SIGKILL when still running
  AgentProcess(const AgentProcess&) = delete;
  AgentProcess& operator=(const AgentProcess&) = delete;

  int port() const { return port_; }
  const std::string& host() const { return host_; }
  int pid() const { return pid_; }
  void Signal(int sig);
  // Waits for the exit: its code (128 + signal when killed) and stderr.
  RunResult Wait();
  std::string err() const;
  // Waits until stderr contains `text`.
  bool WaitForLog(const std::string& text, std::chrono::milliseconds timeout) const;

  // GET on the agent (bounded to 5 s): HTTP status (-1 when no answer) and body.
  std::pair<int, std::string> Get(const std::string& path) const;
  // Scrapes /metrics until `pred` holds or `timeout` passes; the last body in `last`.
  bool WaitForMetrics(const std::function<bool(const std::string&)>& pred,
                      std::chrono::milliseconds timeout, std::string* last = nullptr) const;

 private:
  int pid_ = -1;
  int err_fd_ = -1;
  bool waited_ = false;
  int exit_code_ = -1;
  std::string host_;
  int port_ = 0;
  std::thread reader_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::string err_;
  bool eof_ = false;
};

// A writable copy of testdata/nodes/NAME (the caller removes it).
std::string CopyFixtureNode(const std::string& name);
// Overwrites a file of a fixture copy (sysfs class entries are symlinks: written through).
void WriteFile(const std::string& path, const std::string& text);

// The value of one series in a text exposition ("name" or "name{a=\"b\",...}", exactly as
// printed); NaN when absent.
double MetricValue(const std::string& text, const std::string& series);

// The arguments of an agent on the fixture node `root` without Kubernetes, on a free port, then
// `extra`.
std::vector<std::string> Base(const std::string& root, std::vector<std::string> extra = {});
// Polls /readyz until it answers 200 (at most 30 s).
bool Ready(const AgentProcess& a);
// What the process maps (/proc/PID/maps).
std::string Maps(const AgentProcess& a);

}  // namespace tocsin::testing
