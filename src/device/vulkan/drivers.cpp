// Whether this machine may have a Vulkan GPU, read from the loader's driver manifests without loading
// any driver. Creating a VkInstance loads every installed driver: on a machine without a GPU that is
// lavapipe and the LLVM it links (about 56 MB of resident memory and 40 ms for a CPU-only `weft run`),
// only to learn that the one device is a CPU, which the default placement does not use.
#include <glob.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>

#include "device/vulkan/vulkan.h"

namespace weft::vk {

namespace {

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : std::string(fallback);
}

std::vector<std::string> split_paths(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ':'))
    if (!item.empty()) out.push_back(item);
  return out;
}

std::vector<std::string> glob_paths(const std::string& pattern) {
  std::vector<std::string> out;
  glob_t g{};
  if (glob(pattern.c_str(), 0, nullptr, &g) == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  globfree(&g);
  return out;
}

std::string basename_of(std::string_view path) {
  const size_t slash = path.find_last_of('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

}  // namespace

DriverKind classify_driver(std::string_view library_path) {
  const std::string lib = basename_of(library_path);
  auto named = [&](std::string_view stem) { return lib.rfind(std::string(stem) + ".so", 0) == 0; };
  // CPU implementations: never a GPU.
  if (named("libvulkan_lvp") || named("libvk_swiftshader")) return DriverKind::kSoftware;
  // Mesa's drivers for kernel DRM devices: without a render node they find no device.
  for (std::string_view mesa : {"libvulkan_intel", "libvulkan_intel_hasvk", "libvulkan_radeon", "libvulkan_nouveau",
                                "libvulkan_virtio", "libvulkan_panfrost", "libvulkan_freedreno", "libvulkan_broadcom",
                                "libvulkan_powervr_mesa", "libvulkan_asahi", "libvulkan_imagination"})
    if (named(mesa)) return DriverKind::kRenderNode;
  return DriverKind::kOther;
}

bool gpu_driver_possible(const std::vector<std::string>& manifests, bool has_render_node) {
  for (const std::string& path : manifests) {
    std::ifstream f(path);
    if (!f) continue;  // the loader skips an unreadable manifest too
    std::string library;
    try {
      const nlohmann::json doc = nlohmann::json::parse(std::string(std::istreambuf_iterator<char>(f), {}));
      library = doc.at("ICD").at("library_path").get<std::string>();
    } catch (const std::exception&) {
      return true;  // not understood here: let the loader decide
    }
    switch (classify_driver(library)) {
      case DriverKind::kSoftware: break;
      case DriverKind::kRenderNode:
        if (has_render_node) return true;
        break;
      case DriverKind::kOther: return true;
    }
  }
  return false;
}

bool gpu_driver_possible() {
  static std::once_flag once;
  static bool possible = true;
  std::call_once(once, [] {
#ifdef __linux__
    // A driver or device the user named: ask the loader.
    for (const char* name : {"VK_DRIVER_FILES", "VK_ICD_FILENAMES", "VK_ADD_DRIVER_FILES", "WEFT_VULKAN_DEVICE"})
      if (const char* v = std::getenv(name); v && *v) return;
    // The loader's search path on Linux: $XDG_CONFIG_DIRS, /etc (and /usr/local/etc where it was
    // configured so), $XDG_DATA_HOME, $XDG_DATA_DIRS, each with vulkan/icd.d.
    std::vector<std::string> roots = split_paths(env_or("XDG_CONFIG_DIRS", "/etc/xdg"));
    roots.push_back("/etc");
    roots.push_back("/usr/local/etc");
    const std::string home = env_or("HOME", "");
    const std::string data_home = env_or("XDG_DATA_HOME", "");
    if (!data_home.empty())
      roots.push_back(data_home);
    else if (!home.empty())
      roots.push_back(home + "/.local/share");
    for (const std::string& d : split_paths(env_or("XDG_DATA_DIRS", "/usr/local/share:/usr/share"))) roots.push_back(d);
    roots.push_back("/usr/local/share");  // also where XDG_DATA_DIRS leaves them out: a manifest too many
    roots.push_back("/usr/share");        // only means a probe
    std::sort(roots.begin(), roots.end());
    roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
    std::vector<std::string> manifests;
    for (const std::string& r : roots)
      for (std::string& m : glob_paths(r + "/vulkan/icd.d/*.json")) manifests.push_back(std::move(m));
    possible = gpu_driver_possible(manifests, !glob_paths("/dev/dri/renderD*").empty());
#endif
  });
  return possible;
}

}  // namespace weft::vk
