#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "testing/temp_dir.h"  // TempDir, ScopedTempDir

namespace tocsin::testing {

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs `binary args...` with extra environment entries ("NAME=value"), captures stdout and
// stderr, and waits for it to exit.
RunResult RunBinary(const std::string& binary, const std::vector<std::string>& args,
                    const std::vector<std::string>& extra_env = {},
                    const std::string& stdin_path = "/dev/null");

// RunBinary under timeout(1): a run that outlives `seconds` is killed (exit code 137), so a test
// of something that could hang (a FIFO where a file belongs) fails instead of hanging.
RunResult RunBinaryWithin(int seconds, const std::string& binary,
                          const std::vector<std::string>& args);

// A process running beside the test, its output going to temporary files; Wait() collects it.
class Process {
 public:
  // argv[0] is looked up in PATH when it has no '/'.
  Process(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env = {},
          const std::string& stdin_path = "/dev/null");
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;
  RunResult Wait();
  int pid() const { return pid_; }

 private:
  int pid_ = -1;
  std::string out_path_, err_path_;
  bool waited_ = false;
};

// A server started for a test (`argv[0]` looked up in PATH) that prints "PORT <n>" as its first
// line once it listens; killed when this goes out of scope. port() is 0 if it did not start.
class Server {
 public:
  explicit Server(const std::vector<std::string>& argv);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  int port() const { return port_; }

 private:
  int pid_ = -1;
  int port_ = 0;
};

// Whether `text` holds each of `pieces`, in that order, all before `before`; the message says
// which one is missing or out of place.
::testing::AssertionResult InOrder(const std::string& text, const std::vector<std::string>& pieces,
                                   size_t before = std::string::npos);

// Progress rows (table output): `cells` right-aligned in 12 columns each, as bench prints them.
std::string ProgressCells(const std::vector<std::string>& cells);

// A `tocsin ... -o json` run: its exit code and report.
struct JsonRun {
  int exit_code = -1;
  nlohmann::json report;
};
// Runs the tocsin under test; a message on stderr or output that is not JSON fails the test.
JsonRun RunTocsinJson(const std::vector<std::string>& args,
                      const std::vector<std::string>& extra_env = {});

// The findings of one check in a report (-o json).
inline std::vector<nlohmann::json> FindingsOf(const nlohmann::json& report,
                                              const std::string& check) {
  std::vector<nlohmann::json> out;
  for (const auto& f : report["findings"]) {
    if (f["check"] == check) out.push_back(f);
  }
  return out;
}

}  // namespace tocsin::testing
