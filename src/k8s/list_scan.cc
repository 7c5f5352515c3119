#include "k8s/list_scan.h"

#include <algorithm>
#include <atomic>
#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace tocsin::k8s::internal {
namespace {

bool IsJsonSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// Bit k of each mask is byte k of a 64-byte block.
struct Masks {
  uint64_t quote, backslash, open, close;
};

#if defined(__x86_64__)
// '{' (0x7b) and '[' (0x5b) are the only bytes that OR 0x20 makes 0x7b; '}' and ']' likewise 0x7d.
Masks MasksSse2(const char* p) {
  const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\');
  const __m128i open = _mm_set1_epi8('{'), close = _mm_set1_epi8('}'), low = _mm_set1_epi8(0x20);
  Masks m{0, 0, 0, 0};
  for (int k = 0; k < 4; ++k) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
    __m128i folded = _mm_or_si128(v, low);
    int shift = 16 * k;
    m.quote |= uint64_t(uint32_t(_mm_movemask_epi8(_mm_cmpeq_epi8(v, quote)))) << shift;
    m.backslash |= uint64_t(uint32_t(_mm_movemask_epi8(_mm_cmpeq_epi8(v, backslash)))) << shift;
    m.open |= uint64_t(uint32_t(_mm_movemask_epi8(_mm_cmpeq_epi8(folded, open)))) << shift;
    m.close |= uint64_t(uint32_t(_mm_movemask_epi8(_mm_cmpeq_epi8(folded, close)))) << shift;
  }
  return m;
}

__attribute__((target("avx2"))) Masks MasksAvx2(const char* p) {
  const __m256i quote = _mm256_set1_epi8('"'), backslash = _mm256_set1_epi8('\\');
  const __m256i open = _mm256_set1_epi8('{'), close = _mm256_set1_epi8('}');
  const __m256i low = _mm256_set1_epi8(0x20);
  Masks m{0, 0, 0, 0};
  for (int k = 0; k < 2; ++k) {
    __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32 * k));
    __m256i folded = _mm256_or_si256(v, low);
    int shift = 32 * k;
    m.quote |= uint64_t(uint32_t(_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, quote)))) << shift;
    m.backslash |= uint64_t(uint32_t(_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, backslash))))
                   << shift;
    m.open |= uint64_t(uint32_t(_mm256_movemask_epi8(_mm256_cmpeq_epi8(folded, open)))) << shift;
    m.close |= uint64_t(uint32_t(_mm256_movemask_epi8(_mm256_cmpeq_epi8(folded, close))))
               << shift;
  }
  return m;
}
#endif

using MasksFn = Masks (*)(const char*);

std::atomic<int> g_forced{static_cast<int>(ScanKernel::kAuto)};

ScanKernel Detected() {
#if defined(__x86_64__)
  static const ScanKernel kernel =
      __builtin_cpu_supports("avx2") ? ScanKernel::kAvx2 : ScanKernel::kSse2;
  return kernel;
#else
  return ScanKernel::kPortable;
#endif
}

// The block kernel in use; null: the portable byte loop.
MasksFn Kernel() {
  auto forced = static_cast<ScanKernel>(g_forced.load(std::memory_order_relaxed));
  ScanKernel k = forced == ScanKernel::kAuto ? Detected() : forced;
  switch (k) {
#if defined(__x86_64__)
    case ScanKernel::kAvx2:
      return MasksAvx2;
    case ScanKernel::kSse2:
      return MasksSse2;
#endif
    default:
      return nullptr;
  }
}

// Bit k: the XOR of bits 0..k (inside a string, counting its opening quote).
uint64_t PrefixXor(uint64_t x) {
  x ^= x << 1;
  x ^= x << 2;
  x ^= x << 4;
  x ^= x << 8;
  x ^= x << 16;
  x ^= x << 32;
  return x;
}

Status NotAnObject(size_t index) {
  return Status::ParseError("items[" + std::to_string(index) + "]: not an object");
}

}  // namespace

bool SetScanKernelForTesting(ScanKernel kernel) {
#if defined(__x86_64__)
  if (kernel == ScanKernel::kAvx2 && !__builtin_cpu_supports("avx2")) return false;
#else
  if (kernel == ScanKernel::kAvx2 || kernel == ScanKernel::kSse2) return false;
#endif
  g_forced.store(static_cast<int>(kernel), std::memory_order_relaxed);
  return true;
}

const char* ActiveScanKernel() {
  switch (Detected()) {
    case ScanKernel::kAvx2:
      return "avx2";
    case ScanKernel::kSse2:
      return "sse2";
    default:
      return "portable";
  }
}

size_t ListScanner::keep_from() const {
  return in_items_ && depth_ >= 3 ? std::min(item_start_, pos_) : pos_;
}

void ListScanner::Discard(size_t n) {
  pos_ -= n;
  item_start_ = item_start_ >= n ? item_start_ - n : 0;
  item_end_ = item_end_ >= n ? item_end_ - n : 0;
}

// Returns true when stopped at a closing bracket that would bring depth to 2.
bool ListScanner::SkipBytes(const char* p, size_t to) {
  for (; pos_ < to; ++pos_) {
    char c = p[pos_];
    if (in_string_) {
      if (escaped_) {
        escaped_ = false;
      } else if (c == '\\') {
        escaped_ = true;
      } else if (c == '"') {
        in_string_ = false;
      }
    } else if (c == '"') {
      in_string_ = true;
    } else if (c == '{' || c == '[') {
      ++depth_;
    } else if (c == '}' || c == ']') {
      if (depth_ == 3) return true;
      --depth_;
    }
  }
  return false;
}

void ListScanner::Skip(std::string_view s) {
  const char* p = s.data();
  const size_t n = s.size();
  MasksFn masks = Kernel();
  while (pos_ < n) {
    if (masks != nullptr && !escaped_ && pos_ + 64 <= n) {
      Masks m = masks(p + pos_);
      if (m.backslash == 0) {  // a block with escapes goes byte by byte
        uint64_t in_string = PrefixXor(m.quote) ^ (in_string_ ? ~uint64_t{0} : 0);
        uint64_t open = m.open & ~in_string;
        uint64_t brackets = open | (m.close & ~in_string);
        while (brackets != 0) {
          int k = __builtin_ctzll(brackets);
          if ((open >> k) & 1) {
            ++depth_;
          } else if (depth_ == 3) {
            pos_ += static_cast<size_t>(k);
            in_string_ = false;  // a bracket outside strings
            return;
          } else {
            --depth_;
          }
          brackets &= brackets - 1;
        }
        in_string_ = (in_string >> 63) != 0;
        pos_ += 64;
        continue;
      }
    }
    if (SkipBytes(p, std::min(n, pos_ + 64))) return;
  }
}

Result<ListScanner::Step> ListScanner::Next(std::string_view s, bool final) {
  const size_t n = s.size();
  for (;;) {
    if (depth_ >= 3) Skip(s);
    if (pos_ >= n) break;
    const size_t i = pos_;
    const char c = s[i];
    if (c == '"') {
      size_t j = i + 1;
      while (j < n && s[j] != '"') j += s[j] == '\\' ? 2 : 1;
      if (j >= n) {
        if (!final) return Step::kMore;  // resumes at the opening quote
        return Status::ParseError("unterminated string (truncated document?)");
      }
      if (depth_ == 1 || (in_meta_ && depth_ == 2)) {  // the List's own fields only
        std::string_view str = s.substr(i + 1, j - i - 1);
        size_t k = j + 1;
        while (k < n && IsJsonSpace(s[k])) ++k;
        if (k >= n && !final) return Step::kMore;
        bool is_key = k < n && s[k] == ':';
        std::string& key = depth_ == 1 ? last_key_ : meta_key_;
        if (is_key) {
          key.assign(str);
        } else if (depth_ == 1 && key == "kind") {
          layout_.kind.assign(str);
        } else if (depth_ == 2 && key == "continue") {
          layout_.continue_token.assign(str);
        } else if (depth_ == 2 && key == "resourceVersion") {
          layout_.resource_version.assign(str);
        }
      } else if (in_items_ && depth_ == 2) {
        return NotAnObject(items_);
      }
      pos_ = j + 1;
      continue;
    }
    if (c == '{' || c == '[') {
      if (depth_ == 1 && c == '[' && last_key_ == "items") {
        in_items_ = true;
        layout_.has_items = true;
      } else if (depth_ == 1 && c == '{' && last_key_ == "metadata") {
        in_meta_ = true;
      } else if (in_items_ && depth_ == 2) {
        if (c != '{') return NotAnObject(items_);
        item_start_ = i;
      }
      ++depth_;
    } else if (c == '}' || c == ']') {
      if (--depth_ < 0) return Status::ParseError("unbalanced '" + std::string(1, c) + "'");
      if (in_items_ && depth_ == 2 && c == '}') {
        item_end_ = i + 1;
        ++items_;
        pos_ = i + 1;
        return Step::kItem;
      }
      if (in_items_ && depth_ == 1 && c == ']') in_items_ = false;
      if (in_meta_ && depth_ == 1) in_meta_ = false;
    } else if (in_items_ && depth_ == 2 && !IsJsonSpace(c) && c != ',') {
      return NotAnObject(items_);
    }
    pos_ = i + 1;
  }
  if (!final) return Step::kMore;
  if (in_string_) return Status::ParseError("unterminated string (truncated document?)");
  if (depth_ != 0) return Status::ParseError("unbalanced braces (truncated document?)");
  return Step::kEnd;
}

Status ScanList(std::string_view s, ListLayout& out) {
  ListScanner scanner;
  for (;;) {
    TOCSIN_ASSIGN_OR_RETURN(ListScanner::Step step, scanner.Next(s, true));
    if (step != ListScanner::Step::kItem) break;
    out.items.push_back({scanner.item_begin(), scanner.item_end()});
  }
  const ListLayout& l = scanner.layout();
  out.has_items = l.has_items;
  out.kind = l.kind;
  out.continue_token = l.continue_token;
  out.resource_version = l.resource_version;
  return Status::Ok();
}

}  // namespace tocsin::k8s::internal
