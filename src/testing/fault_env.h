#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "sys/env.h"

namespace tocsin::testing {

// An Env over another one (usually NewRootedEnv of a fixture node) that fails the operations a
// test chooses, on the paths it chooses, with the Status it chooses: a driver that returns EIO on
// one attribute, a folder that cannot be listed. Everything else reaches the real Env.
// Safe to use from several threads.
class FaultEnv : public Env {
 public:
  enum class Op { kReadFile, kOpenFile, kListDir, kReadLink, kRealPath, kIsDirectory, kStatFs };

  explicit FaultEnv(std::unique_ptr<Env> base) : base_(std::move(base)) {}

  // `op` on `path`, or on anything under it ("path/..."), returns `status` (IsDirectory: false).
  void Fail(Op op, std::string path, Status status);
  // Every operation on `path` or under it.
  void FailAll(std::string path, Status status);
  // Runs before every operation reaches the base Env or a fault (a gate, a counter).
  void SetHook(std::function<void(Op, std::string_view)> hook);
  // How many operations an injected fault answered.
  int faults_hit() const;

  Result<std::string> ReadFile(std::string_view path,
                               size_t max_bytes = kDefaultMaxFileBytes) override;
  Result<int> OpenFile(std::string_view path) override;
  Result<std::vector<std::string>> ListDir(std::string_view path) override;
  Result<std::string> ReadLink(std::string_view path) override;
  Result<std::string> RealPath(std::string_view path) override;
  bool IsDirectory(std::string_view path) override;
  Result<FsStats> StatFs(std::string_view path) override;
  TimePoint Now() override { return base_->Now(); }
  const std::string& root() const override { return base_->root(); }

 private:
  struct Fault {
    bool every_op = false;
    Op op = Op::kReadFile;
    std::string path;
    Status status;
  };
  // The hook runs; then the injected Status for `op` on `path`, or ok.
  Status Check(Op op, std::string_view path);

  std::unique_ptr<Env> base_;
  mutable std::mutex mu_;
  std::vector<Fault> faults_;
  std::function<void(Op, std::string_view)> hook_;
  int hits_ = 0;
};

}  // namespace tocsin::testing
