#include <cstdio>

#include "util/error.h"

int main(int argc, char** argv) {
  std::fprintf(stderr, "turbospark: under construction\n");
  return 1;
}
