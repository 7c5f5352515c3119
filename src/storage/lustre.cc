#include "storage/lustre.h"

#include "base/strings.h"
#include "base/time.h"

namespace tocsin::storage {
namespace {

std::string_view Unquote(std::string_view s) {
  s = Trim(s);
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  return s;
}

// "[ a, "b", c ]" -> {a, b, c}
std::vector<std::string> ParseFlowList(std::string_view v) {
  std::vector<std::string> out;
  v = Trim(v);
  if (v.size() < 2 || v.front() != '[' || v.back() != ']') return out;
  for (auto item : Split(v.substr(1, v.size() - 2), ',')) {
    auto s = Unquote(item);
    if (!s.empty()) out.emplace_back(s);
  }
  return out;
}

// "512 usecs" -> 512
std::optional<int64_t> LeadingInt(std::string_view v) {
  auto parts = SplitWhitespace(v);
  if (parts.empty()) return std::nullopt;
  return ParseInt64(parts[0]);
}

size_t Indent(std::string_view line) {
  size_t n = 0;
  while (n < line.size() && line[n] == ' ') ++n;
  return n;
}

}  // namespace

Result<LustreSource> ParseLustreSource(std::string_view source) {
  size_t sep = source.rfind(":/");
  if (sep == std::string_view::npos || sep == 0) {
    return Status::ParseError("Lustre source must be MGSNID[:MGSNID]:/FSNAME, got " +
                              Quote(source));
  }
  LustreSource out;
  std::string_view fs = source.substr(sep + 2);
  size_t slash = fs.find('/');
  out.fsname = std::string(fs.substr(0, slash));
  if (slash != std::string_view::npos) out.subdir = std::string(fs.substr(slash));
  if (out.fsname.empty()) {
    return Status::ParseError("Lustre source has no filesystem name: " + Quote(source));
  }
  for (auto node : Split(source.substr(0, sep), ':')) {
    std::vector<std::string> nids;
    for (auto nid : Split(node, ',')) {
      if (nid.find('@') == std::string_view::npos) {
        return Status::ParseError("Lustre NID must be ADDRESS@NET, got " + Quote(nid) + " in " +
                                  Quote(source));
      }
      nids.emplace_back(nid);
    }
    out.mgs_nodes.push_back(std::move(nids));
  }
  return out;
}

Result<LustreImport> ParseLustreImport(std::string_view text) {
  LustreImport imp;
  bool header = false;
  bool have_state = false;
  std::string section;
  for (auto raw : Split(text, '\n')) {
    if (Trim(raw).empty()) continue;
    size_t indent = Indent(raw);
    std::string_view line = Trim(raw);
    if (!header) {
      if (line != "import:") {
        return Status::ParseError("expected \"import:\" on the first line, got " + Quote(line));
      }
      header = true;
      continue;
    }
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;  // list continuation lines
    std::string_view key = line.substr(0, colon);
    std::string_view value = Trim(line.substr(colon + 1));
    if (indent <= 4) {
      section = value.empty() ? std::string(key) : "";
      if (key == "name") imp.name = std::string(Unquote(value));
      if (key == "target") imp.target = std::string(Unquote(value));
      if (key == "state") {
        imp.state = std::string(Unquote(value));
        have_state = !imp.state.empty();
      }
      continue;
    }
    if (section == "connection") {
      if (key == "failover_nids") imp.failover_nids = ParseFlowList(value);
      if (key == "current_connection") imp.current_connection = std::string(Unquote(value));
      if (key == "connection_attempts") imp.connection_attempts = LeadingInt(value);
    } else if (section == "rpcs") {
      if (key == "inflight") imp.rpcs_inflight = LeadingInt(value);
      if (key == "timeouts") imp.rpcs_timeouts = LeadingInt(value);
      if (key == "avg_waittime") imp.avg_waittime_usecs = LeadingInt(value);
    }
  }
  if (!header) return Status::ParseError("empty import file");
  if (!have_state) return Status::ParseError("import has no \"state:\" field (truncated?)");
  return imp;
}

Result<LustreStateHistory> ParseLustreState(std::string_view text) {
  LustreStateHistory out;
  for (auto raw : Split(text, '\n')) {
    std::string_view line = Trim(raw);
    if (line.empty() || line == "state_history:") continue;
    if (line.substr(0, 14) == "current_state:") {
      out.current_state = std::string(Trim(line.substr(14)));
      continue;
    }
    if (line.substr(0, 1) == "-") {
      std::string_view entry = Trim(line.substr(1));
      if (entry.size() < 2 || entry.front() != '[' || entry.back() != ']') {
        return Status::ParseError("bad state_history entry " + Quote(line));
      }
      auto parts = Split(entry.substr(1, entry.size() - 2), ',');
      if (parts.size() != 2) return Status::ParseError("bad state_history entry " + Quote(line));
      auto epoch = ParseInt64(Trim(parts[0]));
      std::string_view state = Trim(parts[1]);
      if (!epoch || !IsRepresentableUnixSeconds(*epoch) || state.empty()) {
        return Status::ParseError("bad state_history entry " + Quote(line));
      }
      out.history.emplace_back(*epoch, std::string(state));
    }
  }
  if (out.current_state.empty()) return Status::ParseError("no \"current_state:\" line");
  return out;
}

bool IsHealthyImportState(std::string_view s) { return s == "FULL" || s == "IDLE"; }

bool IsTransientImportState(std::string_view s) {
  return s == "NEW" || s == "CONNECTING" || s == "REPLAY" || s == "REPLAY_LOCKS" ||
         s == "REPLAY_WAIT" || s == "RECOVER";
}

std::optional<int64_t> UnhealthySince(const LustreStateHistory& h) {
  if (IsHealthyImportState(h.current_state) || h.history.empty()) return std::nullopt;
  size_t first_bad = 0;
  for (size_t i = 0; i < h.history.size(); ++i) {
    if (IsHealthyImportState(h.history[i].second)) first_bad = i + 1;
  }
  if (first_bad >= h.history.size()) return std::nullopt;  // history ends healthy: stale
  return h.history[first_bad].first;
}

Result<LustreStats> ParseLustreStats(std::string_view text) {
  LustreStats out;
  size_t line_no = 0;
  for (auto raw : Split(text, '\n')) {
    ++line_no;
    auto f = SplitWhitespace(raw);
    if (f.empty()) continue;
    auto bad = [&] {
      return Status::ParseError("line " + std::to_string(line_no) + ": " + Quote(Trim(raw)));
    };
    if (f[0] == "snapshot_time" || f[0] == "start_time" || f[0] == "elapsed_time") {
      if (f.size() < 2) return bad();
      auto v = ParseDouble(f[1]);
      if (!v) return bad();
      if (f[0] == "snapshot_time") out.snapshot_time = v;
      if (f[0] == "elapsed_time") out.elapsed_time = v;
      continue;
    }
    if (f.size() < 3 || f[2] != "samples") return bad();
    LustreCounter c;
    c.name = std::string(f[0]);
    auto count = ParseUint64(f[1]);
    if (!count) return bad();
    c.count = *count;
    size_t i = 3;
    if (i < f.size() && f[i].size() >= 2 && f[i].front() == '[' && f[i].back() == ']') {
      c.unit = std::string(f[i].substr(1, f[i].size() - 2));
      ++i;
    }
    std::optional<uint64_t>* slots[] = {&c.min, &c.max, &c.sum, &c.sumsq};
    for (auto* slot : slots) {
      if (i >= f.size()) break;
      auto v = ParseUint64(f[i++]);
      if (!v) return bad();
      *slot = v;
    }
    out.counters.push_back(std::move(c));
  }
  return out;
}

}  // namespace tocsin::storage
