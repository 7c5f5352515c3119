#include "testing/temp_dir.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace tocsin::testing {
namespace {

namespace fs = std::filesystem;

TEST(TempDirTest, ScopedTempDirWritesAndRemovesEverything) {
  std::string path;
  {
    ScopedTempDir dir("temp-dir-test");
    path = dir.path();
    ASSERT_TRUE(fs::is_directory(path));
    EXPECT_EQ(path.rfind("/tmp/tocsin-temp-dir-test-", 0), 0u) << path;
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    std::string file = dir.Write("a/b/c.txt", "text\n");
    EXPECT_EQ(file, path + "/a/b/c.txt");
    std::stringstream read;
    read << std::ifstream(file).rdbuf();
    EXPECT_EQ(read.str(), "text\n");
  }
  EXPECT_FALSE(fs::exists(path)) << path;
}

TEST(TempDirTest, EachIsNew) {
  std::string a = TempDir("temp-dir-test");
  std::string b = TempDir("temp-dir-test");
  EXPECT_NE(a, b);
  fs::remove_all(a);
  fs::remove_all(b);
}

}  // namespace
}  // namespace tocsin::testing
