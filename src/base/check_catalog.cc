#include "base/check_catalog.h"

#include <set>
#include <string>

#include "base/strings.h"

namespace tocsin {

const CheckInfo* CheckCatalog::Find(std::string_view id) const {
  for (const auto& c : checks) {
    if (id == c.id) return &c;
  }
  return nullptr;
}

bool IsCheckId(std::string_view text) {
  size_t words = 0;
  for (auto word : Split(text, '.', false)) {
    if (word.empty()) return false;
    for (char c : word) {
      if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
    }
    if (word.front() == '-' || word.back() == '-') return false;
    ++words;
  }
  return words >= 2;
}

Status ValidateCatalog(const CheckCatalog& catalog) {
  std::set<std::string_view> seen;
  for (const auto& c : catalog.checks) {
    std::string id = c.id ? c.id : "";
    std::string where = std::string(catalog.domain) + ": \"" + id + "\"";
    if (!IsCheckId(id)) return Status::InvalidArgument(where + " is not a check id");
    if (!seen.insert(c.id).second) return Status::InvalidArgument(where + " twice");
    std::string_view meaning = c.meaning ? c.meaning : "";
    if (meaning.empty() || meaning.find('\n') != std::string_view::npos) {
      return Status::InvalidArgument(where + ": its meaning must be one line");
    }
    if (!c.severity_rule) return Status::InvalidArgument(where + ": null severity rule");
  }
  return Status::Ok();
}

Status ValidateCatalogs(std::span<const CheckCatalog* const> catalogs) {
  std::set<std::string_view> seen;
  for (const CheckCatalog* catalog : catalogs) {
    TOCSIN_RETURN_IF_ERROR(ValidateCatalog(*catalog));
    for (const auto& c : catalog->checks) {
      if (!seen.insert(c.id).second) {
        return Status::InvalidArgument(std::string(c.id) + " is in two catalogues (one is " +
                                       std::string(catalog->domain) + ")");
      }
    }
  }
  return Status::Ok();
}

const CheckInfo* FindCheck(std::span<const CheckCatalog* const> catalogs, std::string_view id) {
  for (const CheckCatalog* catalog : catalogs) {
    if (const CheckInfo* c = catalog->Find(id)) return c;
  }
  return nullptr;
}

}  // namespace tocsin
