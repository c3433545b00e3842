// Graph's name index: unique_name gives the first free "<base>_<i>", also after thousands of values
// named after one base (an unrolled recurrent model's), and never a name in use.
#include <gtest/gtest.h>

#include <string>

#include "weft/graph.h"

namespace weft {
namespace {

TEST(GraphNames, UniqueNamesCountUpPerBaseAndSkipNamesInUse) {
  Graph g("main");
  const TensorType t{DType::kFp32, {1}};
  EXPECT_EQ(g.unique_name("x"), "x");
  EXPECT_EQ(g.unique_name(""), "v");
  g.add_value("x", t);
  g.add_value("x_3", t);  // taken by its writer: skipped when the count gets there
  g.add_value("y", t);
  for (int i = 1; i <= 2000; ++i) {
    const std::string n = g.unique_name("x");
    EXPECT_EQ(n, "x_" + std::to_string(i < 3 ? i : i + 1));
    g.add_value(n, t);
  }
  // Asked twice without adding the name: the same answer both times (a hint, not a reservation).
  EXPECT_EQ(g.unique_name("x"), "x_2002");
  EXPECT_EQ(g.unique_name("x"), "x_2002");
  EXPECT_EQ(g.unique_name("y"), "y_1");
  // A renamed value's old name is free again; counting goes on from where it was.
  g.rename_value(*g.find_value("x_1"), "x_renamed");
  EXPECT_FALSE(g.find_value("x_1"));
  const std::string next = g.unique_name("x");
  EXPECT_EQ(next, "x_2002");
  // A copy keeps counting where the original was.
  Graph copy = g;
  EXPECT_EQ(copy.unique_name("x"), "x_2002");
}

}  // namespace
}  // namespace weft
