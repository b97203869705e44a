// graft/status.h — the error type every fallible graft function returns.
//
// Core functions return a must-use Status (or Result<T>); exceptions never cross a C, plugin,
// PyTorch or TensorRT boundary. A Status carries a code, a message, and the context a user needs to
// find the problem: file, node name, op type, attribute.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace graft {

enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument,   // bad user input: attribute, shape, dtype, option
  kInvalidModel,      // malformed or inconsistent ONNX model
  kUnsupported,       // valid input graft cannot handle (op, opset, dtype)
  kNotFound,          // file, op, plugin, symbol not found
  kAlreadyExists,     // duplicate registration
  kIoError,           // read/write failure
  kCorruptPlan,       // plan file damaged, truncated, wrong version
  kRuntimeError,      // failure while executing (kernel error, CUDA error)
  kOutOfMemory,
  kInternal,          // a bug in graft
};

const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  // Messages and context are one line: control characters (newline, carriage return, tab, other C0
  // and DEL), which names and keys from untrusted files may hold, are stored escaped ("\n",
  // "\x1b"), so a printed error cannot break lines or carry terminal escapes. The one exception is
  // graft's own list format, a newline followed by two spaces ("...:\n  item\n  item"): a line
  // can only be continued, indented, never started anew.
  Status(StatusCode code, std::string message) : code_(code), message_(one_line(std::move(message))) {}

  static Status ok() { return Status(); }

  bool is_ok() const { return code_ == StatusCode::kOk; }
  explicit operator bool() const { return is_ok(); }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Context setters return *this so callers can write `return st.with_node(name, type);`.
  // Each adds its context once: the innermost (most precise) context wins.
  Status& with_file(const std::string& file);
  Status& with_node(const std::string& node_name, const std::string& op_type);
  Status& with_attribute(const std::string& attribute);

  const std::string& file() const { return file_; }
  const std::string& node_name() const { return node_name_; }
  const std::string& op_type() const { return op_type_; }
  const std::string& attribute() const { return attribute_; }

  // One line: "<file>: node '<name>' (<op>): attribute '<a>': <message>".
  std::string to_string() const;

  // `text` with control characters escaped (see the constructor).
  static std::string one_line(std::string text);

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  std::string file_, node_name_, op_type_, attribute_;
};

// A value or an error. `[[nodiscard]]` so a failed build is never silently ignored.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}           // NOLINT(implicit)
  Result(Status status) : v_(std::move(status)) {}    // NOLINT(implicit); must not be OK
  bool is_ok() const { return v_.index() == 0; }
  explicit operator bool() const { return is_ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }  // also lets `*f()` read a temporary
  const Status& status() const {
    static const Status kOkStatus;
    return is_ok() ? kOkStatus : std::get<1>(v_);
  }
  Status take_status() && { return is_ok() ? Status() : std::get<1>(std::move(v_)); }

 private:
  std::variant<T, Status> v_;
};

// Build an error with printf-free formatting: graft::error(StatusCode::kInvalidModel, "x", 3).
template <typename... Args>
Status error(StatusCode code, Args&&... parts);

namespace detail {
void append_part(std::string& out, const std::string& s);
void append_part(std::string& out, const char* s);
void append_part(std::string& out, char c);
void append_part(std::string& out, bool b);
void append_part(std::string& out, long long v);
void append_part(std::string& out, unsigned long long v);
void append_part(std::string& out, double v);
template <typename T>
void append_any(std::string& out, const T& v) {
  if constexpr (std::is_same_v<T, bool>) {
    append_part(out, v);
  } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    append_part(out, static_cast<long long>(v));
  } else if constexpr (std::is_integral_v<T>) {
    append_part(out, static_cast<unsigned long long>(v));
  } else if constexpr (std::is_floating_point_v<T>) {
    append_part(out, static_cast<double>(v));
  } else {
    append_part(out, v);
  }
}
}  // namespace detail

template <typename... Args>
Status error(StatusCode code, Args&&... parts) {
  std::string msg;
  (detail::append_any(msg, parts), ...);
  return Status(code, std::move(msg));
}

}  // namespace graft

// Propagate a failed Status. Works on Status and on Result<T> (via .status()).
#define GRAFT_RETURN_IF_ERROR(expr)                      \
  do {                                                   \
    ::graft::Status graft_st_ = ::graft::detail_status(expr); \
    if (!graft_st_.is_ok()) return graft_st_;            \
  } while (0)

// Unwrap a Result<T> into `lhs` or return its error.
#define GRAFT_CONCAT_INNER_(a, b) a##b
#define GRAFT_CONCAT_(a, b) GRAFT_CONCAT_INNER_(a, b)
#define GRAFT_ASSIGN_OR_RETURN(lhs, expr) \
  GRAFT_ASSIGN_OR_RETURN_IMPL_(GRAFT_CONCAT_(graft_res_, __LINE__), lhs, expr)
#define GRAFT_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.is_ok()) return std::move(tmp).take_status(); \
  lhs = std::move(tmp).value()

// Internal-invariant check that turns a broken assumption into an kInternal error naming the site.
#define GRAFT_CHECK(cond, ...)                                                              \
  do {                                                                                      \
    if (!(cond))                                                                            \
      return ::graft::error(::graft::StatusCode::kInternal, __FILE__, ":", __LINE__,        \
                            ": check failed: " #cond " " __VA_OPT__(, ) __VA_ARGS__);       \
  } while (0)

namespace graft {
inline Status detail_status(const Status& s) { return s; }
template <typename T>
Status detail_status(const Result<T>& r) { return r.status(); }
}  // namespace graft
