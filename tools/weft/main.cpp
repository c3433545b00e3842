// PENDING: placeholder, replaced by the CLI.
#include <cstdio>
#include "weft/interpreter.h"
int main() { std::puts("weft"); return 0; }
