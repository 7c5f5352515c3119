#pragma once

#include <memory>
#include <string>

#include "run_binary.h"

namespace tocsin::testing {

// True when `point` is a mount point of this process's mount namespace.
bool Mounted(const std::string& point);

// slowfs (tests/fuse/slowfs.c) over a backing folder: latency or a hang on demand. Killed (which
// aborts its pending requests) and unmounted when this goes out of scope.
class SlowFs {
 public:
  explicit SlowFs(const std::string& options);
  ~SlowFs();
  SlowFs(const SlowFs&) = delete;
  SlowFs& operator=(const SlowFs&) = delete;
  bool ok() const { return Mounted(mount_); }
  const std::string& path() const { return mount_; }
  const std::string& backing() const { return backing_; }

 private:
  std::string backing_, mount_;
  std::unique_ptr<Process> daemon_;
};

}  // namespace tocsin::testing
