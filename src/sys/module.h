#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace tocsin::sys {

// tocsin's own shared objects (a heavy stack that only one command uses, such as the admission
// webhook's TLS server with OpenSSL): dlopened where used, so that every other command, and the
// agent on every node, never maps them. Where a module is looked for, in order: beside the
// running binary (the build tree), in <binary's folder>/../lib/tocsin/ (an install: the image
// has /usr/local/bin/tocsin and /usr/local/lib/tocsin/), then `build_path` (where this build put
// it: test binaries live in other folders).
std::vector<std::string> ModuleCandidates(std::string_view exe_path, std::string_view file,
                                          std::string_view build_path);

// dlopens the first candidate that exists (RTLD_NOW | RTLD_LOCAL; never closed: what it made
// lives as long as the process) and resolves `symbol` in it. The error names every place tried,
// or the loader's reason (a missing library the module needs, a symbol it lacks).
Result<void*> LoadModuleSymbol(std::string_view file, std::string_view build_path,
                               const char* symbol);

}  // namespace tocsin::sys
