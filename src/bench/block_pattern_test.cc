#include "bench/block_pattern.h"

#include <gtest/gtest.h>

#include <vector>

namespace tocsin::bench {
namespace {

constexpr size_t kBlock = 64 << 10;

std::vector<char> Block(const std::string& pattern, uint64_t file, uint64_t block) {
  std::vector<char> b(pattern.begin(), pattern.begin() + kBlock);
  StampBlock(b.data(), file, block);
  return b;
}

TEST(BlockPatternTest, MatchesOnlyItsOwnPlace) {
  std::string pattern(kBlock, '\0');
  FillPattern(pattern.data(), pattern.size());
  auto b = Block(pattern, 3, 7);
  EXPECT_TRUE(BlockMatches(b.data(), kBlock, pattern, 3, 7));
  EXPECT_FALSE(BlockMatches(b.data(), kBlock, pattern, 3, 8));  // written to the wrong block
  EXPECT_FALSE(BlockMatches(b.data(), kBlock, pattern, 2, 7));  // or the wrong file
  b[kBlock - 1] ^= 1;                                            // one bit flipped at the end
  EXPECT_FALSE(BlockMatches(b.data(), kBlock, pattern, 3, 7));
  EXPECT_FALSE(BlockMatches(b.data(), 8, pattern, 3, 7));  // shorter than its stamp
  EXPECT_FALSE(BlockMatches(b.data(), kBlock, std::string(16, 'x'), 3, 7));  // pattern too short
}

// Two alternating buffers, as a reader uses them: each buffer is rewritten right after the
// Submit of the other one returns, and every block is checked as it was when submitted.
TEST(BlockCheckerTest, CountsWrongBlocksWithAlternatingBuffers) {
  std::string pattern(kBlock, '\0');
  FillPattern(pattern.data(), pattern.size());
  std::vector<char> bufs[2] = {std::vector<char>(kBlock), std::vector<char>(kBlock)};
  int64_t want = 0;
  {
    BlockChecker checker(pattern, 1, kBlock);
    for (uint64_t b = 0; b < 200; ++b) {
      auto& buf = bufs[b % 2];
      buf = Block(pattern, 1, b);
      if (b % 7 == 3) {
        buf[100 + b] ^= 0x40;
        ++want;
      }
      checker.Submit(buf.data(), b);
    }
    EXPECT_EQ(checker.Wrong(), want);
    EXPECT_EQ(checker.Wrong(), want);  // asking twice changes nothing
  }
  EXPECT_GT(want, 0);
}

TEST(BlockCheckerTest, NothingSubmittedIsNothingWrong) {
  std::string pattern(kBlock, 'p');
  BlockChecker checker(pattern, 0, kBlock);
  EXPECT_EQ(checker.Wrong(), 0);
}

}  // namespace
}  // namespace tocsin::bench
