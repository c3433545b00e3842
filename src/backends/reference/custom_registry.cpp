// Registry of reference implementations for tosa.CUSTOM operators.
#include <map>
#include <mutex>
#include <optional>

#include "weft/interpreter.h"

namespace weft {
namespace {
struct Registry {
  std::mutex mu;
  std::map<std::pair<std::string, std::string>, CustomKernel> kernels;
};
Registry& registry() {
  static Registry r;
  return r;
}
}  // namespace

void register_custom_kernel(const std::string& domain_name, const std::string& operator_name, CustomKernel kernel) {
  if (!kernel) throw Error(ErrorCode::kInvalidArgument, "register_custom_kernel: empty kernel for " + domain_name + "::" + operator_name);
  std::lock_guard lock(registry().mu);
  registry().kernels[{domain_name, operator_name}] = std::move(kernel);
}

bool unregister_custom_kernel(const std::string& domain_name, const std::string& operator_name) {
  std::lock_guard lock(registry().mu);
  return registry().kernels.erase({domain_name, operator_name}) > 0;
}

namespace ref {
// Looks up a registered kernel (a copy, so registration may change while it runs).
std::optional<CustomKernel> find_custom_kernel(const std::string& domain_name, const std::string& operator_name) {
  std::lock_guard lock(registry().mu);
  auto it = registry().kernels.find({domain_name, operator_name});
  if (it == registry().kernels.end()) return std::nullopt;
  return it->second;
}
}  // namespace ref
}  // namespace weft
