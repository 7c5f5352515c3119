#pragma once

#include <cstdint>
#include <cstring>
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
  explicit LineReader(int fd, size_t max_line = 64 << 10, size_t buffer = 1 << 20,
                      std::vector<char> reuse = {});
  // Reads only [offset, offset + length) of a regular file, with pread (parallel chunks). A
  // `reuse` buffer (from TakeBuffer) that is large enough is used as it is: neither zeroed nor
  // newly mapped, which costs a page fault per 4 KiB (a few percent of a fast scan).
  static LineReader Range(int fd, uint64_t offset, uint64_t length,
                          std::vector<char> reuse = {});
  // The buffer, for the next Range; the reader is empty afterwards.
  std::vector<char> TakeBuffer() && { return std::move(buf_); }

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
  // Inside ForEachContaining's fn: true when the line begins with the same bytes, up to and
  // including its first `word`, as the line handed to fn before it (so `word` is first found at
  // the same offset; a parser may reuse what it read from those bytes). Known for lines taken by
  // the inline loop; false for the others and after Next and NextContaining.
  bool same_prefix() const { return same_prefix_; }

  // Calls fn(line, truncated) for each line NextContaining would return, in order, until the
  // input ends (word_at() is valid inside fn). Consecutive matching lines are
  // taken by an inline loop, the others by NextContaining: the hot loop of `tocsin nccl` on big
  // files, without a call and a Result per line.
  template <typename Fn>
  Status ForEachContaining(std::string_view word, char mark, Fn&& fn) {
    std::string_view line;
    bool truncated = false;
    prefix_len_ = 0;  // a kept prefix is this call's, for this word
    while (true) {
      while (TakeFirstLine(word, mark, &line)) fn(line, false);
      auto more = NextContaining(word, mark, &line, &truncated);
      if (!more.ok()) return more.status();
      if (!*more) return Status::Ok();
      fn(line, truncated);
    }
  }

  uint64_t bytes_read() const { return bytes_read_; }

 private:
  Status Fill();

  // Where `word` starts in [from, from + len), or null: memchr (vectorised in glibc) for its first
  // byte, then a compare; much faster than memmem's two-way search when that byte is rare in the
  // text, as 'N' is in logs.
  static const char* Find(const char* from, size_t len, std::string_view word) {
    const char* end = from + len;
    const char* p = from;
    uint32_t next4 = 0;  // bytes 1-4 of the word, compared as one load
    if (word.size() >= 5) std::memcpy(&next4, word.data() + 1, 4);
    while (p + word.size() <= end) {
      p = static_cast<const char*>(std::memchr(p, word[0], static_cast<size_t>(end - p)));
      if (p == nullptr || p + word.size() > end) return nullptr;
      size_t i = 1;
      if (word.size() >= 5) {
        uint32_t at;
        std::memcpy(&at, p + 1, 4);
        i = at == next4 ? 5 : word.size() + 1;
      }
      while (i < word.size() && p[i] == word[i]) ++i;
      if (i == word.size()) return p;
      ++p;
    }
    return nullptr;
  }

  // NextContaining's common case, inline: the line at begin_ ends inside the buffer within
  // max_line and holds `word`, with no `mark` in it and the next mark known. Takes it (setting
  // word_at_) and returns true; else returns false and consumes nothing.
  bool TakeFirstLine(std::string_view word, char mark, std::string_view* line) {
    if (mark != mark_ || word.empty() || mark_pos_ == kUnknown) return false;
    const char* base = buf_.data();
    const char* from = base + begin_;
    // The kept prefix holds no newline: when the line starts with it, its end is searched for
    // after it.
    same_prefix_ = SamePrefix(from, end_ - begin_);
    size_t skip = same_prefix_ ? prefix_len_ : 0;
    const char* nl =
        static_cast<const char*>(std::memchr(from + skip, '\n', end_ - begin_ - skip));
    if (nl == nullptr) return false;
    size_t len = static_cast<size_t>(nl - from);
    // A mark behind begin_ is stale (NextContaining looks again); one in this line is its call.
    if (len > max_line_ || (mark_pos_ != kNone && mark_pos_ < begin_ + len)) return false;
    const char* hit;
    if (same_prefix_) {
      hit = from + prefix_len_ - word.size();
    } else {
      hit = Find(from, len, word);
      if (hit == nullptr) return false;
      KeepPrefix(from, static_cast<size_t>(hit - from), word);
    }
    begin_ += len + 1;
    word_at_ = static_cast<size_t>(hit - from);
    if (len > 0 && from[len - 1] == '\r') --len;
    *line = std::string_view(from, len);
    return true;
  }

  // Whether the `len` bytes at `from` start with the kept prefix of the last line returned: then
  // the line there has its first `word` where that line's was, since any earlier occurrence would
  // lie inside the same bytes. Compared eight bytes at a time, the last load overlapping, all
  // inside the `len` bytes.
  bool SamePrefix(const char* from, size_t len) const {
    size_t n = prefix_len_;
    if (n < 8 || n > len) return false;
    uint64_t diff = 0;
    for (size_t i = 0; i + 8 < n; i += 8) {
      uint64_t a, b;
      std::memcpy(&a, from + i, 8);
      std::memcpy(&b, prefix_ + i, 8);
      diff |= a ^ b;
    }
    uint64_t a, b;
    std::memcpy(&a, from + n - 8, 8);
    std::memcpy(&b, prefix_ + n - 8, 8);
    return (diff | (a ^ b)) == 0;
  }
  // Keeps the returned line's bytes up to the end of its first `word`, found at `at` (none when
  // they are longer than the prefix kept).
  void KeepPrefix(const char* from, size_t at, std::string_view word) {
    size_t n = at + word.size();
    prefix_len_ = n <= sizeof(prefix_) ? n : 0;
    if (prefix_len_ > 0) std::memcpy(prefix_, from, n);
  }

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
  // The last returned line's bytes through its first `word` (SamePrefix): used only within one
  // ForEachContaining call (its word); Next drops them.
  char prefix_[96];
  size_t prefix_len_ = 0;
  bool same_prefix_ = false;
};

}  // namespace tocsin
