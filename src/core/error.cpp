#include "weft/error.h"

namespace weft {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid-argument";
    case ErrorCode::kParse: return "parse";
    case ErrorCode::kVerify: return "verify";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kIo: return "io";
    case ErrorCode::kRuntime: return "runtime";
    case ErrorCode::kNotFound: return "not-found";
    case ErrorCode::kInternal: return "internal";
  }
  return "unknown";
}

Error::Error(ErrorCode code, std::string message, Location location)
    : code_(code), message_(std::move(message)), location_(std::move(location)) {
  format();
}

Error Error::with_context(const Location& outer) const {
  Location l = location_;
  if (l.file.empty()) {
    l.file = outer.file;
    if (l.line == 0) {
      l.line = outer.line;
      l.column = outer.column;
    }
  }
  if (l.graph.empty()) l.graph = outer.graph;
  if (l.node.empty()) l.node = outer.node;
  if (l.operand.empty()) l.operand = outer.operand;
  return Error(code_, message_, l);
}

void Error::format() {
  std::string s;
  if (!location_.file.empty()) {
    s += location_.file;
    if (location_.line > 0) {
      s += ":" + std::to_string(location_.line);
      if (location_.column > 0) s += ":" + std::to_string(location_.column);
    }
    s += ": ";
  }
  std::string where;
  auto add = [&](const char* what, const std::string& v) {
    if (v.empty()) return;
    if (!where.empty()) where += ", ";
    where += what;
    where += " '";
    where += v;
    where += "'";
  };
  add("graph", location_.graph);
  add("node", location_.node);
  add("operand", location_.operand);
  if (!where.empty()) s += where + ": ";
  s += message_;
  s += " [";
  s += error_code_name(code_);
  s += "]";
  formatted_ = std::move(s);
}

}  // namespace weft
