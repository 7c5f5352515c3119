#include "k8s/decode.h"

#include <simdjson.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/strings.h"
#include "k8s/json_fields.h"
#include "sys/env.h"

namespace tocsin::k8s {

using namespace internal;  // NOLINT: the decoding helpers of this library

namespace {

// Where a List's items are, found without parsing them: the List's own "kind" and the byte range
// of every element of its top-level "items" array. Parsing each item on its own keeps simdjson's
// structural index to one item instead of the whole document (4 bytes per structural
// character), which is what bounds memory on a 100,000-pod snapshot.
struct ListLayout {
  bool has_items = false;
  std::string kind;
  std::string continue_token;                    // metadata.continue (raw JSON string contents)
  std::string resource_version;                  // metadata.resourceVersion
  std::vector<std::pair<size_t, size_t>> items;  // [begin, end) offsets of each element
};

bool IsJsonSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

Status ScanList(std::string_view s, ListLayout& out) {
  int depth = 0;
  bool in_items = false;
  bool in_meta = false;  // inside the List's own metadata object
  size_t item_start = 0;
  std::string last_key, meta_key;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '"') {
      size_t start = ++i;
      while (i < s.size() && s[i] != '"') i += s[i] == '\\' ? 2 : 1;
      if (i >= s.size()) return Status::ParseError("unterminated string (truncated document?)");
      if (depth == 1 || (in_meta && depth == 2)) {  // the List's own fields only
        std::string_view str = s.substr(start, i - start);
        size_t j = i + 1;
        while (j < s.size() && IsJsonSpace(s[j])) ++j;
        bool is_key = j < s.size() && s[j] == ':';
        std::string& key = depth == 1 ? last_key : meta_key;
        if (is_key) {
          key.assign(str);
        } else if (depth == 1 && key == "kind") {
          out.kind.assign(str);
        } else if (depth == 2 && key == "continue") {
          out.continue_token.assign(str);
        } else if (depth == 2 && key == "resourceVersion") {
          out.resource_version.assign(str);
        }
      } else if (in_items && depth == 2) {
        return Status::ParseError("items[" + std::to_string(out.items.size()) + "]: not an object");
      }
      continue;
    }
    if (c == '{' || c == '[') {
      if (depth == 1 && c == '[' && last_key == "items") {
        in_items = true;
        out.has_items = true;
      } else if (depth == 1 && c == '{' && last_key == "metadata") {
        in_meta = true;
      } else if (in_items && depth == 2) {
        if (c != '{') {
          return Status::ParseError("items[" + std::to_string(out.items.size()) +
                                    "]: not an object");
        }
        item_start = i;
      }
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth < 0) return Status::ParseError("unbalanced '" + std::string(1, c) + "'");
      if (in_items && depth == 2 && c == '}') out.items.push_back({item_start, i + 1});
      if (in_items && depth == 1 && c == ']') in_items = false;
      if (in_meta && depth == 1) in_meta = false;
    } else if (in_items && depth == 2 && !IsJsonSpace(c) && c != ',') {
      return Status::ParseError("items[" + std::to_string(out.items.size()) + "]: not an object");
    }
  }
  if (depth != 0) return Status::ParseError("unbalanced braces (truncated document?)");
  return Status::Ok();
}

// An item of a typed list (what the API server returns) has no "kind": the List's is written
// into the kept text, so that the snapshot reads back alone.
void KeepRaw(std::string_view item, const std::string& list_item_kind, Snapshot& out) {
  bool has_kind = false;
  {
    ListLayout layout;
    has_kind = ScanList(item, layout).ok() && !layout.kind.empty();
  }
  if (has_kind || list_item_kind.empty()) {
    out.raw.emplace_back(item);
    return;
  }
  std::string text = "{\"kind\":\"" + list_item_kind + "\"";
  std::string_view rest = Trim(item.substr(1));
  if (rest != "}") text += ",";
  text.append(rest);
  out.raw.push_back(std::move(text));
}

Status DecodeList(const simdjson::padded_string& padded, const ListLayout& layout,
                  const std::string& source, Snapshot& out) {
  std::string item_kind = layout.kind == "List" || layout.kind.size() <= 4
                              ? ""
                              : layout.kind.substr(0, layout.kind.size() - 4);
  od::parser parser;
  size_t capacity = padded.size() + simdjson::SIMDJSON_PADDING;
  for (size_t index = 0; index < layout.items.size(); ++index) {
    auto [begin, end] = layout.items[index];
    std::string where = source + ": items[" + std::to_string(index) + "]";
    od::document doc;
    if (auto e = parser.iterate(padded.data() + begin, end - begin, capacity - begin).get(doc)) {
      return Status::ParseError(where + ": " + JsonError(e));
    }
    od::object obj;
    if (auto e = doc.get_object().get(obj)) {
      return Status::ParseError(where + ": " + JsonError(e));
    }
    Err err = DecodeObject(obj, item_kind, out);
    if (err) return ToStatus(err, where);
    if (out.keep_raw) KeepRaw(std::string_view(padded.data() + begin, end - begin), item_kind, out);
  }
  return Status::Ok();
}

Status DecodePadded(const simdjson::padded_string& padded, const std::string& source, Snapshot& out,
                    ListMeta* meta) {
  std::string_view text(padded.data(), padded.size());
  if (!Trim(text).empty() && Trim(text)[0] == '{') {
    ListLayout layout;
    Status st = ScanList(text, layout);
    if (!st.ok()) return st.WithPrefix(source);
    bool is_list = layout.kind == "List" ||
                   (layout.kind.size() > 4 && layout.kind.substr(layout.kind.size() - 4) == "List");
    if (is_list && !layout.has_items) {
      return Status::ParseError(source + ": " + layout.kind + " without an items array");
    }
    if (meta != nullptr) {
      meta->kind = layout.kind;
      meta->resource_version = layout.resource_version;
      meta->continue_token = layout.continue_token;
      if (meta->continue_token.find('\\') != std::string::npos) {
        auto unescaped = nlohmann::json::parse("\"" + meta->continue_token + "\"", nullptr, false);
        if (!unescaped.is_string())
          return Status::ParseError(source + ": metadata.continue is not a string");
        meta->continue_token = unescaped.get<std::string>();
      }
    }
    if (is_list) {
      out.sources.push_back(source);
      return DecodeList(padded, layout, source, out);
    }
  }
  // A single object (or not an object at all): parse it whole.
  od::parser parser;
  od::document doc;
  if (auto e = parser.iterate(padded).get(doc)) {
    return Status::ParseError(source + ": " + JsonError(e));
  }
  od::object root;
  if (auto e = doc.get_object().get(root)) {
    return Status::ParseError(
        source + ": expected a JSON object (a List or a Kubernetes object): " + JsonError(e));
  }
  std::string kind;
  if (auto e = ReadKind(root, kind)) {
    return Status::ParseError(source + ": " + JsonError(e));
  }
  if (meta != nullptr) meta->kind = kind;
  out.sources.push_back(source);
  bool is_list = kind == "List" || (kind.size() > 4 && kind.substr(kind.size() - 4) == "List");
  if (!is_list) {
    Err e = DecodeObject(root, kind, out);
    if (e) return ToStatus(e, source + " (" + kind + ")");
    if (out.keep_raw) out.raw.emplace_back(Trim(text));
    return Status::Ok();
  }
  std::string item_kind = kind == "List" ? "" : kind.substr(0, kind.size() - 4);
  od::array items;
  if (auto e = root.find_field_unordered("items").get_array().get(items)) {
    return Status::ParseError(source + ": " + kind + " without an items array: " + JsonError(e));
  }
  size_t index = 0;
  for (auto element : items) {
    od::object obj;
    if (auto e = element.get_object().get(obj)) {
      return Status::ParseError(source + ": items[" + std::to_string(index) + "]: " + JsonError(e));
    }
    Err e = DecodeObject(obj, item_kind, out);
    if (e) return ToStatus(e, source + ": items[" + std::to_string(index) + "]");
    ++index;
  }
  return Status::Ok();
}

}  // namespace

Status DecodeJson(std::string_view json, const std::string& source, Snapshot& out, ListMeta* meta) {
  return DecodePadded(simdjson::padded_string(json), source, out, meta);
}

Status DecodeYaml(std::string_view yaml, const std::string& source, Snapshot& out) {
  // YAML -> JSON through yaml-cpp and nlohmann (kubectl's YAML is plain block YAML).
  std::function<nlohmann::json(const YAML::Node&)> convert = [&](const YAML::Node& n) {
    if (n.IsMap()) {
      nlohmann::json j = nlohmann::json::object();
      for (const auto& kv : n) j[kv.first.Scalar()] = convert(kv.second);
      return j;
    }
    if (n.IsSequence()) {
      nlohmann::json j = nlohmann::json::array();
      for (const auto& item : n) j.push_back(convert(item));
      return j;
    }
    if (n.IsNull()) return nlohmann::json(nullptr);
    const std::string& s = n.Scalar();
    if (n.Tag() == "!") return nlohmann::json(s);  // quoted in the YAML: a string
    if (auto i = ParseInt64(s)) return nlohmann::json(*i);
    if (s == "true" || s == "false") return nlohmann::json(s == "true");
    return nlohmann::json(s);
  };
  try {
    YAML::Node root = YAML::Load(std::string(yaml));
    return DecodeJson(convert(root).dump(), source, out);
  } catch (const YAML::Exception& e) {
    return Status::ParseError(source + ": not valid YAML: " + e.what());
  }
}

std::string EncodeRawList(const Snapshot& snapshot) {
  size_t size = 64;
  for (const auto& item : snapshot.raw) size += item.size() + 2;
  std::string out;
  out.reserve(size);
  out += "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"metadata\":{},\"items\":[";
  for (size_t i = 0; i < snapshot.raw.size(); ++i) {
    if (i > 0) out += ",\n";
    out += snapshot.raw[i];
  }
  out += "]}\n";
  return out;
}

Status LoadFile(const std::string& path, Snapshot& out, size_t max_bytes) {
  simdjson::padded_string text;
  if (path == "-") {
    std::stringstream s;
    s << std::cin.rdbuf();
    text = simdjson::padded_string(s.str());
  } else {
    // Straight into simdjson's padded buffer: the document is in memory once. Never blocks on a
    // FIFO: only a regular file is read.
    TOCSIN_ASSIGN_OR_RETURN(int fd, OpenRegularFile(path));
    struct stat st {};
    size_t size = ::fstat(fd, &st) == 0 ? static_cast<size_t>(st.st_size) : 0;
    if (size > max_bytes) {
      ::close(fd);
      return Status::InvalidArgument(path + ": " + std::to_string(size) +
                                     " bytes, more than the " + std::to_string(max_bytes) +
                                     " allowed");
    }
    text = simdjson::padded_string(size);
    size_t got = 0;
    while (got < size) {
      ssize_t n = ::read(fd, text.data() + got, size - got);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        int err = errno;
        ::close(fd);
        return Status::IoError(path + ": " + std::strerror(err));
      }
      if (n == 0) break;
      got += static_cast<size_t>(n);
    }
    ::close(fd);
    if (got < size) text = simdjson::padded_string(text.data(), got);  // it shrank meanwhile
  }
  std::string_view t = Trim(std::string_view(text.data(), text.size()));
  if (t.empty()) return Status::ParseError(path + ": empty input");
  if (t[0] == '{' || t[0] == '[') return DecodePadded(text, path, out, nullptr);
  return DecodeYaml(t, path, out);
}

}  // namespace tocsin::k8s
