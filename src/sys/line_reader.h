#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace tocsin {

// Reads lines from a file descriptor in constant memory: one buffer, reused. A line longer
// than max_line is cut to max_line bytes (truncated = true) and the rest of it skipped. Works
// on pipes (blocks for more data), so it serves `kubectl logs -f | tocsin nccl --follow -`.
class LineReader {
 public:
  explicit LineReader(int fd, size_t max_line = 64 << 10, size_t buffer = 1 << 20);
  // Reads only [offset, offset + length) of a regular file, with pread (parallel chunks).
  static LineReader Range(int fd, uint64_t offset, uint64_t length);

  // Sets *line (valid until the next call) and returns true, or false at end of input.
  Result<bool> Next(std::string_view* line, bool* truncated);

  // Like Next, but only returns lines that contain `word` (may be empty) or the byte `mark`; the
  // others are skipped in bulk (vectorised memchr over the buffer, as grep does), never split into
  // lines.
  Result<bool> NextContaining(std::string_view word, char mark, std::string_view* line,
                              bool* truncated);
  // Where `word` first occurs in the line NextContaining returned last, when the reader knows
  // (npos when it does not, and after Next; the caller checks the offset before trusting it).
  size_t word_at() const { return word_at_; }

  uint64_t bytes_read() const { return bytes_read_; }

 private:
  Status Fill();

  int fd_;
  size_t max_line_;
  std::vector<char> buf_;
  size_t begin_ = 0;
  size_t end_ = 0;
  bool eof_ = false;
  std::string cut_;  // the head of an over-long line
  uint64_t bytes_read_ = 0;
  bool ranged_ = false;
  uint64_t pos_ = 0;    // ranged: next file offset to read
  uint64_t limit_ = 0;  // ranged: end of the range
  // NextContaining: where the next `mark_` is at or after begin_ (kNone: nowhere before end_).
  static constexpr size_t kUnknown = ~size_t{0};
  static constexpr size_t kNone = ~size_t{0} - 1;
  char mark_ = 0;
  size_t mark_pos_ = kUnknown;
  size_t word_at_ = std::string_view::npos;
};

}  // namespace tocsin
