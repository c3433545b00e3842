#include "backends/backend.h"

namespace weft::backend {

const std::vector<const Backend*>& all_backends() {
  static const std::vector<const Backend*> list = {
#ifdef WEFT_WITH_ONEDNN
      &onednn_backend(),
#endif
      &reference_backend(),
  };
  return list;
}

const Backend* find_backend(std::string_view name) {
  for (const Backend* b : all_backends())
    if (b->name() == name) return b;
  return nullptr;
}

}  // namespace weft::backend
