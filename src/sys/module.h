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
// has /usr/local/bin/tocsin and /usr/local/lib/tocsin/), then `build_path` (where a build with
// tests put it: test binaries live in other folders; empty in a release build).
std::vector<std::string> ModuleCandidates(std::string_view exe_path, std::string_view file,
                                          std::string_view build_path);

// dlopens the first candidate that exists and resolves `symbol` in it, after checking that the
// module is the one this binary was built with: its `tocsin_module_build_id` (TOCSIN_MODULE_ID)
// must equal `build_id` (a stale module from another build would read the ABI's types wrong).
// The file is opened once (O_NOFOLLOW) and must be a regular file owned by root or by this
// user and writable by nobody else; that very file is loaded (/proc/self/fd), so nobody can
// swap it between the check and the load. RTLD_NOW | RTLD_LOCAL, never closed. The error names
// every place tried, or why the found file was refused or did not load.
Result<void*> LoadModuleSymbol(std::string_view file, std::string_view build_path,
                               std::string_view build_id, const char* symbol);

// What every module exports: a C function returning the build id it was compiled with.
inline constexpr char kModuleBuildIdSymbol[] = "tocsin_module_build_id";

}  // namespace tocsin::sys
