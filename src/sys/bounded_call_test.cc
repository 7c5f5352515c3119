#include "sys/bounded_call.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace tocsin::sys {
namespace {

TEST(BoundedCallTest, ReturnsWhatTheCallReturns) {
  auto r = BoundedCall(std::chrono::seconds(60), [] { return std::string("answer"); });
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(*r, "answer");
}

// A call that never returns (a read blocked in the kernel) is abandoned at the deadline; the
// caller goes on. The gate is released afterwards so that the abandoned thread can end.
TEST(BoundedCallTest, AHungCallIsAbandonedAtItsDeadline) {
  auto gate = std::make_shared<std::promise<void>>();
  std::shared_future<void> opened = gate->get_future().share();
  auto start = std::chrono::steady_clock::now();
  auto r = BoundedCall(std::chrono::milliseconds(50), [opened] {
    opened.wait();
    return 1;
  });
  EXPECT_FALSE(r.has_value());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  gate->set_value();
}

TEST(BoundedCallTest, AnExceptionReachesTheCaller) {
  EXPECT_THROW(
      BoundedCall(std::chrono::seconds(60), []() -> int { throw std::runtime_error("broken"); }),
      std::runtime_error);
}

}  // namespace
}  // namespace tocsin::sys
