#ifndef ALCOP_TEST_FUZZ_SHAPES_H
#define ALCOP_TEST_FUZZ_SHAPES_H

// The fuzzers' runtime sizes: half of them 1, primes and values around multiples of 4, 8, 16,
// 32, 64 (the tails of every tile), the rest uniform in [1, 150].

#include <cstdlib>
#include <random>

namespace fuzz {

inline int draw_size(std::mt19937 &rng) {
    static const int special[] = {1, 2, 3, 5, 7, 13, 31, 33, 63, 64, 65, 97, 127, 128};
    if (rng() % 2) return special[rng() % (sizeof(special) / sizeof(special[0]))];
    return 1 + rng() % 150;
}

inline int env_int(const char *name, int fallback) {
    const char *v = getenv(name);
    return v ? atoi(v) : fallback;
}

}  // namespace fuzz

#endif
