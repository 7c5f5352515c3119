#include "podresources/client.h"

#include <sys/stat.h>

#include "sys/module.h"
#include "sys/subprocess.h"

#ifndef TOCSIN_PODRESOURCES_MODULE_BUILD_PATH
#define TOCSIN_PODRESOURCES_MODULE_BUILD_PATH ""
#endif

namespace tocsin::podresources {

Result<std::string> Call(const CallOptions& options) {
  struct stat st {};
  if (::stat(options.socket_path.c_str(), &st) != 0) {
    return Status::NotFound(options.socket_path + ": no such socket");
  }
  if (!S_ISSOCK(st.st_mode)) return Status::Unavailable(options.socket_path + ": not a socket");
  auto symbol = sys::LoadModuleSymbol("tocsin-podresources.so",
                                      TOCSIN_PODRESOURCES_MODULE_BUILD_PATH, TOCSIN_MODULE_ID,
                                      kCallSymbol);
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

Result<PodList> ListInChild(const std::string& self_exe, const std::string& socket_path,
                            std::chrono::milliseconds timeout, const Limits& limits) {
  struct stat st {};
  if (::stat(socket_path.c_str(), &st) != 0) {
    return Status::NotFound(socket_path + ": no such socket");
  }
  sys::ProcessOptions o;
  o.timeout = timeout + std::chrono::seconds(1);
  o.max_output = (4 << 20) + 4096;  // the module's own limit on the answer
  TOCSIN_ASSIGN_OR_RETURN(
      sys::ProcessResult r,
      sys::RunProcess({self_exe, "agent", "--pod-resources-call", socket_path,
                       "--pod-resources-call-timeout", std::to_string(timeout.count())},
                      o));
  if (r.exit_code != 0) {
    std::string why = r.err;
    while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
    if (why.empty()) why = "exit code " + std::to_string(r.exit_code);
    return Status::Unavailable(why);
  }
  return ParseListResponse(r.out, limits);
}

int RunCallChild(const std::string& socket_path, std::chrono::milliseconds timeout, FILE* out,
                 FILE* err) {
  CallOptions o;
  o.socket_path = socket_path;
  o.method = kListMethod;
  o.timeout = timeout;
  auto answer = Call(o);
  if (!answer.ok()) {
    std::fprintf(err, "%s\n", answer.status().message().c_str());
    return 1;
  }
  if (std::fwrite(answer->data(), 1, answer->size(), out) != answer->size() ||
      std::fflush(out) != 0) {
    std::fprintf(err, "%s: the answer could not be written\n", socket_path.c_str());
    return 1;
  }
  return 0;
}

}  // namespace tocsin::podresources
