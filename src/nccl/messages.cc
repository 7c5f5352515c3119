#include "nccl/messages.h"

#include <bit>
#include <cctype>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "base/strings.h"
#include "nccl/messages_scan.h"

namespace tocsin::nccl {
namespace {

using namespace scan;

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
