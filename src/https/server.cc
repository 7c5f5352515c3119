#include "https/server.h"

#include "sys/module.h"

// Only a build with tests looks where the build put the module (its test binaries live in
// other folders); a release binary looks beside itself and in ../lib/tocsin/ only.
#ifndef TOCSIN_HTTPS_MODULE_BUILD_PATH
#define TOCSIN_HTTPS_MODULE_BUILD_PATH ""
#endif

namespace tocsin::https {

Result<std::unique_ptr<Server>> StartServer(const ServerOptions& options) {
  if (options.port <= 0) return Status::InvalidArgument("an HTTPS server needs a port");
  auto symbol = sys::LoadModuleSymbol("tocsin-https.so", TOCSIN_HTTPS_MODULE_BUILD_PATH,
                                      TOCSIN_MODULE_ID, kStartSymbol);
  if (!symbol.ok()) return symbol.status();
  auto start = reinterpret_cast<StartFn>(*symbol);
  StartError error = StartError::kNone;
  std::string message;
  Server* server = start(options, &error, &message);
  if (server != nullptr) return std::unique_ptr<Server>(server);
  if (error == StartError::kInput) return Status::InvalidArgument(message);
  return Status::Unavailable(message);
}

}  // namespace tocsin::https
