#include "drift/render.h"

#include <map>

#include "base/escape.h"
#include "base/strings.h"

namespace tocsin::drift {
namespace {

constexpr Group kGroups[] = {Group::kNodes, Group::kDevicePlugin, Group::kNetworks,
                             Group::kTemplates};

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// Markdown table cells: no pipes, no newlines, no HTML.
std::string MdCell(std::string_view s) {
  std::string out;
  for (char c : EscapeControl(s)) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '<') {
      out += "&lt;";
    } else if (c == '>') {
      out += "&gt;";
    } else {
      out += c;
    }
  }
  return out;
}

// "tocsin.diff.device-plugin": the JUnit class of a group's test cases.
std::string JunitClass(Group g) {
  std::string out = "tocsin.diff." + std::string(GroupName(g));
  for (char& c : out) c = c == ' ' ? '-' : c;
  return out;
}

std::string GroupOf(const Finding& f) {
  if (f.evidence.contains("group") && f.evidence["group"].is_string()) {
    return f.evidence["group"].get<std::string>();
  }
  return "nodes";
}

std::string Value(const Finding& f, const char* key) {
  if (f.evidence.contains(key) && f.evidence[key].is_string()) {
    return f.evidence[key].get<std::string>();
  }
  return "";
}

}  // namespace

std::vector<Table> Tables(const Side& a, const Side& b, const DiffResult& result,
                          const Options& options) {
  std::vector<Table> out;
  Table sides{"SIDES", {"side", "source", "nodes", "classes"}, {}, {}};
  for (const Side* s : {&a, &b}) {
    std::map<std::string, int> classes;
    for (const auto& n : s->snapshot->nodes) classes[NodeClass(n, options)]++;
    std::vector<std::string> names;
    for (const auto& [c, count] : classes) names.push_back(c + " (" + std::to_string(count) + ")");
    sides.rows.push_back(
        {s->name, s->source, std::to_string(s->snapshot->nodes.size()), Join(names, ", ")});
  }
  out.push_back(std::move(sides));
  for (Group g : kGroups) {
    Table t{Upper(GroupName(g)), {"item", a.name, b.name}, {}, {}};
    size_t same = 0;
    for (const auto& it : result.items) {
      if (it.group != g) continue;
      if (!it.differs) {
        ++same;
        continue;
      }
      t.rows.push_back({it.name, it.a, it.b});
    }
    t.notes.push_back(std::to_string(same) + " compared item(s) the same");
    out.push_back(std::move(t));
  }
  return out;
}

std::string RenderJunit(const Report& report, const std::vector<Item>& items, Severity fail_on) {
  std::map<std::string, std::vector<const Finding*>> by_subject;
  for (const auto& f : report.findings) by_subject[f.subject].push_back(&f);
  // Findings with no compared item (a class's outliers, an empty input) get one of their own.
  std::vector<Item> all = items;
  std::map<std::string, bool> known;
  for (const auto& it : items) known[it.name] = true;
  for (const auto& f : report.findings) {
    if (known.emplace(f.subject, true).second) {
      std::string g = GroupOf(f);
      Group group = Group::kNodes;
      for (Group c : kGroups) {
        if (GroupName(c) == g) group = c;
      }
      all.push_back({group, f.subject, "", "", true});
    }
  }
  std::string body;
  size_t total_tests = 0, total_failures = 0;
  for (Group g : kGroups) {
    std::string cases;
    size_t tests = 0, failures = 0;
    for (const auto& it : all) {
      if (it.group != g) continue;
      ++tests;
      cases +=
          "    <testcase classname=\"" + JunitClass(g) + "\" name=\"" + XmlEscape(it.name) + "\"";
      auto found = by_subject.find(it.name);
      if (found == by_subject.end()) {
        cases += "/>\n";
        continue;
      }
      cases += ">\n";
      // One <failure> per test case (many consumers take only one): every finding at or above
      // --fail-on in it, their ids in `type` and their messages in `message`.
      std::vector<std::string> types, messages;
      std::string failure, out;
      for (const Finding* f : found->second) {
        std::string line =
            std::string(SeverityName(f->severity)) + " " + f->check + ": " + f->message;
        if (f->severity >= fail_on) {
          types.push_back(f->check);
          messages.push_back(f->message);
          failure += line + "\n" + f->evidence.dump() + "\n";
        } else {
          out += line + "\n";
        }
      }
      if (!types.empty()) {
        ++failures;
        cases += "      <failure type=\"" + XmlEscape(Join(types, " ")) + "\" message=\"" +
                 XmlEscape(Join(messages, "; ")) + "\">" + XmlEscape(failure) + "</failure>\n";
      }
      if (!out.empty()) cases += "      <system-out>" + XmlEscape(out) + "</system-out>\n";
      cases += "    </testcase>\n";
    }
    total_tests += tests;
    total_failures += failures;
    body += "  <testsuite name=\"" + JunitClass(g) + "\" tests=\"" + std::to_string(tests) +
            "\" failures=\"" + std::to_string(failures) + "\" errors=\"0\">\n" + cases +
            "  </testsuite>\n";
  }
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"tocsin diff\" tests=\"" +
         std::to_string(total_tests) + "\" failures=\"" + std::to_string(total_failures) + "\">\n" +
         body + "</testsuites>\n";
}

std::string RenderMarkdown(const Report& report, const Side& a, const Side& b) {
  std::map<std::string, size_t> counts;
  for (const auto& f : report.findings) counts[std::string(SeverityName(f.severity))]++;
  std::string out = "### tocsin diff: " + MdCell(a.name) + " vs " + MdCell(b.name) + "\n\n";
  if (report.findings.empty()) return out + "No drift: every compared item is the same.\n";
  std::vector<std::string> parts;
  for (const char* s : {"critical", "error", "warning", "info"}) {
    if (counts.count(s)) parts.push_back(std::to_string(counts[s]) + " " + s);
  }
  out += "**" + Join(parts, ", ") + "**\n";
  for (Group g : kGroups) {
    std::string rows;
    for (const auto& f : report.findings) {
      if (GroupOf(f) != GroupName(g)) continue;
      rows += "| " + std::string(SeverityName(f.severity)) + " | `" + MdCell(f.check) + "` | " +
              MdCell(f.subject) + " | " + MdCell(Value(f, "a")) + " | " + MdCell(Value(f, "b")) +
              " | " + MdCell(f.message) + " |\n";
    }
    if (rows.empty()) continue;
    out += "\n#### " + std::string(GroupName(g)) + "\n\n| severity | check | item | " +
           MdCell(a.name) + " | " + MdCell(b.name) + " | what |\n|---|---|---|---|---|---|\n" +
           rows;
  }
  return out;
}

}  // namespace tocsin::drift
