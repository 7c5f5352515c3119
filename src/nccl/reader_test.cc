#include "nccl/reader.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "nccl/analyzer_testing.h"

namespace tocsin::nccl {
namespace {

namespace fs = std::filesystem;

class ReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tocsin-nccl-reader-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    for (int fd : fds_) ::close(fd);
    fs::remove_all(dir_);
  }
  // `text` as a file, opened for reading.
  int Open(const std::string& text) {
    fs::path path = dir_ / std::to_string(fds_.size());
    std::ofstream(path, std::ios::binary) << text;
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    fds_.push_back(fd);
    return fd;
  }
  fs::path dir_;
  std::vector<int> fds_;
};

// A log read as it grows, in pieces cut anywhere (inside lines, inside nccl-tests tables), ends
// up as the same analysis as the whole log read at once: the agent and `tocsin nccl` agree.
TEST_F(ReaderTest, AppendedPiecesEqualTheWholeLog) {
  std::string dir = std::string(TOCSIN_SOURCE_DIR) + "/src/nccl/testdata";
  int files = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    int fd = Open(text.str());
    uint64_t size = text.str().size();

    Analyzer whole(Options{});
    ASSERT_TRUE(ReadLog(fd, "log", ReadOptions{}, whole).ok());
    Analyzer grown(Options{});
    grown.BeginInput("log");
    LogCursor cursor;
    for (uint64_t seen = 0; seen < size;) {
      seen = std::min(size, seen + 1 + size / 7);
      ASSERT_TRUE(ReadAppended(fd, seen, 1, cursor, grown).ok());
      EXPECT_LE(cursor.offset, seen);
    }
    if (cursor.offset < size) {
      // The last line had no newline: it waits (a pod's log is written a line at a time).
      EXPECT_EQ(text.str().back() != '\n', true) << entry.path();
      std::ofstream(dir_ / std::to_string(fds_.size() - 1), std::ios::app) << "\n";
      ASSERT_TRUE(ReadAppended(fd, size + 1, 1, cursor, grown).ok());
    }
    grown.EndInput(size);
    EXPECT_EQ(testing::AnalysisText(grown), testing::AnalysisText(whole))
        << entry.path().filename();
    ++files;
  }
  EXPECT_GE(files, 20);
}

TEST_F(ReaderTest, AnUnterminatedLineWaitsForItsEnd) {
  std::string first = "node1:1:1 [0] NCCL INFO Using network IB\n";
  std::string text = first + "node1:2:2 [0] NCCL INFO Using net";
  int fd = Open(text);
  Analyzer a(Options{});
  a.BeginInput("log");
  LogCursor cursor;
  ASSERT_TRUE(ReadAppended(fd, text.size(), 1 << 20, cursor, a).ok());
  EXPECT_EQ(cursor.offset, first.size());
  EXPECT_EQ(a.processes().size(), 1u);
  std::ofstream(dir_ / "0", std::ios::app) << "work IB\n";
  ASSERT_TRUE(ReadAppended(fd, text.size() + 8, 1 << 20, cursor, a).ok());
  EXPECT_EQ(cursor.offset, text.size() + 8);
  EXPECT_EQ(a.processes().size(), 2u);
}

// A line longer than a line may be is cut, as `tocsin nccl` cuts it, and its rest (however many
// reads it takes to arrive) is skipped; the lines after it are read.
TEST_F(ReaderTest, AnEndlessLineIsCutAndItsRestSkipped) {
  std::string endless(200 << 10, 'x');
  std::string text =
      endless + endless + "NCCL INFO tail\nnode1:1:1 [0] NCCL INFO Using network IB\n";
  int fd = Open(text);
  Analyzer a(Options{});
  a.BeginInput("log");
  LogCursor cursor;
  ASSERT_TRUE(ReadAppended(fd, 100 << 10, 1, cursor, a).ok());  // only part of it so far
  EXPECT_TRUE(cursor.in_long_line);
  EXPECT_GT(cursor.offset, 64u << 10);  // the line's head, cut, and no more than was there
  EXPECT_LE(cursor.offset, uint64_t{100} << 10);
  for (int i = 0; i < 10 && cursor.offset < text.size(); ++i) {
    ASSERT_TRUE(ReadAppended(fd, text.size(), 1, cursor, a).ok());
  }
  EXPECT_EQ(cursor.offset, text.size());
  EXPECT_FALSE(cursor.in_long_line);
  ASSERT_EQ(a.processes().size(), 1u);  // the rest of the long line was no NCCL line
  EXPECT_EQ(a.processes().begin()->second.host, "node1");
}

// Read errors are returned, never taken for the end of the log.
TEST_F(ReaderTest, ReadErrorsAreReturned) {
  int fd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);  // read(2): EISDIR
  ASSERT_GE(fd, 0);
  fds_.push_back(fd);
  Analyzer a(Options{});
  a.BeginInput("log");
  LogCursor cursor;
  Status appended = ReadAppended(fd, 1000, 1, cursor, a);
  EXPECT_EQ(appended.code(), StatusCode::kIoError);
  EXPECT_NE(appended.message().find("directory"), std::string::npos) << appended.ToString();
  EXPECT_EQ(cursor.offset, 0u);
  Status whole = ReadLog(fd, "log", ReadOptions{}, a);
  EXPECT_EQ(whole.code(), StatusCode::kIoError);
}

TEST_F(ReaderTest, FollowReportsEventsAsLinesArrive) {
  std::string path = std::string(TOCSIN_SOURCE_DIR) + "/src/nccl/testdata/mixed-2.30-kubectl.log";
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  fds_.push_back(fd);
  Analyzer a(Options{});
  ReadOptions options;
  options.threads = 4;  // ignored: events need the lines in order
  std::vector<nlohmann::json> events;
  options.on_event = [&](const nlohmann::json& e) { events.push_back(e); };
  ASSERT_TRUE(ReadLog(fd, "log", options, a).ok());
  ASSERT_FALSE(events.empty());
  EXPECT_NE(events[0]["host"].get<std::string>().find("train-worker"), std::string::npos);
}

}  // namespace
}  // namespace tocsin::nccl
