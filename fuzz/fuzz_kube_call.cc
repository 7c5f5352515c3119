// The agent's `--kube-call` child protocol, both ways: the request the child reads from its
// stdin and the answer the agent reads from the child's stdout (a child that misbehaves, or
// whatever runs in its place, writes anything). Each input is tried as both.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "agent/kube_call.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto request = tocsin::agent::DecodeKubeRequest(text);
  if (request.ok()) {
    if (request->body.size() > tocsin::agent::kMaxKubeCallBody) __builtin_trap();
    // What was accepted encodes again, to itself.
    auto again = tocsin::agent::EncodeKubeRequest(*request);
    if (!again.ok()) __builtin_trap();
    auto back = tocsin::agent::DecodeKubeRequest(*again);
    if (!back.ok() || back->method != request->method || back->path != request->path ||
        back->type != request->type || back->body != request->body) {
      __builtin_trap();
    }
  }
  auto answer = tocsin::agent::DecodeKubeAnswer(text);
  if (answer.ok()) {
    if (answer->ok() && answer->value().size() > tocsin::agent::kMaxKubeCallAnswer) __builtin_trap();
    auto back = tocsin::agent::DecodeKubeAnswer(tocsin::agent::EncodeKubeAnswer(*answer));
    if (!back.ok() || back->ok() != answer->ok()) __builtin_trap();
  }
  return 0;
}
