#include "sys/module.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "testing/status_matchers.h"

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
                            "f");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("is not installed"), std::string::npos);
  EXPECT_NE(r.status().message().find("/nonexistent/tocsin-no-such-module.so"), std::string::npos);
  EXPECT_NE(r.status().message().find("/../lib/tocsin/tocsin-no-such-module.so"),
            std::string::npos);
}

// libc stands in for a module: found by its build path, its symbol resolved; a symbol it lacks
// is an error that names the file.
TEST(ModuleTest, ResolvesASymbolAndNamesOneThatIsMissing) {
  const char* libc = "/lib/x86_64-linux-gnu/libc.so.6";
  if (access(libc, R_OK) != 0) GTEST_SKIP() << libc << " is not here (not Debian amd64)";
  auto getpid_fn = LoadModuleSymbol("tocsin-no-such-module.so", libc, "getpid");
  ASSERT_OK(getpid_fn);
  EXPECT_EQ(reinterpret_cast<pid_t (*)()>(*getpid_fn)(), getpid());
  auto missing = LoadModuleSymbol("tocsin-no-such-module.so", libc, "tocsin_https_start_v1");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find(libc), std::string::npos);
  EXPECT_NE(missing.status().message().find("has no tocsin_https_start_v1"), std::string::npos);
}

}  // namespace
}  // namespace tocsin::sys
