#pragma once

#include <memory>

#include "base/status.h"
#include "https/module_abi.h"

namespace tocsin::https {

// Starts an HTTPS server (cpp-httplib over OpenSSL, TLS 1.2 or later) from the module
// tocsin-https.so, which is loaded on the first call (sys::LoadModuleSymbol): only a command
// that serves HTTPS maps OpenSSL. A module that is missing or does not load is Unavailable; a
// certificate or key that does not load or match is InvalidArgument, naming the flag and file.
Result<std::unique_ptr<Server>> StartServer(const ServerOptions& options);

}  // namespace tocsin::https
