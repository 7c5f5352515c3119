#pragma once

#include <span>
#include <string_view>

#include "base/finding.h"
#include "base/status.h"

namespace tocsin {

// One check id as the public API knows it. Ids are stable, dotted and lowercase; never rename one.
struct CheckInfo {
  const char* id;
  Severity severity;          // its usual severity
  const char* severity_rule;  // when it is another (empty: always `severity`)
  const char* meaning;        // one line: what a finding of it says
};

// The checks of one domain, kept beside the code that emits them (rdma/catalog.cc, ...). The
// code uses the domain's id constants; a test holds the README's tables, docs/METRICS.md, the
// agent's task lists, its NodeCondition mapping and the alert rules to the catalogues.
struct CheckCatalog {
  std::string_view domain;
  std::span<const CheckInfo> checks;

  const CheckInfo* Find(std::string_view id) const;
};

// Well-formed ids (lowercase dotted words of [a-z0-9-], two at least), unique, each with a meaning
// on one line; across catalogues no id twice.
Status ValidateCatalog(const CheckCatalog& catalog);
Status ValidateCatalogs(std::span<const CheckCatalog* const> catalogs);

// The catalogue that holds `id` (nullptr when none does).
const CheckInfo* FindCheck(std::span<const CheckCatalog* const> catalogs, std::string_view id);

bool IsCheckId(std::string_view text);

}  // namespace tocsin
