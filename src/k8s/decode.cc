#include "k8s/decode.h"

#include <simdjson.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "base/strings.h"
#include "k8s/decode_stream.h"
#include "k8s/json_fields.h"
#include "k8s/list_scan.h"
#include "sys/env.h"

namespace tocsin::k8s {

using namespace internal;  // NOLINT: the decoding helpers of this library

namespace {

// The window LoadFile reads a List through (grown for an item larger than half of it).
constexpr size_t kStreamWindow = size_t{1} << 20;

Status DecodeList(const simdjson::padded_string& padded, const ListLayout& layout,
                  const std::string& source, Snapshot& out) {
  std::string item_kind = ItemKind(layout.kind);
  od::parser parser;
  size_t allocated = padded.size() + simdjson::SIMDJSON_PADDING;
  for (size_t index = 0; index < layout.items.size(); ++index) {
    auto [begin, end] = layout.items[index];
    TOCSIN_RETURN_IF_ERROR(DecodeListItem(parser, padded.data(), begin, end, allocated, index,
                                          item_kind, source, out));
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
    bool is_list = IsListKind(layout.kind);
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
  static const std::string kNeither = "neither JSON (it does not start with { or [) nor ";
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
    // Only text that does not start as JSON does ('{' or '[') is read as YAML.
    if (!root.IsMap()) {
      return Status::ParseError(source + ": " + kNeither +
                                "YAML of a Kubernetes object or List (it reads as a " +
                                (root.IsSequence() ? "list" : "plain value") + ")");
    }
    return DecodeJson(convert(root).dump(), source, out);
  } catch (const YAML::Exception& e) {
    return Status::ParseError(source + ": " + kNeither + "valid YAML: " + e.what());
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
    auto read = [](char* p, size_t n) -> Result<size_t> {
      for (;;) {
        ssize_t r = ::read(STDIN_FILENO, p, n);
        if (r >= 0) return static_cast<size_t>(r);
        if (errno != EINTR) return Status::IoError(std::string("stdin: ") + std::strerror(errno));
      }
    };
    TOCSIN_ASSIGN_OR_RETURN(std::string all,
                            ReadAllCapped(read, std::min(max_bytes, kMaxWholeTextBytes), "stdin"));
    text = simdjson::padded_string(all);
  } else {
    // Never blocks on a FIFO: only a regular file is read.
    TOCSIN_ASSIGN_OR_RETURN(int fd, OpenRegularFile(path));
    struct Closer {
      int fd;
      ~Closer() { ::close(fd); }
    } closer{fd};
    struct stat st {};
    size_t size = ::fstat(fd, &st) == 0 ? static_cast<size_t>(st.st_size) : 0;
    if (size > max_bytes) {
      return Status::InvalidArgument(path + ": " + std::to_string(size) + " bytes, more than the " +
                                     std::to_string(max_bytes) + " allowed");
    }
    size_t left = size;  // a file that grows meanwhile is read as it was
    auto read = [&](char* p, size_t n) -> Result<size_t> {
      n = std::min(n, left);
      size_t got = 0;
      while (got < n) {
        ssize_t r = ::read(fd, p + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return Status::IoError(path + ": " + std::strerror(errno));
        if (r == 0) break;
        got += static_cast<size_t>(r);
      }
      left -= got;
      return got;
    };
    // A List (what a snapshot is) is decoded through a window that slides over the file, which is
    // never in memory whole; anything else is read whole, straight into simdjson's padded buffer.
    TOCSIN_ASSIGN_OR_RETURN(bool streamed, DecodeListStream(read, kStreamWindow, path, out));
    if (streamed) return Status::Ok();
    if (size > kMaxWholeTextBytes) {
      return Status::InvalidArgument(path + ": " + std::to_string(size) +
                                     " bytes of what is not a JSON List (read whole: at most " +
                                     std::to_string(kMaxWholeTextBytes) + ")");
    }
    if (::lseek(fd, 0, SEEK_SET) != 0) return Status::IoError(path + ": " + std::strerror(errno));
    left = size;
    text = simdjson::padded_string(size);
    TOCSIN_ASSIGN_OR_RETURN(size_t got, read(text.data(), size));
    if (got < size) text = simdjson::padded_string(text.data(), got);  // it shrank meanwhile
  }
  std::string_view t = Trim(std::string_view(text.data(), text.size()));
  if (t.empty()) return Status::ParseError(path + ": empty input");
  if (t[0] == '{' || t[0] == '[') return DecodePadded(text, path, out, nullptr);
  return DecodeYaml(t, path, out);
}

}  // namespace tocsin::k8s
