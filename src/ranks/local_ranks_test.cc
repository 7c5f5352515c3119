#include "ranks/local_ranks.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>

namespace tocsin::ranks {
namespace {

using Args = std::vector<std::string>;

// The ranks run this same command: the token never on their command line (ps shows it), --local
// not repeated (they would start ranks of their own), each its own verdict file.
TEST(LocalRanksTest, ArgsDropLocalAndTokenAndNumberTheVerdictFile) {
  Args args = {"bench",  "net",     "--local", "4",         "--token=s3cret", "--verdict-file",
               "/tmp/v", "--token", "s3cret",  "--local=4", "--json"};
  EXPECT_EQ(LocalRankArgs(args, 2, 4, "127.0.0.1:4000"),
            (Args{"bench", "net", "--verdict-file", "/tmp/v.2", "--json", "--rank", "2",
                  "--world-size", "4", "--coordinator", "127.0.0.1:4000"}));
  EXPECT_EQ(
      LocalRankArgs({"--verdict-file=/v"}, 3, 4, "h:1"),
      (Args{"--verdict-file=/v.3", "--rank", "3", "--world-size", "4", "--coordinator", "h:1"}));
}

// Ranks 1..N-1 start (here a shell that exits with its rank) with the token in their
// environment; a missing program is an error, not a rank that silently never joins.
TEST(LocalRanksTest, StartsRanksWithTheTokenAndReportsFailure) {
  // sh -c SCRIPT NAME ARGS...: $0 is "x", $1 "--rank", $2 the rank.
  auto pids = StartLocalRanks(
      "/bin/sh", {"-c", "test \"$TOCSIN_BENCH_TOKEN\" = tok && exit $(($2 + 10))", "x"}, 3, "h:1",
      "tok");
  ASSERT_TRUE(pids.ok()) << pids.status().ToString();
  ASSERT_EQ(pids->size(), 2u);
  for (size_t i = 0; i < pids->size(); ++i) {
    int status = 0;
    ASSERT_EQ(::waitpid((*pids)[i], &status, 0), (*pids)[i]);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), static_cast<int>(i) + 11);  // rank i + 1
  }
  auto missing = StartLocalRanks("/nonexistent/tocsin", {}, 2, "h:1", "tok");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace tocsin::ranks
