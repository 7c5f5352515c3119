#include "k8s/cni.h"

#include "k8s/json_fields.h"

namespace tocsin::k8s {

using namespace internal;  // NOLINT: the decoding helpers of this library

namespace {

// A string, or a number's text (mtu is an integer in the plugins' own docs, a string in some).
Err Scalar(od::value v, std::string& out) {
  od::json_type t;
  TRY_SJ(v.type().get(t), "");
  if (t == od::json_type::string) return String(v, out);
  if (t == od::json_type::number) {
    out.assign(Trim(v.raw_json_token()));
    return {};
  }
  if (t == od::json_type::null) return {};
  return {simdjson::INCORRECT_TYPE, "", ""};
}

Err Plugin(od::value v, CniConfig& c, bool& seen) {
  if (seen) return {};  // only the first plugin of a list is the network's
  seen = true;
  return Fields(v, [&](std::string_view k, od::value f) -> Err {
    if (k == "type") return String(f, c.type);
    if (k == "master") return String(f, c.master);
    if (k == "device" && c.master.empty()) return String(f, c.master);
    if (k == "mtu") return Scalar(f, c.mtu);
    if (k == "ipam") {
      return Fields(f, [&](std::string_view ik, od::value iv) -> Err {
        return ik == "type" ? String(iv, c.ipam_type) : Err{};
      });
    }
    return {};
  });
}

}  // namespace

Result<CniConfig> ParseCniConfig(std::string_view text) {
  if (text.size() > kMaxCniConfig) {
    return Status::ParseError("CNI config of " + std::to_string(text.size()) +
                              " bytes (more than " + std::to_string(kMaxCniConfig) + ")");
  }
  if (Trim(text).empty()) return Status::ParseError("empty CNI config");
  simdjson::padded_string padded(text);
  od::parser parser;
  od::document doc;
  CniConfig out;
  auto fail = [&](const Err& e) {
    std::string what = e.detail.empty() ? JsonError(e.code) : e.detail;
    return Status::ParseError("CNI config " + Quote(std::string(text.substr(0, 80))) +
                              (e.path.empty() ? "" : ": field " + e.path) + ": " + what);
  };
  if (auto e = parser.iterate(padded).get(doc)) return fail({e, "", ""});
  od::value root;
  if (auto e = doc.get_value().get(root)) return fail({e, "", ""});
  bool seen_plugin = false;
  bool has_plugins = false;
  Err e = Fields(root, [&](std::string_view k, od::value f) -> Err {
    if (k == "name") return String(f, out.name);
    if (k == "plugins") {
      has_plugins = true;
      return Each(f, [&](od::value p) { return Plugin(p, out, seen_plugin); });
    }
    return {};
  });
  if (e) return fail(e);
  if (!has_plugins) {
    // A single plugin's config: read again as one (the on-demand document is read once).
    od::document again;
    if (auto e2 = parser.iterate(padded).get(again)) return fail({e2, "", ""});
    od::value v;
    if (auto e2 = again.get_value().get(v)) return fail({e2, "", ""});
    std::string name = out.name;
    Err pe = Plugin(v, out, seen_plugin);
    if (pe) return fail(pe);
    out.name = name;
  }
  return out;
}

}  // namespace tocsin::k8s
