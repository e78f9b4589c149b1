/*
 * fuzz_check.h: the assertion of the fuzz targets that are also replayed as Criterion tests.
 * Such a target's file is compiled into its replay test (e.g. tests/core/test_runner_frames.c
 * includes tests/fuzz/fuzz_runner.c), so that every seed goes through exactly the checks the
 * fuzzer applies. In the fuzzer a failed check prints itself and aborts (libFuzzer keeps the
 * input as a crash); a replay test defines FUZZ_CHECK as a Criterion assertion before including
 * the target.
 */
#ifndef RB_TEST_FUZZ_CHECK_H
#define RB_TEST_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#ifndef FUZZ_CHECK
#define FUZZ_CHECK(cond)                                                                                               \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);                                   \
            abort();                                                                                                   \
        }                                                                                                              \
    } while (0)
#endif

#endif
