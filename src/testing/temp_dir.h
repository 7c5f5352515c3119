#pragma once

#include <string>
#include <string_view>

namespace tocsin::testing {

// A new empty folder /tmp/tocsin-<name>-XXXXXX (mode 0700); the caller removes it.
std::string TempDir(std::string_view name);

// A TempDir that is removed, with everything in it, when this goes out of scope.
class ScopedTempDir {
 public:
  explicit ScopedTempDir(std::string_view name);
  ~ScopedTempDir();
  ScopedTempDir(const ScopedTempDir&) = delete;
  ScopedTempDir& operator=(const ScopedTempDir&) = delete;

  const std::string& path() const { return path_; }
  // path() + "/" + rel.
  std::string Path(std::string_view rel) const;
  // Writes `text` to path()/rel, creating the folders on the way; returns the file's path.
  std::string Write(std::string_view rel, std::string_view text) const;

 private:
  std::string path_;
};

}  // namespace tocsin::testing
