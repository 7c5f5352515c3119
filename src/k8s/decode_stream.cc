#include "k8s/decode_stream.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <optional>

#include "base/strings.h"
#include "k8s/json_fields.h"
#include "k8s/list_scan.h"

namespace tocsin::k8s::internal {
namespace {

// Whether an item names its own kind, as the List scan of the item reads it (what KeepRaw asks).
bool ItemHasKind(std::string_view item) {
  ListLayout layout;
  return ScanList(item, layout).ok() && !layout.kind.empty();
}

// An item of a typed list (what the API server returns) has no "kind": the List's is written
// into the kept text, so that the snapshot reads back alone.
void KeepRaw(std::string_view item, const std::string& list_item_kind, Snapshot& out) {
  if (list_item_kind.empty() || ItemHasKind(item)) {
    out.raw.emplace_back(item);
    return;
  }
  std::string text = "{\"kind\":\"" + list_item_kind + "\"";
  std::string_view rest = Trim(item.substr(1));
  if (rest != "}") text += ",";
  text.append(rest);
  out.raw.push_back(std::move(text));
}

std::string Where(const std::string& source, size_t index) {
  return source + ": items[" + std::to_string(index) + "]";
}

// DecodeListItem; with `no_own_kind` (the List's kind is not known yet), nothing is decoded and
// *no_own_kind is set when the item does not name its own kind (or fails before it is known:
// the whole-text path says how).
Status DecodeItem(od::parser& parser, const char* data, size_t begin, size_t end, size_t allocated,
                  size_t index, const std::string& item_kind, bool* no_own_kind,
                  const std::string& source, Snapshot& out) {
  std::string_view item(data + begin, end - begin);
  od::document doc;
  od::object obj;
  error_code e = parser.iterate(item.data(), item.size(), allocated - begin).get(doc);
  if (!e) e = doc.get_object().get(obj);
  if (e) return Status::ParseError(Where(source, index) + ": " + JsonError(e));
  if (no_own_kind != nullptr) {
    std::string own;
    if (ReadKind(obj, own) || own.empty() || (out.keep_raw && !ItemHasKind(item))) {
      *no_own_kind = true;
      return Status::Ok();
    }
  }
  Err err = DecodeObject(obj, item_kind, out);
  if (err) return ToStatus(err, Where(source, index));
  if (out.keep_raw) KeepRaw(item, item_kind, out);
  return Status::Ok();
}

}  // namespace

bool IsListKind(const std::string& kind) {
  return kind == "List" || (kind.size() > 4 && kind.ends_with("List"));
}

std::string ItemKind(const std::string& list_kind) {
  return list_kind == "List" || list_kind.size() <= 4 ? ""
                                                      : list_kind.substr(0, list_kind.size() - 4);
}

Status ItemTooLarge(const std::string& source, size_t index, size_t max_item) {
  return Status::ParseError(Where(source, index) + ": an item of more than " +
                            std::to_string(max_item) +
                            " bytes (a Kubernetes object is at most ~1.5 MiB): not a snapshot");
}

Result<std::string> ReadAllCapped(const ReadFn& read, size_t max, const std::string& source) {
  std::string text;
  constexpr size_t kChunk = size_t{1} << 20;
  auto chunk = std::make_unique<char[]>(kChunk);
  for (;;) {
    TOCSIN_ASSIGN_OR_RETURN(size_t got, read(chunk.get(), kChunk));
    if (got == 0) return text;
    if (got > max - text.size()) {
      return Status::InvalidArgument(source + ": more than " + std::to_string(max) +
                                     " bytes, the most that is read whole (a JSON List in a "
                                     "file has no such cap)");
    }
    // Doubling, but never past the cap: at most `max` bytes are ever held.
    if (text.capacity() - text.size() < got) {
      text.reserve(std::min(max, std::max(2 * text.capacity(), text.size() + got)));
    }
    text.append(chunk.get(), got);
  }
}

Status DecodeListItem(od::parser& parser, const char* data, size_t begin, size_t end,
                      size_t allocated, size_t index, const std::string& item_kind,
                      const std::string& source, Snapshot& out) {
  if (end - begin > kMaxListItemBytes) return ItemTooLarge(source, index, kMaxListItemBytes);
  return DecodeItem(parser, data, begin, end, allocated, index, item_kind, nullptr, source, out);
}

Result<bool> DecodeListStream(const ReadFn& read, size_t window, const std::string& source,
                              Snapshot& out, size_t max_item) {
  size_t capacity = window < 64 ? 64 : window;
  auto allocate = [](size_t n) {
    return std::unique_ptr<char[]>(new char[n + simdjson::SIMDJSON_PADDING]());
  };
  std::unique_ptr<char[]> buf = allocate(capacity);
  size_t len = 0;
  bool eof = false;
  auto fill = [&]() -> Status {
    while (!eof && len < capacity) {
      TOCSIN_ASSIGN_OR_RETURN(size_t got, read(buf.get() + len, capacity - len));
      if (got == 0) eof = true;
      len += got;
    }
    return Status::Ok();
  };
  TOCSIN_RETURN_IF_ERROR(fill());
  std::string_view start = Trim(std::string_view(buf.get(), len));
  if (start.empty() || start[0] != '{') return false;

  // What to undo when the text must be decoded whole after all.
  SnapshotMark mark(out);
  std::map<std::string, int> other_kinds = out.other_kinds;
  auto undo = [&] {
    mark.Restore(out);
    out.other_kinds = other_kinds;
  };
  out.sources.push_back(source);

  ListScanner scanner;
  od::parser parser;
  Status item_error;  // the first item that failed, reported unless the scan fails
  std::optional<std::string> list_kind;  // the List kind items were decoded with, once one was
  for (;;) {
    Result<ListScanner::Step> step = scanner.Next(std::string_view(buf.get(), len), eof);
    if (!step.ok()) {
      undo();  // the whole-text path finds this before decoding anything
      return step.status().WithPrefix(source);
    }
    if (*step == ListScanner::Step::kEnd) break;
    if (*step == ListScanner::Step::kMore) {
      // Drop what is done; a window more than half full of an unfinished item doubles.
      size_t keep = scanner.keep_from();
      size_t kept = len - keep;
      if (kept > max_item) {
        // An item (or a List's own value) past the cap: never a window grown without bound.
        undo();
        if (scanner.in_item()) return ItemTooLarge(source, scanner.items(), max_item);
        return Status::ParseError(source + ": a value of more than " + std::to_string(max_item) +
                                  " bytes outside the items");
      }
      if (kept > capacity / 2) {
        std::unique_ptr<char[]> bigger = allocate(capacity * 2);
        std::memcpy(bigger.get(), buf.get() + keep, kept);
        buf = std::move(bigger);
        capacity *= 2;
      } else {
        std::memmove(buf.get(), buf.get() + keep, kept);
      }
      len = kept;
      scanner.Discard(keep);
      if (Status st = fill(); !st.ok()) {
        undo();
        return st;
      }
      continue;
    }
    // An item: decoded now when its kind is certain to be what the whole text would give it.
    if (!item_error.ok()) continue;  // the rest is only scanned, for an error that comes first
    size_t index = scanner.items() - 1;
    const std::string& kind = scanner.layout().kind;
    if (!kind.empty()) {
      if (!IsListKind(kind) || (list_kind && *list_kind != kind)) {
        undo();
        return false;
      }
      list_kind = kind;
    }
    // An item that arrived whole in a window grown for earlier ones is held to the cap too.
    if (scanner.item_end() - scanner.item_begin() > max_item) {
      undo();
      return ItemTooLarge(source, index, max_item);
    }
    // Without the List's kind yet (kubectl's order puts it after the items), an item must name
    // its own.
    bool no_own_kind = false;
    item_error = DecodeItem(parser, buf.get(), scanner.item_begin(), scanner.item_end(),
                            capacity + simdjson::SIMDJSON_PADDING, index, ItemKind(kind),
                            kind.empty() ? &no_own_kind : nullptr, source, out);
    if (no_own_kind) {
      undo();
      return false;
    }
  }
  const ListLayout& layout = scanner.layout();
  if (!IsListKind(layout.kind) || (list_kind && *list_kind != layout.kind)) {
    undo();
    return false;
  }
  if (!layout.has_items) {
    undo();
    return Status::ParseError(source + ": " + layout.kind + " without an items array");
  }
  if (!item_error.ok()) return item_error;
  return true;
}

}  // namespace tocsin::k8s::internal
