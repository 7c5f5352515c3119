#include "podresources/list.h"

#include <algorithm>

namespace tocsin::podresources {
namespace {

// Protobuf's wire format (protobuf.dev, "Encoding"): each field is a varint key
// (field number << 3 | wire type) followed by its value.
enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLen = 2, kFixed32 = 5 };

class Reader {
 public:
  Reader(std::string_view data, size_t base) : data_(data), base_(base) {}

  bool done() const { return pos_ >= data_.size(); }

  // The next field's number, wire type and (for kLen) bytes; other values are skipped.
  Status Next(uint32_t& field, uint32_t& type, std::string_view& bytes) {
    uint64_t key = 0;
    TOCSIN_RETURN_IF_ERROR(Varint(key));
    field = static_cast<uint32_t>(key >> 3);
    type = static_cast<uint32_t>(key & 7);
    if (field == 0 || key >> 32 != 0) return Error("field number 0 or too large");
    switch (type) {
      case kVarint: {
        uint64_t ignored = 0;
        return Varint(ignored);
      }
      case kFixed64:
        return Skip(8);
      case kFixed32:
        return Skip(4);
      case kLen: {
        uint64_t n = 0;
        TOCSIN_RETURN_IF_ERROR(Varint(n));
        if (n > data_.size() - pos_) return Error("length past the end");
        bytes = data_.substr(pos_, n);
        pos_ += n;
        return Status::Ok();
      }
      default:
        return Error("wire type " + std::to_string(type) + " (groups are not used)");
    }
  }

 private:
  Status Varint(uint64_t& out) {
    out = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= data_.size()) return Error("varint past the end");
      auto b = static_cast<uint8_t>(data_[pos_++]);
      out |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return Status::Ok();
    }
    return Error("varint longer than 10 bytes");
  }

  Status Skip(size_t n) {
    if (n > data_.size() - pos_) return Error("fixed value past the end");
    pos_ += n;
    return Status::Ok();
  }

  Status Error(const std::string& what) const {
    return Status::ParseError("malformed PodResources answer at byte " +
                              std::to_string(base_ + pos_) + ": " + what);
  }

  std::string_view data_;
  size_t base_;
  size_t pos_ = 0;
};

// Calls f(field, bytes, base) for each length-delimited field of `msg` (`base`: its offset in the
// whole answer; the field's own offset is passed on), skipping the others.
template <typename F>
Status EachField(std::string_view msg, size_t base, F f) {
  Reader r(msg, base);
  while (!r.done()) {
    uint32_t field = 0, type = 0;
    std::string_view bytes;
    TOCSIN_RETURN_IF_ERROR(r.Next(field, type, bytes));
    if (type != kLen) continue;
    TOCSIN_RETURN_IF_ERROR(f(field, bytes, base + static_cast<size_t>(bytes.data() - msg.data())));
  }
  return Status::Ok();
}

// A Kubernetes namespace or pod name: lower-case alphanumerics, '-' and '.'.
bool ValidName(std::string_view s, size_t max) {
  if (s.empty() || s.size() > max) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
  });
}

// A resource name or device ID: printable ASCII without spaces (label values that render as is).
bool ValidId(std::string_view s, size_t max) {
  if (s.empty() || s.size() > max) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return c > 0x20 && c < 0x7f; });
}

// A ContainerDevices message: resource_name = 1, device_ids = 2.
Status ParseDevices(std::string_view msg, size_t base, const Limits& limits, Pod& pod,
                    uint64_t& over_cap, Dropped& dropped) {
  std::string_view resource;
  std::vector<std::string_view> ids;
  TOCSIN_RETURN_IF_ERROR(EachField(msg, base, [&](uint32_t field, std::string_view bytes, size_t) {
    if (field == 1) resource = bytes;
    if (field == 2) ids.push_back(bytes);  // views into the answer: nothing is copied yet
    return Status::Ok();
  }));
  bool resource_ok = ValidId(resource, limits.max_id_bytes);
  for (auto id : ids) {
    if (!resource_ok || !ValidId(id, limits.max_id_bytes)) {
      dropped.invalid++;
      continue;
    }
    bool dup = std::any_of(pod.devices.begin(), pod.devices.end(),
                           [&](const Device& d) { return d.id == id && d.resource == resource; });
    if (dup) continue;
    if (pod.devices.size() >= limits.max_devices_per_pod) {
      over_cap++;
      continue;
    }
    pod.devices.push_back({std::string(resource), std::string(id)});
  }
  return Status::Ok();
}

// A PodResources message: name = 1, namespace = 2, containers = 3 (ContainerResources: its
// devices = 2).
Status ParsePod(std::string_view msg, size_t base, const Limits& limits, PodList& out) {
  std::string_view name, ns;
  Pod pod;
  uint64_t over_cap = 0;
  Dropped local;
  TOCSIN_RETURN_IF_ERROR(
      EachField(msg, base, [&](uint32_t field, std::string_view bytes, size_t at) {
        if (field == 1) name = bytes;
        if (field == 2) ns = bytes;
        if (field != 3) return Status::Ok();
        return EachField(bytes, at, [&](uint32_t cf, std::string_view devices, size_t devices_at) {
          if (cf != 2) return Status::Ok();
          return ParseDevices(devices, devices_at, limits, pod, over_cap, local);
        });
      }));
  if (!ValidName(name, limits.max_name_bytes) ||
      !ValidName(ns, std::min<size_t>(63, limits.max_name_bytes))) {
    out.dropped.invalid++;
    return Status::Ok();
  }
  if (out.pods.size() >= limits.max_pods) {
    out.dropped.pods++;
    return Status::Ok();
  }
  out.dropped.devices += over_cap;
  out.dropped.invalid += local.invalid;
  pod.ns = std::string(ns);
  pod.name = std::string(name);
  out.pods.push_back(std::move(pod));
  return Status::Ok();
}

}  // namespace

Result<PodList> ParseListResponse(std::string_view bytes, const Limits& limits) {
  PodList out;
  TOCSIN_RETURN_IF_ERROR(EachField(bytes, 0, [&](uint32_t field, std::string_view msg, size_t at) {
    if (field != 1) return Status::Ok();  // pod_resources = 1
    if (out.pods.size() >= limits.max_pods) {
      out.dropped.pods++;  // not decoded: the cap bounds the work as well as the memory
      return Status::Ok();
    }
    return ParsePod(msg, at, limits, out);
  }));
  return out;
}

}  // namespace tocsin::podresources
