#include "sys/module.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "testing/status_matchers.h"
#include "testing/temp_dir.h"

namespace tocsin::sys {
namespace {

TEST(ModuleTest, LooksBesideTheBinaryThenInItsLibFolderThenTheBuild) {
  EXPECT_EQ(ModuleCandidates("/usr/local/bin/tocsin", "tocsin-https.so", "/b/tocsin-https.so"),
            (std::vector<std::string>{"/usr/local/bin/tocsin-https.so",
                                      "/usr/local/bin/../lib/tocsin/tocsin-https.so",
                                      "/b/tocsin-https.so"}));
  // The build tree: the binary and the module share a folder; it is tried once.
  EXPECT_EQ(ModuleCandidates("/b/tocsin", "tocsin-https.so", "/b/tocsin-https.so").size(), 2u);
  EXPECT_EQ(ModuleCandidates("", "m.so", ""), std::vector<std::string>{});
}

TEST(ModuleTest, AMissingModuleNamesEveryPlaceTried) {
  auto r = LoadModuleSymbol("tocsin-no-such-module.so", "/nonexistent/tocsin-no-such-module.so",
                            "id", "f");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("is not installed"), std::string::npos);
  EXPECT_NE(r.status().message().find("/nonexistent/tocsin-no-such-module.so"), std::string::npos);
  EXPECT_NE(r.status().message().find("/../lib/tocsin/tocsin-no-such-module.so"),
            std::string::npos);
}

// A module is used only with the build id of the binary that loads it; a symbol it lacks is an
// error naming the file.
TEST(ModuleTest, ResolvesASymbolOfTheSameBuildOnly) {
  auto answer = LoadModuleSymbol("tocsin-no-such-module.so", TOCSIN_TEST_MODULE,
                                 "test-build-id", "tocsin_test_module_answer");
  ASSERT_OK(answer);
  EXPECT_EQ(reinterpret_cast<int (*)()>(*answer)(), 42);
  auto missing = LoadModuleSymbol("tocsin-no-such-module.so", TOCSIN_TEST_MODULE,
                                  "test-build-id", "tocsin_https_start_v1");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("has no tocsin_https_start_v1"), std::string::npos);
  auto other = LoadModuleSymbol("tocsin-no-such-module.so", TOCSIN_TEST_MODULE, "another-build",
                                "tocsin_test_module_answer");
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("from another build"), std::string::npos);
  EXPECT_NE(other.status().message().find("test-build-id"), std::string::npos);
  // A library that is not a tocsin module at all.
  const char* libc = "/lib/x86_64-linux-gnu/libc.so.6";
  if (access(libc, R_OK) == 0) {
    auto foreign = LoadModuleSymbol("tocsin-no-such-module.so", libc, "id", "getpid");
    ASSERT_FALSE(foreign.ok());
    EXPECT_NE(foreign.status().message().find("build id is missing"), std::string::npos)
        << foreign.status().message();
  }
}

// Two modules are two objects: each is loaded as itself (a module must never be taken for one
// loaded before it, whatever names the loader gave them).
TEST(ModuleTest, TwoModulesAreEachThemselves) {
  auto first = LoadModuleSymbol("tocsin-no-such-module.so", TOCSIN_TEST_MODULE, "test-build-id",
                                "tocsin_test_module_answer");
  auto second = LoadModuleSymbol("tocsin-no-such-module.so", TOCSIN_TEST_MODULE_2,
                                 "test-build-id", "tocsin_test_module_answer");
  ASSERT_OK(first);
  ASSERT_OK(second);
  EXPECT_EQ(reinterpret_cast<int (*)()>(*first)(), 42);
  EXPECT_EQ(reinterpret_cast<int (*)()>(*second)(), 43);
}

// Nobody but root or this user can plant code: a module writable by others, or a symbolic
// link, is refused before it is loaded.
TEST(ModuleTest, RefusesAModuleOthersCouldHaveWritten) {
  testing::ScopedTempDir dir("module-test");
  std::string copy = dir.Path("tocsin-test.so");
  std::filesystem::copy_file(TOCSIN_TEST_MODULE, copy);
  chmod(copy.c_str(), 0666);
  auto writable = LoadModuleSymbol("tocsin-no-such-module.so", copy, "test-build-id",
                                   "tocsin_test_module_answer");
  ASSERT_FALSE(writable.ok());
  EXPECT_NE(writable.status().message().find("writable by others"), std::string::npos);
  chmod(copy.c_str(), 0644);
  std::string link = dir.Path("link.so");
  ASSERT_EQ(symlink(copy.c_str(), link.c_str()), 0);
  auto linked = LoadModuleSymbol("tocsin-no-such-module.so", link, "test-build-id",
                                 "tocsin_test_module_answer");
  ASSERT_FALSE(linked.ok());
  EXPECT_NE(linked.status().message().find("refusing to load"), std::string::npos);
  ASSERT_OK(LoadModuleSymbol("tocsin-no-such-module.so", copy, "test-build-id",
                             "tocsin_test_module_answer"));
}

}  // namespace
}  // namespace tocsin::sys
