#pragma once

// Byte-level helpers shared by the NCCL message parsers (messages.cc, init_complete.cc): inline,
// for the hot path of `tocsin nccl` on big logs.

#include <bit>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>
#include <type_traits>

namespace tocsin::nccl::scan {

inline bool IsDigit(char c) { return c >= '0' && c <= '9'; }

inline bool IsBlank(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }  // as Trim

// Whether the N - 1 bytes at p are the literal's, with at most two loads per side (GCC calls memcmp
// for constant sizes of 6 bytes and more). The caller knows the bytes are there.
template <size_t N>
[[gnu::always_inline]] inline bool SameBytes(const char* p, const char (&lit)[N]) {
  constexpr size_t n = N - 1;
  static_assert(n >= 4 && n <= 16);
  using Word = std::conditional_t<(n >= 8), uint64_t, uint32_t>;
  constexpr size_t w = sizeof(Word);
  Word a, b, c, d;
  std::memcpy(&a, p, w);
  std::memcpy(&b, lit, w);
  std::memcpy(&c, p + n - w, w);
  std::memcpy(&d, lit + n - w, w);
  return ((a ^ b) | (c ^ d)) == 0;
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

}  // namespace tocsin::nccl::scan
