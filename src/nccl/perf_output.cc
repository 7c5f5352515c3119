#include "nccl/perf_output.h"

#include "base/strings.h"

namespace tocsin::nccl {
namespace {

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

std::optional<PerfHalf> ParseHalf(const std::vector<std::string_view>& t, size_t at) {
  PerfHalf h;
  auto time = ParseDouble(t[at]);
  auto alg = ParseDouble(t[at + 1]);
  auto bus = ParseDouble(t[at + 2]);
  if (!time || !alg || !bus) return std::nullopt;
  h.time_us = *time;
  h.algbw = *alg;
  h.busbw = *bus;
  if (t[at + 3] != "N/A") {
    auto wrong = ParseInt64(t[at + 3]);
    if (!wrong) {
      // Some builds print the error as a float (old "error" column) or with an asterisk.
      auto f = ParseDouble(t[at + 3]);
      if (!f) return std::nullopt;
      wrong = *f > 0 ? 1 : 0;
    }
    h.wrong = wrong;
  }
  return h;
}

std::string Capped(std::string_view s) {
  return std::string(s.substr(0, PerfParser::kMaxTextBytes));
}

}  // namespace

std::string_view StripLauncherPrefix(std::string_view line) {
  std::string_view s = line;
  for (int i = 0; i < 2 && !s.empty() && s[0] == '['; ++i) {
    size_t close = s.find(']');
    if (close == std::string_view::npos) break;
    s = s.substr(close + 1);
    for (std::string_view tag : {"<stdout>:", "<stderr>:"}) {
      if (StartsWith(s, tag)) s = s.substr(tag.size());
    }
    if (!s.empty() && s[0] == ' ') s = s.substr(1);
  }
  return s;
}

std::optional<double> PerfRun::ComputedAvgBusbw() const {
  if (rows.empty()) return std::nullopt;
  double sum = 0;
  for (const auto& r : rows) sum += r.out_of_place.busbw + r.in_place.busbw;
  return sum / static_cast<double>(2 * rows.size());
}

PerfRun& PerfParser::Current() {
  if (runs_.empty()) runs_.emplace_back();
  return runs_.back();
}

void PerfParser::NewRun() {
  if (runs_.size() < kMaxRuns) {
    runs_.emplace_back();
  } else {
    dropped_++;  // the last run takes what follows (its rows still count against kMaxRows)
    runs_.back() = PerfRun();
  }
}

bool PerfParser::ParseRow(std::string_view line) {
  auto t = SplitWhitespace(line);
  if (has_timestamp_ && t.size() >= 2) t.resize(t.size() - 2);
  if (t.size() < 3 + 8) return false;
  auto size = ParseUint64(t[0]);
  auto count = ParseUint64(t[1]);
  if (!size || !count) return false;
  size_t halves = t.size() - 8;
  auto oop = ParseHalf(t, halves);
  auto ip = ParseHalf(t, halves + 4);
  if (!oop || !ip) return false;
  PerfRow row;
  row.size = *size;
  row.count = *count;
  row.type = Capped(t[2]);
  if (halves >= 4) row.redop = Capped(t[3]);
  row.out_of_place = *oop;
  row.in_place = *ip;
  PerfRun& run = Current();
  if (rows_ < kMaxRows) {
    rows_++;
    run.rows.push_back(std::move(row));
  } else {
    dropped_++;
  }
  return true;
}

void PerfParser::Feed(std::string_view raw) {
  std::string_view line = Trim(StripLauncherPrefix(raw));
  if (line.empty()) return;
  if (line[0] != '#') {
    if (in_table_ && line[0] >= '0' && line[0] <= '9') ParseRow(line);
    return;
  }
  std::string_view body = Trim(line.substr(1));
  if (StartsWith(body, "Collective test starting:")) {
    NewRun();
    runs_.back().test = Capped(Trim(body.substr(25)));
    in_table_ = false;
    return;
  }
  auto tok = SplitWhitespace(body);
  if (tok.size() >= 3 && tok[0] == "size" && tok[1] == "count") {
    // A new column header: a new run unless this one has no rows yet.
    if (!runs_.empty() && !runs_.back().rows.empty()) NewRun();
    Current();
    in_table_ = true;
    has_timestamp_ = body.find("timestamp") != std::string_view::npos;
    return;
  }
  if (StartsWith(body, "Out of bounds values")) {
    auto parts = SplitWhitespace(body.substr(body.find(':') + 1));
    if (!parts.empty()) {
      if (auto v = ParseInt64(parts[0])) Current().out_of_bounds = *v;
    }
    return;
  }
  if (StartsWith(body, "Avg bus bandwidth")) {
    auto parts = SplitWhitespace(body.substr(body.find(':') + 1));
    if (!parts.empty()) {
      if (auto v = ParseDouble(parts[0])) Current().avg_busbw = *v;
    }
    in_table_ = false;
    return;
  }
  // "#  Rank  0 Group  0 Pid   1234 on     host device  0 [0000:18:00] NVIDIA H100 80GB HBM3"
  // "#   Rank  0 Pid   1320 on ip-172-31-20-228 device  0 [0x00] Tesla V100-SXM2-16GB"
  if (tok.size() >= 7 && tok[0] == "Rank") {
    PerfDevice d;
    d.rank = static_cast<int>(ParseInt64(tok[1]).value_or(-1));
    for (size_t i = 2; i + 1 < tok.size(); ++i) {
      if (tok[i] == "on") d.host = Capped(tok[i + 1]);
      if (tok[i] == "device") d.device = static_cast<int>(ParseInt64(tok[i + 1]).value_or(-1));
    }
    size_t close = body.find(']');
    if (close != std::string_view::npos) d.name = Capped(Trim(body.substr(close + 1)));
    if (d.rank < 0) return;
    if (devices_ < kMaxDevices) {
      devices_++;
      Current().devices.push_back(std::move(d));
    } else {
      dropped_++;
    }
  }
}

nlohmann::json ToJson(const PerfRun& run) {
  nlohmann::json rows = nlohmann::json::array();
  auto half = [](const PerfHalf& h) {
    return nlohmann::json{{"time_us", h.time_us},
                          {"algbw_gbps", h.algbw},
                          {"busbw_gbps", h.busbw},
                          {"wrong", h.wrong ? nlohmann::json(*h.wrong) : nullptr}};
  };
  for (const auto& r : run.rows) {
    rows.push_back({{"size", r.size},
                    {"count", r.count},
                    {"type", r.type},
                    {"redop", r.redop},
                    {"out_of_place", half(r.out_of_place)},
                    {"in_place", half(r.in_place)}});
  }
  nlohmann::json devices = nlohmann::json::array();
  for (const auto& d : run.devices) {
    devices.push_back({{"rank", d.rank}, {"host", d.host}, {"device", d.device}, {"name", d.name}});
  }
  auto computed = run.ComputedAvgBusbw();
  return {{"test", run.test},
          {"rows", rows},
          {"devices", devices},
          {"avg_busbw_gbps", run.avg_busbw ? nlohmann::json(*run.avg_busbw) : nullptr},
          {"computed_avg_busbw_gbps", computed ? nlohmann::json(*computed) : nullptr},
          {"out_of_bounds", run.out_of_bounds ? nlohmann::json(*run.out_of_bounds) : nullptr}};
}

}  // namespace tocsin::nccl
