#include "drift/accept.h"

#include <fnmatch.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>

#include "base/strings.h"

namespace tocsin::drift {
namespace {

constexpr int kMaxDepth = 8;

// yaml-cpp recurses while it builds a node: a document nested deeper than the format is refused
// before it is parsed: flow brackets are counted, and a block line may not start with more than
// kMaxIndent columns of indentation and dashes ("- - - - x" nests too).
constexpr size_t kMaxIndent = 64;

bool TooDeep(std::string_view text) {
  for (auto line : Split(text, '\n')) {
    size_t lead = line.find_first_not_of(" -\t");
    if ((lead == std::string_view::npos ? line.size() : lead) > kMaxIndent) return true;
  }
  int depth = 0;
  for (char c : text) {
    if (c == '[' || c == '{') {
      if (++depth > kMaxDepth) return true;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return false;
}

std::string Scalar(const YAML::Node& n, const char* key) {
  const YAML::Node v = n[key];
  return v && v.IsScalar() ? v.Scalar() : "";
}

// A map's keys are all among `allowed`: an unknown key (a typo, or `subject:` beside `match:`
// instead of inside it) would otherwise be ignored and the entry accept more than it says.
Status OnlyKeys(const YAML::Node& map, std::initializer_list<std::string_view> allowed,
                const std::string& where) {
  for (const auto& kv : map) {
    std::string k = kv.first.IsScalar() ? kv.first.Scalar() : "(not a scalar)";
    if (std::find(allowed.begin(), allowed.end(), k) != allowed.end()) continue;
    std::vector<std::string> names(allowed.begin(), allowed.end());
    std::string hint;
    if (where.starts_with("entry") && (k == "check" || k == "subject")) {
      hint = "; " + k + " goes inside match: {check: GLOB, subject: GLOB}";
    }
    return Status::ParseError(where + ": unknown key " + Quote(k) + " (only " + Join(names, ", ") +
                              ")" + hint);
  }
  return Status::Ok();
}

// "2026-12-31" -> the end of that day (UTC); or an RFC 3339 time.
std::optional<TimePoint> ParseExpiry(const std::string& s) {
  if (s.size() == 10 && s[4] == '-' && s[7] == '-') {
    auto t = ParseRfc3339(s + "T23:59:59Z");
    if (t) return t;
  }
  return ParseRfc3339(s);
}

}  // namespace

Result<std::vector<Acceptance>> ParseAcceptFile(std::string_view text) {
  if (text.size() > kMaxAcceptBytes) {
    return Status::ParseError("accept file of " + std::to_string(text.size()) + " bytes (at most " +
                              std::to_string(kMaxAcceptBytes) + ")");
  }
  if (TooDeep(text)) return Status::ParseError("accept file nested too deeply");
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return Status::ParseError(std::string("not valid YAML: ") + e.what());
  }
  std::vector<Acceptance> out;
  if (!root || root.IsNull()) return out;
  YAML::Node list = root;
  if (root.IsMap()) {
    if (Status st = OnlyKeys(root, {"accept"}, "the file"); !st.ok()) return st;
    if (!root["accept"]) {
      return Status::ParseError("expected a list of entries, or a map with one key \"accept\"");
    }
    list = root["accept"];
    if (list.IsNull()) return out;
  }
  if (!list.IsSequence()) return Status::ParseError("expected a list of entries");
  if (list.size() > kMaxAcceptEntries) {
    return Status::ParseError(std::to_string(list.size()) + " entries (at most " +
                              std::to_string(kMaxAcceptEntries) + ")");
  }
  for (size_t i = 0; i < list.size(); ++i) {
    const YAML::Node e = list[i];
    std::string where = "entry " + std::to_string(i + 1);
    if (!e.IsMap()) return Status::ParseError(where + ": not a map");
    if (Status st = OnlyKeys(e, {"match", "reason", "expires"}, where); !st.ok()) return st;
    Acceptance a;
    const YAML::Node match = e["match"];
    if (!match) return Status::ParseError(where + ": no match");
    if (match.IsScalar()) {
      a.check = match.Scalar();
    } else if (match.IsMap()) {
      if (Status st = OnlyKeys(match, {"check", "subject"}, where + ": match"); !st.ok()) {
        return st;
      }
      if (match["check"]) a.check = Scalar(match, "check");
      if (match["subject"]) a.subject = Scalar(match, "subject");
    } else {
      return Status::ParseError(where + ": match is neither a check glob nor a map");
    }
    if (a.check.empty() || a.subject.empty()) {
      return Status::ParseError(where + ": an empty match");
    }
    a.reason = Scalar(e, "reason");
    if (a.reason.empty()) return Status::ParseError(where + ": no reason");
    std::string expires = Scalar(e, "expires");
    if (expires.empty()) return Status::ParseError(where + ": no expires (a date: 2026-12-31)");
    auto t = ParseExpiry(expires);
    if (!t) return Status::ParseError(where + ": expires is not a date: " + Quote(expires));
    a.expires = *t;
    out.push_back(std::move(a));
  }
  return out;
}

void ApplyAcceptances(std::vector<Finding>& findings, const std::vector<Acceptance>& accepted,
                      TimePoint now) {
  for (Finding& f : findings) {
    const Acceptance* expired = nullptr;
    const Acceptance* hit = nullptr;
    for (const Acceptance& a : accepted) {
      if (fnmatch(a.check.c_str(), f.check.c_str(), 0) != 0) continue;
      if (fnmatch(a.subject.c_str(), f.subject.c_str(), 0) != 0) continue;
      if (now > a.expires) {
        if (expired == nullptr) expired = &a;
        continue;
      }
      hit = &a;
      break;
    }
    if (hit != nullptr) {
      std::string until = FormatRfc3339(hit->expires);
      f.evidence["accepted"] = {
          {"reason", hit->reason}, {"expires", until}, {"severity", SeverityName(f.severity)}};
      f.message = "accepted until " + until + " (" + hit->reason + "): " + f.message;
      f.severity = Severity::kInfo;
    } else if (expired != nullptr) {
      f.evidence["acceptance_expired"] = FormatRfc3339(expired->expires);
    }
  }
}

}  // namespace tocsin::drift
