#include "k8s/decode_stream.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>

#include "k8s/decode.h"
#include "k8s/list_scan.h"
#include "testing/status_matchers.h"
#include "testing/temp_dir.h"

namespace tocsin::k8s::internal {
namespace {

// What a decode put in a snapshot, as text to compare.
std::string Describe(const Status& st, const Snapshot& s) {
  std::string r = st.ok() ? "ok" : "error: " + st.message();
  for (const auto& n : s.nodes) r += " node:" + n.name + "/" + std::to_string(n.labels.size());
  for (const auto& p : s.pods) {
    r += " pod:" + p.ns + "/" + p.name + "/" + std::to_string(p.containers.size());
  }
  for (const auto& d : s.daemonsets) r += " ds:" + d.name;
  for (const auto& c : s.configmaps) r += " cm:" + c.name;
  for (const auto& j : s.jobs) r += " job:" + j.kind + "/" + j.name;
  for (const auto& [k, v] : s.other_kinds) r += " other:" + k + "=" + std::to_string(v);
  for (const auto& src : s.sources) r += " source:" + src;
  for (const auto& raw : s.raw) r += " raw:" + raw;
  return r;
}

// DecodeListStream over `text`, read `chunk` bytes at most at a time through a `window`; what
// DecodeJson gives when the stream declines (as LoadFile does).
std::string Streamed(std::string_view text, size_t window, size_t chunk, Snapshot& out,
                     bool* streamed = nullptr) {
  size_t at = 0;
  ReadFn read = [&](char* p, size_t n) -> Result<size_t> {
    n = std::min({n, chunk, text.size() - at});
    std::copy_n(text.data() + at, n, p);
    at += n;
    return n;
  };
  Result<bool> r = DecodeListStream(read, window, "snap.json", out);
  if (streamed != nullptr) *streamed = r.ok() && *r;
  if (r.ok() && !*r) return Describe(DecodeJson(text, "snap.json", out), out);
  return Describe(r.status(), out);
}

std::string Whole(std::string_view text, bool keep_raw = false) {
  Snapshot s;
  s.keep_raw = keep_raw;
  return Describe(DecodeJson(text, "snap.json", s), s);
}

const char* kPod = R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p%","namespace":"ns",
  "labels":{"job-name":"j"}},"spec":{"nodeName":"n","containers":[{"name":"c","image":"i",
  "env":[{"name":"NCCL_DEBUG","value":"INFO"}]}]},"status":{"phase":"Running"}})";

std::string Pod(int i, bool with_kind = true) {
  std::string p = kPod;
  p.replace(p.find('%'), 1, std::to_string(i));
  if (!with_kind) p.erase(p.find(R"("kind":"Pod",)"), 13);
  return p;
}

std::string List(const std::string& head, int pods, const std::string& tail, bool kinds = true) {
  std::string s = head + "\"items\":[";
  for (int i = 0; i < pods; ++i) s += (i > 0 ? ",\n" : "") + Pod(i, kinds);
  return s + "]" + tail + "}";
}

TEST(DecodeStreamTest, SameAsWholeTextForEveryOrderWindowAndRead) {
  const std::pair<std::string, bool> docs[] = {
      // kind first (the API server's order): streamed
      {List(R"({"kind":"List","metadata":{"resourceVersion":"1"},)", 30, ""), true},
      {List(R"({"kind":"PodList",)", 30, "", false), true},
      // kind after the items (kubectl's order), items with their own kind: streamed
      {List(R"({"apiVersion":"v1",)", 30, R"(,"kind":"List","metadata":{})"), true},
      // a typed list whose kind comes last and whose items have none: decoded whole
      {List(R"({"apiVersion":"v1",)", 30, R"(,"kind":"PodList")", false), false},
      // not a List at all, though it has items: decoded whole
      {List(R"({"kind":"Foo",)", 3, ""), false},
      {List(R"({)", 3, R"(,"kind":"Foo")"), false},
      // errors: a bad item, a truncated document, an item that is not an object
      {List(R"({"kind":"List",)", 5, R"(,"x":{"creationTimestamp":"no"})") + "]", true},
      {R"({"kind":"List","items":[{"kind":"Node","metadata":{"creationTimestamp":"x"}}]})", true},
      {List(R"({"kind":"List",)", 5, "").substr(0, 900), true},
      {R"({"kind":"List","items":[{"kind":"Node"},7]})", true},
      {R"({"kind":"List"})", true},
      {R"(  ["not", "an object"])", false},
  };
  for (const auto& [text, want_streamed] : docs) {
    std::string want = Whole(text);
    for (size_t window : {64, 256, 4096, 1 << 20}) {
      for (size_t chunk : {1, 13, 1000, 1 << 20}) {
        Snapshot s;
        bool streamed = false;
        EXPECT_EQ(Streamed(text, window, chunk, s, &streamed), want)
            << text << " window " << window << " chunk " << chunk;
        if (want.starts_with("ok")) {
          EXPECT_EQ(streamed, want_streamed) << text;
        }
      }
    }
  }
}

TEST(DecodeStreamTest, KeptTextAndWhatWasThereBefore) {
  std::string text = List(R"({"kind":"PodList",)", 4, "", false);
  Snapshot s;
  s.keep_raw = true;
  s.sources.push_back("before");
  s.other_kinds["Service"] = 1;
  Snapshot w = s;
  Status st = DecodeJson(text, "snap.json", w);
  EXPECT_EQ(Streamed(text, 128, 7, s), Describe(st, w));
  // The stream declines (a typed list named last): what it had decoded is undone.
  std::string late = List(R"({)", 4, R"(,"kind":"PodList")", false);
  Snapshot a = s, b = s;
  Status whole = DecodeJson(late, "snap.json", b);
  EXPECT_EQ(Streamed(late, 128, 7, a), Describe(whole, b));
}

TEST(DecodeStreamTest, ReadErrorLeavesTheSnapshotAsItWas) {
  std::string text = List(R"({"kind":"List",)", 50, "");
  size_t at = 0;
  ReadFn read = [&](char* p, size_t n) -> Result<size_t> {
    if (at > 2000) return Status::IoError("snap.json: Input/output error");
    n = std::min(n, text.size() - at);
    std::copy_n(text.data() + at, n, p);
    at += n;
    return n;
  };
  Snapshot s;
  Result<bool> r = DecodeListStream(read, 512, "snap.json", s);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("Input/output error"), std::string::npos);
  EXPECT_EQ(Describe(Status::Ok(), s), "ok");
}

// LoadFile reads a List through the window: the same snapshot as the whole text, also with the
// portable kernels a CPU without SSE2 or AVX2 runs: the scan's and simdjson's (whose stage 1 picks
// its implementation at run time; SIMDJSON_FORCE_IMPLEMENTATION=fallback does the same).
TEST(DecodeStreamTest, LoadFileStreamsAndFallsBack) {
  ::tocsin::testing::ScopedTempDir tmp("decode-stream");
  std::string big = List(R"({"kind":"List",)", 3000, "");  // ~900 KB: several windows
  std::string late = List(R"({)", 20, R"(,"kind":"PodList")", false);
  const simdjson::implementation* cpu = simdjson::get_active_implementation();
  const simdjson::implementation* portable = simdjson::get_available_implementations()["fallback"];
  ASSERT_NE(portable, nullptr);
  for (ScanKernel k : {ScanKernel::kAuto, ScanKernel::kPortable}) {
    ASSERT_TRUE(SetScanKernelForTesting(k));
    simdjson::get_active_implementation() = k == ScanKernel::kAuto ? cpu : portable;
    for (const std::string* text : {&big, &late}) {
      Snapshot s;
      Status st = LoadFile(tmp.Write("snap.json", *text), s);
      std::string want = Whole(*text);
      want.replace(want.find("source:snap.json"), 16, "source:" + tmp.path() + "/snap.json");
      EXPECT_EQ(Describe(st, s), want);
    }
  }
  SetScanKernelForTesting(ScanKernel::kAuto);
  simdjson::get_active_implementation() = cpu;
  Snapshot s;
  Status st = LoadFile(tmp.Write("bad.json", big.substr(0, big.size() - 3)), s);
  EXPECT_NE(st.message().find("unbalanced braces"), std::string::npos) << st.message();
  EXPECT_TRUE(s.pods.empty());
}

// Random cuts and edits of a List: the stream never disagrees with the whole text.
TEST(DecodeStreamTest, RandomDifferential) {
  std::mt19937 rng(11);
  std::string base = List(R"({"kind":"List",)", 12, R"(,"metadata":{})");
  const std::string alphabet = "{}[]\"\\:, kindListPod0";
  for (int round = 0; round < 400; ++round) {
    std::string s = base;
    for (int m = rng() % 4; m > 0; --m) {
      size_t at = rng() % s.size();
      if (rng() % 2) {
        s[at] = alphabet[rng() % alphabet.size()];
      } else {
        s.erase(at, 1 + rng() % 20);
      }
    }
    Snapshot out;
    ASSERT_EQ(Streamed(s, 64 + rng() % 2000, 1 + rng() % 500, out), Whole(s)) << s;
  }
}

// A read of `total` bytes of `fill`, `chunk` at most at a time (/dev/zero, a huge item).
ReadFn Endless(size_t total, char fill, size_t* served) {
  return [=](char* p, size_t n) -> Result<size_t> {
    n = std::min(n, total - *served);
    std::fill_n(p, n, fill);
    *served += n;
    return n;
  };
}

TEST(DecodeStreamTest, AnItemOverTheCapIsAnErrorNamingItsIndexNotAGrowingWindow) {
  std::string head = R"({"kind":"List","items":[)" + Pod(0) + R"(,{"metadata":{"name":")";
  size_t at = 0, served = 0;
  size_t max_item = 4096;
  ReadFn body = Endless(size_t{1} << 30, 'x', &served);
  ReadFn read = [&](char* p, size_t n) -> Result<size_t> {
    if (at < head.size()) {
      n = std::min(n, head.size() - at);
      std::copy_n(head.data() + at, n, p);
      at += n;
      return n;
    }
    return body(p, n);
  };
  Snapshot out;
  Result<bool> r = DecodeListStream(read, 256, "big.json", out, max_item);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "big.json: items[1]: an item of more than 4096 bytes (a Kubernetes object is at most "
            "~1.5 MiB): not a snapshot");
  EXPECT_LT(served, 4 * max_item);  // stopped at the cap, not at the end of the input
  // A List's own value past the cap (a huge continue token) is refused too.
  std::string meta = R"({"kind":"List","metadata":{"continue":")" + std::string(5000, 'c');
  Snapshot none;
  at = 0;
  head = meta;
  served = 0;
  r = DecodeListStream(read, 256, "meta.json", none, max_item);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("outside the items"), std::string::npos)
      << r.status().message();
}

// An item over the cap that fits in the window (no growth needed to see it whole) is refused
// all the same, and nothing decoded before it is left in the snapshot.
TEST(DecodeStreamTest, AnItemOverTheCapInsideTheWindowIsRefusedToo) {
  std::string text = R"({"kind":"List","items":[)" + Pod(0) + R"(,{"kind":"Pod","metadata":{"name":")" +
                     std::string(6000, 'x') + R"("}}]})";
  size_t at = 0;
  ReadFn read = [&](char* p, size_t n) -> Result<size_t> {
    n = std::min(n, text.size() - at);
    std::copy_n(text.data() + at, n, p);
    at += n;
    return n;
  };
  Snapshot out;
  Result<bool> r = DecodeListStream(read, 1 << 16, "fits.json", out, 4096);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("fits.json: items[1]: an item of more than 4096 bytes"),
            std::string::npos)
      << r.status().message();
  EXPECT_TRUE(out.pods.empty());
}

TEST(DecodeStreamTest, WholeTextAndItemCapsOfTheWholeTextPath) {
  size_t served = 0;
  Result<std::string> r = ReadAllCapped(Endless(size_t{1} << 40, '\0', &served), 3 << 20, "stdin");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("stdin: more than 3145728 bytes"), std::string::npos)
      << r.status().message();
  EXPECT_LE(served, size_t{5} << 20);
  served = 0;
  ASSERT_OK_AND_ASSIGN(std::string all, ReadAllCapped(Endless(10, 'a', &served), 10, "stdin"));
  EXPECT_EQ(all, "aaaaaaaaaa");
  // The whole-text path (a typed List whose items lack their kind) caps items the same way.
  std::string item = R"({"metadata":{"name":")" + std::string(kMaxListItemBytes, 'n') + "\"}}";
  std::string list = R"({"items":[{"metadata":{"name":"a"}},)" + item + R"(],"kind":"PodList"})";
  Snapshot s;
  Status st = DecodeJson(list, "pods.json", s);
  EXPECT_NE(st.message().find("pods.json: items[1]: an item of more than 67108864 bytes"),
            std::string::npos)
      << st.message();
}

}  // namespace
}  // namespace tocsin::k8s::internal
