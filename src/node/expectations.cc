#include "node/expectations.h"

#include <yaml-cpp/yaml.h>

namespace tocsin::node {
namespace {

Status KeyError(const std::string& file, const std::string& key, const std::string& why) {
  return Status::InvalidArgument(file + ": " + key + ": " + why);
}

template <typename T>
Result<T> Scalar(const YAML::Node& node, const std::string& file, const std::string& key,
                 const char* what) {
  if (!node.IsScalar()) return KeyError(file, key, std::string("expected ") + what);
  try {
    return node.as<T>();
  } catch (const YAML::Exception&) {
    return KeyError(file, key, std::string("expected ") + what + ", got \"" + node.Scalar() + "\"");
  }
}

Result<Expectations> ParseProfileNode(const YAML::Node& root, const std::string& file) {
  Expectations out;
  if (root.IsNull()) return out;
  if (!root.IsMap()) return Status::InvalidArgument(file + ": expected a mapping of expect-* keys");
  for (const auto& kv : root) {
    if (!kv.first.IsScalar()) {
      return Status::InvalidArgument(file + ": keys must be plain names such as expect-gpus");
    }
    std::string key = kv.first.Scalar();
    const YAML::Node& v = kv.second;
    if (key == "expect-rdma-ports") {
      TOCSIN_ASSIGN_OR_RETURN(int n, Scalar<int>(v, file, key, "a whole number"));
      if (n < 0) return KeyError(file, key, "must be >= 0");
      out.rdma.active_ports = n;
    } else if (key == "expect-rate") {
      TOCSIN_ASSIGN_OR_RETURN(double r, Scalar<double>(v, file, key, "a number (Gb/s)"));
      if (!(r > 0)) return KeyError(file, key, "must be > 0");
      out.rdma.min_rate_gbps = r;
    } else if (key == "expect-link-layer") {
      TOCSIN_ASSIGN_OR_RETURN(std::string ll, Scalar<std::string>(v, file, key, "a string"));
      Status st = ValidateLinkLayer(ll);
      if (!st.ok()) return KeyError(file, key, st.message());
      out.rdma.link_layer = ll;
    } else if (key == "expect-gpus") {
      TOCSIN_ASSIGN_OR_RETURN(int n, Scalar<int>(v, file, key, "a whole number"));
      if (n < 0) return KeyError(file, key, "must be >= 0");
      out.gpus = n;
    } else if (key == "expect-mount") {
      std::vector<YAML::Node> items;
      if (v.IsSequence()) {
        for (const auto& item : v) items.push_back(item);
      } else {
        items.push_back(v);
      }
      for (const auto& item : items) {
        TOCSIN_ASSIGN_OR_RETURN(std::string spec,
                                Scalar<std::string>(item, file, key, "PATH[:FSTYPE]"));
        auto m = storage::ParseMountExpectation(spec);
        if (!m.ok()) return KeyError(file, key, m.status().message());
        out.mounts.push_back(*m);
      }
    } else {
      return Status::InvalidArgument(
          file + ": unknown key \"" + key +
          "\" (known: expect-rdma-ports, expect-rate, expect-link-layer, expect-gpus, "
          "expect-mount)");
    }
  }
  return out;
}

}  // namespace

Status ValidateLinkLayer(std::string_view value) {
  if (value == "InfiniBand" || value == "Ethernet") return Status::Ok();
  return Status::InvalidArgument("link layer must be InfiniBand or Ethernet, got \"" +
                                 std::string(value) + "\"");
}

Result<Expectations> ParseProfile(std::string_view yaml_text, const std::string& file) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(file + ": not valid YAML: " + e.what());
  }
  try {
    return ParseProfileNode(root, file);
  } catch (const YAML::Exception& e) {  // any conversion the checks below did not foresee
    return Status::InvalidArgument(file + ": " + e.what());
  }
}

}  // namespace tocsin::node
