// Weft's single error type: a code, a message and a location.
#pragma once

#include <stdexcept>
#include <string>

namespace weft {

enum class ErrorCode {
  kInvalidArgument,  // a caller passed something the API does not accept
  kParse,            // text that does not follow a grammar (.weft, .npy header, ...)
  kVerify,           // a graph that breaks a TOSA rule (shape, type, ERROR_IF)
  kUnsupported,      // valid input that this build cannot handle
  kIo,               // file system or stream failure
  kRuntime,          // failure while executing (REQUIRE violated, ...)
  kNotFound,         // a named entity does not exist
  kInternal,         // a bug in Weft
};

const char* error_code_name(ErrorCode code);

// Where an error happened. Every field is optional; what() prints those set.
struct Location {
  std::string file;
  int line = 0;    // 1-based, 0 = unknown
  int column = 0;  // 1-based, 0 = unknown
  std::string graph;
  std::string node;     // node name (usually its first output)
  std::string operand;  // operand, attribute or field name

  bool empty() const {
    return file.empty() && line == 0 && graph.empty() && node.empty() && operand.empty();
  }
};

class Error : public std::exception {
 public:
  Error(ErrorCode code, std::string message, Location location = {});

  ErrorCode code() const noexcept { return code_; }
  const std::string& message() const noexcept { return message_; }
  const Location& location() const noexcept { return location_; }
  // "file:line:col: graph 'g', node 'n', operand 'o': message [code]"
  const char* what() const noexcept override { return formatted_.c_str(); }

  // Returns a copy with fields of `outer` filled where this error's are empty.
  Error with_context(const Location& outer) const;

 private:
  void format();
  ErrorCode code_;
  std::string message_;
  Location location_;
  std::string formatted_;
};

}  // namespace weft
