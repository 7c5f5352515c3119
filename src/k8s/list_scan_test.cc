#include "k8s/list_scan.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "testing/status_matchers.h"

namespace tocsin::k8s::internal {
namespace {

constexpr ScanKernel kKernels[] = {ScanKernel::kPortable, ScanKernel::kSse2, ScanKernel::kAvx2};

// Restores the CPU's kernel after a test that forced one.
struct KernelGuard {
  ~KernelGuard() { SetScanKernelForTesting(ScanKernel::kAuto); }
};

std::string Describe(const Status& st, const ListLayout& l) {
  if (!st.ok()) return "error: " + st.message();
  std::string r = "kind=" + l.kind + " continue=" + l.continue_token +
                  " rv=" + l.resource_version + " has_items=" + std::to_string(l.has_items);
  for (auto [b, e] : l.items) r += " " + std::to_string(b) + "-" + std::to_string(e);
  return r;
}

std::string Whole(std::string_view s) {
  ListLayout l;
  Status st = ScanList(s, l);
  return Describe(st, l);
}

// The scan fed `step` bytes at a time, dropping what it no longer needs, as LoadFile's window.
std::string Streamed(std::string_view s, size_t step) {
  ListScanner scanner;
  std::string buf;
  size_t fed = 0, dropped = 0;
  ListLayout l;
  for (;;) {
    Result<ListScanner::Step> r = scanner.Next(buf, fed == s.size());
    if (!r.ok()) return Describe(r.status(), l);
    if (*r == ListScanner::Step::kEnd) break;
    if (*r == ListScanner::Step::kItem) {
      l.items.push_back({dropped + scanner.item_begin(), dropped + scanner.item_end()});
      continue;
    }
    size_t keep = scanner.keep_from();
    buf.erase(0, keep);
    scanner.Discard(keep);
    dropped += keep;
    size_t n = std::min(step, s.size() - fed);
    buf.append(s.substr(fed, n));
    fed += n;
  }
  const ListLayout& got = scanner.layout();
  l.kind = got.kind;
  l.continue_token = got.continue_token;
  l.resource_version = got.resource_version;
  l.has_items = got.has_items;
  return Describe(Status::Ok(), l);
}

const char* kList = R"({"kind":"PodList","metadata":{"continue":"c\"1","resourceVersion":"42"},
 "items":[{"a":"}]\"{[","b":[1,{"c":"d"}]},  {"x":{"y":"z\\"}} ,{}]})";

TEST(ListScanTest, ListFieldsAndItems) {
  KernelGuard guard;
  for (ScanKernel k : kKernels) {
    if (!SetScanKernelForTesting(k)) continue;
    ListLayout l;
    ASSERT_OK(ScanList(kList, l));
    EXPECT_EQ(l.kind, "PodList");
    EXPECT_EQ(l.continue_token, "c\\\"1");  // raw JSON contents
    EXPECT_EQ(l.resource_version, "42");
    ASSERT_EQ(l.items.size(), 3u);
    std::string_view s(kList);
    EXPECT_EQ(s.substr(l.items[0].first, l.items[0].second - l.items[0].first),
              R"({"a":"}]\"{[","b":[1,{"c":"d"}]})");
    EXPECT_EQ(s.substr(l.items[2].first, l.items[2].second - l.items[2].first), "{}");
  }
}

TEST(ListScanTest, HostileInputIsAnErrorForEveryKernelAndSplit) {
  KernelGuard guard;
  const std::pair<std::string, std::string> cases[] = {
      {R"({"items":[{"a":"never closed)", "unterminated string"},
      {R"({"items":[{"a":"b\)", "unterminated string"},
      {R"({"items":[{"a":{"b":1}})", "unbalanced braces"},
      {R"({"items":[1]})", "items[0]: not an object"},
      {R"({"items":[{},"x"]})", "items[1]: not an object"},
      {R"({"items":[{},[]]})", "items[1]: not an object"},
      {R"(}{)", "unbalanced '}'"},
  };
  for (const auto& [text, want] : cases) {
    for (ScanKernel k : kKernels) {
      if (!SetScanKernelForTesting(k)) continue;
      std::string whole = Whole(text);
      EXPECT_NE(whole.find(want), std::string::npos) << text << ": " << whole;
      for (size_t step : {1, 2, 7, 64}) EXPECT_EQ(Streamed(text, step), whole) << text;
    }
  }
}

// Items whose escapes, quotes and brackets fall on both sides of the 64-byte blocks the SIMD
// kernels read, and one nested deeper than any block.
TEST(ListScanTest, BlockBoundaries) {
  KernelGuard guard;
  for (size_t pad = 0; pad < 70; ++pad) {
    std::string s = R"({"kind":"List","items":[{"p":")" + std::string(pad, 'x') +
                    R"(\\","q":"\"}]{[\\\"","r":[[{"s":"t"}]]},)";
    s += "{\"deep\":" + std::string(100, '[') + std::string(100, ']') + "}]}";
    std::string portable;
    for (ScanKernel k : kKernels) {
      if (!SetScanKernelForTesting(k)) continue;
      std::string whole = Whole(s);
      ASSERT_EQ(whole.find("error"), std::string::npos) << whole;
      if (portable.empty()) portable = whole;
      EXPECT_EQ(whole, portable) << pad;
      EXPECT_EQ(Streamed(s, 1 + pad), whole) << pad;
    }
  }
}

// Random edits of a List: every kernel and every split gives the portable whole scan's answer.
TEST(ListScanTest, RandomDifferential) {
  KernelGuard guard;
  std::mt19937 rng(7);
  const std::string alphabet = "{}[]\"\\:, \nkinditemsmetadatacontinueList";
  std::string base = kList;
  for (int i = 0; i < 40; ++i) {
    base.insert(base.size() - 2, R"(,{"n":"item\"\\)" + std::to_string(i) +
                                     R"(","l":{"k":["v","}"]},"pad":")" +
                                     std::string(rng() % 90, ' ') + "\"}");
  }
  for (int round = 0; round < 3000; ++round) {
    std::string s = base.substr(0, 100 + rng() % (base.size() - 99));
    for (int m = rng() % 5; m > 0; --m) {
      size_t at = rng() % (s.size() + 1);
      char c = alphabet[rng() % alphabet.size()];
      switch (rng() % 3) {
        case 0:
          s.insert(s.begin() + static_cast<std::ptrdiff_t>(at), c);
          break;
        case 1:
          if (at < s.size()) s.erase(at, 1);
          break;
        default:
          if (at < s.size()) s[at] = c;
      }
    }
    SetScanKernelForTesting(ScanKernel::kPortable);
    std::string want = Whole(s);
    for (ScanKernel k : kKernels) {
      if (!SetScanKernelForTesting(k)) continue;
      ASSERT_EQ(Whole(s), want) << s;
      ASSERT_EQ(Streamed(s, 1 + rng() % 80), want) << s;
    }
  }
}

TEST(ListScanTest, ActiveKernelIsNamed) {
  std::string name = ActiveScanKernel();
  EXPECT_TRUE(name == "avx2" || name == "sse2" || name == "portable") << name;
}

}  // namespace
}  // namespace tocsin::k8s::internal
