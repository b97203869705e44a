#include "graft/status.h"

#include <cstdio>

namespace graft {

const char* status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kInvalidArgument: return "invalid argument";
    case StatusCode::kInvalidModel: return "invalid model";
    case StatusCode::kUnsupported: return "unsupported";
    case StatusCode::kNotFound: return "not found";
    case StatusCode::kAlreadyExists: return "already exists";
    case StatusCode::kIoError: return "I/O error";
    case StatusCode::kCorruptPlan: return "corrupt plan";
    case StatusCode::kRuntimeError: return "runtime error";
    case StatusCode::kOutOfMemory: return "out of memory";
    case StatusCode::kInternal: return "internal error";
  }
  return "unknown";
}

std::string Status::one_line(std::string text) {
  auto is_control = [](unsigned char c) { return c < 0x20 || c == 0x7f; };
  // graft's own lists continue on indented lines ("\n  item"); that newline is kept.
  auto is_list_break = [&](size_t i) { return text.compare(i, 3, "\n  ") == 0; };
  bool any = false;
  for (size_t i = 0; i < text.size(); ++i)
    any = any || (is_control(static_cast<unsigned char>(text[i])) && !is_list_break(i));
  if (!any) return text;
  std::string out;
  out.reserve(text.size() + 8);
  for (size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    const unsigned char c = static_cast<unsigned char>(ch);
    if (!is_control(c) || is_list_break(i)) {
      out += ch;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

Status& Status::with_file(const std::string& file) {
  if (!is_ok() && file_.empty()) file_ = one_line(file);
  return *this;
}
Status& Status::with_node(const std::string& node_name, const std::string& op_type) {
  if (!is_ok() && node_name_.empty() && op_type_.empty()) {
    node_name_ = one_line(node_name);
    op_type_ = one_line(op_type);
  }
  return *this;
}
Status& Status::with_attribute(const std::string& attribute) {
  if (!is_ok() && attribute_.empty()) attribute_ = one_line(attribute);
  return *this;
}

std::string Status::to_string() const {
  if (is_ok()) return "ok";
  std::string s;
  if (!file_.empty()) s += file_ + ": ";
  if (!node_name_.empty() || !op_type_.empty()) {
    s += "node '" + node_name_ + "'";
    if (!op_type_.empty()) s += " (" + op_type_ + ")";
    s += ": ";
  }
  if (!attribute_.empty()) s += "attribute '" + attribute_ + "': ";
  s += message_;
  return s;
}

namespace detail {
void append_part(std::string& out, const std::string& s) { out += s; }
void append_part(std::string& out, const char* s) { out += s ? s : "(null)"; }
void append_part(std::string& out, char c) { out += c; }
void append_part(std::string& out, bool b) { out += b ? "true" : "false"; }
void append_part(std::string& out, long long v) { out += std::to_string(v); }
void append_part(std::string& out, unsigned long long v) { out += std::to_string(v); }
void append_part(std::string& out, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  out += buf;
}
}  // namespace detail

}  // namespace graft
