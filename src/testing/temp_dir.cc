#include "testing/temp_dir.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

namespace tocsin::testing {

namespace fs = std::filesystem;

std::string TempDir(std::string_view name) {
  std::string tmpl = "/tmp/tocsin-" + std::string(name) + "-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) {
    ADD_FAILURE() << "mkdtemp " << tmpl << ": " << std::strerror(errno);
    return "/nonexistent/" + tmpl;
  }
  return buf.data();
}

ScopedTempDir::ScopedTempDir(std::string_view name) : path_(TempDir(name)) {}

ScopedTempDir::~ScopedTempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string ScopedTempDir::Path(std::string_view rel) const {
  return path_ + "/" + std::string(rel);
}

std::string ScopedTempDir::Write(std::string_view rel, std::string_view text) const {
  std::string path = Path(rel);
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  EXPECT_TRUE(out.good()) << "cannot write " << path;
  return path;
}

}  // namespace tocsin::testing
