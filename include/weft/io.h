// Reading input files: the one reader every format goes through. A path must name a regular
// file (not a directory, device or FIFO: /dev/zero never ends) no larger than the cap of its kind;
// the whole file is read or the error says why, with the file named.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace weft {

// Caps by kind of input, in bytes. Large tensors live beside the text and SPIR-V forms (.npy,
// graph constants), so those stay small; an ONNX model is a protobuf, which cannot exceed 2 GiB.
inline constexpr size_t kMaxTextModelBytes = size_t{256} << 20;   // .weft, .spvasm
inline constexpr size_t kMaxSpirvBytes = size_t{256} << 20;       // .spv
inline constexpr size_t kMaxOnnxBytes = (size_t{2} << 30) - 1;    // .onnx (protobuf's limit)
inline constexpr size_t kMaxConfigBytes = size_t{16} << 20;       // ops files, IOSpecs, targets, shaders, scripts

// The bytes of `path`. Errors (weft::Error, file set to `path`): kIo when it cannot be opened or
// read, or is not a regular file; kInvalidArgument when it is larger than `max_bytes` (`what`
// names the kind: "a .weft model", "an ops file").
std::string read_file_bytes(const std::string& path, size_t max_bytes, std::string_view what);

// The checks of read_file_bytes without the read (for readers that stream the file, such as the
// ONNX importer's protobuf parse): the size of regular file `path`, with the same errors.
size_t checked_file_size(const std::string& path, size_t max_bytes, std::string_view what);

}  // namespace weft
