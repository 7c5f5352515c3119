#pragma once

// ASSERT_OK / EXPECT_OK for a Status or a Result<T>: on failure the message shows the expression
// and the Status it returned ("parse error: ...").
//
//   ASSERT_OK(env->ListDir("/sys"));
//   auto r = ReadAttribute(*env, "/sys/x");
//   ASSERT_OK(r);
//   ASSERT_OK_AND_ASSIGN(std::string text, ReadAttribute(*env, "/sys/x"));

#include <gtest/gtest.h>

#include "base/status.h"

namespace tocsin::testing {

inline const Status& StatusOf(const Status& s) { return s; }
template <typename T>
const Status& StatusOf(const Result<T>& r) {
  return r.status();
}

// The predicate-formatter behind the macros.
template <typename T>
::testing::AssertionResult IsOk(const char* expr, const T& outcome) {
  const Status& s = StatusOf(outcome);
  if (s.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << expr << " is not ok: " << s.ToString();
}

}  // namespace tocsin::testing

#define EXPECT_OK(expr) EXPECT_PRED_FORMAT1(::tocsin::testing::IsOk, expr)
#define ASSERT_OK(expr) ASSERT_PRED_FORMAT1(::tocsin::testing::IsOk, expr)

#define TOCSIN_ASSERT_OK_AND_ASSIGN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                     \
  ASSERT_OK(tmp);                                        \
  lhs = std::move(tmp).value()

// `lhs` (a declaration or a variable) gets the value of the Result `expr`; a non-ok Result fails
// the test there, naming the expression and its Status.
#define ASSERT_OK_AND_ASSIGN(lhs, expr) \
  TOCSIN_ASSERT_OK_AND_ASSIGN_IMPL(TOCSIN_CONCAT(_assert_result_, __LINE__), lhs, expr)
