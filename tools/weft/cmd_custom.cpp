// `weft devices` (the Vulkan devices that run shader nodes) and the --custom-ops option shared by
// run, compile and import.
#include <iostream>

#include "cli.h"
#include "device/vulkan/vulkan.h"
#include "weft/custom.h"

namespace weft::cli {

const char* const kDevicesHelp = R"(Usage: weft devices

Lists the Vulkan devices that can run custom shader nodes (and, later, whole graph segments):
index, name, type, driver and Vulkan version. `--device SEL` of `weft run` / `weft compile` and
the WEFT_VULKAN_DEVICE environment variable select one by index or by part of its name; the
default is marked with '*' (WEFT_VULKAN_DEVICE if set, else the first discrete GPU, then
integrated, virtual and CPU devices such as Mesa's lavapipe).

Options:
  -h, --help   Show this help
)";

void add_custom_ops_option(const std::string& path) {
  std::vector<std::string> names = custom::register_ops_file(path);
  if (names.empty()) model_error(path + ": the ops file registers no custom operator");
}

int cmd_devices(Args& args) {
  while (!args.done()) {
    std::string flag, positional;
    std::optional<std::string> v;
    args.next(&flag, &v, &positional);
    if (flag == "-h" || flag == "--help") {
      std::cout << kDevicesHelp;
      return kExitOk;
    }
    if (flag.empty()) usage_error("`weft devices` takes no arguments, got '" + positional + "'");
    unknown_option(args, flag);
  }
  std::vector<vk::DeviceInfo> devices = vk::list_devices();
  if (devices.empty()) model_error("no Vulkan device found");
  const size_t chosen = vk::select_device("");
  for (const vk::DeviceInfo& d : devices) {
    std::cout << (d.index == chosen ? "* " : "  ") << d.index << "  " << d.name << "  (" << d.type << ", " << d.driver_name
              << (d.driver_info.empty() ? "" : " " + d.driver_info) << ", Vulkan " << d.api_version << ")"
              << (d.has_compute_queue ? "" : "  [no compute queue]") << "\n";
  }
  return kExitOk;
}

}  // namespace weft::cli
