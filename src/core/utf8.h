// UTF-8 validation, decoding and encoding, shared by the importer (names must be UTF-8), the JSON
// writers (bytes that are not UTF-8 are stored losslessly instead of making nlohmann-json throw
// type_error 316) and StringNormalizer's case mapping.
#pragma once

#include <cstdint>
#include <string>

namespace graft {

// Strict UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF (what JSON requires).
// Decodes `s` into code points (appended to *out when out is not null); false at the first byte
// that breaks the rules.
inline bool decode_utf8(const std::string& s, std::u32string* out) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  for (size_t i = 0; i < n;) {
    const unsigned char c = p[i];
    if (c < 0x80) {
      if (out) out->push_back(c);
      ++i;
      continue;
    }
    size_t len = 0;
    uint32_t cp = 0;
    if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > n) return false;
    for (size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    if (out) out->push_back(cp);
    i += len;
  }
  return true;
}

inline bool is_valid_utf8(const std::string& s) { return decode_utf8(s, nullptr); }

// Code points (valid ones: below U+110000, no surrogates) as UTF-8.
inline std::string encode_utf8(const std::u32string& cps) {
  std::string s;
  s.reserve(cps.size());
  for (char32_t cp : cps) {
    if (cp < 0x80) {
      s.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      s.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      s.push_back(static_cast<char>(0xE0 | (cp >> 12)));
      s.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      s.push_back(static_cast<char>(0xF0 | (cp >> 18)));
      s.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      s.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }
  return s;
}

}  // namespace graft
