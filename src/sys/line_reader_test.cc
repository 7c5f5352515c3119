#include "sys/line_reader.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <random>
#include <string>
#include <thread>
#include <vector>

namespace tocsin {
namespace {

std::vector<std::string> ReadAll(const std::string& input, size_t max_line, size_t buffer,
                                 int* truncated_count) {
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  std::thread writer([&] {
    size_t off = 0;
    while (off < input.size()) {
      ssize_t n = ::write(fds[1], input.data() + off, std::min<size_t>(7, input.size() - off));
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    ::close(fds[1]);
  });
  LineReader reader(fds[0], max_line, buffer);
  std::vector<std::string> lines;
  *truncated_count = 0;
  std::string_view line;
  bool truncated = false;
  while (true) {
    auto more = reader.Next(&line, &truncated);
    EXPECT_TRUE(more.ok());
    if (!more.ok() || !*more) break;
    lines.emplace_back(line);
    if (truncated) ++*truncated_count;
  }
  writer.join();
  ::close(fds[0]);
  return lines;
}

TEST(LineReaderTest, SplitsLinesAcrossSmallReadsAndStripsCr) {
  int cut = 0;
  auto lines = ReadAll("a\nbb\r\n\nlast", 16, 32, &cut);
  EXPECT_EQ(lines, (std::vector<std::string>{"a", "bb", "", "last"}));
  EXPECT_EQ(cut, 0);
}

TEST(LineReaderTest, CutsOverlongLinesAndKeepsGoing) {
  int cut = 0;
  std::string longline(100, 'x');
  auto lines = ReadAll("ok\n" + longline + "\nafter\n" + longline, 10, 16, &cut);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[1], std::string(10, 'x'));
  EXPECT_EQ(lines[2], "after");
  EXPECT_EQ(lines[3], std::string(10, 'x'));
  EXPECT_EQ(cut, 2);
}

// A buffer handed from one ranged reader to the next still holds the first one's bytes: none of
// them may show up in the second's lines, and the buffer is not reallocated.
TEST(LineReaderTest, ARangeReusesTheLastRangesBufferWithoutItsBytes) {
  char path[] = "/tmp/line_reader_test_XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  unlink(path);
  std::string first = std::string(3000, 'N') + " NCCL first\n";
  std::string second = "x\nNCCL second\ny";
  std::string text = first + second;
  ASSERT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  auto lines_of = [](LineReader& r) {
    std::vector<std::string> out;
    EXPECT_TRUE(r.ForEachContaining("NCCL ", '#', [&](std::string_view l, bool) {
                  out.emplace_back(l);
                }).ok());
    return out;
  };
  LineReader a = LineReader::Range(fd, 0, first.size());
  EXPECT_EQ(lines_of(a), (std::vector<std::string>{std::string(3000, 'N') + " NCCL first"}));
  std::vector<char> buffer = std::move(a).TakeBuffer();
  const char* data = buffer.data();
  LineReader b = LineReader::Range(fd, first.size(), second.size(), std::move(buffer));
  EXPECT_EQ(lines_of(b), (std::vector<std::string>{"NCCL second"}));
  EXPECT_EQ(std::move(b).TakeBuffer().data(), data);
  close(fd);
}

// Consecutive lines that begin with the same bytes up to and including the word are flagged
// same_prefix, their word where the first line's was; any other line is searched again.
TEST(LineReaderTest, SamePrefixIsFlaggedOnlyForIdenticalBytesUpToTheWord) {
  char path[] = "/tmp/line_reader_test_XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  unlink(path);
  std::string text =
      "host-1:10:10 [0] NCCL INFO a\n"        // searched: nothing before it
      "host-1:10:10 [0] NCCL INFO bb\n"       // same bytes through "NCCL ": flagged
      "host-1:10:10 [0] NCCL WARN c\n"        // still the same through the word
      "host-1:10:11 [0] NCCL INFO d\n"        // another thread: searched
      "host-1:10:11 [0] NCCL \n"              // the prefix is the whole line
      "NCCL host-1:10:11 [0] NCCL INFO e\n"   // the word earlier in the line: searched
      "plain\n"                               // skipped
      "host-1:10:11 [0] NCCL INFO f\n"        // after a skipped line: searched again
      "host-1:10:11 [0] NCCL INFO g\n"        // flagged
      "host-1:10:11 [0] NCC\n";               // shorter than the prefix: no match at all
  ASSERT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  LineReader reader = LineReader::Range(fd, 0, text.size());
  std::vector<std::pair<size_t, bool>> got;  // (word_at, same_prefix) per line
  ASSERT_TRUE(reader.ForEachContaining("NCCL ", '#', [&](std::string_view line, bool) {
                    EXPECT_EQ(line.substr(reader.word_at(), 5), "NCCL ") << line;
                    got.emplace_back(reader.word_at(), reader.same_prefix());
                  }).ok());
  EXPECT_EQ(got, (std::vector<std::pair<size_t, bool>>{{17, false},
                                                       {17, true},
                                                       {17, true},
                                                       {17, false},
                                                       {17, true},
                                                       {0, false},
                                                       {17, false},
                                                       {17, true}}));
  close(fd);
}

// Differential: NextContaining and ForEachContaining must return exactly the lines Next returns
// that hold the word or the mark, whatever the buffer size and however the input is split.
TEST(LineReaderTest, NextContainingMatchesFilteredNext) {
  std::mt19937 rng(42);
  const char* pieces[] = {"NCCL INFO x", "plain text", "# header", "NCC",         "L ",
                          "\n",          "\n",         "a#b",      "NCCL WARN y", "\n\n"};
  int known = 0;
  for (int round = 0; round < 300; ++round) {
    std::string input;
    int n = static_cast<int>(rng() % 60);
    for (int i = 0; i < n; ++i) {
      input += pieces[rng() % (sizeof(pieces) / sizeof(*pieces))];
      if (i % 4 == 3) input += "\n";  // lines stay under max_line (48 bytes)
    }
    size_t buffer = 49 + rng() % 40;
    int cut = 0;
    std::vector<std::string> expected;
    for (const auto& l : ReadAll(input, 1 << 20, 1 << 20, &cut)) {
      if (l.find("NCCL ") != std::string::npos || l.find('#') != std::string::npos) {
        expected.push_back(l);
      }
    }
    uint32_t seed = rng();
    for (bool each : {false, true}) {  // NextContaining, then ForEachContaining
      int fds[2];
      ASSERT_EQ(::pipe(fds), 0);
      std::thread writer([&] {
        std::mt19937 chunks(seed);
        size_t off = 0;
        while (off < input.size()) {  // small writes: reads end at arbitrary places
          size_t len = std::min<size_t>(1 + chunks() % 9, input.size() - off);
          ssize_t w = ::write(fds[1], input.data() + off, len);
          if (w <= 0) break;
          off += static_cast<size_t>(w);
        }
        ::close(fds[1]);
      });
      LineReader reader(fds[0], 48, buffer);
      std::vector<std::string> got;
      auto take = [&](std::string_view line) {
        got.emplace_back(line);
        if (reader.word_at() != std::string_view::npos) {  // when known, the word's first place
          EXPECT_EQ(reader.word_at(), line.find("NCCL ")) << line;
          ++known;
        }
      };
      if (each) {
        Status st = reader.ForEachContaining("NCCL ", '#',
                                             [&](std::string_view line, bool) { take(line); });
        EXPECT_TRUE(st.ok());
      } else {
        std::string_view line;
        bool truncated = false;
        while (true) {
          auto more = reader.NextContaining("NCCL ", '#', &line, &truncated);
          ASSERT_TRUE(more.ok());
          if (!*more) break;
          take(line);
        }
      }
      writer.join();
      ::close(fds[0]);
      EXPECT_EQ(got, expected) << (each ? "ForEachContaining" : "NextContaining")
                               << ", input: " << input;
    }
  }
  EXPECT_GT(known, 200);  // the common case is known
}

}  // namespace
}  // namespace tocsin
