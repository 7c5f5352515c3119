// JSON documents as YAML, through yaml-cpp's emitter.
#include <yaml-cpp/yaml.h>

#include <algorithm>

#include "policy/policy.h"

namespace tocsin::policy {
namespace {

void Emit(YAML::Emitter& out, const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::object:
      out << YAML::BeginMap;
      for (const auto& [k, x] : v.items()) {
        out << YAML::Key << k << YAML::Value;
        Emit(out, x);
      }
      out << YAML::EndMap;
      break;
    case nlohmann::json::value_t::array:
      if (std::all_of(v.begin(), v.end(), [](const auto& x) { return x.is_primitive(); })) {
        out << YAML::Flow;
      }
      out << YAML::BeginSeq;
      for (const auto& x : v) Emit(out, x);
      out << YAML::EndSeq;
      break;
    case nlohmann::json::value_t::string: {
      const auto& s = v.get_ref<const std::string&>();
      // Long CEL as a literal block (the value gains a final newline: CEL ignores it); others
      // double-quoted, so that YAML never retypes them ("true", "1").
      if (s.size() > 80) {
        out << YAML::Literal << s;
      } else {
        out << YAML::DoubleQuoted << s;
      }
      break;
    }
    case nlohmann::json::value_t::boolean: out << v.get<bool>(); break;
    case nlohmann::json::value_t::null: out << YAML::Null; break;
    default: out << v.dump(); break;
  }
}

}  // namespace

std::string ToYaml(const std::vector<nlohmann::json>& documents) {
  std::string text;
  for (const auto& doc : documents) {
    YAML::Emitter out;
    Emit(out, doc);
    text += "---\n";
    text += out.c_str();
    text += "\n";
  }
  return text;
}

}  // namespace tocsin::policy
