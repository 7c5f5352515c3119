#include "k8s/api_client.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "testing/status_matchers.h"
#include "testing/temp_dir.h"

namespace tocsin::k8s {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;

// An API server that accepts only the token it is told, counting the 401s it answers.
class TokenServer {
 public:
  TokenServer() {
    server_.Get("/api/v1/nodes/n", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> l(mu_);
      if (req.get_header_value("Authorization") != "Bearer " + accepted_) {
        ++unauthorized_;
        res.status = 401;
        res.set_content(R"({"kind":"Status","message":"Unauthorized","code":401})",
                        "application/json");
        return;
      }
      res.set_content(R"({"kind":"Node","metadata":{"name":"n"}})", "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // Bound and listening already: a request waits in the backlog until the loop accepts it.
  }
  ~TokenServer() {
    server_.stop();
    thread_.join();
  }
  void Accept(const std::string& token) {
    std::lock_guard<std::mutex> l(mu_);
    accepted_ = token;
  }
  int unauthorized() {
    std::lock_guard<std::mutex> l(mu_);
    return unauthorized_;
  }
  int port() const { return port_; }

 private:
  httplib::Server server_;
  std::thread thread_;
  std::mutex mu_;
  std::string accepted_;
  int unauthorized_ = 0;
  int port_ = 0;
};

// Issue 13: the agent read its token once, and after the kubelet rotated it every request was a
// 401. The token file is read again when its last read is a minute old (before the request, so
// the server never sees the old token), and at once on a 401. A fake clock: no waiting.
TEST(ApiClientTokenTest, ATokenFileIsReadAgainEveryMinuteAndOnA401) {
  EXPECT_EQ(ClientOptions{}.token_reread, seconds(60));
  ::tocsin::testing::ScopedTempDir tmp("token-test");
  const std::string& dir = tmp.path();
  auto rotate = [&](const std::string& token) {
    std::ofstream(dir + "/token.new") << token << "\n";
    fs::rename(dir + "/token.new", dir + "/token");  // as the kubelet swaps its symlink
  };
  rotate("first");
  TokenServer server;
  server.Accept("first");
  ClusterAccess access;
  access.origin = "test";
  access.server = "http://127.0.0.1:" + std::to_string(server.port());
  access.token_file = dir + "/token";
  auto now = std::make_shared<std::atomic<int64_t>>(0);  // seconds on the fake clock
  ClientOptions options;
  options.attempts = 1;
  options.steady_now = [now] { return std::chrono::steady_clock::time_point(seconds(*now)); };
  auto client = ApiClient::Create(access, options);
  ASSERT_OK(client);
  ASSERT_OK((*client)->Get("/api/v1/nodes/n"));
  EXPECT_EQ(server.unauthorized(), 0);

  // Rotated, and a minute later: read again before the request.
  rotate("second");
  server.Accept("second");
  *now = 60;
  auto after_a_minute = (*client)->Get("/api/v1/nodes/n");
  EXPECT_OK(after_a_minute);
  EXPECT_EQ(server.unauthorized(), 0) << "the old token was sent a minute after its read";

  // Rotated again, before the minute is up: the server's 401 makes the client read it again.
  rotate("third");
  server.Accept("third");
  *now = 119;
  auto on_401 = (*client)->Get("/api/v1/nodes/n");
  EXPECT_OK(on_401);
  EXPECT_EQ(server.unauthorized(), 1);

  // Within the minute and without a 401, the file is not read again (the request would fail
  // had it been: the server still wants "third").
  rotate("fourth");
  *now = 150;
  EXPECT_TRUE((*client)->Get("/api/v1/nodes/n").ok());
  EXPECT_EQ(server.unauthorized(), 1);
}

}  // namespace
}  // namespace tocsin::k8s
