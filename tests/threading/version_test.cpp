// version_test.cpp — spindle::version() (src/common/version.cpp) against the
// generated header's macros (include/spindle/version.h.in).
#include <gtest/gtest.h>

#include <string>

#include "spindle/version.h"

namespace {

TEST(Version, LibraryVersionEqualsHeaderMacros) {
  const std::string expected = std::to_string(SPINDLE_VERSION_MAJOR) + "." + std::to_string(SPINDLE_VERSION_MINOR) +
                               "." + std::to_string(SPINDLE_VERSION_PATCH);
  EXPECT_EQ(std::string(spindle::version()), expected);
  EXPECT_EQ(std::string(SPINDLE_VERSION_STRING), expected);
}

TEST(Version, NumberOrdersMajorMinorPatch) {
  EXPECT_EQ(SPINDLE_VERSION_NUMBER, SPINDLE_VERSION_MAJOR * 10000 + SPINDLE_VERSION_MINOR * 100 + SPINDLE_VERSION_PATCH);
}

}  // namespace
