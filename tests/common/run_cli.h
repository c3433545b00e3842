// Runs the built `weft` tool (WEFT_CLI) in a directory and captures its exit code and output.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "common/temp_dir.h"

namespace weft::test {

struct CliResult {
  int rc = -1;
  std::string out;  // stdout
  std::string err;  // stderr
  std::string all() const { return out + err; }
};

inline std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// `weft <args>` run in `dir` (args are passed to the shell as written).
inline CliResult run_weft(const TempDir& dir, const std::string& args) {
  const std::string out = dir.file(".stdout"), err = dir.file(".stderr");
  const std::string cmd =
      "cd '" + dir.path() + "' && '" + std::string(WEFT_CLI) + "' " + args + " >'" + out + "' 2>'" + err + "'";
  const int status = std::system(cmd.c_str());
  CliResult r;
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

}  // namespace weft::test
