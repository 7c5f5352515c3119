#include <cstdint>
#include <cstring>

#include "nccl/messages.h"
#include "nccl/messages_scan.h"

// "... - Init COMPLETE" lines: NCCL's 2.19+ layout in one pass, any other token by token.
namespace tocsin::nccl {

using namespace scan;

namespace {

// "Init COMPLETE" at the end of msg (trailing blanks aside): msg up to its end, or nullopt.
std::optional<std::string_view> InitCompleteText(std::string_view msg) {
  static constexpr char kText[] = "Init COMPLETE";
  static constexpr std::string_view kSuffix = kText;
  size_t end = msg.size();
  while (end > 0 && IsBlank(msg[end - 1])) --end;
  // The last byte first: most messages that reach here are not Init lines.
  if (end < kSuffix.size() || msg[end - 1] != 'E' ||
      !SameBytes(msg.data() + end - kSuffix.size(), kText)) {
    return std::nullopt;
  }
  return msg.substr(0, end);
}

// Whole-value decimal of 1 to 9 digits, else -1.
inline int TokenNumber(std::string_view v) {
  size_t i = 0;
  auto n = ReadInt(v, i);
  return n && i == v.size() ? *n : -1;
}

// One whitespace-separated token `key` with the token after it.
inline void TakePair(std::string_view key, std::string_view value, InitComplete& out) {
  switch (key.size()) {  // keys by length, then content: most tokens are values
    case 4:
      if (std::memcmp(key.data(), "rank", 4) == 0) out.rank = TokenNumber(value);
      if (std::memcmp(key.data(), "comm", 4) == 0) out.comm = value;
      break;
    case 6:
      if (std::memcmp(key.data(), "nranks", 6) == 0) out.nranks = TokenNumber(value);
      if (std::memcmp(key.data(), "commId", 6) == 0) out.comm_id = value;
      break;
    case 7:
      if (std::memcmp(key.data(), "cudaDev", 7) == 0) out.cuda_dev = TokenNumber(value);
      break;
  }
}

std::optional<InitComplete> Checked(const InitComplete& out) {
  if (out.rank < 0 || out.nranks <= 0) return std::nullopt;
  return out;
}

// True for the tokens TakePair reads as keys.
inline bool IsKey(std::string_view v) {
  switch (v.size()) {
    case 4:
      return std::memcmp(v.data(), "rank", 4) == 0 || std::memcmp(v.data(), "comm", 4) == 0;
    case 6:
      return std::memcmp(v.data(), "nranks", 6) == 0 || std::memcmp(v.data(), "commId", 6) == 0;
    case 7:
      return std::memcmp(v.data(), "cudaDev", 7) == 0;
  }
  return false;
}

// What NCCL 2.19+ prints, read in one pass: "<anything> comm C rank R nranks N cudaDev D nvmlDev
// V busId B commId I - Init COMPLETE" with single spaces, `comm` a whole token. Every key appears
// in it, after whatever comes before `comm`, and no value is a key, so its pairs are the last of
// each key: the token-by-token result. False (out unspecified) for any other layout.
bool ParseInitLayout(std::string_view t, InitComplete& out) {
  // Usually the first token ("comm ...") or the second ("ncclCommInitRank comm ...").
  size_t at = t.starts_with("comm ") ? 0 : t.find(' ') + 1;
  if (at == 0 && !t.starts_with("comm ")) return false;
  if (!t.substr(at).starts_with("comm ")) {
    at = 0;
    while (true) {
      at = t.find("comm ", at);
      if (at == std::string_view::npos) return false;
      if (at == 0 || IsBlank(t[at - 1])) break;
      ++at;
    }
  }
  size_t i = at + 5;
  auto value = [&](std::string_view& v) {
    size_t end = TokenEnd(t, i);
    v = t.substr(i, end - i);
    i = end;
    return !v.empty() && !IsKey(v);
  };
  auto literal = [&]<size_t N>(const char(&lit)[N]) {  // a compare of constant size, inline
    if (t.size() - i < N - 1 || !SameBytes(t.data() + i, lit)) return false;
    i += N - 1;
    return true;
  };
  std::string_view comm, rank, nranks, dev, nvml, bus, comm_id;
  if (!value(comm) || !literal(" rank ") || !value(rank) || !literal(" nranks ") ||
      !value(nranks) || !literal(" cudaDev ") || !value(dev) || !literal(" nvmlDev ") ||
      !value(nvml) || !literal(" busId ") || !value(bus) || !literal(" commId ") ||
      !value(comm_id) || !literal(" - Init COMPLETE") || i != t.size()) {
    return false;
  }
  out.comm = comm;
  out.rank = TokenNumber(rank);
  out.nranks = TokenNumber(nranks);
  out.cuda_dev = TokenNumber(dev);
  out.comm_id = comm_id;
  return true;
}

}  // namespace

namespace internal {

std::optional<InitComplete> ParseInitCompleteTokens(std::string_view msg) {
  auto text = InitCompleteText(msg);
  if (!text) return std::nullopt;
  std::string_view t = *text;
  InitComplete out;
  // Each whitespace-separated token with the one after it (no token vector, no bounds-checked
  // substr).
  const char* p = t.data();
  const char* const e = p + t.size();
  auto next_token = [&]() {
    if (p < e && *p == ' ') ++p;  // the usual single space first
    while (p < e && IsBlank(*p)) ++p;
    const char* start = p;
    p = t.data() + TokenEnd(t, static_cast<size_t>(p - t.data()));
    return std::string_view(start, static_cast<size_t>(p - start));
  };
  std::string_view key = next_token();
  while (!key.empty()) {
    std::string_view value = next_token();
    if (value.empty()) break;
    TakePair(key, value, out);
    key = value;
  }
  return Checked(out);
}

}  // namespace internal

std::optional<InitComplete> ParseInitComplete(std::string_view msg) {
  // A job's log has a line like this per rank and communicator: NCCL's own layout in one pass,
  // anything else token by token.
  auto text = InitCompleteText(msg);
  if (!text) return std::nullopt;
  InitComplete out;
  if (ParseInitLayout(*text, out)) return Checked(out);
  return internal::ParseInitCompleteTokens(msg);
}

}  // namespace tocsin::nccl
