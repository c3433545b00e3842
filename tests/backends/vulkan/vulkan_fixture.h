// A test fixture for tests that need a Vulkan device: skipped, with the reason, where there is none
// (no loader, no ICD, or no device).
#pragma once

#include <gtest/gtest.h>

#include "device/vulkan/vulkan.h"
#include "weft/error.h"

namespace weft::test {

class VulkanDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    try {
      if (vk::list_devices().empty()) GTEST_SKIP() << "no Vulkan device";
    } catch (const Error& e) {
      GTEST_SKIP() << e.what();
    }
  }
};

}  // namespace weft::test
