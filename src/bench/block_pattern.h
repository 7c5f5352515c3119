#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace tocsin::bench {

// The storage benchmark's block content: a fixed pseudo-random pattern, with (file, block) in
// the first 16 bytes so that a block written to the wrong place is caught on reading.
void FillPattern(char* p, size_t n);
void StampBlock(char* p, uint64_t file, uint64_t block);
// Whether `p` (`n` bytes, n >= 16) holds block `block` of file `file` over `pattern`.
bool BlockMatches(const char* p, size_t n, const std::string& pattern, uint64_t file,
                  uint64_t block);

// Checks a reader's blocks on a thread of its own, so that the reader's next read overlaps the
// check of the block before (a 1 MiB comparison costs about as much as 10 % of a 1 MiB read from
// a fast disk, which a reader that checks inline loses and fio, which checks nothing, does not).
// The reader alternates two buffers: Submit waits until the previous block's check is done,
// so the buffer submitted before it is free again when Submit returns. Pure memory work: the
// thread never touches the filesystem, so a reader stuck in the kernel leaves it idle.
class BlockChecker {
 public:
  BlockChecker(const std::string& pattern, uint64_t file, size_t block_size);
  ~BlockChecker();  // waits for the check in progress
  BlockChecker(const BlockChecker&) = delete;
  BlockChecker& operator=(const BlockChecker&) = delete;

  void Submit(const char* p, uint64_t block);
  // Waits for the last check; the blocks that did not match so far.
  int64_t Wrong();

 private:
  void Loop();

  const std::string& pattern_;
  const uint64_t file_;
  const size_t size_;
  std::mutex mu_;
  std::condition_variable cv_;
  const char* pending_ = nullptr;  // guarded by mu_: the block to check, null when idle
  uint64_t pending_block_ = 0;
  bool quit_ = false;
  int64_t wrong_ = 0;
  std::thread thread_;  // last: started once the rest is ready
};

}  // namespace tocsin::bench
