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
  // A launcher prefix glued with a space-free bracket, e.g. "[0]host": keep what follows ']'.
  size_t bracket = host.rfind(']');
  if (bracket != std::string_view::npos) host = host.substr(bracket + 1);
  if (host.empty()) return false;
  out.host = host;
  out.pid = *pid;
  out.tid = *tid;
  return true;
}

// Looks right-to-left for "host:pid:tid [dev]" ending before `end`.
bool ParseHeader(std::string_view line, size_t end, LogLine& out) {
  size_t pos = end;
  for (int tries = 0; tries < 4; ++tries) {
    size_t close = line.rfind(']', pos == 0 ? 0 : pos - 1);
    if (close == std::string_view::npos || close == 0) return false;
    size_t open = line.rfind('[', close);
    if (open == std::string_view::npos) return false;
    auto dev = Decimal(Trim(line.substr(open + 1, close - open - 1)));
    if (dev) {
      size_t tok_end = open;
      while (tok_end > 0 && IsSpace(line[tok_end - 1])) --tok_end;
      size_t tok_start = tok_end;
      while (tok_start > 0 && !IsSpace(line[tok_start - 1])) --tok_start;
      if (tok_end > tok_start &&
          ParseHostPidTid(line.substr(tok_start, tok_end - tok_start), out)) {
        out.cuda_dev = static_cast<int>(*dev);
        return true;
      }
    }
    pos = open;
  }
  return false;
}

}  // namespace

std::optional<LogLine> ParseLogLine(std::string_view line) {
  static constexpr std::string_view kInfo = "NCCL INFO";
  static constexpr std::string_view kWarn = "NCCL WARN";
  static constexpr std::string_view kVersion = "NCCL version ";
  size_t at = line.find("NCCL ");
  while (at != std::string_view::npos) {
    std::string_view rest = line.substr(at);
    LogLine out;
    bool info = rest.substr(0, kInfo.size()) == kInfo;
    bool warn = !info && rest.substr(0, kWarn.size()) == kWarn;
    if (info || warn) {
      out.kind = info ? LineKind::kInfo : LineKind::kWarn;
      out.message = Trim(rest.substr(kInfo.size()));
      if (!ParseHeader(line, at, out)) {
        out.host = {};  // keyword without a recognisable header: still an NCCL line
      }
      return out;
    }
    if (rest.substr(0, kVersion.size()) == kVersion) {
      out.kind = LineKind::kVersion;
      out.message = Trim(rest);
      return out;
    }
    at = line.find("NCCL ", at + 5);
  }
  return std::nullopt;
}

}  // namespace tocsin::nccl
