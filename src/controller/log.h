#pragma once

#include <string>

namespace tocsin::controller {

// Writes one timestamped line to stderr: "2026-12-01T01:02:03Z tocsin controller: <what>".
void Log(const std::string& what);

}  // namespace tocsin::controller
