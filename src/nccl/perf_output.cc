#include "nccl/perf_output.h"

#include "base/strings.h"

namespace tocsin::nccl {
namespace {

enum class CheckColumn { kUnknown, kWrong, kError };

// time algbw busbw and the check column at t[at..at+3]. The check column is read as the header
// names it; without a header name, an integer is a count and anything else an error value.
std::optional<PerfHalf> ParseHalf(const std::vector<std::string_view>& t, size_t at,
                                  CheckColumn check) {
  PerfHalf h;
  auto time = ParseDouble(t[at]);
  auto alg = ParseDouble(t[at + 1]);
  auto bus = ParseDouble(t[at + 2]);
  if (!time || !alg || !bus) return std::nullopt;
  h.time_us = *time;
  h.algbw = *alg;
  h.busbw = *bus;
  std::string_view v = t[at + 3];
  if (v == "N/A") return h;
  if (check != CheckColumn::kError) {
    if (auto wrong = ParseInt64(v)) {
      h.wrong = *wrong;
      return h;
    }
    if (check == CheckColumn::kWrong) return std::nullopt;
  }
  if (!v.empty() && v.back() == '*') {
    h.out_of_bounds = true;
    v.remove_suffix(1);
  }
  auto error = ParseDouble(v);
  if (!error) return std::nullopt;
  h.max_error = *error;
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
      if (s.starts_with(tag)) s = s.substr(tag.size());
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
  size_t halves = columns_.time;
  if (halves == 0) {  // a header without "algbw": the halves are the last 8 columns
    if (has_timestamp_ && t.size() >= 2) t.resize(t.size() - 2);
    if (t.size() < 3 + 8) return false;
    halves = t.size() - 8;
  }
  if (halves < 3 || t.size() < halves + 8) return false;
  auto size = ParseUint64(t[0]);
  auto count = ParseUint64(t[1]);
  if (!size || !count) return false;
  CheckColumn check = columns_.check == Check::kWrong   ? CheckColumn::kWrong
                      : columns_.check == Check::kError ? CheckColumn::kError
                                                        : CheckColumn::kUnknown;
  auto oop = ParseHalf(t, halves, check);
  auto ip = ParseHalf(t, halves + 4, check);
  if (!oop || !ip) return false;
  PerfRow row;
  row.size = *size;
  row.count = *count;
  row.type = Capped(t[2]);
  if (columns_.time == 0 ? halves >= 4 : columns_.redop > 0) {
    row.redop = Capped(t[columns_.time == 0 ? 3 : static_cast<size_t>(columns_.redop)]);
  }
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
  if (body.starts_with("Collective test starting:")) {
    NewRun();
    runs_.back().test = Capped(Trim(body.substr(25)));
    in_table_ = false;
    return;
  }
  auto tok = SplitWhitespace(body);
  if (tok.size() >= 3 && tok[0] == "size" && tok[1] == "count") {
    // A new column header: a new run unless this one has no rows yet. Each collective's header
    // of older versions names its own leading columns ("type", "type redop", "type root", ...);
    // the first half's time column is the one before "algbw", and the column after its busbw
    // says what the check value is.
    if (!runs_.empty() && !runs_.back().rows.empty()) NewRun();
    Current();
    in_table_ = true;
    has_timestamp_ = body.find("timestamp") != std::string_view::npos;
    columns_ = Columns{};
    for (size_t i = 1; i + 3 < tok.size(); ++i) {
      if (tok[i + 1] != "algbw") continue;
      columns_.time = i;
      if (tok[i + 3] == "#wrong") columns_.check = Check::kWrong;
      if (tok[i + 3] == "error") columns_.check = Check::kError;
      break;
    }
    for (size_t i = 3; i < columns_.time; ++i) {
      if (tok[i] == "redop") columns_.redop = static_cast<int>(i);
    }
    return;
  }
  if (body.starts_with("Out of bounds values")) {
    auto parts = SplitWhitespace(body.substr(body.find(':') + 1));
    if (!parts.empty()) {
      if (auto v = ParseInt64(parts[0])) Current().out_of_bounds = *v;
    }
    return;
  }
  if (body.starts_with("Avg bus bandwidth")) {
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
                          {"wrong", h.wrong ? nlohmann::json(*h.wrong) : nullptr},
                          {"max_error", h.max_error ? nlohmann::json(*h.max_error) : nullptr},
                          {"out_of_bounds", h.out_of_bounds}};
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
