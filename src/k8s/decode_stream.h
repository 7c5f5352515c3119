#pragma once

// Internal to src/k8s: a List decoded through a window that slides over its bytes, so that a
// snapshot file is never held whole (LoadFile), and the decoding of one item that the whole-text
// path (DecodeJson) shares with it.

#include <simdjson.h>

#include <cstddef>
#include <functional>
#include <string>

#include "base/status.h"
#include "k8s/decode.h"
#include "k8s/objects.h"

namespace tocsin::k8s::internal {

// Reads up to `n` bytes into `p`: how many (0 at the end), or why it cannot.
using ReadFn = std::function<Result<size_t>(char* p, size_t n)>;

// Decodes the JSON List that `read` yields, `window` bytes at a time (the window grows to hold
// the largest item), into `out`, with the same objects, errors and partial results as
// DecodeJson on the whole text. False, with `out` as it was, when the text must be decoded
// whole instead (what was read is then lost: read it again): it does not start with '{', it is
// not a List, or a typed List names its kind only after items that lack one.
// An item larger than `max_item` bytes is an error naming its index.
Result<bool> DecodeListStream(const ReadFn& read, size_t window, const std::string& source,
                              Snapshot& out, size_t max_item = kMaxListItemBytes);

// "SOURCE: items[I]: an item of more than N bytes ...": the one error for an item over the cap.
Status ItemTooLarge(const std::string& source, size_t index, size_t max_item);

// Reads `read` to its end, refusing more than `max` bytes (stdin, read whole).
Result<std::string> ReadAllCapped(const ReadFn& read, size_t max, const std::string& source);

// The item kind of a List kind ("PodList": "Pod"; "List": none); whether it is a List kind.
bool IsListKind(const std::string& kind);
std::string ItemKind(const std::string& list_kind);

// Decodes items[index], bytes [begin, end) of `data` (readable up to data + allocated), into
// `out` (and its text into out.raw with keep_raw).
Status DecodeListItem(simdjson::ondemand::parser& parser, const char* data, size_t begin,
                      size_t end, size_t allocated, size_t index, const std::string& item_kind,
                      const std::string& source, Snapshot& out);

}  // namespace tocsin::k8s::internal
