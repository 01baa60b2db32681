// The softmax and layernorm generators (RowReductionGenerators.h).

#include "RowReductionGenerators.h"

HALIDE_REGISTER_GENERATOR(alcop_generators::SoftmaxGenerator, softmax)
HALIDE_REGISTER_GENERATOR(alcop_generators::LayerNormGenerator, layernorm)
