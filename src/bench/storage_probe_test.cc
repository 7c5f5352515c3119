#include "bench/storage_probe.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace tocsin::bench {
namespace {

namespace fs = std::filesystem;

// A link planted in the probe folder (by someone who could write there) is refused, never
// followed: the file it points to keeps its content and nothing is created through it.
class ProbeFolderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tocsin-probe-folder-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    dir_ = root_ + "/probe";
    ASSERT_EQ(mkdir(dir_.c_str(), 0700), 0);
    victim_ = root_ + "/victim";
    std::ofstream(victim_) << "precious\n";
  }
  void TearDown() override { fs::remove_all(root_); }
  ProbeOptions Small(bool shared = false) {
    ProbeOptions o;
    o.dir = dir_;
    o.jobs = 1;
    o.size = 64 << 10;
    o.block = 64 << 10;
    o.files = 3;
    o.fsync_ops = 2;
    o.randread_ops = 4;
    o.shared_file = shared;
    return o;
  }
  std::string Victim() {
    std::ifstream in(victim_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  std::string root_, dir_, victim_;
};

TEST_F(ProbeFolderTest, RunsInItsOwnFolder) {
  StorageProbe probe(Small());
  for (const char* phase : {"write", "read", "randread", "fsync", "meta-create", "meta-stat",
                            "meta-unlink"}) {
    auto r = probe.Run(phase);
    ASSERT_TRUE(r.ok()) << phase << ": " << r.status().ToString();
    // The phase's time is its operations' span: at least every operation of its one worker.
    EXPECT_GT(r->seconds, 0) << phase;
    EXPECT_GE(r->seconds * 1e6 * 1.001, r->latency.mean * r->latency.count) << phase;
  }
  EXPECT_TRUE(RemoveCreated(probe.Created(), 3000));
  EXPECT_TRUE(fs::is_empty(dir_));
}

// A block changed on the disk between writing and reading is counted, whether the blocks are
// checked inline (small blocks) or beside the next read (large ones), in its own file or the
// shared one, and only that block.
TEST_F(ProbeFolderTest, ACorruptedBlockIsCountedOnce) {
  for (uint64_t block : {4096u, 64u << 10}) {
    for (bool shared : {false, true}) {
      SCOPED_TRACE(std::to_string(block) + (shared ? " shared" : " per worker"));
      ProbeOptions o = Small(shared);
      o.jobs = 2;
      o.size = 8 * block;
      o.block = block;
      StorageProbe probe(o);
      ASSERT_TRUE(probe.Run("write").ok());
      auto clean = probe.Run("read");
      ASSERT_TRUE(clean.ok()) << clean.status().ToString();
      EXPECT_EQ(clean->wrong, 0);
      // Worker 1's fifth block, one byte past its stamp.
      std::string file = dir_ + (shared ? "/shared.dat" : "/data-1.dat");
      uint64_t at = (shared ? o.size : 0) + 5 * block + 20;
      {
        std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
        ASSERT_TRUE(f.is_open()) << file;
        f.seekg(at);
        char c = 0;
        f.read(&c, 1);
        c ^= 0x5a;
        f.seekp(at);
        f.write(&c, 1);
      }
      auto r = probe.Run("read");
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(r->wrong, 1);
      EXPECT_EQ(r->bytes, 2 * o.size);
      EXPECT_TRUE(RemoveCreated(probe.Created(), 3000));
    }
  }
}

TEST_F(ProbeFolderTest, PlantedDataLinkIsRefused) {
  for (bool shared : {false, true}) {
    std::string link = dir_ + (shared ? "/shared.dat" : "/data-0.dat");
    ASSERT_EQ(symlink(victim_.c_str(), link.c_str()), 0);
    StorageProbe probe(Small(shared));
    auto r = probe.Run("write");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("refused, not followed"), std::string::npos)
        << r.status().message();
    EXPECT_EQ(Victim(), "precious\n");
    EXPECT_TRUE(fs::is_symlink(link));
    fs::remove(link);
  }
}

TEST_F(ProbeFolderTest, PlantedFileOrHardLinkIsRefused) {
  // A hard link to someone else's file looks like a plain file: creation is exclusive.
  std::string link = dir_ + "/data-0.dat";
  ASSERT_EQ(::link(victim_.c_str(), link.c_str()), 0);
  StorageProbe probe(Small());
  auto r = probe.Run("write");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("refused, not followed"), std::string::npos)
      << r.status().message();
  EXPECT_EQ(Victim(), "precious\n");
}

TEST_F(ProbeFolderTest, PlantedFsyncAndMetaLinksAreRefused) {
  ASSERT_EQ(symlink(victim_.c_str(), (dir_ + "/fsync-0.dat").c_str()), 0);
  ASSERT_EQ(symlink(root_.c_str(), (dir_ + "/meta-0").c_str()), 0);
  StorageProbe probe(Small());
  auto f = probe.Run("fsync");
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("refused, not followed"), std::string::npos) << f.status().message();
  auto m = probe.Run("meta-create");
  ASSERT_FALSE(m.ok());
  EXPECT_FALSE(fs::exists(root_ + "/f0"));  // nothing created through the link
  EXPECT_EQ(Victim(), "precious\n");
}

TEST_F(ProbeFolderTest, FolderThatIsALinkIsRefused) {
  std::string link = root_ + "/linked";
  ASSERT_EQ(symlink(dir_.c_str(), link.c_str()), 0);
  ProbeOptions o = Small();
  o.dir = link;
  StorageProbe probe(o);
  auto r = probe.Run("write");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("probe folder"), std::string::npos) << r.status().message();
  EXPECT_TRUE(fs::is_empty(dir_));
}

}  // namespace
}  // namespace tocsin::bench
