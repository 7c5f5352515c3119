#include "testing/skip.h"

#include <cstdlib>
#include <string_view>

namespace tocsin::testing {

bool NoSkip() {
  const char* v = std::getenv("TOCSIN_NO_SKIP");
  return v != nullptr && std::string_view(v) != "" && std::string_view(v) != "0";
}

}  // namespace tocsin::testing
