// The conv2d generator (Conv2dGenerator.h).

#include "Conv2dGenerator.h"

namespace {

class Conv2d : public alcop_generators::Conv2dGenerator<Conv2d> {};

}  // namespace

HALIDE_REGISTER_GENERATOR(Conv2d, conv2d)
