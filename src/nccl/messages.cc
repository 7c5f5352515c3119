#include "nccl/messages.h"

#include <bit>
#include <cctype>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "base/strings.h"

namespace tocsin::nccl {
namespace {

inline bool IsDigit(char c) { return c >= '0' && c <= '9'; }

#if defined(__SSE2__)
constexpr bool kSse2 = true;
// Bit i set when p[i] == c, for the 32 bytes at p (all readable).
inline uint32_t ByteMask32(const char* p, char c) {
  __m128i want = _mm_set1_epi8(c);
  __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16));
  return static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(lo, want))) |
         static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(hi, want))) << 16;
}
#else
constexpr bool kSse2 = false;
inline uint32_t ByteMask32(const char*, char) { return 0; }
#endif

inline bool IsBlank(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }  // as Trim

// Whether the N - 1 bytes at p are the literal's, with at most two loads per side (GCC calls memcmp
// for constant sizes of 6 bytes and more). The caller knows the bytes are there.
template <size_t N>
[[gnu::always_inline]] inline bool SameBytes(const char* p, const char (&lit)[N]) {
  constexpr size_t n = N - 1;
  static_assert(n >= 4 && n <= 16);
  if constexpr (n >= 8) {
    uint64_t a, b, c, d;
    std::memcpy(&a, p, 8);
    std::memcpy(&b, lit, 8);
    std::memcpy(&c, p + n - 8, 8);
    std::memcpy(&d, lit + n - 8, 8);
    return ((a ^ b) | (c ^ d)) == 0;
  } else {
    uint32_t a, b, c, d;
    std::memcpy(&a, p, 4);
    std::memcpy(&b, lit, 4);
    std::memcpy(&c, p + n - 4, 4);
    std::memcpy(&d, lit + n - 4, 4);
    return ((a ^ b) | (c ^ d)) == 0;
  }
}

// The first whitespace at or after pos (t.size() when none). Eight bytes at a time: the lowest
// byte below '!' in a word is found exactly with the "has less than" bit trick, then tested.
[[gnu::always_inline]] inline size_t TokenEnd(std::string_view t, size_t pos) {
  if constexpr (std::endian::native == std::endian::little) {
    constexpr uint64_t kOnes = 0x0101010101010101ull;
    constexpr uint64_t kHigh = 0x8080808080808080ull;
    while (pos + 8 <= t.size()) {
      uint64_t x;
      std::memcpy(&x, t.data() + pos, 8);
      uint64_t below = (x - kOnes * '!') & ~x & kHigh;
      if (below == 0) {
        pos += 8;
        continue;
      }
      size_t at = pos + static_cast<size_t>(std::countr_zero(below) / 8);
      if (IsBlank(t[at])) return at;
      pos = at + 1;  // a control byte inside the token
    }
  }
  while (pos < t.size() && !IsBlank(t[pos])) ++pos;
  return pos;
}

// Reads a decimal int (at most 9 digits) at s[i], advancing i.
inline std::optional<int> ReadInt(std::string_view s, size_t& i) {
  size_t start = i;
  int v = 0;
  while (i < s.size() && IsDigit(s[i]) && i - start < 9) v = v * 10 + (s[i++] - '0');
  if (i == start || (i < s.size() && IsDigit(s[i]))) return std::nullopt;
  return v;
}

}  // namespace

std::optional<std::string> ParseUsingNetwork(std::string_view msg) {
  static constexpr std::string_view kPrefix = "Using network ";
  if (!msg.starts_with(kPrefix)) return std::nullopt;
  std::string_view name = Trim(msg.substr(kPrefix.size()));
  if (name.empty()) return std::nullopt;
  return std::string(name);
}

std::optional<std::vector<IbDevice>> ParseIbDevices(std::string_view msg) {
  std::vector<IbDevice> out;
  if (!ParseIbDevices(msg, out)) return std::nullopt;
  return out;
}

bool ParseIbDevices(std::string_view msg, std::vector<IbDevice>& out) {
  static constexpr std::string_view kPrefix = "NET/IB : Using";
  out.clear();
  if (!msg.starts_with(kPrefix)) return false;
  std::string_view list = msg.substr(kPrefix.size());
  size_t oob = list.find(';');
  if (oob != std::string_view::npos) list = list.substr(0, oob);
  // Every "[idx]" or "[idx] " followed by "name:port[:rail][:plane]/LL" is a device; fused
  // "[0]={...}" entries contain the physical devices, which this also finds.
  size_t i = 0;
  while ((i = list.find('[', i)) != std::string_view::npos) {
    size_t j = i + 1;
    auto index = ReadInt(list, j);
    if (!index || j >= list.size() || list[j] != ']') {
      ++i;
      continue;
    }
    ++j;
    while (j < list.size() && list[j] == ' ') ++j;
    size_t end = j;
    while (end < list.size() && list[end] != ' ' && list[end] != ',' && list[end] != '}' &&
           list[end] != '[') {
      ++end;
    }
    // mlx5_0:1/IB, mlx5_0:1:2:0/RoCE, mlx5_0:1/IB/SHARP: the link layer follows the first '/'
    // after the port; anything after it is flags.
    // (Byte loops: the tokens are a dozen bytes, shorter than a library call is worth.)
    std::string_view tok = list.substr(j, end - j);
    size_t colon = 0;
    while (colon < tok.size() && tok[colon] != ':') ++colon;
    size_t slash = colon;
    while (slash < tok.size() && tok[slash] != '/') ++slash;
    size_t more = slash + 1;
    while (more < tok.size() && tok[more] != '/') ++more;
    if (colon > 0 && slash + 1 < more) {
      size_t k = colon + 1;
      auto port = ReadInt(tok, k);
      if (port) {
        out.push_back({*index, tok.substr(0, colon), *port, tok.substr(slash + 1, more - slash - 1),
                       more < tok.size() ? tok.substr(more + 1) : std::string_view()});
      }
    }
    i = end;
  }
  return !out.empty();
}

bool IsIbNoDevice(std::string_view msg) { return msg.starts_with("NET/IB : No device found"); }

std::optional<std::vector<std::string>> ParseSocketDevices(std::string_view msg) {
  static constexpr std::string_view kPrefix = "NET/Socket : Using";
  if (!msg.starts_with(kPrefix)) return std::nullopt;
  std::vector<std::string> out;
  for (auto tok : SplitWhitespace(msg.substr(kPrefix.size()))) {
    size_t close = tok.find(']');
    if (tok.empty() || tok[0] != '[' || close == std::string_view::npos) continue;
    std::string_view dev = tok.substr(close + 1);
    size_t lt = dev.find('<');
    out.emplace_back(dev.substr(0, lt));
  }
  if (out.empty()) return std::nullopt;
  return out;
}

std::optional<std::string> ParsePluginFailure(std::string_view msg) {
  static constexpr std::string_view kPrefix = "Failed to initialize NET plugin ";
  if (!msg.starts_with(kPrefix)) return std::nullopt;
  return std::string(Trim(msg.substr(kPrefix.size())));
}

std::optional<std::string> ParseOfiProvider(std::string_view msg) {
  if (!msg.starts_with("NET/OFI Selected")) return std::nullopt;
  size_t is = msg.find(" is ");
  if (is == std::string_view::npos) return std::nullopt;
  std::string_view rest = msg.substr(is + 4);
  size_t end = rest.find_first_of(", (");
  return std::string(Trim(rest.substr(0, end)));
}

std::optional<Channel> ParseChannel(std::string_view msg) {
  // One left-to-right pass with a pointer and literals (these are most of a big log's NCCL lines):
  // "Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA", "Ring 00 : 7 -> 8 via P2P/IPC".
  const char* p = msg.data();
  const char* const e = p + msg.size();
  uint64_t head = 0;  // "Channel " as one load (most NCCL lines of a big log are channel lines)
  if (msg.size() >= 8) std::memcpy(&head, msg.data(), 8);
  uint64_t channel;
  std::memcpy(&channel, "Channel ", 8);
  if (head == channel) {
    p += 8;
  } else if (msg.starts_with("Ring ")) {
    p += 5;
  } else {
    return std::nullopt;
  }
  while (p < e && *p != ' ') ++p;  // "00/0"
  if (e - p < 3 || std::memcmp(p, " : ", 3) != 0) return std::nullopt;
  p += 3;
  // The peers, "0[0] -> 8[0] [send] ", up to the first " via ": the arrow, "->" at the first
  // '>', must be before it (a ring listing, "Channel 00/32 :  0 1 2 3", has neither).
  const char* peers = p;
  const char* via = nullptr;
  const char* arrow = nullptr;
  if constexpr (kSse2) {
    // The common case in one pass: both bytes' positions in the next 32 bytes as bitmasks.
    if (e - peers >= 32) {
      uint32_t vs = ByteMask32(peers, 'v');
      uint32_t gts = ByteMask32(peers, '>');
      for (; vs != 0; vs &= vs - 1) {
        const char* v = peers + std::countr_zero(vs);
        if (v + 4 > e) break;
        if (v[-1] == ' ' && v[1] == 'i' && v[2] == 'a' && v[3] == ' ') {
          via = v;
          break;
        }
      }
      if (via != nullptr) {
        uint32_t before_via = gts & ((1u << (via - peers)) - 1);
        if (before_via == 0) return std::nullopt;
        arrow = peers + std::countr_zero(before_via);
      } else {
        p = peers + 32;  // every 'v' of the first 32 bytes was looked at: on from there
      }
    }
  }
  if (via == nullptr) {
    // memchr: vectorised, cheaper than a byte loop even over these few bytes.
    while (p + 4 <= e) {
      p = static_cast<const char*>(std::memchr(p, 'v', static_cast<size_t>(e - p - 3)));
      if (p == nullptr) return std::nullopt;
      if (p[1] == 'i' && p[2] == 'a' && p[3] == ' ' && p[-1] == ' ') {
        via = p;
        break;
      }
      ++p;  // the 'v' of "[receive]"
    }
    if (via == nullptr) return std::nullopt;
    arrow = static_cast<const char*>(std::memchr(peers, '>', static_cast<size_t>(via - peers)));
  }
  if (arrow == nullptr || arrow == peers || arrow[-1] != '-') return std::nullopt;
  Channel ch;
  // Compares of constant size below, inline (no library call on the hot path).
  const char* before_end = via - 1;
  if (before_end - peers >= 6 && std::memcmp(before_end - 6, "[send]", 6) == 0) {
    ch.direction = "send";
  } else if (before_end - peers >= 9 && std::memcmp(before_end - 9, "[receive]", 9) == 0) {
    ch.direction = "receive";
  }
  p = via + 4;
  std::string_view path(p, static_cast<size_t>(e - p));
  if (e - p >= 4 && std::memcmp(p, "NET/", 4) == 0) {
    ch.transport = "NET";
    ch.link = Link::kNet;
    // The plugin name ends at the "/<device index>" that follows it; names may hold spaces.
    const char* name = p + 4;
    const char* k = name;
    while (k + 1 < e && !(k[0] == '/' && IsDigit(k[1]))) ++k;
    if (k + 1 >= e) return std::nullopt;
    ch.net = std::string_view(name, static_cast<size_t>(k - name));
    // "/GDRDMA" follows the device index (and "/Shared" or a proxy suffix may follow it).
    for (const char* g = k + 1; g + 7 <= e; ++g) {
      if (*g == '/' && std::memcmp(g, "/GDRDMA", 7) == 0) {
        ch.gdr = true;
        break;
      }
    }
  } else if (path.starts_with("P2P/")) {
    ch.transport = "P2P";
    ch.link = Link::kIntraNode;
  } else if (path.starts_with("SHM/") || path.starts_with("direct shared memory")) {
    ch.transport = "SHM";
    ch.link = Link::kIntraNode;
  } else if (path.starts_with("COLLNET/")) {
    ch.transport = "COLLNET";
    ch.link = Link::kCollNet;
  } else {
    ch.transport = path.substr(0, path.find('/'));
  }
  return ch;
}

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

std::optional<EnvSetting> ParseEnvSetting(std::string_view msg) {
  static constexpr std::string_view kByEnv = " set by environment to ";
  static constexpr std::string_view kSetTo = " set to ";
  static constexpr std::string_view kReset = "Comm config netName reset to NCCL_NET=";
  if (msg.starts_with(kReset))
    return EnvSetting{"NCCL_NET", std::string(Trim(msg.substr(kReset.size())))};
  if (!msg.starts_with("NCCL_")) return std::nullopt;
  size_t at = msg.find(kByEnv);
  size_t skip = kByEnv.size();
  if (at == std::string_view::npos) {
    at = msg.find(kSetTo);
    skip = kSetTo.size();
  }
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view name = msg.substr(0, at);
  if (name.find(' ') != std::string_view::npos) return std::nullopt;
  std::string_view value = Trim(msg.substr(at + skip));
  if (!value.empty() && value.back() == '.') value.remove_suffix(1);  // "... to 1."
  return EnvSetting{std::string(name), std::string(value)};
}

std::optional<std::string> ParseVersion(std::string_view msg) {
  static constexpr std::string_view kPrefix = "NCCL version ";
  if (!msg.starts_with(kPrefix)) return std::nullopt;
  std::string_view v = msg.substr(kPrefix.size());
  size_t end = v.find_first_of("+ ");
  v = Trim(v.substr(0, end));
  if (v.empty() || !IsDigit(v[0])) return std::nullopt;
  return std::string(v);
}

WarnKind ClassifyWarn(std::string_view msg) {
  // Benign: NCCL prints these and goes on.
  // graph/search.cc (2.5 to 2.2x): no channel found for the pattern, one simple-order channel
  // instead. 2.5's earlier form without "falling back" returned ncclInternalError.
  if (msg.starts_with("Could not find a path for pattern ")) {
    return msg.find("falling back") != std::string_view::npos ? WarnKind::kBenign
                                                              : WarnKind::kFatal;
  }
  // misc/ibvwrap.cc (up to 2.12): libibverbs not found; the IB transport's init fails and
  // init.cc's initNet takes the socket transport (an INFO line from 2.13).
  if (msg.starts_with("Failed to open libibverbs.so")) return WarnKind::kBenign;
  // misc/ibvwrap.cc CHECK_NOT_NULL: a verbs call without libibverbs loaded; ncclIbInit calls
  // wrap_ibv_fork_init() without looking at its result (printed by every rank of healthy jobs).
  if (msg.starts_with("lib wrapper not initialized")) return WarnKind::kBenign;
  // transport/net_ib.cc's async thread: "NET/IB : mlx5_0:1 Got async event : GID table change";
  // it only logs and acknowledges the event.
  if (msg.starts_with("NET/IB : ") && msg.find(" Got async event") != std::string_view::npos) {
    return WarnKind::kBenign;
  }
  // Fatal: each returns an error right after printing.
  static constexpr std::string_view kFatal[] = {
      "Cuda failure",                                      // CUDACHECK (include/checks.h)
      "Failed to initialize any NET plugin",               // plugin/net.cc, 2.19+
      "Error: network ",                                   // NCCL_NET names a missing network
      "Bootstrap : no socket interface found",             // bootstrap.cc
      "NET/Socket : No usable listening interface found",  // bootstrap.cc
      "Invalid rank requested",                            // init.cc
      "Duplicate GPU detected",                            // init.cc
  };
  for (std::string_view f : kFatal) {
    if (msg.starts_with(f)) return WarnKind::kFatal;
  }
  // IBV_*_CHECK and SYSCHECK: "Call to ibv_reg_mr failed ...", "Call to connect failed : ...".
  if (msg.starts_with("Call to ") && msg.find(" failed") != std::string_view::npos) {
    return WarnKind::kFatal;
  }
  return WarnKind::kUnknown;
}

const char* WarnKindName(WarnKind kind) {
  switch (kind) {
    case WarnKind::kBenign:
      return "benign";
    case WarnKind::kFatal:
      return "fatal";
    case WarnKind::kUnknown:
      break;
  }
  return "unknown";
}

bool IsRdmaNetwork(std::string_view net) {
  return net == "IB" || net.starts_with("IBext") || net == "gIB" || net == "Libfabric" ||
         net == "AWS Libfabric";
}

}  // namespace tocsin::nccl
