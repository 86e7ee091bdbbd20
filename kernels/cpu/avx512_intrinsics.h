// <immintrin.h> for the files compiled with AVX-512 code generation
// (*_avx512*.cpp), with GCC 12's false warnings silenced: its AVX-512
// headers trip its own uninitialized-value warnings (their
// _mm512_undefined_* placeholders; GCC bug 105593, fixed in 13). The
// pragmas hold for the rest of the including file, so include this first.
#pragma once

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
