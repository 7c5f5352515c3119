#include "bench/block_pattern.h"

#include <cstring>

namespace tocsin::bench {

void FillPattern(char* p, size_t n) {
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (size_t i = 0; i + 8 <= n; i += 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    std::memcpy(p + i, &x, 8);
  }
}

void StampBlock(char* p, uint64_t file, uint64_t block) {
  std::memcpy(p, &file, 8);
  std::memcpy(p + 8, &block, 8);
}

bool BlockMatches(const char* p, size_t n, const std::string& pattern, uint64_t file,
                  uint64_t block) {
  if (n < 16 || pattern.size() < n) return false;
  uint64_t f = 0, b = 0;
  std::memcpy(&f, p, 8);
  std::memcpy(&b, p + 8, 8);
  return f == file && b == block && std::memcmp(p + 16, pattern.data() + 16, n - 16) == 0;
}

BlockChecker::BlockChecker(const std::string& pattern, uint64_t file, size_t block_size)
    : pattern_(pattern), file_(file), size_(block_size), thread_([this] { Loop(); }) {}

BlockChecker::~BlockChecker() {
  {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [&] { return pending_ == nullptr; });
    quit_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void BlockChecker::Submit(const char* p, uint64_t block) {
  {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [&] { return pending_ == nullptr; });
    pending_ = p;
    pending_block_ = block;
  }
  cv_.notify_all();
}

int64_t BlockChecker::Wrong() {
  std::unique_lock<std::mutex> l(mu_);
  cv_.wait(l, [&] { return pending_ == nullptr; });
  return wrong_;
}

void BlockChecker::Loop() {
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    cv_.wait(l, [&] { return quit_ || pending_ != nullptr; });
    if (pending_ == nullptr) return;  // quit with nothing left to check
    const char* p = pending_;
    uint64_t block = pending_block_;
    l.unlock();
    bool ok = BlockMatches(p, size_, pattern_, file_, block);
    l.lock();
    wrong_ += ok ? 0 : 1;
    pending_ = nullptr;
    cv_.notify_all();
  }
}

}  // namespace tocsin::bench
