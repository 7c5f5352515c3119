#include "nccl/log_line.h"

#include <cstring>

#include "base/strings.h"

namespace tocsin::nccl {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// Whole-string non-negative decimal of at most 18 digits (pids, tids, device numbers).
std::optional<int64_t> Decimal(std::string_view s) {
  if (s.empty() || s.size() > 18) return std::nullopt;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Console copies glue a timestamp straight onto the host ("2026-11-29T10:00:01.5Zgpu-01:1:2"),
// and NCCL_DEBUG_TIMESTAMP_FORMAT may lack its trailing space: a host scan that stops at the
// time's last ':' starts with the rest of the time. When the byte before the host is a ':' after a
// digit, this returns the length of that rest (two digits, an optional [.,]fraction, an optional
// 'Z') when a letter follows it; else 0.
size_t GluedTimeLength(std::string_view host, std::string_view before) {
  if (before.size() < 2 || before.back() != ':' || !IsDigit(before[before.size() - 2])) return 0;
  size_t i = 0;
  while (i < host.size() && i < 2 && IsDigit(host[i])) ++i;
  if (i != 2) return 0;
  if (i < host.size() && (host[i] == '.' || host[i] == ',')) {
    size_t j = i + 1;
    while (j < host.size() && IsDigit(host[j])) ++j;
    if (j == i + 1) return 0;
    i = j;
  }
  if (i < host.size() && host[i] == 'Z') ++i;
  bool letter =
      i < host.size() && ((host[i] >= 'a' && host[i] <= 'z') || (host[i] >= 'A' && host[i] <= 'Z'));
  return letter ? i : 0;
}

// Parses "host:pid:tid" at the end of `token` (anything glued before host, such as mpirun's
// "[1,7]<stdout>:", is ignored). Hostnames contain no ':'.
bool ParseHostPidTid(std::string_view token, LogLine& out) {
  size_t c3 = token.rfind(':');
  if (c3 == std::string_view::npos || c3 == 0) return false;
  size_t c2 = token.rfind(':', c3 - 1);
  if (c2 == std::string_view::npos || c2 == 0) return false;
  auto tid = Decimal(token.substr(c3 + 1));
  auto pid = Decimal(token.substr(c2 + 1, c3 - c2 - 1));
  if (!tid || !pid) return false;
  size_t c1 = token.rfind(':', c2 - 1);
  std::string_view host =
      c1 == std::string_view::npos ? token.substr(0, c2) : token.substr(c1 + 1, c2 - c1 - 1);
  if (c1 != std::string_view::npos)
    host.remove_prefix(GluedTimeLength(host, token.substr(0, c1 + 1)));
  // A launcher prefix glued with a space-free bracket, e.g. "[0]host": keep what follows ']'.
  size_t bracket = host.rfind(']');
  if (bracket != std::string_view::npos) host = host.substr(bracket + 1);
  if (host.empty()) return false;
  out.host = host;
  out.pid = *pid;
  out.tid = *tid;
  return true;
}

bool IsHostChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_';
}

// What NCCL prints between "[dev]" and the keyword: nothing for INFO, "file:line" and an
// optional "(func)" for WARN.
bool IsHeaderTail(std::string_view tail, bool warn) {
  tail = Trim(tail);
  if (tail.empty()) return true;
  if (!warn) return false;
  size_t space = tail.find(' ');
  std::string_view where = tail.substr(0, space);
  size_t colon = where.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || !Decimal(where.substr(colon + 1))) {
    return false;
  }
  if (space == std::string_view::npos) return true;
  std::string_view func = Trim(tail.substr(space));
  return func.size() >= 2 && func.front() == '(' && func.back() == ')' &&
         func.find(' ') == std::string_view::npos;
}

// A header whose pid:tid the poster replaced ("host:XXXXXX [5]"): the host, when the token before
// the device holds one, glued launcher prefixes ("[1,7]<stdout>:") cut as ParseHostPidTid does.
std::string_view RedactedHost(std::string_view token) {
  size_t bracket = token.rfind(']');
  if (bracket != std::string_view::npos) token = token.substr(bracket + 1);
  for (std::string_view tag : {"<stdout>:", "<stderr>:"}) {
    if (token.substr(0, tag.size()) == tag) token = token.substr(tag.size());
  }
  size_t colon = token.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == token.size()) return {};
  std::string_view host = token.substr(0, colon);
  for (char c : host) {
    if (!IsHostChar(c)) return {};
  }
  return host;
}

// Looks right-to-left for "host:pid:tid [dev]" ending before `end`. When none is there, the
// nearest "[dev]" that ends NCCL's header (only "file:line (func)" between it and a WARN
// keyword) still gives the device, and the host when the pid alone was redacted: pid and tid are
// then -1. Off the hot path (WARN lines and odd headers): kept out of line so that Parse, which
// runs for every NCCL line, stays small.
[[gnu::noinline, gnu::cold]] bool ParseHeader(std::string_view line, size_t end, bool warn,
                                              LogLine& out) {
  size_t pos = end;
  bool partial = false;
  for (int tries = 0; tries < 4; ++tries) {
    size_t close = line.rfind(']', pos == 0 ? 0 : pos - 1);
    if (close == std::string_view::npos || close == 0) break;
    size_t open = line.rfind('[', close);
    if (open == std::string_view::npos) break;
    auto dev = Decimal(Trim(line.substr(open + 1, close - open - 1)));
    if (dev) {
      size_t tok_end = open;
      while (tok_end > 0 && IsSpace(line[tok_end - 1])) --tok_end;
      size_t tok_start = tok_end;
      while (tok_start > 0 && !IsSpace(line[tok_start - 1])) --tok_start;
      std::string_view token = line.substr(tok_start, tok_end - tok_start);
      if (tok_end > tok_start && ParseHostPidTid(token, out)) {
        out.cuda_dev = static_cast<int>(*dev);
        return true;
      }
      if (tries == 0 && IsHeaderTail(line.substr(close + 1, end - close - 1), warn)) {
        partial = true;
        out.host = RedactedHost(token);
        out.cuda_dev = static_cast<int>(*dev);
      }
    }
    pos = open;
  }
  if (!partial) {
    out.host = {};
    out.cuda_dev = -1;
  }
  out.pid = out.tid = -1;
  return false;
}

// The common layout, read right to left from the keyword at `at` with no library calls (this runs
// once per NCCL line of logs that may be gigabytes): "host:pid:tid [dev] NCCL ...". False for
// anything else (a WARN line's "file:line (func)", spaces inside the brackets), which the general
// ParseHeader then handles with the same result.
// Sets *start to where the host begins.
bool ParseHeaderFast(std::string_view line, size_t at, LogLine& out, size_t* start) {
  const char* s = line.data();
  size_t i = at;
  while (i > 0 && s[i - 1] == ' ') --i;
  if (i == 0 || s[i - 1] != ']') return false;
  --i;
  // Reads the decimal that ends at s[i - 1], moving i to its first digit.
  auto digits_back = [&](int64_t& value) {
    size_t end = i;
    int64_t scale = 1;
    value = 0;
    while (i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9' && end - i < 18) {
      value += (s[i - 1] - '0') * scale;
      scale *= 10;
      --i;
    }
    return i < end && !(i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9');
  };
  int64_t dev = 0;
  int64_t tid = 0;
  int64_t pid = 0;
  if (!digits_back(dev) || i == 0 || s[i - 1] != '[') return false;
  --i;
  while (i > 0 && IsSpace(s[i - 1])) --i;
  if (!digits_back(tid) || i == 0 || s[i - 1] != ':') return false;
  --i;
  if (!digits_back(pid) || i == 0 || s[i - 1] != ':') return false;
  size_t host_end = --i;
  while (i > 0 && !IsSpace(s[i - 1]) && s[i - 1] != ':' && s[i - 1] != ']') --i;
  i += GluedTimeLength(line.substr(i, host_end - i), line.substr(0, i));
  if (i == host_end) return false;
  out.host = line.substr(i, host_end - i);
  out.pid = pid;
  out.tid = tid;
  out.cuda_dev = static_cast<int>(dev);
  *start = i;
  return true;
}

// Where "NCCL " starts at or after `from`: memchr for the rare 'N', then a fixed-size compare.
size_t FindKeyword(std::string_view line, size_t from) {
  const char* s = line.data();
  while (from + 5 <= line.size()) {
    const void* n = std::memchr(s + from, 'N', line.size() - from - 4);
    if (n == nullptr) return std::string_view::npos;
    size_t at = static_cast<size_t>(static_cast<const char*>(n) - s);
    if (std::memcmp(s + at + 1, "CCL ", 4) == 0) return at;
    from = at + 1;
  }
  return std::string_view::npos;
}

inline std::string_view TrimMessage(std::string_view m) {
  const char* b = m.data();
  const char* e = b + m.size();
  auto blank = [](char c) { return c == ' ' || (c >= '\t' && c <= '\r'); };  // as Trim
  if (b < e && *b == ' ') ++b;  // the usual single space first
  while (b < e && blank(*b)) ++b;
  while (e > b && blank(e[-1])) --e;
  return std::string_view(b, static_cast<size_t>(e - b));
}

// The header of line at `at`, from the memo when the bytes before the keyword are the memo's
// header and the byte before that stops ParseHeaderFast's host scan (so it would read the same).
bool ParseHeaderMemo(std::string_view line, size_t at, LogLine& out, LineParser::Memo* memo) {
  const std::string& h = memo->header;
  if (!h.empty() && at >= h.size() &&
      std::memcmp(line.data() + at - h.size(), h.data(), h.size()) == 0) {
    size_t before = at - h.size();
    bool stops = before == 0 || IsSpace(line[before - 1]) || line[before - 1] == ':' ||
                 line[before - 1] == ']';
    // ...unless the header is the rest of a glued time, which ParseHeaderFast would drop.
    if (stops &&
        GluedTimeLength(std::string_view(h).substr(0, memo->host_size), line.substr(0, before))) {
      stops = false;
    }
    if (stops) {
      out.host = std::string_view(h).substr(0, memo->host_size);
      out.pid = memo->pid;
      out.tid = memo->tid;
      out.cuda_dev = memo->cuda_dev;
      memo->same = true;
      memo->last = true;
      memo->keyword_at = at;
      return true;
    }
  }
  size_t start = 0;
  if (!ParseHeaderFast(line, at, out, &start)) return false;
  memo->header.assign(line.data() + start, at - start);
  memo->host_size = out.host.size();
  memo->pid = out.pid;
  memo->tid = out.tid;
  memo->cuda_dev = out.cuda_dev;
  memo->keyword_at = at;
  out.host = std::string_view(memo->header).substr(0, memo->host_size);
  memo->last = true;
  return true;
}

std::optional<LogLine> Parse(std::string_view line, LineParser::Memo* memo, size_t keyword_at,
                             bool same_prefix) {
  static constexpr std::string_view kVersion = "NCCL version ";
  // The last line's header, its bytes vouched for by the caller: only the keyword's kind is read.
  if (same_prefix && memo != nullptr && memo->last && memo->keyword_at == keyword_at &&
      line.size() >= keyword_at + 9) {
    const char* kind = line.data() + keyword_at + 5;
    bool info = std::memcmp(kind, "INFO", 4) == 0;
    if (info || std::memcmp(kind, "WARN", 4) == 0) {
      LogLine out;
      out.kind = info ? LineKind::kInfo : LineKind::kWarn;
      out.message = TrimMessage(line.substr(keyword_at + 9));
      out.host = std::string_view(memo->header).substr(0, memo->host_size);
      out.pid = memo->pid;
      out.tid = memo->tid;
      out.cuda_dev = memo->cuda_dev;
      memo->same = true;
      return out;
    }
  }
  if (memo != nullptr) memo->same = memo->last = false;
  bool known = keyword_at <= line.size() && line.size() - keyword_at >= 5 &&
               std::memcmp(line.data() + keyword_at, "NCCL ", 5) == 0;
  size_t at = known ? keyword_at : FindKeyword(line, 0);
  while (at != std::string_view::npos) {
    std::string_view rest = line.substr(at);
    LogLine out;
    bool info = rest.size() >= 9 && std::memcmp(rest.data() + 5, "INFO", 4) == 0;
    bool warn = !info && rest.size() >= 9 && std::memcmp(rest.data() + 5, "WARN", 4) == 0;
    if (info || warn) {
      out.kind = info ? LineKind::kInfo : LineKind::kWarn;
      out.message = TrimMessage(rest.substr(9));
      size_t start = 0;
      bool header = memo != nullptr ? ParseHeaderMemo(line, at, out, memo)
                                    : ParseHeaderFast(line, at, out, &start);
      // Without a full header (pid -1) it is still an NCCL line: ParseHeader keeps the device
      // and host it could read.
      if (!header) ParseHeader(line, at, out.kind == LineKind::kWarn, out);
      return out;
    }
    if (rest.substr(0, kVersion.size()) == kVersion) {
      out.kind = LineKind::kVersion;
      out.message = TrimMessage(rest);
      return out;
    }
    at = FindKeyword(line, at + 5);
  }
  return std::nullopt;
}

}  // namespace

std::optional<LogLine> ParseLogLine(std::string_view line) {
  return Parse(line, nullptr, std::string_view::npos, false);
}

std::optional<std::string_view> LineParser::ReusedInfoMessage(std::string_view line,
                                                              size_t keyword_at) {
  if (!memo_.last || memo_.keyword_at != keyword_at || line.size() < keyword_at + 9 ||
      std::memcmp(line.data() + keyword_at, "NCCL INFO", 9) != 0) {
    return std::nullopt;
  }
  memo_.same = true;
  return TrimMessage(line.substr(keyword_at + 9));
}

std::optional<LogLine> LineParser::Parse(std::string_view line, size_t keyword_at,
                                         bool same_prefix) {
  return nccl::Parse(line, &memo_, keyword_at, same_prefix);
}

}  // namespace tocsin::nccl
