#include "testing/fault_env.h"

namespace tocsin::testing {

namespace {

bool Covers(std::string_view prefix, std::string_view path) {
  if (path.substr(0, prefix.size()) != prefix) return false;
  return path.size() == prefix.size() || path[prefix.size()] == '/' || prefix.ends_with('/');
}

}  // namespace

void FaultEnv::Fail(Op op, std::string path, Status status) {
  std::lock_guard<std::mutex> lock(mu_);
  faults_.push_back({false, op, std::move(path), std::move(status)});
}

void FaultEnv::FailAll(std::string path, Status status) {
  std::lock_guard<std::mutex> lock(mu_);
  faults_.push_back({true, Op::kReadFile, std::move(path), std::move(status)});
}

void FaultEnv::SetHook(std::function<void(Op, std::string_view)> hook) {
  std::lock_guard<std::mutex> lock(mu_);
  hook_ = std::move(hook);
}

int FaultEnv::faults_hit() const {
  std::lock_guard<std::mutex> lock(mu_);
  return hits_;
}

Status FaultEnv::Check(Op op, std::string_view path) {
  std::function<void(Op, std::string_view)> hook;
  {
    std::lock_guard<std::mutex> lock(mu_);
    hook = hook_;
  }
  if (hook) hook(op, path);  // outside the lock: a gate may block here
  std::lock_guard<std::mutex> lock(mu_);
  for (const Fault& f : faults_) {
    if ((f.every_op || f.op == op) && Covers(f.path, path)) {
      ++hits_;
      return f.status;
    }
  }
  return Status::Ok();
}

Result<std::string> FaultEnv::ReadFile(std::string_view path, size_t max_bytes) {
  TOCSIN_RETURN_IF_ERROR(Check(Op::kReadFile, path));
  return base_->ReadFile(path, max_bytes);
}

Result<std::vector<std::string>> FaultEnv::ListDir(std::string_view path) {
  TOCSIN_RETURN_IF_ERROR(Check(Op::kListDir, path));
  return base_->ListDir(path);
}

Result<int> FaultEnv::OpenFile(std::string_view path) {
  TOCSIN_RETURN_IF_ERROR(Check(Op::kOpenFile, path));
  return base_->OpenFile(path);
}

Result<std::string> FaultEnv::ReadLink(std::string_view path) {
  TOCSIN_RETURN_IF_ERROR(Check(Op::kReadLink, path));
  return base_->ReadLink(path);
}

Result<std::string> FaultEnv::RealPath(std::string_view path) {
  TOCSIN_RETURN_IF_ERROR(Check(Op::kRealPath, path));
  return base_->RealPath(path);
}

bool FaultEnv::IsDirectory(std::string_view path) {
  if (!Check(Op::kIsDirectory, path).ok()) return false;
  return base_->IsDirectory(path);
}

Result<FsStats> FaultEnv::StatFs(std::string_view path) {
  TOCSIN_RETURN_IF_ERROR(Check(Op::kStatFs, path));
  return base_->StatFs(path);
}

}  // namespace tocsin::testing
