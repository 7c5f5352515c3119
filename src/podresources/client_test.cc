// podresources::List against the fake kubelet (tests/podresources/fake_kubelet.py, gRPC over a
// unix socket): through the module tocsin-podresources.so, as the agent calls it.
#include "podresources/client.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "testing/fake_kubelet.h"
#include "testing/status_matchers.h"
#include "testing/temp_dir.h"

namespace tocsin::podresources {
namespace {

using testing::FakeKubelet;
using testing::ScopedTempDir;

TEST(PodResourcesClientTest, ListsTheFakeKubeletsPodsAndFailsClearlyWhenItIsGone) {
  ScopedTempDir dir("podresources");
  std::string answer =
      dir.Write("answer.json",
                R"({"pods": [{"namespace": "ml", "name": "llm-0", "containers": [{"name": "trainer",
          "devices": [{"resource": "nvidia.com/gpu", "ids": ["GPU-1", "GPU-2"]}]}]}]})");
  std::string socket = dir.Path("kubelet.sock");
  FakeKubelet kubelet(socket, answer);
  ASSERT_TRUE(kubelet.ok()) << kubelet.error();

  ASSERT_OK_AND_ASSIGN(PodList list, List(socket, std::chrono::seconds(10)));
  ASSERT_EQ(list.pods.size(), 1u);
  EXPECT_EQ(list.pods[0].name, "llm-0");
  ASSERT_EQ(list.pods[0].devices.size(), 2u);
  EXPECT_EQ(list.pods[0].devices[1].id, "GPU-2");

  // An answer over the size limit is refused by gRPC itself, before anything is decoded.
  dir.Write("answer.json", R"({"synth_pods": 2000, "synth_devices": 8})");
  CallOptions small;
  small.socket_path = socket;
  small.method = kListMethod;
  small.max_response_bytes = 64 << 10;
  auto big = Call(small);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), StatusCode::kIoError) << big.status().message();
  // Within it, the decoder caps what it keeps.
  ASSERT_OK_AND_ASSIGN(list, List(socket, std::chrono::seconds(10)));
  EXPECT_EQ(list.pods.size(), 256u);
  EXPECT_EQ(list.dropped.pods, 2000u - 256u);

  kubelet.Stop();  // the socket is removed: NotFound, without a call
  auto gone = List(socket, std::chrono::seconds(10));
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.status().code(), StatusCode::kNotFound) << gone.status().message();
}

// A socket file nobody listens on (what a crashed kubelet leaves): Unavailable, not a hang.
TEST(PodResourcesClientTest, ASocketNobodyServesIsUnavailable) {
  ScopedTempDir dir("podresources");
  std::string answer = dir.Write("answer.json", R"({"pods": []})");
  std::string socket = dir.Path("kubelet.sock");
  {
    FakeKubelet kubelet(socket, answer);
    ASSERT_TRUE(kubelet.ok()) << kubelet.error();
    ASSERT_OK(List(socket, std::chrono::seconds(10)).status());
    // A second name for the socket, which outlives the server (Stop removes the first).
    ASSERT_EQ(::link(socket.c_str(), dir.Path("left.sock").c_str()), 0);
  }
  auto r = List(dir.Path("left.sock"), std::chrono::seconds(5));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().message();
}

}  // namespace
}  // namespace tocsin::podresources
