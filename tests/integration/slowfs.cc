#include "slowfs.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

namespace tocsin::testing {

namespace fs = std::filesystem;

bool Mounted(const std::string& point) {
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.find(" " + point + " ") != std::string::npos) return true;
  }
  return false;
}

SlowFs::SlowFs(const std::string& options)
    : backing_(TempDir("slowfs-back")), mount_(TempDir("slowfs-mnt")) {
  daemon_ = std::make_unique<Process>(std::vector<std::string>{
      SLOWFS, mount_, "-f", "-o", "backing=" + backing_ + (options.empty() ? "" : "," + options)});
  // The daemon has no readiness signal: wait for the mount to appear (at most 10 s).
  for (int i = 0; i < 1000 && !Mounted(mount_); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

SlowFs::~SlowFs() {
  daemon_.reset();  // SIGKILL: pending requests fail, stuck probe processes finish
  RunBinary("fusermount3", {"-u", "-z", mount_});
  fs::remove_all(backing_);
  fs::remove(mount_);
}

}  // namespace tocsin::testing
