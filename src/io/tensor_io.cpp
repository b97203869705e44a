#include "io/tensor_io.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include <onnx/onnx_pb.h>
#include <onnx/onnx-data_pb.h>

#include "core/checked_math.h"
#include "core/utf8.h"

namespace graft::io {
namespace {

constexpr char kNpyMagic[] = "\x93NUMPY";
constexpr size_t kNpyMagicLen = 6;

Status file_error(StatusCode code, const std::string& file, const std::string& msg) {
  Status st(code, msg);
  st.with_file(file);
  return st;
}

// Shape of a tensor read from a file: rank, signs and element/byte counts checked (core helper),
// the error naming the file.
Status check_file_shape(const std::vector<int64_t>& dims, DataType dtype, const std::string& what) {
  Status st = check_concrete_shape(dims, dtype, what);
  return st.is_ok() ? st : Status(StatusCode::kInvalidArgument, st.message());
}

// Allocation for a tensor whose size was already checked against the bytes present.
Result<Tensor> allocate_for(DataType dtype, const std::vector<int64_t>& dims, const std::string& what) {
  auto t = Tensor::allocate(dtype, dims);
  if (!t) return error(t.status().code(), what, ": ", t.status().message());
  return t;
}

std::string dims_to_string(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

// ---- .npy header: a Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// Only the three keys NumPy writes are accepted; values are a string, a bool, a tuple of ints.
class HeaderParser {
 public:
  explicit HeaderParser(const std::string& s) : s_(s) {}

  Status parse(std::string* descr, bool* fortran, std::vector<int64_t>* shape) {
    bool have_descr = false, have_fortran = false, have_shape = false;
    skip_ws();
    if (!eat('{')) return bad("expected '{'");
    while (true) {
      skip_ws();
      if (eat('}')) break;
      std::string key;
      GRAFT_RETURN_IF_ERROR(parse_string(&key));
      skip_ws();
      if (!eat(':')) return bad("expected ':' after key '" + key + "'");
      skip_ws();
      if (key == "descr") {
        if (peek() != '\'' && peek() != '"')
          return error(StatusCode::kUnsupported, "unsupported dtype (structured arrays are not supported)");
        GRAFT_RETURN_IF_ERROR(parse_string(descr));
        have_descr = true;
      } else if (key == "fortran_order") {
        if (s_.compare(pos_, 4, "True") == 0) {
          *fortran = true;
          pos_ += 4;
        } else if (s_.compare(pos_, 5, "False") == 0) {
          *fortran = false;
          pos_ += 5;
        } else {
          return bad("fortran_order must be True or False");
        }
        have_fortran = true;
      } else if (key == "shape") {
        GRAFT_RETURN_IF_ERROR(parse_shape(shape));
        have_shape = true;
      } else {
        return bad("unexpected key '" + key + "'");
      }
      skip_ws();
      if (eat(',')) continue;
      skip_ws();
      if (eat('}')) break;
      return bad("expected ',' or '}'");
    }
    if (!have_descr || !have_fortran || !have_shape)
      return bad("header lacks one of 'descr', 'fortran_order', 'shape'");
    return Status::ok();
  }

 private:
  Status bad(const std::string& what) const {
    return error(StatusCode::kInvalidArgument, "malformed .npy header at offset ", pos_, ": ", what);
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  bool eat(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  void skip_ws() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  Status parse_string(std::string* out) {
    char q = peek();
    if (q != '\'' && q != '"') return bad("expected a quoted string");
    ++pos_;
    size_t end = s_.find(q, pos_);
    if (end == std::string::npos) return bad("unterminated string");
    *out = s_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return Status::ok();
  }
  Status parse_shape(std::vector<int64_t>* shape) {
    shape->clear();
    if (!eat('(')) return bad("shape must be a tuple");
    while (true) {
      skip_ws();
      if (eat(')')) return Status::ok();
      if (!std::isdigit(static_cast<unsigned char>(peek()))) return bad("shape entries must be non-negative integers");
      int64_t v = 0;
      while (std::isdigit(static_cast<unsigned char>(peek()))) {
        int digit = s_[pos_++] - '0';
        if (v > (std::numeric_limits<int64_t>::max() - digit) / 10) return bad("shape entry too large");
        v = v * 10 + digit;
      }
      if (eat('L')) {
      }  // Python 2 long suffix, written by very old NumPy
      shape->push_back(v);
      skip_ws();
      if (eat(',')) continue;
      skip_ws();
      if (eat(')')) return Status::ok();
      return bad("expected ',' or ')' in shape");
    }
  }

  const std::string& s_;
  size_t pos_ = 0;
};

// Maps an .npy descr such as "<f4" to a DataType; the error says what was wrong.
Status dtype_from_descr(const std::string& descr, DataType* out) {
  if (descr.size() < 2) return error(StatusCode::kUnsupported, "unsupported dtype '", descr, "'");
  char order = descr[0];
  std::string code = descr.substr(1);
  struct Entry {
    const char* code;
    DataType dtype = DataType::kUndefined;
  };
  static const Entry kTable[] = {
      {"f2", DataType::kFloat16}, {"f4", DataType::kFloat32}, {"f8", DataType::kFloat64},
      {"i1", DataType::kInt8},    {"u1", DataType::kUInt8},   {"i4", DataType::kInt32},
      {"i8", DataType::kInt64},   {"b1", DataType::kBool},    {"i2", DataType::kInt16},
      {"u2", DataType::kUInt16},  {"u4", DataType::kUInt32},  {"u8", DataType::kUInt64},
  };
  const Entry* hit = nullptr;
  for (const Entry& e : kTable)
    if (code == e.code) hit = &e;
  if (order != '<' && order != '>' && order != '|' && order != '=')
    return error(StatusCode::kUnsupported, "unsupported dtype '", descr, "'");
  if (!hit)
    return error(StatusCode::kUnsupported, "unsupported dtype '", descr,
                 "' (graft reads f2 f4 f8 i1 u1 i2 u2 i4 u4 i8 u8 b1)");
  // Byte order matters only for multi-byte types; '=' is native, which is little-endian here.
  if (order == '>' && dtype_size(hit->dtype) > 1)
    return error(StatusCode::kUnsupported, "big-endian data ('", descr,
                 "') is not supported; convert with arr.astype(arr.dtype.newbyteorder('<'))");
  *out = hit->dtype;
  return Status::ok();
}

const char* descr_for(DataType t) {
  switch (t) {
    case DataType::kFloat16: return "<f2";
    case DataType::kFloat32: return "<f4";
    case DataType::kFloat64: return "<f8";
    // int4/uint4 as NumPy's 8-bit integers (NumPy has no 4-bit type; graft holds one a byte).
    case DataType::kInt8:
    case DataType::kInt4: return "|i1";
    case DataType::kUInt8:
    case DataType::kUInt4: return "|u1";
    case DataType::kInt32: return "<i4";
    case DataType::kInt64: return "<i8";
    case DataType::kInt16: return "<i2";
    case DataType::kUInt16: return "<u2";
    case DataType::kUInt32: return "<u4";
    case DataType::kUInt64: return "<u8";
    case DataType::kBool: return "|b1";
    default: return nullptr;
  }
}

uint32_t read_le(const char* p, size_t n) {
  uint32_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= static_cast<uint32_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

}  // namespace

// ------------------------------------------------------------------------------------------------
Result<std::string> read_file(const std::string& path) {
  // A directory opens as an ifstream on Linux and reports a nonsense size (std::bad_alloc followed):
  // refused by name first.
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return file_error(StatusCode::kInvalidArgument, path, "is a directory, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    int err = errno;
    return file_error(err == ENOENT ? StatusCode::kNotFound : StatusCode::kIoError, path,
                      std::string("cannot open file: ") + std::strerror(err));
  }
  // One allocation of the file's size and one read: models and plans run to hundreds of MB, and a
  // stringstream would copy them several times while growing.
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size < 0) return file_error(StatusCode::kIoError, path, "cannot tell the file's size");
  in.seekg(0, std::ios::beg);
  std::string bytes(static_cast<size_t>(size), '\0');
  if (size > 0 && !in.read(bytes.data(), size)) return file_error(StatusCode::kIoError, path, "read failed");
  return bytes;
}

namespace {

// Removes "<name>.tmp.<pid>.<n>" files beside `path` left by writers that were killed (their pid no
// longer exists): a killed `graft build` cannot clean up after itself, and each leftover is a whole
// plan (gigabytes). Files of live processes, this one included, are left alone: they may be
// mid-write. Best effort: a failure here never fails the write.
void remove_stale_temporaries(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path target(path);
  const fs::path dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  const std::string prefix = target.filename().string() + ".tmp.";
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    // The rest must be exactly "<pid>.<counter>", both decimal.
    const std::string rest = name.substr(prefix.size());
    const size_t dot = rest.find('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 >= rest.size() || dot > 9) continue;
    const std::string pid_text = rest.substr(0, dot), counter_text = rest.substr(dot + 1);
    auto all_digits = [](const std::string& t) {
      return !t.empty() && std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    if (!all_digits(pid_text) || !all_digits(counter_text)) continue;
    const long pid = std::strtol(pid_text.c_str(), nullptr, 10);
    if (pid <= 0 || pid == static_cast<long>(::getpid())) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // alive, or not ours to judge
    std::error_code rm_ec;
    if (fs::is_regular_file(it->symlink_status(rm_ec)) && !rm_ec) fs::remove(it->path(), rm_ec);
  }
}

}  // namespace

Status write_file_atomic(const std::string& path, const std::string& bytes) {
  // rename() would replace a device node (or a pipe) with a regular file: only a regular file, or
  // nothing, may be replaced.
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (!ec && std::filesystem::exists(st) && !std::filesystem::is_regular_file(st))
    return file_error(StatusCode::kInvalidArgument, path,
                      std::filesystem::is_directory(st) ? "is a directory; cannot write a file there"
                                                        : "exists and is not a regular file (a device, pipe or "
                                                          "socket); refusing to replace it");
  remove_stale_temporaries(path);
  static std::atomic<int> counter{0};
  std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return file_error(StatusCode::kIoError, path, std::string("cannot create file: ") + std::strerror(errno));
  bool ok = bytes.empty() || std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  ok = (std::fflush(f) == 0) && ok;
  ok = (::fsync(::fileno(f)) == 0) && ok;
  int err = errno;
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) {
    std::remove(tmp.c_str());
    return file_error(StatusCode::kIoError, path, std::string("write failed: ") + std::strerror(err));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    err = errno;
    std::remove(tmp.c_str());
    return file_error(StatusCode::kIoError, path, std::string("cannot rename temporary file: ") + std::strerror(err));
  }
  return Status::ok();
}

std::string sanitize_file_name(const std::string& name) {
  std::string out;
  for (char c : name) {
    bool keep = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    out += keep ? c : '_';
  }
  if (out.empty() || out == "." || out == "..") out = "_" + out;
  return out;
}

// ------------------------------------------------------------------------------------------------
namespace {

// NumPy's fixed-width text: "<U7" (7 UTF-32 code units per element) or "|S7" (7 bytes per element).
// Sets *unicode and *width for such a descr; false for any other.
bool text_descr(const std::string& descr, bool* unicode, size_t* width) {
  if (descr.size() < 3 || (descr[0] != '<' && descr[0] != '|' && descr[0] != '=') ||
      (descr[1] != 'U' && descr[1] != 'S'))
    return false;
  size_t w = 0;
  for (size_t i = 2; i < descr.size(); ++i) {
    if (descr[i] < '0' || descr[i] > '9' || w > (size_t{1} << 40)) return false;
    w = w * 10 + static_cast<size_t>(descr[i] - '0');
  }
  *unicode = descr[1] == 'U';
  *width = w;
  return w > 0;  // NumPy never writes width 0; refusing it bounds the elements by the file's bytes
}

// The elements of a text .npy's data as a string tensor (UTF-8), trailing NULs dropped as NumPy does.
Result<Tensor> strings_from_npy(const char* data, size_t have, bool unicode, size_t width,
                                const std::vector<int64_t>& dims, const std::string& descr) {
  const int64_t numel = *checked_numel(dims);
  const size_t item = unicode ? width * 4 : width;
  if (static_cast<unsigned __int128>(numel) * item != have)
    return error(StatusCode::kInvalidArgument, "data of ", descr, dims_to_string(dims), " should have ",
                 static_cast<unsigned long long>(std::min<unsigned __int128>(
                     static_cast<unsigned __int128>(numel) * item, std::numeric_limits<unsigned long long>::max())),
                 " bytes, the file has ", static_cast<unsigned long long>(have));
  GRAFT_ASSIGN_OR_RETURN(Tensor t, allocate_for(DataType::kString, dims, descr + dims_to_string(dims)));
  auto* out = t.data_as<std::string>();
  for (int64_t i = 0; i < numel; ++i) {
    const char* e = data + static_cast<size_t>(i) * item;
    if (!unicode) {
      size_t n = width;
      while (n && e[n - 1] == '\0') --n;
      out[i].assign(e, n);
      continue;
    }
    std::u32string cps(width, U'\0');
    for (size_t k = 0; k < width; ++k) cps[k] = static_cast<char32_t>(read_le(e + 4 * k, 4));
    while (!cps.empty() && cps.back() == U'\0') cps.pop_back();
    for (char32_t c : cps)
      if (c >= 0x110000 || (c >= 0xD800 && c <= 0xDFFF))
        return error(StatusCode::kInvalidArgument, "element ", i, " holds ", static_cast<uint64_t>(c),
                     ", which is not a Unicode code point");
    out[i] = encode_utf8(cps);
  }
  return t;
}

// A string tensor as NumPy's "<U<width>" text (the widest element's code points); every element must be UTF-8.
Result<std::string> strings_to_npy_data(const Tensor& t, std::string* descr) {
  std::vector<std::u32string> all(static_cast<size_t>(t.numel()));
  size_t width = 1;
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (!decode_utf8(t.data_as<std::string>()[i], &all[static_cast<size_t>(i)]))
      return error(StatusCode::kUnsupported, "element ", i,
                   " of the string tensor is not UTF-8 text, which a .npy unicode array cannot hold");
    width = std::max(width, all[static_cast<size_t>(i)].size());
  }
  *descr = "<U" + std::to_string(width);
  std::string data(all.size() * width * 4, '\0');
  for (size_t i = 0; i < all.size(); ++i)
    for (size_t k = 0; k < all[i].size(); ++k)
      for (size_t b = 0; b < 4; ++b)
        data[(i * width + k) * 4 + b] = static_cast<char>((static_cast<uint32_t>(all[i][k]) >> (8 * b)) & 0xff);
  return data;
}

}  // namespace

Result<Tensor> parse_npy(const std::string& bytes, const std::string& file) {
  if (bytes.size() < kNpyMagicLen + 2 || bytes.compare(0, kNpyMagicLen, kNpyMagic, kNpyMagicLen) != 0)
    return file_error(StatusCode::kInvalidArgument, file, "not a .npy file (missing \\x93NUMPY magic)");
  int major = static_cast<unsigned char>(bytes[6]);
  size_t len_bytes = major == 1 ? 2 : (major == 2 || major == 3) ? 4 : 0;
  if (len_bytes == 0)
    return file_error(StatusCode::kUnsupported, file, "unsupported .npy format version " + std::to_string(major));
  size_t prefix = kNpyMagicLen + 2 + len_bytes;
  if (bytes.size() < prefix) return file_error(StatusCode::kInvalidArgument, file, "truncated .npy header");
  size_t header_len = read_le(bytes.data() + kNpyMagicLen + 2, len_bytes);
  if (bytes.size() < prefix + header_len)
    return file_error(StatusCode::kInvalidArgument, file,
                      "truncated .npy header: needs " + std::to_string(header_len) + " bytes, file has " +
                          std::to_string(bytes.size() - prefix));
  std::string header = bytes.substr(prefix, header_len);
  std::string descr;
  bool fortran = false;
  std::vector<int64_t> dims;
  Status st = HeaderParser(header).parse(&descr, &fortran, &dims);
  if (!st.is_ok()) return st.with_file(file);
  bool unicode = false;
  size_t width = 0;
  if (text_descr(descr, &unicode, &width)) {
    int big = 0;
    for (int64_t d : dims) big += d > 1;
    if (fortran && big > 1)
      return file_error(StatusCode::kUnsupported, file,
                        "Fortran-ordered arrays are not supported; save np.ascontiguousarray(arr)");
    st = check_file_shape(dims, DataType::kString, "shape " + dims_to_string(dims));
    if (!st.is_ok()) return st.with_file(file);
    const size_t off = prefix + header_len;
    auto t = strings_from_npy(bytes.data() + off, bytes.size() - off, unicode, width, dims, descr);
    if (!t) return std::move(t).take_status().with_file(file);
    return t;
  }
  DataType dtype = DataType::kUndefined;
  st = dtype_from_descr(descr, &dtype);
  if (!st.is_ok()) return st.with_file(file);
  st = check_file_shape(dims, dtype, "shape " + dims_to_string(dims));
  if (!st.is_ok()) return st.with_file(file);
  const int64_t numel = *checked_numel(dims);
  // A Fortran-ordered array with at most one dimension larger than 1 is laid out as in C order.
  int big_dims = 0;
  for (int64_t d : dims) big_dims += d > 1;
  if (fortran && big_dims > 1)
    return file_error(StatusCode::kUnsupported, file,
                      "Fortran-ordered arrays are not supported; save np.ascontiguousarray(arr)");
  size_t data_off = prefix + header_len;
  unsigned __int128 need128 = static_cast<unsigned __int128>(numel) * dtype_size(dtype);
  size_t have = bytes.size() - data_off;
  if (need128 != have) {
    std::string need = std::to_string(static_cast<unsigned long long>(
        need128 > std::numeric_limits<unsigned long long>::max() ? std::numeric_limits<unsigned long long>::max()
                                                                   : static_cast<unsigned long long>(need128)));
    return file_error(StatusCode::kInvalidArgument, file,
                      std::string(need128 > have ? "truncated data" : "trailing bytes after data") + ": " +
                          descr + dims_to_string(dims) + " needs " + need + " bytes, file has " +
                          std::to_string(have));
  }
  auto t = allocate_for(dtype, dims, descr + dims_to_string(dims));
  if (!t) return Status(t.status()).with_file(file);
  if (have) std::memcpy(t->data(), bytes.data() + data_off, have);
  return t;
}

Result<Tensor> read_npy(const std::string& path) {
  GRAFT_ASSIGN_OR_RETURN(std::string bytes, read_file(path));
  return parse_npy(bytes, path);
}

Result<std::string> encode_npy(const Tensor& t) {
  if (!t.defined() && t.numel() != 0) return error(StatusCode::kInvalidArgument, "tensor has no data");
  if (t.device() != DeviceType::kCPU)
    return error(StatusCode::kInvalidArgument, "cannot write a ", device_name(t.device()), " tensor; copy it to the host first");
  std::string descr = descr_for(t.dtype()) ? descr_for(t.dtype()) : "";
  std::string text;
  if (t.dtype() == DataType::kString) {
    GRAFT_ASSIGN_OR_RETURN(text, strings_to_npy_data(t, &descr));
  }
  if (descr.empty())
    return error(StatusCode::kUnsupported, "dtype ", dtype_name(t.dtype()), " has no .npy equivalent; cast it first");
  std::string dict = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < t.dims().size(); ++i) dict += (i ? ", " : "") + std::to_string(t.dims()[i]);
  if (t.dims().size() == 1) dict += ",";  // Python's one-element tuple
  dict += "), }";
  // NumPy pads the header with spaces to a multiple of 64 bytes, ending with '\n'.
  size_t unpadded = kNpyMagicLen + 2 + 2 + dict.size() + 1;
  bool v2 = unpadded + 64 > 65535;
  size_t prefix = kNpyMagicLen + 2 + (v2 ? 4 : 2);
  size_t total = ((prefix + dict.size() + 1 + 63) / 64) * 64;
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict += '\n';
  std::string out(kNpyMagic, kNpyMagicLen);
  out += static_cast<char>(v2 ? 2 : 1);
  out += '\0';
  uint32_t hl = static_cast<uint32_t>(dict.size());
  for (size_t i = 0; i < (v2 ? 4u : 2u); ++i) out += static_cast<char>((hl >> (8 * i)) & 0xff);
  out += dict;
  if (t.dtype() == DataType::kString) out += text;
  else out.append(static_cast<const char*>(t.data()), t.nbytes());
  return out;
}

Status write_npy(const std::string& path, const Tensor& tensor) {
  auto bytes = encode_npy(tensor);
  if (!bytes.is_ok()) {
    Status st = bytes.status();
    return st.with_file(path);
  }
  return write_file_atomic(path, bytes.value());
}

// ------------------------------------------------------------------------------------------------
namespace {

template <typename Src, typename Field>
Status copy_typed(const Field& field, int64_t numel, Tensor& t, const std::string& field_name) {
  if (static_cast<int64_t>(field.size()) != numel)
    return error(StatusCode::kInvalidArgument, field_name, " holds ", static_cast<int64_t>(field.size()),
                 " values but the dims need ", numel);
  DataType dt = t.dtype();
  for (int64_t i = 0; i < numel; ++i) {
    auto v = field.Get(static_cast<int>(i));
    switch (dt) {
      case DataType::kFloat16:
      case DataType::kBFloat16:
        // ONNX stores the 16 raw bits in int32_data.
        t.data_as<uint16_t>()[i] = static_cast<uint16_t>(v);
        break;
      case DataType::kInt8: t.data_as<int8_t>()[i] = static_cast<int8_t>(v); break;
      case DataType::kUInt8: t.data_as<uint8_t>()[i] = static_cast<uint8_t>(v); break;
      case DataType::kFloat8E4M3FN:  // and the 8-bit floats' bits
      case DataType::kFloat8E4M3FNUZ:
      case DataType::kFloat8E5M2:
      case DataType::kFloat8E5M2FNUZ: t.data_as<uint8_t>()[i] = static_cast<uint8_t>(v); break;
      case DataType::kInt16: t.data_as<int16_t>()[i] = static_cast<int16_t>(v); break;
      case DataType::kUInt16: t.data_as<uint16_t>()[i] = static_cast<uint16_t>(v); break;
      case DataType::kUInt32: t.data_as<uint32_t>()[i] = static_cast<uint32_t>(v); break;
      case DataType::kUInt64: t.data_as<uint64_t>()[i] = static_cast<uint64_t>(v); break;
      case DataType::kBool: t.data_as<uint8_t>()[i] = v != 0; break;
      case DataType::kInt32: t.data_as<int32_t>()[i] = static_cast<int32_t>(v); break;
      case DataType::kInt64: t.data_as<int64_t>()[i] = static_cast<int64_t>(v); break;
      case DataType::kFloat32: t.data_as<float>()[i] = static_cast<float>(v); break;
      case DataType::kFloat64: t.data_as<double>()[i] = static_cast<double>(v); break;
      default: return error(StatusCode::kInternal, "unhandled dtype");
    }
  }
  return Status::ok();
}

Result<NamedTensor> tensor_from_proto(const onnx::TensorProto& p) {
  NamedTensor out;
  out.name = p.name();
  if (p.has_segment()) return error(StatusCode::kUnsupported, "segmented TensorProto is not supported");
  if (p.data_location() == onnx::TensorProto::EXTERNAL)
    return error(StatusCode::kUnsupported, "tensor '", p.name(), "' uses external data, which is not supported here");
  DataType dtype = DataType::kUndefined;
  if (!dtype_from_onnx(p.data_type(), &dtype))
    return error(StatusCode::kUnsupported, "tensor '", p.name(), "' has ONNX data type ",
                 static_cast<int>(p.data_type()), ", which graft does not support");
  std::vector<int64_t> dims(p.dims().begin(), p.dims().end());
  const std::string what = "tensor '" + p.name() + "'";
  GRAFT_RETURN_IF_ERROR(check_file_shape(dims, dtype, what + " with dims " + dims_to_string(dims)));
  const int64_t numel = *checked_numel(dims);
  const size_t want = static_cast<size_t>(*checked_nbytes(dims, dtype_size(dtype)));
  if (dtype == DataType::kString) {
    if (p.has_raw_data())
      return error(StatusCode::kInvalidArgument, "tensor '", p.name(),
                   "' holds strings, which ONNX keeps in string_data, not in raw_data");
    if (p.string_data_size() != numel)
      return error(StatusCode::kInvalidArgument, "tensor '", p.name(), "': string_data holds ",
                   static_cast<int64_t>(p.string_data_size()), " values but the dims ", dims_to_string(dims), " need ",
                   numel);
    GRAFT_ASSIGN_OR_RETURN(out.tensor, allocate_for(dtype, dims, what));
    std::copy(p.string_data().begin(), p.string_data().end(), out.tensor.data_as<std::string>());
    return out;
  }
  if (dtype_is_4bit(dtype)) {
    // graft holds one value a byte (dtype.h).
    GRAFT_ASSIGN_OR_RETURN(std::string bytes, packed_4bit_of(p, numel));
    GRAFT_ASSIGN_OR_RETURN(Tensor t, allocate_for(dtype, dims, what));
    unpack_4bit(dtype, reinterpret_cast<const uint8_t*>(bytes.data()), numel, t.data());
    out.tensor = t;
    return out;
  }
  // The declared size is compared with the values present before anything is allocated.
  if (p.has_raw_data()) {
    if (p.raw_data().size() != want)
      return error(StatusCode::kInvalidArgument, "tensor '", p.name(), "' ", dtype_name(dtype), dims_to_string(dims),
                   ": raw_data has ", static_cast<uint64_t>(p.raw_data().size()), " bytes, expected ",
                   static_cast<uint64_t>(want), p.raw_data().size() < want ? " (truncated)" : "");
    GRAFT_ASSIGN_OR_RETURN(Tensor t, allocate_for(dtype, dims, what));
    if (want) std::memcpy(t.data(), p.raw_data().data(), want);
    if (dtype == DataType::kBool)
      for (int64_t i = 0; i < numel; ++i) t.data_as<uint8_t>()[i] = t.data_as<uint8_t>()[i] != 0;
    out.tensor = t;
    return out;
  }
  int64_t have = 0;
  const char* field = "int32_data";
  switch (dtype) {
    case DataType::kFloat32: have = p.float_data_size(); field = "float_data"; break;
    case DataType::kFloat64: have = p.double_data_size(); field = "double_data"; break;
    case DataType::kInt64: have = p.int64_data_size(); field = "int64_data"; break;
    // onnx.proto: uint32 and uint64 travel in uint64_data; int16/uint16, like the other narrow
    // types, in int32_data.
    case DataType::kUInt32:
    case DataType::kUInt64: have = p.uint64_data_size(); field = "uint64_data"; break;
    default: have = p.int32_data_size(); break;
  }
  if (have != numel)
    return error(StatusCode::kInvalidArgument, "tensor '", p.name(), "': ", field, " holds ", have,
                 " values but the dims ", dims_to_string(dims), " need ", numel);
  GRAFT_ASSIGN_OR_RETURN(Tensor t, allocate_for(dtype, dims, what));
  Status st;
  switch (dtype) {
    case DataType::kFloat32: st = copy_typed<float>(p.float_data(), numel, t, "float_data"); break;
    case DataType::kFloat64: st = copy_typed<double>(p.double_data(), numel, t, "double_data"); break;
    case DataType::kInt64: st = copy_typed<int64_t>(p.int64_data(), numel, t, "int64_data"); break;
    case DataType::kUInt32:
    case DataType::kUInt64: st = copy_typed<uint64_t>(p.uint64_data(), numel, t, "uint64_data"); break;
    default: st = copy_typed<int32_t>(p.int32_data(), numel, t, "int32_data"); break;
  }
  if (!st.is_ok()) return error(StatusCode::kInvalidArgument, "tensor '", p.name(), "': ", st.message());
  out.tensor = t;
  return out;
}

}  // namespace

Result<NamedTensor> parse_tensor_pb(const std::string& bytes, const std::string& file) {
  onnx::TensorProto proto;
  if (!proto.ParseFromString(bytes))
    return file_error(StatusCode::kInvalidArgument, file, "not a valid ONNX TensorProto (parse failed)");
  auto r = tensor_from_proto(proto);
  if (!r.is_ok()) {
    Status st = r.status();
    return st.with_file(file);
  }
  return r;
}

Result<NamedTensor> read_tensor_pb(const std::string& path) {
  GRAFT_ASSIGN_OR_RETURN(std::string bytes, read_file(path));
  return parse_tensor_pb(bytes, path);
}

namespace {

// The tensors of a SequenceProto, each checked against the sequence's dtype.
Result<Tensor> sequence_from_proto(const onnx::SequenceProto& p, DataType dtype) {
  if (p.elem_type() != onnx::SequenceProto::TENSOR && p.elem_type() != onnx::SequenceProto::UNDEFINED)
    return error(StatusCode::kUnsupported, "sequence '", p.name(), "' holds element type ",
                 static_cast<int64_t>(p.elem_type()), "; graft's sequences hold tensors");
  std::vector<Tensor> items;
  for (const auto& tp : p.tensor_values()) {
    GRAFT_ASSIGN_OR_RETURN(NamedTensor t, tensor_from_proto(tp));
    items.push_back(std::move(t.tensor));
  }
  return Tensor::sequence(dtype, std::move(items));
}

}  // namespace

Result<NamedTensor> parse_value_pb(const std::string& bytes, const TensorDesc& declared, const std::string& file) {
  if (declared.is_tensor()) return parse_tensor_pb(bytes, file);
  std::string name;
  auto parse = [&]() -> Result<Tensor> {
    if (declared.kind == ValueKind::kSequence) {
      onnx::SequenceProto proto;
      if (!proto.ParseFromString(bytes))
        return error(StatusCode::kInvalidArgument, "not a valid ONNX SequenceProto (parse failed)");
      name = proto.name();
      return sequence_from_proto(proto, declared.dtype);
    }
    onnx::OptionalProto proto;
    if (!proto.ParseFromString(bytes))
      return error(StatusCode::kInvalidArgument, "not a valid ONNX OptionalProto (parse failed)");
    name = proto.name();
    const bool want_seq = declared.kind == ValueKind::kOptionalSequence;
    if (proto.has_tensor_value() && !want_seq) {
      GRAFT_ASSIGN_OR_RETURN(NamedTensor t, tensor_from_proto(proto.tensor_value()));
      return Tensor::optional(declared.kind, declared.dtype, std::move(t.tensor));
    }
    if (proto.has_sequence_value() && want_seq) {
      GRAFT_ASSIGN_OR_RETURN(Tensor seq, sequence_from_proto(proto.sequence_value(), declared.dtype));
      return Tensor::optional(declared.kind, declared.dtype, std::move(seq));
    }
    if (!proto.has_tensor_value() && !proto.has_sequence_value() && !proto.has_map_value() &&
        !proto.has_optional_value() && !proto.has_sparse_tensor_value())
      return Tensor::optional(declared.kind, declared.dtype);
    return error(StatusCode::kUnsupported, "optional '", proto.name(), "' holds element type ",
                 static_cast<int64_t>(proto.elem_type()), " but the model declares ", declared.to_string());
  };
  auto value = parse();
  if (!value) return std::move(value).take_status().with_file(file);
  return NamedTensor{name, std::move(value).value()};
}

Result<NamedTensor> read_value_pb(const std::string& path, const TensorDesc& declared) {
  GRAFT_ASSIGN_OR_RETURN(std::string bytes, read_file(path));
  return parse_value_pb(bytes, declared, path);
}

Result<std::string> packed_4bit_of(const onnx::TensorProto& p, int64_t numel) {
  const int64_t packed = packed_4bit_bytes(numel);
  const std::vector<int64_t> dims(p.dims().begin(), p.dims().end());
  auto wrong = [&](const char* field, int64_t have) {
    return error(StatusCode::kInvalidArgument, "tensor '", p.name(), "' ",
                 dtype_name(static_cast<DataType>(p.data_type())), dims_to_string(dims), ": ", field, " holds ", have, " bytes, expected ", packed, " (two values a byte)");
  };
  if (p.has_raw_data()) {
    if (static_cast<int64_t>(p.raw_data().size()) != packed) return wrong("raw_data", static_cast<int64_t>(p.raw_data().size()));
    return p.raw_data();
  }
  if (p.int32_data_size() != packed) return wrong("int32_data", p.int32_data_size());
  std::string bytes(static_cast<size_t>(packed), '\0');
  for (int64_t i = 0; i < packed; ++i) bytes[static_cast<size_t>(i)] = static_cast<char>(p.int32_data(static_cast<int>(i)) & 0xFF);
  return bytes;
}

Result<std::string> encode_tensor_pb(const Tensor& t, const std::string& name) {
  if (t.device() != DeviceType::kCPU)
    return error(StatusCode::kInvalidArgument, "cannot write a ", device_name(t.device()), " tensor; copy it to the host first");
  if (t.dtype() == DataType::kUndefined) return error(StatusCode::kInvalidArgument, "tensor has no dtype");
  onnx::TensorProto p;
  p.set_name(name);
  p.set_data_type(static_cast<int32_t>(t.dtype()));
  for (int64_t d : t.dims()) p.add_dims(d);
  if (t.dtype() == DataType::kString) {
    for (int64_t i = 0; i < t.numel(); ++i) p.add_string_data(t.data_as<std::string>()[i]);
  } else if (dtype_is_4bit(t.dtype())) {
    std::string packed(static_cast<size_t>(packed_4bit_bytes(t.numel())), '\0');  // ONNX's two a byte
    pack_4bit(t.data(), t.numel(), reinterpret_cast<uint8_t*>(packed.data()));
    p.set_raw_data(std::move(packed));
  } else {
    p.set_raw_data(std::string(static_cast<const char*>(t.data()), t.nbytes()));
  }
  std::string out;
  if (!p.SerializeToString(&out)) return error(StatusCode::kInternal, "TensorProto serialization failed");
  return out;
}

Status write_tensor_pb(const std::string& path, const Tensor& tensor, const std::string& name) {
  auto bytes = encode_tensor_pb(tensor, name);
  if (!bytes.is_ok()) {
    Status st = bytes.status();
    return st.with_file(path);
  }
  return write_file_atomic(path, bytes.value());
}

Result<NamedTensor> read_tensor_file(const std::string& path) {
  GRAFT_ASSIGN_OR_RETURN(std::string bytes, read_file(path));
  if (bytes.size() >= kNpyMagicLen && bytes.compare(0, kNpyMagicLen, kNpyMagic, kNpyMagicLen) == 0) {
    GRAFT_ASSIGN_OR_RETURN(Tensor t, parse_npy(bytes, path));
    return NamedTensor{"", t};
  }
  return parse_tensor_pb(bytes, path);
}

}  // namespace graft::io
