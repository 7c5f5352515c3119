#include "agent/kube_call.h"

#include "base/strings.h"
#include "k8s/decode.h"

namespace tocsin::agent {
namespace {

constexpr size_t kMaxPath = 4096;
constexpr size_t kMaxType = 256;

bool IsMethod(std::string_view m) {
  return m == "GET" || m == "PATCH" || m == "POST" || m == "PUT" || m == "LIST";
}

// Printable ASCII, no space (a path with its query, a content type, a kind).
bool IsToken(std::string_view s, size_t max) {
  if (s.empty() || s.size() > max) return false;
  for (char c : s) {
    if (c <= ' ' || c > '~') return false;
  }
  return true;
}

// The next '\n'-ended line of `text` from `pos`, at most `max` bytes; nullopt when there is none.
std::optional<std::string_view> Line(std::string_view text, size_t& pos, size_t max) {
  size_t end = text.find('\n', pos);
  if (end == std::string_view::npos || end - pos > max) return std::nullopt;
  std::string_view line = text.substr(pos, end - pos);
  pos = end + 1;
  return line;
}

Status Invalid(const std::string& what) {
  return Status::InvalidArgument("kube-call request: " + what);
}

Status Malformed(const std::string& what, std::string_view text) {
  return Status::ParseError("malformed answer from the kube-call child (" + what +
                            "): " + Quote(text, 60));
}

}  // namespace

Result<std::string> EncodeKubeRequest(const KubeRequest& r) {
  if (!IsMethod(r.method)) return Invalid("method " + Quote(r.method));
  if (!IsToken(r.path, kMaxPath) || r.path[0] != '/') return Invalid("path " + Quote(r.path));
  if (!IsToken(r.type, kMaxType)) return Invalid("type " + Quote(r.type));
  if (r.body.size() > kMaxKubeCallBody) {
    return Invalid("body of " + std::to_string(r.body.size()) + " bytes, over " +
                   std::to_string(kMaxKubeCallBody));
  }
  return std::string(kKubeCallMagic) + "\n" + r.method + "\n" + r.path + "\n" + r.type + "\n" +
         std::to_string(r.body.size()) + "\n" + r.body;
}

Result<KubeRequest> DecodeKubeRequest(std::string_view text) {
  size_t pos = 0;
  auto magic = Line(text, pos, sizeof kKubeCallMagic);
  if (!magic || *magic != kKubeCallMagic) return Invalid("not " + std::string(kKubeCallMagic));
  KubeRequest r;
  auto method = Line(text, pos, 8);
  if (!method || !IsMethod(*method)) return Invalid("no method");
  r.method = *method;
  auto path = Line(text, pos, kMaxPath);
  if (!path || !IsToken(*path, kMaxPath) || (*path)[0] != '/') return Invalid("no path");
  r.path = *path;
  auto type = Line(text, pos, kMaxType);
  if (!type || !IsToken(*type, kMaxType)) return Invalid("no type");
  r.type = *type;
  auto length_text = Line(text, pos, 20);
  std::optional<uint64_t> length;
  if (length_text) length = ParseUint64(*length_text);
  if (!length || *length > kMaxKubeCallBody) return Invalid("no body length, or over the cap");
  if (text.size() - pos != *length) {
    return Invalid("a body of " + std::to_string(text.size() - pos) + " bytes, " +
                   std::to_string(*length) + " announced");
  }
  r.body = text.substr(pos);
  return r;
}

std::string EncodeKubeAnswer(const Result<std::string>& answer) {
  int code = static_cast<int>(answer.ok() ? StatusCode::kOk : answer.status().code());
  const std::string& bytes = answer.ok() ? *answer : answer.status().message();
  return std::string(kKubeCallMagic) + " " + std::to_string(code) + " " +
         std::to_string(bytes.size()) + "\n" + bytes;
}

Result<Result<std::string>> DecodeKubeAnswer(std::string_view text) {
  size_t pos = 0;
  auto header = Line(text, pos, 64);
  if (!header) return Malformed("no header line", text);
  auto fields = Split(*header, ' ');
  if (fields.size() != 3 || fields[0] != kKubeCallMagic) return Malformed("header", text);
  auto code = ParseUint64(fields[1]);
  auto length = ParseUint64(fields[2]);
  if (!code || *code > static_cast<uint64_t>(StatusCode::kInternal)) {
    return Malformed("status code", text);
  }
  if (!length || *length > kMaxKubeCallAnswer) return Malformed("length", text);
  if (text.size() - pos != *length) {
    return Malformed(std::to_string(text.size() - pos) + " bytes after the header, " +
                         std::to_string(*length) + " announced",
                     text);
  }
  std::string bytes(text.substr(pos));
  if (*code == 0) return Result<std::string>(std::move(bytes));
  if (bytes.empty()) bytes = "(no message)";
  return Result<std::string>(Status(static_cast<StatusCode>(*code), std::move(bytes)));
}

int RunKubeCallChild(const KubeCallFlags& flags, FILE* in, FILE* out, FILE* err) {
  // The request, at most its caps (and one byte more, to tell).
  std::string text;
  const size_t cap = kMaxKubeCallBody + kMaxPath + kMaxType + 128;
  char buf[65536];
  while (text.size() <= cap) {
    size_t n = std::fread(buf, 1, sizeof buf, in);
    text.append(buf, n);
    if (n < sizeof buf) break;
  }
  auto request = DecodeKubeRequest(text);
  if (!request.ok()) {
    std::fprintf(err, "%s\n", request.status().message().c_str());
    return 2;
  }
  auto call = [&]() -> Result<std::string> {
    TOCSIN_ASSIGN_OR_RETURN(k8s::ClusterAccess access,
                            k8s::ResolveAccess(flags.kubeconfig, k8s::AccessEnvironment()));
    k8s::ClientOptions options = flags.client;
    options.max_body = std::min(options.max_body, kMaxKubeCallAnswer - 64);
    TOCSIN_ASSIGN_OR_RETURN(std::unique_ptr<k8s::ApiClient> client,
                            k8s::ApiClient::Create(std::move(access), options));
    if (request->method == "GET") return client->Get(request->path);
    if (request->method != "LIST") {
      return client->Send(request->method, request->path, request->body, request->type);
    }
    k8s::Snapshot snap;
    snap.keep_raw = true;
    TOCSIN_RETURN_IF_ERROR(client->List(request->path, request->type, snap));
    std::string list = k8s::EncodeRawList(snap);
    if (list.size() > kMaxKubeCallAnswer) {
      return Status::IoError("LIST " + request->path + ": " + std::to_string(list.size()) +
                             " bytes, over the " + std::to_string(kMaxKubeCallAnswer) +
                             " an answer may carry");
    }
    return list;
  };
  std::string answer = EncodeKubeAnswer(call());
  if (std::fwrite(answer.data(), 1, answer.size(), out) != answer.size() || std::fflush(out) != 0) {
    std::fprintf(err, "kube-call: the answer could not be written\n");
    return 2;
  }
  return 0;
}

}  // namespace tocsin::agent
