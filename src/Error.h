#ifndef ALCOP_ERROR_H
#define ALCOP_ERROR_H

/** \file
 * Halide's error macros, which Halide.h undefines at its end, so that ALCOP reports errors
 * exactly like Halide does: user_error/user_assert throw Halide::CompileError (or abort when
 * exceptions are off) with the message, internal_assert marks a bug in ALCOP itself.
 */

#include "Halide.h"

#define user_error Halide::Internal::ErrorReport(__FILE__, __LINE__, nullptr, Halide::Internal::ErrorReport::User)
#define user_warning                                           \
    Halide::Internal::ErrorReport(__FILE__, __LINE__, nullptr, \
                                  Halide::Internal::ErrorReport::User | Halide::Internal::ErrorReport::Warning)
#define internal_assert(c) _halide_internal_assertion(c, 0)
#define user_assert(c) _halide_internal_assertion(c, Halide::Internal::ErrorReport::User)

#endif
