// Kubernetes snapshot decoding (kubectl -o json Lists and objects): the whole text, and the same
// bytes through LoadFile's sliding window, which must agree (objects, errors), whichever scan
// kernel runs.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "k8s/decode.h"
#include "k8s/decode_stream.h"
#include "k8s/list_scan.h"

namespace {

std::string Describe(const tocsin::Status& st, const tocsin::k8s::Snapshot& s) {
  std::string r = st.ok() ? "ok" : st.message();
  for (const auto& n : s.nodes) r += " n:" + n.name;
  for (const auto& p : s.pods) r += " p:" + p.ns + "/" + p.name;
  for (const auto& d : s.daemonsets) r += " d:" + d.name;
  for (const auto& [k, v] : s.other_kinds) r += " o:" + k + "=" + std::to_string(v);
  r += " s:" + std::to_string(s.sources.size());
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tocsin::k8s;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  Snapshot snapshot;
  ListMeta meta;  // a list page's continue token and resourceVersion
  (void)DecodeJson(text, "fuzz", snapshot, &meta);
  Snapshot plain;  // as a file's text (no ListMeta)
  tocsin::Status whole = DecodeJson(text, "fuzz", plain);

  // The first byte picks the kernel, the window and the reads' size.
  unsigned knob = size > 0 ? data[0] : 0;
  internal::SetScanKernelForTesting(knob & 1 ? internal::ScanKernel::kPortable
                                             : internal::ScanKernel::kAuto);
  size_t at = 0, chunk = 1 + (knob >> 4) * 7;
  internal::ReadFn read = [&](char* p, size_t n) -> tocsin::Result<size_t> {
    n = std::min({n, chunk, text.size() - at});
    std::copy_n(text.data() + at, n, p);
    at += n;
    return n;
  };
  Snapshot streamed;
  tocsin::Result<bool> r =
      internal::DecodeListStream(read, 64 << ((knob >> 1) & 7), "fuzz", streamed);
  // Again under a small item cap: the same, or the cap's own error (never another result).
  at = 0;
  Snapshot capped;
  tocsin::Result<bool> c = internal::DecodeListStream(read, 64, "fuzz", capped, 256);
  internal::SetScanKernelForTesting(internal::ScanKernel::kAuto);
  if (r.ok() && !*r) return 0;  // declined: LoadFile decodes the whole text, as above
  if (Describe(r.status(), streamed) != Describe(whole, plain)) std::abort();
  if (!c.ok()) {
    if (c.status().message().find("more than 256 bytes") != std::string::npos) return 0;
    if (r.ok() || c.status().message() != r.status().message()) std::abort();
    return 0;
  }
  if (!r.ok() || *c != *r) std::abort();
  if (*c && Describe(c.status(), capped) != Describe(whole, plain)) std::abort();
  return 0;
}
