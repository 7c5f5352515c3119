#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "base/time.h"

namespace tocsin {

struct FsStats {
  uint64_t type = 0;  // statfs f_type magic (Lustre: 0x0BD00BD0)
  uint64_t block_size = 0;
  uint64_t blocks = 0;
  uint64_t blocks_free = 0;
  uint64_t blocks_available = 0;
  uint64_t files = 0;
  uint64_t files_free = 0;
};

// Every host access goes through an Env (leveldb style), so the whole tool can run against a
// directory tree that stands in for a node. Paths are absolute paths as seen on the node
// ("/sys/class/infiniband"); errors name that path.
class Env {
 public:
  static constexpr size_t kDefaultMaxFileBytes = 16 << 20;

  virtual ~Env() = default;

  // Reads a whole file; a file larger than max_bytes is an error, never silently cut.
  virtual Result<std::string> ReadFile(std::string_view path,
                                       size_t max_bytes = kDefaultMaxFileBytes) = 0;
  // Opens a regular file for reading, as OpenRegularFile does (never blocks; a FIFO, device or
  // directory is an error naming `path`), for reads that ReadFile's whole-file copy does not fit
  // (a log that grows, read from where the last read stopped). The caller closes the descriptor.
  virtual Result<int> OpenFile(std::string_view path) = 0;
  // Entry names, sorted, without "." and "..".
  virtual Result<std::vector<std::string>> ListDir(std::string_view path) = 0;
  // The target text of a symlink (not followed).
  virtual Result<std::string> ReadLink(std::string_view path) = 0;
  // Canonical path with every symlink resolved inside the root (absolute link targets are
  // re-rooted); fails on a dangling link or a loop.
  virtual Result<std::string> RealPath(std::string_view path) = 0;
  virtual bool IsDirectory(std::string_view path) = 0;
  virtual Result<FsStats> StatFs(std::string_view path) = 0;
  virtual TimePoint Now() = 0;
  // The directory that stands in for "/" ("/" on a real node).
  virtual const std::string& root() const = 0;
};

// An Env over the real filesystem, resolved under `root` (default "/").
std::unique_ptr<Env> NewRootedEnv(std::string root = "/");

// Opens `path` (a host path) for reading without ever blocking on it, and only when it is a
// regular file (sysfs and procfs attributes are): O_NONBLOCK, so a FIFO without a writer cannot
// hang the open or a read, and a FIFO, device, socket or directory is refused with an error that
// names `name` (the path the user gave or the node path; `path` when empty) and what it is.
// `flags` are added (O_NOFOLLOW). The caller closes the descriptor.
Result<int> OpenRegularFile(const std::string& path, int flags = 0, std::string_view name = {});

// A whole regular file that a user named (--config, --profile, --from, a kubeconfig), read with
// OpenRegularFile; larger than max_bytes is an error.
Result<std::string> ReadRegularFile(const std::string& path,
                                    size_t max_bytes = Env::kDefaultMaxFileBytes);

// Ok when `path` (a directory a user named: --root) is one; else why not, naming `name` (`path`
// when empty): the errno's meaning (no such file, permission denied) or what it is instead.
Status CheckDirectory(const std::string& path, std::string_view name = {});

// Reads a small sysfs attribute and trims whitespace.
Result<std::string> ReadAttribute(Env& env, std::string_view path);

// The node's hostname: /proc/sys/kernel/hostname through `env`, else (on the real root)
// gethostname(2); empty when neither tells. The one hostname function: reports, ranks and
// leader-election identities all use it.
std::string HostName(Env& env);

}  // namespace tocsin
