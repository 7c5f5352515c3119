#include "agent/kube_call.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>

#include "agent/kube_client.h"
#include "testing/status_matchers.h"
#include "testing/temp_dir.h"

namespace tocsin::agent {
namespace {

TEST(KubeCallTest, RequestsRoundTripAndHostileOnesAreRefused) {
  KubeRequest r{"PATCH", "/api/v1/nodes/n1/status", "application/strategic-merge-patch+json",
                std::string("{\"a\":\"\n\0b\"}", 11)};
  ASSERT_OK_AND_ASSIGN(std::string text, EncodeKubeRequest(r));
  ASSERT_OK_AND_ASSIGN(KubeRequest back, DecodeKubeRequest(text));
  EXPECT_EQ(back.method, r.method);
  EXPECT_EQ(back.path, r.path);
  EXPECT_EQ(back.type, r.type);
  EXPECT_EQ(back.body, r.body);

  // What the encoder refuses: an unknown method, a path with a space or newline or without its
  // slash, a body over the cap.
  for (KubeRequest bad : {KubeRequest{"DELETE", "/x", "t", ""}, KubeRequest{"GET", "/a b", "t", ""},
                          KubeRequest{"GET", "/a\nGET", "t", ""}, KubeRequest{"GET", "x", "t", ""},
                          KubeRequest{"GET", "/x", "", ""},
                          KubeRequest{"POST", "/x", "t", std::string(kMaxKubeCallBody + 1, 'b')}}) {
    EXPECT_EQ(EncodeKubeRequest(bad).status().code(), StatusCode::kInvalidArgument)
        << bad.method << " " << bad.path;
  }
  // What the decoder refuses: another magic, a body shorter or longer than announced, a huge
  // announced length, a line with no end.
  for (std::string bad : {std::string("tocsin-kube-call/2\nGET\n/x\nt\n0\n"),
                          std::string("tocsin-kube-call/1\nGET\n/x\nt\n5\nab"),
                          std::string("tocsin-kube-call/1\nGET\n/x\nt\n1\nab"),
                          std::string("tocsin-kube-call/1\nGET\n/x\nt\n99999999999999999999\n"),
                          std::string("tocsin-kube-call/1\nGET\n/x"), std::string(""),
                          "tocsin-kube-call/1\nGET\n/" + std::string(5000, 'p') + "\nt\n0\n"}) {
    EXPECT_EQ(DecodeKubeRequest(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST(KubeCallTest, AnswersCarryTheBodyOrTheError) {
  ASSERT_OK_AND_ASSIGN(auto ok, DecodeKubeAnswer(EncodeKubeAnswer(std::string("{\"k\":1}\n"))));
  ASSERT_OK(ok);
  EXPECT_EQ(*ok, "{\"k\":1}\n");
  ASSERT_OK_AND_ASSIGN(auto empty, DecodeKubeAnswer(EncodeKubeAnswer(std::string())));
  ASSERT_OK(empty);
  EXPECT_EQ(*empty, "");
  // The error's code and message, as the in-process client gives them (409: "conflict").
  ASSERT_OK_AND_ASSIGN(auto err, DecodeKubeAnswer(EncodeKubeAnswer(
                                     Status::Unavailable("PATCH /api/v1/nodes/n: 409 conflict"))));
  ASSERT_FALSE(err.ok());
  EXPECT_EQ(err.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(err.status().message(), "PATCH /api/v1/nodes/n: 409 conflict");

  for (std::string bad :
       {std::string(""), std::string("garbage\n"), std::string("tocsin-kube-call/1 0 5\nabc"),
        std::string("tocsin-kube-call/1 0 1\nabc"), std::string("tocsin-kube-call/1 42 0\n"),
        std::string("tocsin-kube-call/1 -1 0\n"), std::string("tocsin-kube-call/1 0 99999999999\n"),
        std::string("tocsin-kube-call/1 0 3"), std::string(100, 'x')}) {
    auto r = DecodeKubeAnswer(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kParseError);
    EXPECT_NE(r.status().message().find("malformed answer"), std::string::npos);
  }
}

// The child's entry point on a request it cannot read: exit 2 with the reason, no answer.
TEST(KubeCallTest, TheChildRefusesAMalformedRequest) {
  std::string input = "tocsin-kube-call/1\nGET\n/x\nt\n3\nab";
  FILE* in = fmemopen(input.data(), input.size(), "r");
  char out_buf[256] = {}, err_buf[512] = {};
  FILE* out = fmemopen(out_buf, sizeof out_buf, "w");
  FILE* err = fmemopen(err_buf, sizeof err_buf, "w");
  EXPECT_EQ(RunKubeCallChild({}, in, out, err), 2);
  std::fclose(in);
  std::fclose(out);
  std::fclose(err);
  EXPECT_STREQ(out_buf, "");
  EXPECT_NE(std::string(err_buf).find("3 announced"), std::string::npos) << err_buf;
}

// The child-backed client against stand-in children (shell scripts as `self_exe`): the request
// arrives on stdin and the flags on argv; an answer is carried through; a child that hangs is
// killed at the deadline, one that exits non-zero or writes garbage or too much is a clear error,
// and each is counted.
class ChildKubeClientTest : public ::testing::Test {
 protected:
  std::unique_ptr<KubeClient> With(const std::string& script,
                                   std::chrono::milliseconds deadline = std::chrono::seconds(10)) {
    std::string path = tmp_.Write("child-" + std::to_string(++n_) + ".sh", "#!/bin/sh\n" + script);
    ::chmod(path.c_str(), 0755);
    KubeChildOptions o;
    o.self_exe = path;
    o.kubeconfig = {"/etc/k.conf", "ctx"};
    o.client.request_timeout = std::chrono::milliseconds(1500);
    o.client.attempts = 3;
    o.deadline = deadline;
    return ChildKubeClient(o);
  }
  testing::ScopedTempDir tmp_{"kube-call-test"};
  int n_ = 0;
};

TEST_F(ChildKubeClientTest, TheRequestGoesInAndTheAnswerComesBack) {
  // The child writes back its argv and its stdin as the body of a successful answer.
  auto client = With(
      "in=$(cat; echo .)\n"
      "body=\"$*|${in%.}\"\n"
      "printf 'tocsin-kube-call/1 0 %d\\n%s' \"$(printf %s \"$body\" | wc -c)\" \"$body\"\n");
  ASSERT_OK_AND_ASSIGN(std::string body, client->Send("PATCH", "/api/v1/nodes/n1/status",
                                                      "{\"x\":1}", "application/merge-patch+json"));
  EXPECT_EQ(body,
            "agent --kube-call --request-timeout 1500ms --kube-call-attempts 3 --kubeconfig "
            "/etc/k.conf --context ctx|tocsin-kube-call/1\nPATCH\n/api/v1/nodes/n1/status\n"
            "application/merge-patch+json\n7\n{\"x\":1}");
  EXPECT_EQ(client->failures(), 0u);

  // An API error the child carries is the caller's error, not a failure of the child.
  auto refusing = With("cat >/dev/null; printf 'tocsin-kube-call/1 6 17\\n409 conflict, etc'\n");
  auto r = refusing->Get("/api/v1/nodes/n1");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(r.status().message(), "409 conflict, etc");
  EXPECT_EQ(refusing->failures(), 0u);
}

TEST_F(ChildKubeClientTest, ListDecodesTheItemsTheChildListed) {
  std::string list =
      "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"metadata\":{},\"items\":[{\"apiVersion\":\"v1\","
      "\"kind\":\"Pod\",\"metadata\":{\"name\":\"p1\",\"namespace\":\"ns\"},\"spec\":{\"nodeName\":"
      "\"n1\",\"containers\":[]},\"status\":{\"phase\":\"Running\"}}]}\n";
  auto client = With("cat >/dev/null; printf 'tocsin-kube-call/1 0 " + std::to_string(list.size()) +
                     "\\n'; cat <<'EOF'\n" + list + "EOF\n");
  k8s::Snapshot snap;
  ASSERT_OK(client->List("/api/v1/pods?fieldSelector=spec.nodeName%3Dn1", "Pod", snap));
  ASSERT_EQ(snap.pods.size(), 1u);
  EXPECT_EQ(snap.pods[0].name, "p1");
}

TEST_F(ChildKubeClientTest, AChildThatFailsIsAClearErrorAndCounted) {
  struct Case {
    std::string script;
    StatusCode code;
    std::string says;
  } cases[] = {
      {"exec sleep 30\n", StatusCode::kTimeout, "killed"},
      {"echo 'no route to the cluster' >&2; exit 3\n", StatusCode::kUnavailable,
       "exit code 3: no route to the cluster"},
      {"kill -9 $$\n", StatusCode::kUnavailable, "exit code 137"},
      {"cat >/dev/null; echo '{\"kind\":\"Node\"}'\n", StatusCode::kParseError, "malformed answer"},
      {"cat >/dev/null; printf 'tocsin-kube-call/1 0 10\\nshort'\n", StatusCode::kParseError,
       "5 bytes after the header, 10 announced"},
      {"cat >/dev/null; head -c 20000000 /dev/zero\n", StatusCode::kIoError, "more than"},
  };
  int n = 0;
  for (const auto& c : cases) {
    auto client = With(c.script, c.code == StatusCode::kTimeout ? std::chrono::milliseconds(500)
                                                                : std::chrono::seconds(10));
    auto r = client->Get("/api/v1/nodes/n1");
    ASSERT_FALSE(r.ok()) << c.script;
    EXPECT_EQ(r.status().code(), c.code) << c.script << r.status().message();
    EXPECT_NE(r.status().message().find(c.says), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find("GET /api/v1/nodes/n1"), std::string::npos)
        << r.status().message();
    EXPECT_EQ(client->failures(), 1u) << c.script;
    ++n;
  }
  EXPECT_EQ(n, 6);
  // A self_exe that is not there.
  KubeChildOptions o;
  o.self_exe = tmp_.Path("missing");
  auto client = ChildKubeClient(o);
  EXPECT_EQ(client->Get("/api/v1/nodes/n1").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(client->failures(), 1u);
}

}  // namespace
}  // namespace tocsin::agent
