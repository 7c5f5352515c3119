#include "k8s/watch.h"

#include <simdjson.h>

#include "k8s/json_fields.h"

namespace tocsin::k8s {

using namespace internal;  // NOLINT: the decoding helpers of this library

namespace {

Err ReadStatus(od::object obj, WatchEvent& out) {
  for (auto field : obj) {
    std::string_view key;
    TRY_SJ(field.unescaped_key().get(key), "");
    od::value value;
    TRY_SJ(field.value().get(value), std::string(key));
    if (key == "code") TRY_ERR(Int(value, out.code), "code");
    if (key == "reason") TRY_ERR(String(value, out.reason), "reason");
    if (key == "message") TRY_ERR(String(value, out.message), "message");
  }
  return {};
}

}  // namespace

Status DecodeWatchEvent(std::string_view line, const std::string& kind, const std::string& source,
                        WatchEvent& out) {
  out = WatchEvent{};
  simdjson::padded_string padded(line);
  od::parser parser;
  od::document doc;
  od::object root;
  if (auto e = parser.iterate(padded).get(doc)) {
    return Status::ParseError(source + ": watch event: " + JsonError(e));
  }
  if (auto e = doc.get_object().get(root)) {
    return Status::ParseError(source + ": watch event is not an object: " +
                              JsonError(e));
  }
  std::string_view type;
  if (auto e = root.find_field_unordered("type").get_string().get(type)) {
    return Status::ParseError(source + ": watch event without a type: " +
                              JsonError(e));
  }
  if (type == "ADDED") {
    out.type = WatchEvent::Type::kAdded;
  } else if (type == "MODIFIED") {
    out.type = WatchEvent::Type::kModified;
  } else if (type == "DELETED") {
    out.type = WatchEvent::Type::kDeleted;
  } else if (type == "BOOKMARK") {
    out.type = WatchEvent::Type::kBookmark;
  } else if (type == "ERROR") {
    out.type = WatchEvent::Type::kError;
  } else {
    return Status::ParseError(source + ": unknown watch event type " + Quote(std::string(type)));
  }
  od::object obj;
  if (auto e = root.find_field_unordered("object").get_object().get(obj)) {
    return Status::ParseError(source + ": watch event " + std::string(type) +
                              " without an object: " + JsonError(e));
  }
  if (out.type == WatchEvent::Type::kError) {
    Err e = ReadStatus(obj, out);
    if (e) return ToStatus(e, source + ": watch ERROR event");
    return Status::Ok();
  }
  // metadata.resourceVersion. An error inside the object leaves simdjson's iterator unusable
  // (a reset would dereference a dead parser): the object is decoded in a second, fresh pass.
  {
    od::object meta;
    auto found = obj.find_field_unordered("metadata");
    if (found.error() && found.error() != simdjson::NO_SUCH_FIELD) {
      return Status::ParseError(source + ": watch event: " + JsonError(found.error()));
    }
    if (!found.error()) {
      if (auto e = found.get_object().get(meta)) {
        return Status::ParseError(source + ": watch event: metadata: " + JsonError(e));
      }
      std::string_view rv;
      auto field = meta.find_field_unordered("resourceVersion");
      if (field.error() && field.error() != simdjson::NO_SUCH_FIELD) {
        return Status::ParseError(source + ": watch event: metadata: " +
                                  JsonError(field.error()));
      }
      if (!field.error()) {
        if (auto e = field.get_string().get(rv)) {
          return Status::ParseError(source + ": watch event: metadata.resourceVersion: " +
                                    JsonError(e));
        }
        out.resource_version.assign(rv);
      }
    }
  }
  if (out.resource_version.empty()) {
    return Status::ParseError(source + ": watch event " + std::string(type) +
                              " without metadata.resourceVersion");
  }
  if (out.type == WatchEvent::Type::kBookmark) return Status::Ok();
  od::document again;
  od::object fresh;
  if (auto e = parser.iterate(padded).get(again)) {
    return Status::ParseError(source + ": watch event: " + JsonError(e));
  }
  if (auto e = again.get_object().get(root)) {
    return Status::ParseError(source + ": watch event: " + JsonError(e));
  }
  if (auto e = root.find_field_unordered("object").get_object().get(fresh)) {
    return Status::ParseError(source + ": watch event: object: " + JsonError(e));
  }
  Err e = DecodeObject(fresh, kind, out.object);
  if (e) return ToStatus(e, source + ": watch event " + std::string(type));
  return Status::Ok();
}

}  // namespace tocsin::k8s
