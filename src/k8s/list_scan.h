#pragma once

// Internal to src/k8s: where a List's items are, found without parsing them. Parsing each item on
// its own keeps simdjson's structural index to one item instead of the whole document (4 bytes
// per structural character), and lets a file be decoded through a window that slides over it
// (decode_stream.cc) instead of being held whole.

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace tocsin::k8s::internal {

// The List's own "kind", metadata.continue and metadata.resourceVersion (raw JSON string
// contents), and the byte range of every element of its top-level "items" array.
struct ListLayout {
  bool has_items = false;
  std::string kind;
  std::string continue_token;
  std::string resource_version;
  std::vector<std::pair<size_t, size_t>> items;  // [begin, end) offsets of each element
};

// The scan one step at a time, over a buffer that may grow at its end and lose bytes at its
// start (a window over a file). Bytes at depth 1 and 2 are read one at a time (the List's own
// fields); the insides of items (depth 3 and more) are skipped 64 bytes at a time by a kernel
// that finds quotes, backslashes and brackets, in SSE2 or AVX2 when the CPU has it.
class ListScanner {
 public:
  enum class Step {
    kItem,  // an item is complete: [item_begin(), item_end())
    kMore,  // the buffer ends inside a token: append bytes (dropping those before keep_from())
    kEnd,   // `final` and the document is complete
  };
  // Continues over `text`: the bytes given before (less those discarded), maybe with more after
  // them. `final`: no byte follows `text`. Errors name what is wrong (unbalanced, truncated, an
  // item that is not an object), the same for any split of the input.
  Result<Step> Next(std::string_view text, bool final);

  size_t item_begin() const { return item_start_; }
  size_t item_end() const { return item_end_; }
  // Items seen so far (the index of the next one).
  size_t items() const { return items_; }
  // The first byte still needed (an item under way, or the token the scan stopped at).
  size_t keep_from() const;
  // Whether the bytes from keep_from() are an item under way (else a token of the List's own).
  bool in_item() const { return in_items_ && depth_ >= 3; }
  // The caller dropped the first `n` bytes of its buffer (n <= keep_from()).
  void Discard(size_t n);
  // Kind, continue token, resourceVersion and has_items so far (items stays empty).
  const ListLayout& layout() const { return layout_; }

 private:
  Result<Step> Top(std::string_view s, bool final);
  // Inside a value at depth 3 or more: up to a closing bracket that would bring depth to 2
  // (left unread), or the end of `s`.
  void Skip(std::string_view s);
  bool SkipBytes(const char* p, size_t to);

  ListLayout layout_;
  size_t pos_ = 0;
  int depth_ = 0;
  bool in_items_ = false;
  bool in_meta_ = false;
  bool in_string_ = false;  // inside an item (depth 3 and more) only
  bool escaped_ = false;
  size_t item_start_ = 0, item_end_ = 0, items_ = 0;
  std::string last_key_, meta_key_;
};

// The whole document at once (the bytes are all there).
Status ScanList(std::string_view s, ListLayout& out);

// Test hook: which kernel skips the insides of items. kAuto (the default) is the fastest the CPU
// runs; the portable one (plain C++) must give the same layout and errors. False (and nothing
// changed) when this CPU cannot run `kernel`.
enum class ScanKernel { kAuto, kPortable, kSse2, kAvx2 };
bool SetScanKernelForTesting(ScanKernel kernel);
// The kernel kAuto picks on this CPU ("avx2", "sse2" or "portable").
const char* ActiveScanKernel();

}  // namespace tocsin::k8s::internal
