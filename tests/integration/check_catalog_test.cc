// The check catalogues against everything that names a check id: the code (string literals),
// the agent's task lists and NodeCondition mapping, README.md's tables, docs/METRICS.md and the
// alert rules. An id that one of them names and no catalogue holds fails here, and so does a
// catalogued id the README never mentions.
#include "base/check_catalog.h"

#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "agent/catalog.h"
#include "agent/conditions.h"
#include "agent/fabric.h"
#include "agent/nccl_task.h"
#include "agent/pods_task.h"
#include "agent/node_tasks.h"
#include "agent/probe_task.h"
#include "audit/catalog.h"
#include "base/strings.h"
#include "bench/catalog.h"
#include "canary/catalog.h"
#include "drift/catalog.h"
#include "gpu/catalog.h"
#include "jobview/catalog.h"
#include "nccl/catalog.h"
#include "rdma/catalog.h"
#include "storage/catalog.h"

namespace tocsin {
namespace {

namespace fs = std::filesystem;

const fs::path kSource = TOCSIN_SOURCE_DIR;

std::vector<const CheckCatalog*> Catalogs() {
  return {&rdma::Catalog(),  &gpu::Catalog(),   &storage::Catalog(),
          &nccl::Catalog(),  &audit::Catalog(), &canary::Catalog(),
          &agent::Catalog(), &bench::Catalog(), &drift::Catalog(),
          &jobview::Catalog()};
}

const CheckInfo* Find(std::string_view id) { return FindCheck(Catalogs(), id); }

// The first words of catalogued ids ("rdma", "node", ...): text that starts so names a check.
std::set<std::string> Domains() {
  std::set<std::string> out;
  for (const CheckCatalog* c : Catalogs()) {
    for (const auto& info : c->checks) {
      std::string_view id = info.id;
      out.insert(std::string(id.substr(0, id.find('.'))));
    }
  }
  return out;
}

std::string ReadText(const fs::path& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The string literals of C++ source (comments skipped, raw strings read whole).
std::vector<std::string> StringLiterals(const std::string& src) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < src.size()) {
    if (src.compare(i, 2, "//") == 0) {
      i = src.find('\n', i);
      if (i == std::string::npos) break;
    } else if (src.compare(i, 2, "/*") == 0) {
      i = src.find("*/", i + 2);
      if (i == std::string::npos) break;
      i += 2;
    } else if (src.compare(i, 2, "R\"") == 0) {
      size_t open = src.find('(', i);
      std::string close = ")" + src.substr(i + 2, open - i - 2) + "\"";
      size_t end = src.find(close, open);
      if (end == std::string::npos) break;
      out.push_back(src.substr(open + 1, end - open - 1));
      i = end + close.size();
    } else if (src[i] == '"' || src[i] == '\'') {
      char quote = src[i];
      std::string text;
      for (++i; i < src.size() && src[i] != quote; ++i) {
        if (src[i] == '\\') ++i;
        text += src[i];
      }
      if (quote == '"') out.push_back(text);
      ++i;
    } else {
      ++i;
    }
  }
  return out;
}

// The dotted words of `text` that start with a check domain; "rdma.*" and "node.fabric.*"
// come back as prefixes with their ".*".
std::set<std::string> IdsIn(const std::string& text) {
  static const std::set<std::string> domains = Domains();
  static const std::set<std::string> not_ids = {"yaml", "json", "md", "cc", "h", "py", "log"};
  static const std::set<std::string> fields = {"job.status.ready"};  // Kubernetes API fields
  static const std::regex word(R"((^|[^A-Za-z0-9_./-])([a-z][a-z0-9-]*(\.[a-z0-9-]+)+)(\.\*)?)");
  std::set<std::string> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), word); it != std::sregex_iterator();
       ++it) {
    std::string id = (*it)[2];
    if (!domains.count(id.substr(0, id.find('.')))) continue;
    if (not_ids.count(id.substr(id.rfind('.') + 1)) || fields.count(id)) continue;
    out.insert(id + std::string((*it)[4]));
  }
  return out;
}

// A prefix "x.y.*" names something when a catalogued id starts with "x.y."; an id, when it is
// catalogued.
bool Names(const std::string& id) {
  if (id.ends_with(".*")) {
    std::string prefix = id.substr(0, id.size() - 1);
    for (const CheckCatalog* c : Catalogs()) {
      for (const auto& info : c->checks) {
        if (std::string_view(info.id).starts_with(prefix)) return true;
      }
    }
    return false;
  }
  return Find(id) != nullptr;
}

TEST(CheckCatalogTest, CataloguesAreValid) {
  Status st = ValidateCatalogs(Catalogs());
  EXPECT_TRUE(st.ok()) << st.ToString();
  for (const CheckCatalog* c : Catalogs()) EXPECT_FALSE(c->checks.empty()) << c->domain;
}

// Every id the code spells is catalogued, and only the catalogues spell them: the code uses
// their constants.
TEST(CheckCatalogTest, TheCodeUsesOnlyCataloguedIdsThroughTheirConstants) {
  size_t files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(kSource / "src")) {
    std::string name = entry.path().filename();
    if (!entry.is_regular_file()) continue;
    if (!name.ends_with(".cc") && !name.ends_with(".h")) continue;
    if (name.ends_with("_test.cc") || name == "testing.h") continue;
    ++files;
    bool catalogue = name == "catalog.h" || name == "catalog.cc";
    for (const auto& literal : StringLiterals(ReadText(entry.path()))) {
      if (IdsIn(literal) != std::set<std::string>{literal}) continue;
      if (literal.ends_with(".*")) {  // a prefix (the NodeCondition mapping's)
        EXPECT_TRUE(Names(literal)) << entry.path() << ": \"" << literal << "\" names no id";
        continue;
      }
      EXPECT_TRUE(Find(literal)) << entry.path() << ": \"" << literal << "\" is not catalogued";
      EXPECT_TRUE(catalogue) << entry.path() << ": \"" << literal
                             << "\": use the catalogue's constant";
    }
  }
  EXPECT_GT(files, 100u);
}

// The agent's tasks: their ids are catalogued, and README's task table and docs/METRICS.md
// list exactly them per task.
TEST(CheckCatalogTest, AgentTasksListCataloguedIdsAsTheDocsSay) {
  node::Options node;
  agent::ProbeTaskOptions probe;
  probe.path = "/mnt/lustre";
  std::vector<agent::TaskSpec> tasks;
  tasks.push_back(agent::RdmaTask("/nonexistent", node));
  tasks.push_back(agent::FabricTask("/nonexistent", {}));
  tasks.push_back(agent::GpuTask("/nonexistent", node));
  tasks.push_back(agent::StorageTask("/nonexistent", node));
  tasks.push_back(agent::NcclLogTask("/nonexistent"));
  tasks.push_back(agent::PodsTask("/nonexistent", {}));
  tasks.push_back(agent::StorageProbeTask(probe, std::make_shared<prometheus::Registry>()));

  std::string readme = ReadText(kSource / "README.md");
  std::string metrics = ReadText(kSource / "docs/METRICS.md");
  size_t by_task = metrics.find("Check ids by task:");
  ASSERT_NE(by_task, std::string::npos);
  std::string paragraph = metrics.substr(by_task, metrics.find("\n\n", by_task) - by_task);
  for (const auto& t : tasks) {
    std::string name = t.name.starts_with("storage-probe:") ? "storage-probe:<path>" : t.name;
    std::set<std::string> ids(t.checks.begin(), t.checks.end());
    for (const auto& id : ids) EXPECT_TRUE(Find(id)) << t.name << ": " << id;

    size_t row = readme.find("\n| `" + name + "` |");
    ASSERT_NE(row, std::string::npos) << "README's agent task table has no row " << name;
    std::string line = readme.substr(row + 1, readme.find('\n', row + 1) - row - 1);
    EXPECT_EQ(IdsIn(line.substr(line.rfind("| ", line.size() - 3))), ids) << line;

    size_t at = paragraph.find("`" + name + "`:");
    ASSERT_NE(at, std::string::npos) << "docs/METRICS.md: no task " << name;
    size_t end = paragraph.find(". `", at);
    EXPECT_EQ(IdsIn(paragraph.substr(at, end == std::string::npos ? end : end - at)), ids) << name;
  }
}

TEST(CheckCatalogTest, NodeConditionMappingNamesCataloguedIds) {
  size_t mapped = 0;
  for (const auto& rule : agent::ConditionRules()) {
    EXPECT_TRUE(Names(std::string(rule.pattern))) << rule.pattern << " -> " << rule.condition;
    for (const CheckCatalog* c : Catalogs()) {
      for (const auto& info : c->checks) {
        if (agent::RuleMatches(rule.pattern, info.id)) ++mapped;
      }
    }
  }
  EXPECT_GT(mapped, 10u);
  EXPECT_EQ(agent::ConditionTypeFor(rdma::kPortDown), agent::kRdmaFabricDegraded);
  EXPECT_EQ(agent::ConditionTypeFor(agent::kFabricIdleWhileTcpBusy), agent::kRdmaFabricDegraded);
  EXPECT_EQ(agent::ConditionTypeFor(agent::kStorageProbe), agent::kSharedStorageDegraded);
  EXPECT_EQ(agent::ConditionTypeFor(gpu::kNicAffinity), agent::kGpuNicAffinityBroken);
  EXPECT_EQ(agent::ConditionTypeFor(gpu::kCount), "");
}

// Every id README.md and docs/METRICS.md name is catalogued; every check table's first column
// holds ids; every catalogued id is documented in the README.
TEST(CheckCatalogTest, DocsNameOnlyCataloguedIdsAndTheReadmeDocumentsEveryId) {
  std::string readme = ReadText(kSource / "README.md");
  for (const char* doc : {"README.md", "docs/METRICS.md"}) {
    std::string text = ReadText(kSource / doc);
    std::set<std::string> ids = IdsIn(text);
    EXPECT_GT(ids.size(), 20u) << doc;
    for (const auto& id : ids) EXPECT_TRUE(Names(id)) << doc << " names " << id;
  }
  // The tables whose first column is "check": each row's first cell is one catalogued id.
  std::istringstream lines(readme);
  std::string line;
  bool in_check_table = false;
  size_t rows = 0;
  while (std::getline(lines, line)) {
    if (!line.starts_with("|")) {
      in_check_table = false;
    } else if (line.starts_with("| check |")) {
      in_check_table = true;
    } else if (in_check_table && !line.starts_with("|---")) {
      std::string cell(Trim(Split(line, '|')[1]));
      ASSERT_TRUE(cell.size() > 2 && cell.front() == '`' && cell.back() == '`') << line;
      EXPECT_TRUE(Find(cell.substr(1, cell.size() - 2))) << "README: " << line;
      ++rows;
    }
  }
  EXPECT_GT(rows, 40u);
  std::set<std::string> documented = IdsIn(readme);
  for (const CheckCatalog* c : Catalogs()) {
    for (const auto& info : c->checks) {
      EXPECT_TRUE(documented.count(info.id))
          << info.id << " (" << c->domain << ") is documented nowhere in README.md";
    }
  }
}

// A regular expression of the alert rules' `check=~` as the ids it matches: literals, `[.]`,
// `\.` and groups of alternatives (which is all the rules use); a bare `.` matches the dot.
std::vector<std::string> Expand(std::string_view re, size_t& i) {
  std::vector<std::string> alternatives;
  std::vector<std::string> current = {""};
  auto append = [&](const std::vector<std::string>& tails) {
    std::vector<std::string> next;
    for (const auto& head : current) {
      for (const auto& tail : tails) next.push_back(head + tail);
    }
    current = std::move(next);
  };
  while (i < re.size()) {
    char c = re[i];
    if (c == '(') {
      ++i;
      append(Expand(re, i));
    } else if (c == ')') {
      ++i;
      break;
    } else if (c == '|') {
      ++i;
      alternatives.insert(alternatives.end(), current.begin(), current.end());
      current = {""};
    } else if (re.substr(i, 3) == "[.]") {
      i += 3;
      append({"."});
    } else if (re.substr(i, 2) == "\\.") {
      i += 2;
      append({"."});
    } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.') {
      append({std::string(1, c)});
      ++i;
    } else {
      ADD_FAILURE() << "unsupported in check=~\"" << re << "\": " << re.substr(i);
      return {};
    }
  }
  alternatives.insert(alternatives.end(), current.begin(), current.end());
  return alternatives;
}

TEST(CheckCatalogTest, AlertRulesNameOnlyCataloguedIds) {
  EXPECT_EQ(([] {
              size_t i = 0;
              return Expand("canary[.](image|transport[.]not-rdma)", i);
            }()),
            (std::vector<std::string>{"canary.image", "canary.transport.not-rdma"}));
  static const std::regex matcher(R"(check(=~|=)\\?"([^"\\]*)\\?")");
  for (const char* file : {"deploy/agent/alerts.yaml", "deploy/controller/alerts.yaml",
                           "deploy/agent/alerts_test.yaml", "deploy/controller/alerts_test.yaml"}) {
    std::string text = ReadText(kSource / file);
    size_t named = 0;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), matcher);
         it != std::sregex_iterator(); ++it) {
      std::string value = (*it)[2];
      std::vector<std::string> ids = {value};
      if ((*it)[1] == "=~") {
        size_t i = 0;
        ids = Expand(value, i);
      }
      for (const auto& id : ids) {
        EXPECT_TRUE(Find(id)) << file << ": check " << (*it)[1] << "\"" << value << "\" names "
                              << id;
        ++named;
      }
    }
    EXPECT_GT(named, 1u) << file;
  }
}

}  // namespace
}  // namespace tocsin
