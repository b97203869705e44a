// Small helpers shared by the plugin tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <random>
#include <string>

#include "graft/status.h"

namespace graft_test {

// Asserts that every phrase occurs in the error text: the tests check what a user will read.
inline void expect_contains(const std::string& text, std::initializer_list<const char*> phrases) {
  for (const char* p : phrases)
    EXPECT_NE(text.find(p), std::string::npos) << "expected the message to contain \"" << p << "\"\n  message: " << text;
}

inline void expect_error(const graft::Status& st, graft::StatusCode code,
                         std::initializer_list<const char*> phrases) {
  ASSERT_FALSE(st.is_ok()) << "expected an error";
  EXPECT_EQ(st.code(), code) << graft::status_code_name(st.code()) << ": " << st.to_string();
  expect_contains(st.to_string(), phrases);
}

// A fresh seed per run, printed by the caller's SCOPED_TRACE on failure.
inline uint32_t fresh_seed() { return std::random_device{}(); }

}  // namespace graft_test
