/*
 * fuzz_auth.c: libFuzzer target for server/auth.c's parsers: the API key file (auth_parse) and
 * the Authorization header (auth_bearer_token), both from a private exact-size copy so any read
 * past the end is caught. Checks memory safety, that a parsed table holds valid names and no
 * duplicate, and that a token lies inside its header value. Built only with clang and
 * -DRUNBOX_FUZZ=ON; the seed corpus (tests/fuzz/corpus/auth/) is replayed by
 * tests/server/test_auth.c.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/auth.h"

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n)
{
    char *copy = malloc(n > 0 ? n : 1);
    if (n > 0)
        memcpy(copy, in, n);
    auth_key *keys = NULL;
    size_t nkeys = 0;
    if (auth_parse(copy, n, &keys, &nkeys, NULL) == RB_OK) {
        if (nkeys == 0 || nkeys > AUTH_KEYS_MAX)
            abort();
        for (size_t i = 0; i < nkeys; i++) {
            size_t len = strlen(keys[i].name);
            if (len == 0 || len > AUTH_NAME_MAX || keys[i].sessions < 0 || keys[i].rps < 0)
                abort();
            for (size_t j = 0; j < i; j++)
                if (strcmp(keys[i].name, keys[j].name) == 0)
                    abort();
        }
        free(keys);
    }
    const char *tok = NULL;
    size_t toklen = 0;
    if (auth_bearer_token(copy, n, &tok, &toklen) && (toklen == 0 || tok < copy || tok + toklen > copy + n))
        abort();
    free(copy);
    return 0;
}
