#include "podresources/client.h"

#include <sys/stat.h>

#include "sys/module.h"

namespace tocsin::podresources {

Result<std::string> Call(const CallOptions& options) {
  struct stat st {};
  if (::stat(options.socket_path.c_str(), &st) != 0) {
    return Status::NotFound(options.socket_path + ": no such socket");
  }
  if (!S_ISSOCK(st.st_mode)) return Status::Unavailable(options.socket_path + ": not a socket");
  auto symbol = sys::LoadModuleSymbol("tocsin-podresources.so",
                                      TOCSIN_PODRESOURCES_MODULE_BUILD_PATH, kCallSymbol);
  if (!symbol.ok()) return symbol.status();
  CallResult result;
  reinterpret_cast<CallFn> (*symbol)(options, &result);
  std::string where = options.socket_path + " " + options.method + ": ";
  switch (result.error) {
    case CallError::kNone:
      return std::move(result.response);
    case CallError::kUnavailable:
      return Status::Unavailable(where + result.message);
    case CallError::kDeadline:
      return Status::Timeout(where + "no answer within " + std::to_string(options.timeout.count()) +
                             " ms");
    case CallError::kTooLarge:
      return Status::IoError(where + "answer over " + std::to_string(options.max_response_bytes) +
                             " bytes (" + result.message + ")");
    case CallError::kFailed:
      break;
  }
  return Status::IoError(where + result.message);
}

Result<PodList> List(const std::string& socket_path, std::chrono::milliseconds timeout,
                     const Limits& limits) {
  CallOptions o;
  o.socket_path = socket_path;
  o.method = kListMethod;
  o.timeout = timeout;
  TOCSIN_ASSIGN_OR_RETURN(std::string answer, Call(o));
  return ParseListResponse(answer, limits);
}

}  // namespace tocsin::podresources
