#include "sys/line_reader.h"

#include <gtest/gtest.h>
#include <unistd.h>

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

}  // namespace
}  // namespace tocsin
