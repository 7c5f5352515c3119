#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace tocsin {

enum class StatusCode {
  kOk = 0,
  kNotFound,         // a file, directory or object does not exist
  kInvalidArgument,  // a flag or profile value is wrong (usage error)
  kParseError,       // input exists but is not in the expected format
  kIoError,          // the OS refused a read
  kTimeout,          // a bounded wait ran out
  kUnavailable,      // an optional facility (library, API) is not there
  kInternal,         // a bug
};

// Outcome of an operation: ok, or a code and a message that names the file/field/peer involved.
// [[nodiscard]]: a call whose Status is dropped is a compile error (-Werror); handle it, or cast
// it to (void) with a comment that says why the outcome does not matter there.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status InvalidArgument(std::string m) {
    return {StatusCode::kInvalidArgument, std::move(m)};
  }
  static Status ParseError(std::string m) { return {StatusCode::kParseError, std::move(m)}; }
  static Status IoError(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
  static Status Timeout(std::string m) { return {StatusCode::kTimeout, std::move(m)}; }
  static Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
  static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "parse error: <message>", or "ok".
  std::string ToString() const;
  // Returns a copy whose message is "<prefix>: <message>".
  Status WithPrefix(const std::string& prefix) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

const char* StatusCodeName(StatusCode code);

// A value or a non-ok Status (nodiscard, as Status).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    assert(!std::get<Status>(v_).ok());
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T value_or(T fallback) const { return ok() ? std::get<T>(v_) : std::move(fallback); }

 private:
  std::variant<Status, T> v_;
};

#define TOCSIN_CONCAT_INNER(a, b) a##b
#define TOCSIN_CONCAT(a, b) TOCSIN_CONCAT_INNER(a, b)

#define TOCSIN_RETURN_IF_ERROR(expr) \
  do {                               \
    ::tocsin::Status _st = (expr);   \
    if (!_st.ok()) return _st;       \
  } while (0)

#define TOCSIN_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()

#define TOCSIN_ASSIGN_OR_RETURN(lhs, expr) \
  TOCSIN_ASSIGN_OR_RETURN_IMPL(TOCSIN_CONCAT(_result_, __LINE__), lhs, expr)

}  // namespace tocsin
