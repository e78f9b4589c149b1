/*
 * corpus: reading the libFuzzer seed corpora (tests/fuzz/corpus/NAME) from ordinary Criterion
 * tests, so every fuzzed parser's seeds are replayed on each test run. Like every file in
 * tests/common, it is linked into every test binary.
 */
#ifndef RB_TEST_CORPUS_H
#define RB_TEST_CORPUS_H

#include <stddef.h>

/** The whole file at path in a heap buffer of exactly its size plus a NUL (so a read past the
 * end is caught under ASan); *len excludes the NUL. Asserts that it opens and is under 16 MiB.
 * The caller frees it. */
char *corpus_slurp(const char *path, size_t *len);

/** Called once per seed: its file name, its path, and its bytes (valid during the call). */
typedef void (*corpus_seed_cb)(void *data, const char *seed, const char *path, const char *buf, size_t len);

/** Calls cb for every file (not starting with '.') of tests/fuzz/corpus/<name>, asserting that the
 * folder exists; returns the number of seeds. */
int corpus_each(const char *name, corpus_seed_cb cb, void *data);

#endif
