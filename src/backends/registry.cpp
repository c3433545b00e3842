#include <algorithm>
#include <mutex>

#include "backends/backend.h"

namespace weft::backend {
namespace {

std::mutex& registry_mutex() {
  static std::mutex mu;
  return mu;
}
std::vector<const Backend*>& registered() {
  static std::vector<const Backend*> list;
  return list;
}

}  // namespace

std::vector<const Backend*> all_backends() {
  std::vector<const Backend*> list;
  // Vulkan first: today it runs only custom shader nodes, which nothing else runs (unless a CPU
  // kernel is registered for them).
  list.push_back(&vulkan_backend());
#ifdef WEFT_WITH_ONEDNN
  list.push_back(&onednn_backend());
#endif
  {
    std::lock_guard<std::mutex> lock(registry_mutex());
    list.insert(list.end(), registered().begin(), registered().end());
  }
  list.push_back(&reference_backend());
  return list;
}

const Backend* find_backend(std::string_view name) {
  for (const Backend* b : all_backends())
    if (b->name() == name) return b;
  return nullptr;
}

void register_backend(const Backend& b) {
  if (find_backend(b.name()))
    throw Error(ErrorCode::kInvalidArgument, "a backend named '" + std::string(b.name()) + "' is already registered");
  std::lock_guard<std::mutex> lock(registry_mutex());
  registered().push_back(&b);
}

void unregister_backend(const Backend& b) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  auto& list = registered();
  list.erase(std::remove(list.begin(), list.end(), &b), list.end());
}

}  // namespace weft::backend
