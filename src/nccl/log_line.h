#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tocsin::nccl {

enum class LineKind { kInfo, kWarn, kVersion };

// One NCCL debug line (docs/FORMATS.md, "NCCL debug output"). Views point into the caller's line
// buffer.
//
// pid >= 0: a full "host:pid:tid [dev]" header. pid -1: no full header, and then
// - host and cuda_dev set: the pid was redacted by whoever posted the log ("host:XXXXXX [5]");
// - cuda_dev alone: only " [0] NCCL INFO ..." was left of the header;
// - neither: nothing to attribute the line to (a bare "NCCL version ..." line, which NCCL prints
//   without a header with printf or at NCCL_DEBUG=VERSION, or garbage before the keyword).
struct LogLine {
  LineKind kind = LineKind::kInfo;
  std::string_view host;
  int64_t pid = -1;
  int64_t tid = -1;
  int cuda_dev = -1;         // the bracketed number: the CUDA device of the thread, not the rank
  std::string_view message;  // the text after "NCCL INFO " / "NCCL WARN "
};

// Pure: finds "NCCL INFO" / "NCCL WARN" anywhere in the line, so launcher prefixes
// ("[1,7]<stdout>:", "[0] ", "[pod/name/container] ") and NCCL 2.26+ timestamps before
// "host:pid:tid [dev]" are skipped. WARN lines carry "file:line [(func)]" before the keyword.
// A line whose header is partial is still returned (see LogLine). nullopt for any other line.
std::optional<LogLine> ParseLogLine(std::string_view line);

// ParseLogLine with a memo of the last header: NCCL prints in bursts per thread, so a line whose
// bytes before the keyword are the last line's "host:pid:tid [dev] " reuses its fields instead of
// parsing them again. Same results as ParseLogLine, except that `host` points into the parser
// (valid until the next Parse).
class LineParser {
 public:
  // keyword_at: where the caller already found the line's first "NCCL " (npos: not known; an
  // offset that does not hold "NCCL " is ignored). same_prefix: the caller vouches that the line's
  // bytes up to keyword_at are those of the line passed to the last Parse (LineReader's
  // same_prefix()), whose header is then reused without comparing it again.
  std::optional<LogLine> Parse(std::string_view line, size_t keyword_at = std::string_view::npos,
                               bool same_prefix = false);
  // The message of an INFO line whose bytes up to keyword_at the caller vouches are the last
  // parsed line's (as for Parse's same_prefix), when the memo holds that line's header: what
  // Parse would return as the message, its header being the memo's (same_header() is then true).
  // nullopt, and nothing changed, otherwise.
  std::optional<std::string_view> ReusedInfoMessage(std::string_view line, size_t keyword_at);
  // True when the last Parse reused the memo: the same host, pid and thread as the line whose
  // header the memo holds.
  bool same_header() const { return memo_.same; }
  // True when the memo now holds the last line's header (reused or just stored).
  bool header_memoized() const { return memo_.last; }

  struct Memo {
    std::string header;  // from the host up to the keyword
    size_t host_size = 0;
    size_t keyword_at = 0;  // where the keyword was in the line the header came from
    int64_t pid = -1;
    int64_t tid = -1;
    int cuda_dev = -1;
    bool same = false;
    bool last = false;
  };

 private:
  Memo memo_;
};

}  // namespace tocsin::nccl
