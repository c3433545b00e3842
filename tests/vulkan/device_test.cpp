// The Vulkan runtime's devices: enumeration and selection (on lavapipe where no GPU is present).
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "vk_test_util.h"

namespace {

using weft::Error;
using weft::ErrorCode;
namespace vk = weft::vk;
using vk_test::ScopedEnv;

// Every test of this executable keeps its pipeline caches in a temporary WEFT_CACHE_DIR (the
// shared devices read it when first opened), removed at the end.
class CacheDirEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    char tmpl[] = "/tmp/weft-vk-test-XXXXXX";
    if (char* dir = mkdtemp(tmpl)) {
      dir_ = dir;
      setenv("WEFT_CACHE_DIR", (dir_ + "/shared").c_str(), 1);
    }
    unsetenv("WEFT_VULKAN_DEVICE");
    unsetenv("WEFT_VULKAN_TIMEOUT_MS");
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }

 private:
  std::string dir_;
};
[[maybe_unused]] ::testing::Environment* const kCacheDir =
    ::testing::AddGlobalTestEnvironment(new CacheDirEnvironment);

// The manifest rule that keeps a CPU-only process from loading lavapipe to learn it has no GPU.
TEST(VulkanDevice, GpuDriverPossibleFromManifests) {
  EXPECT_EQ(vk::classify_driver("libvulkan_lvp.so"), vk::DriverKind::kSoftware);
  EXPECT_EQ(vk::classify_driver("/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so"), vk::DriverKind::kSoftware);
  EXPECT_EQ(vk::classify_driver("libvk_swiftshader.so"), vk::DriverKind::kSoftware);
  EXPECT_EQ(vk::classify_driver("/usr/lib/x86_64-linux-gnu/libvulkan_radeon.so"), vk::DriverKind::kRenderNode);
  EXPECT_EQ(vk::classify_driver("libvulkan_intel_hasvk.so"), vk::DriverKind::kRenderNode);
  EXPECT_EQ(vk::classify_driver("libGLX_nvidia.so.0"), vk::DriverKind::kOther);
  EXPECT_EQ(vk::classify_driver("libvulkan_lvp_fork.so"), vk::DriverKind::kOther);  // not a name we know
  EXPECT_EQ(vk::classify_driver("libvulkan_dzn.so"), vk::DriverKind::kOther);       // WSL: /dev/dxg, not DRM

  char tmpl[] = "/tmp/weft-icd-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  auto manifest = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir + "/" + name) << text;
    return dir + "/" + name;
  };
  auto icd = [](const std::string& lib) {
    return R"({"file_format_version": "1.0.0", "ICD": {"library_path": ")" + lib + R"(", "api_version": "1.3.255"}})";
  };
  const std::string lvp = manifest("lvp.json", icd("/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so"));
  const std::string radeon = manifest("radeon.json", icd("libvulkan_radeon.so"));
  const std::string nvidia = manifest("nvidia.json", icd("libGLX_nvidia.so.0"));
  const std::string broken = manifest("broken.json", "{\"ICD\": {\"library_path\": 3}}");
  EXPECT_FALSE(vk::gpu_driver_possible({}, false));
  EXPECT_FALSE(vk::gpu_driver_possible({lvp}, true));
  EXPECT_FALSE(vk::gpu_driver_possible({lvp, radeon}, false));  // Mesa's GPU drivers without /dev/dri
  EXPECT_TRUE(vk::gpu_driver_possible({lvp, radeon}, true));
  EXPECT_TRUE(vk::gpu_driver_possible({lvp, nvidia}, false));   // any other driver: ask the loader
  EXPECT_TRUE(vk::gpu_driver_possible({lvp, broken}, false));   // a manifest not understood: likewise
  EXPECT_FALSE(vk::gpu_driver_possible({dir + "/missing.json", lvp}, false));
  std::filesystem::remove_all(dir);
}

TEST(VulkanDevice, ListsDevices) {
  WEFT_VK_REQUIRE_DEVICE();
  std::vector<vk::DeviceInfo> devices = vk::list_devices();
  ASSERT_FALSE(devices.empty());
  bool llvmpipe = false;
  for (size_t i = 0; i < devices.size(); ++i) {
    const vk::DeviceInfo& d = devices[i];
    SCOPED_TRACE(d.name);
    EXPECT_EQ(d.index, i);
    EXPECT_FALSE(d.name.empty());
    EXPECT_TRUE(std::regex_match(d.api_version, std::regex(R"(\d+\.\d+\.\d+)"))) << d.api_version;
    EXPECT_TRUE(std::regex_match(d.uuid, std::regex("[0-9a-f]{32}"))) << d.uuid;
    EXPECT_TRUE(d.type == "discrete GPU" || d.type == "integrated GPU" || d.type == "virtual GPU" || d.type == "CPU" ||
                d.type == "other")
        << d.type;
    if (d.name.find("llvmpipe") != std::string::npos) {
      llvmpipe = true;
      EXPECT_EQ(d.type, "CPU");
      EXPECT_EQ(d.driver_name, "llvmpipe");
      EXPECT_TRUE(d.has_compute_queue);
      EXPECT_GE(d.max_workgroup_count[0], 65535u);
      EXPECT_GE(d.max_push_constants_size, 128u);
    }
  }
  // lavapipe is installed wherever these tests run (mesa-vulkan-drivers).
  if (std::filesystem::exists("/usr/share/vulkan/icd.d/lvp_icd.x86_64.json") && !std::getenv("VK_ICD_FILENAMES") &&
      !std::getenv("VK_DRIVER_FILES")) {
    EXPECT_TRUE(llvmpipe);
  }
}

TEST(VulkanDevice, SelectsByIndexAndName) {
  WEFT_VK_REQUIRE_DEVICE();
  std::vector<vk::DeviceInfo> devices = vk::list_devices();
  auto by_index = vk::open_device("0");
  ASSERT_TRUE(by_index);
  EXPECT_EQ(vk::info(*by_index).index, 0u);
  EXPECT_EQ(vk::info(*by_index).name, devices[0].name);
  // Shared: the same Device every time.
  EXPECT_EQ(vk::open_device("0"), by_index);
  // A case-insensitive substring of the name.
  std::string upper = devices[0].name.substr(0, 4);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  auto by_name = vk::open_device(upper);
  EXPECT_EQ(by_name, by_index);
  for (const auto& d : devices) {
    if (d.name.find("llvmpipe") != std::string::npos) {
      EXPECT_EQ(vk::info(*vk::open_device("LLVMpipe")).name, d.name);
      break;
    }
  }
  // An exclusive device is a different Device on the same physical device.
  auto exclusive = vk::open_device("0", {.exclusive = true, .cache_dir = "off"});
  EXPECT_NE(exclusive, by_index);
  EXPECT_EQ(vk::info(*exclusive).uuid, vk::info(*by_index).uuid);
  EXPECT_EQ(vk::stats(*exclusive).disk_cache_status, "disabled");
}

TEST(VulkanDevice, DefaultPrefersTheBestDeviceType) {
  WEFT_VK_REQUIRE_DEVICE();
  ScopedEnv no_env("WEFT_VULKAN_DEVICE", nullptr);
  std::vector<vk::DeviceInfo> devices = vk::list_devices();
  auto rank = [](const std::string& t) {
    return t == "discrete GPU" ? 0 : t == "integrated GPU" ? 1 : t == "virtual GPU" ? 2 : t == "CPU" ? 3 : 4;
  };
  auto dev = vk::open_device();
  const vk::DeviceInfo& chosen = vk::info(*dev);
  EXPECT_TRUE(chosen.has_compute_queue);
  for (const auto& d : devices) {
    if (d.has_compute_queue) {
      EXPECT_LE(rank(chosen.type), rank(d.type)) << d.name;
    }
  }
}

TEST(VulkanDevice, BadSelectorListsDevices) {
  WEFT_VK_REQUIRE_DEVICE();
  std::vector<vk::DeviceInfo> devices = vk::list_devices();
  try {
    vk::open_device("no-such-gpu-xyz");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    std::string m = e.message();
    EXPECT_NE(m.find("'no-such-gpu-xyz'"), std::string::npos) << m;
    EXPECT_NE(m.find("0: " + devices[0].name), std::string::npos) << m;
  }
  try {
    vk::open_device(std::to_string(devices.size()));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(e.message().find("out of range"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find(devices[0].name), std::string::npos) << e.message();
  }
  EXPECT_THROW(vk::open_device("99999999999999999999"), Error);
}

TEST(VulkanDevice, EnvironmentVariableSelects) {
  WEFT_VK_REQUIRE_DEVICE();
  std::vector<vk::DeviceInfo> devices = vk::list_devices();
  const vk::DeviceInfo& last = devices.back();
  {
    ScopedEnv env("WEFT_VULKAN_DEVICE", std::to_string(last.index).c_str());
    EXPECT_EQ(vk::info(*vk::open_device()).index, last.index);
  }
  {
    ScopedEnv env("WEFT_VULKAN_DEVICE", last.name.c_str());
    EXPECT_EQ(vk::info(*vk::open_device()).name, last.name);
  }
  {
    ScopedEnv env("WEFT_VULKAN_DEVICE", "not-a-device-name");
    try {
      vk::open_device();
      FAIL() << "expected an error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(e.message().find("WEFT_VULKAN_DEVICE"), std::string::npos) << e.message();
      EXPECT_NE(e.message().find("not-a-device-name"), std::string::npos) << e.message();
    }
    // An explicit selector wins over the environment.
    EXPECT_EQ(vk::info(*vk::open_device("0")).index, 0u);
  }
}

TEST(VulkanDevice, SharedDeviceCachesInWeftCacheDir) {
  WEFT_VK_REQUIRE_DEVICE();
  const char* dir = std::getenv("WEFT_CACHE_DIR");
  ASSERT_NE(dir, nullptr);
  vk::DeviceStats s = vk::stats(*vk::open_device("0"));
  EXPECT_EQ(s.disk_cache_file.rfind(std::string(dir) + "/vulkan-pipelines-", 0), 0u) << s.disk_cache_file;
  EXPECT_EQ(s.disk_cache_file.substr(s.disk_cache_file.size() - 4), ".bin");
  EXPECT_FALSE(s.lost);
}

}  // namespace
