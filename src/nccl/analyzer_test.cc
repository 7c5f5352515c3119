#include "nccl/analyzer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/strings.h"
#include "nccl/log_line.h"

namespace tocsin::nccl {
namespace {

std::vector<std::string> Lines(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  std::string text = s.str();  // Split returns views: keep the text alive
  std::vector<std::string> out;
  for (auto l : Split(text, '\n')) out.emplace_back(l);
  return out;
}

std::string Result(const Analyzer& a) {
  nlohmann::json findings = nlohmann::json::array();
  for (const auto& f : a.Findings()) {
    findings.push_back({f.check, f.subject, f.message, f.evidence});
  }
  return a.Inventory().dump(1, ' ', false, nlohmann::json::error_handler_t::replace) +
         findings.dump(1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Options Opts() {
  Options o;
  o.expect_gdr = true;
  o.min_busbw = 250;
  return o;
}

// Reading a file in chunks on several threads and merging, with nccl-tests output parsed by one
// sequential pass, must give what reading it in order gives: every fixture, cut at many places
// (inside nccl-tests tables too), into 2 and 3 chunks.
TEST(AnalyzerTest, ChunkedMergeEqualsSequential) {
  std::string dir = std::string(TOCSIN_SOURCE_DIR) + "/src/nccl/testdata";
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    auto lines = Lines(entry.path());
    Analyzer whole(Opts());
    whole.BeginInput("log");
    for (const auto& l : lines) whole.FeedLine(l);
    std::string expected = Result(whole);
    size_t n = lines.size();
    for (size_t cut = 1; cut < n; cut += std::max<size_t>(1, n / 23)) {
      for (size_t parts : {2, 3}) {
        std::vector<size_t> bounds = {0, cut};
        if (parts == 3) bounds.push_back(cut + (n - cut) / 2);
        bounds.push_back(n);
        std::vector<Analyzer> chunks;
        for (size_t c = 0; c + 1 < bounds.size(); ++c) {
          chunks.emplace_back(Opts());
          chunks.back().BeginInput("log");
          chunks.back().DisablePerf();
          for (size_t i = bounds[c]; i < bounds[c + 1]; ++i) chunks.back().FeedLine(lines[i]);
        }
        for (size_t c = 1; c < chunks.size(); ++c) chunks[0].MergeFrom(std::move(chunks[c]));
        for (const auto& l : lines) {  // the sequential pass over the non-NCCL lines
          if (!ParseLogLine(l)) chunks[0].FeedPerf(l);
        }
        EXPECT_EQ(Result(chunks[0]), expected)
            << entry.path().filename() << " cut at line " << cut << " into " << parts;
      }
    }
    ++files;
  }
  EXPECT_GE(files, 10);
}

}  // namespace
}  // namespace tocsin::nccl
