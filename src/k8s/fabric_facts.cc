#include "k8s/fabric_facts.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "base/json_fields.h"
#include "base/strings.h"

namespace tocsin::k8s {
namespace {

constexpr size_t kMaxString = 128;
constexpr int kMaxDepth = 3;  // {hcas: [{...}]}

}  // namespace

std::string EncodeFabricFacts(const FabricFacts& facts) {
  // Sysfs strings are the driver's: bytes that are not UTF-8 become U+FFFD (a throwing dump
  // would fail the task that reads the ports), and HCAs are left out from the end until the
  // text fits what DecodeFabricFacts accepts.
  auto encode = [&](size_t count) {
    nlohmann::json hcas = nlohmann::json::array();
    for (size_t i = 0; i < count; ++i) {
      const auto& h = facts.hcas[i];
      hcas.push_back({{"name", h.name},
                      {"fw", h.firmware},
                      {"board_id", h.board_id},
                      {"link_layer", h.link_layer},
                      {"rate", h.rate},
                      {"mtu", h.mtu}});
    }
    return nlohmann::json{{"v", 1}, {"driver", facts.driver}, {"hcas", hcas}}.dump(
        -1, ' ', false, nlohmann::json::error_handler_t::replace);
  };
  size_t count = std::min(facts.hcas.size(), kMaxFabricHcas);
  std::string text = encode(count);
  while (text.size() > kMaxFabricFactsBytes && count > 0) text = encode(--count);
  return text;
}

Result<FabricFacts> DecodeFabricFacts(std::string_view text) {
  if (text.size() > kMaxFabricFactsBytes) {
    return Status::ParseError("fabric facts of " + std::to_string(text.size()) +
                              " bytes (at most " + std::to_string(kMaxFabricFactsBytes) + ")");
  }
  // Values nested deeper than the format are discarded as they are parsed: no deep document is
  // ever built.
  nlohmann::json j = nlohmann::json::parse(
      text,
      [](int depth, nlohmann::json::parse_event_t, nlohmann::json&) { return depth <= kMaxDepth; },
      false);
  if (!j.is_object())
    return Status::ParseError("fabric facts are not a JSON object: " + Quote(text));
  if (!j.contains("v") || !j["v"].is_number_integer() || j["v"].get<int64_t>() != 1) {
    return Status::ParseError("fabric facts without \"v\":1: " + Quote(text));
  }
  FabricFacts out;
  out.driver = StringField(j, "driver", kMaxString);
  if (j.contains("hcas") && j["hcas"].is_array()) {
    for (const auto& h : j["hcas"]) {
      if (!h.is_object()) continue;
      if (out.hcas.size() >= kMaxFabricHcas) break;
      out.hcas.push_back({StringField(h, "name", kMaxString), StringField(h, "fw", kMaxString),
                          StringField(h, "board_id", kMaxString),
                          StringField(h, "link_layer", kMaxString),
                          StringField(h, "rate", kMaxString), StringField(h, "mtu", kMaxString)});
    }
  }
  return out;
}

}  // namespace tocsin::k8s
