/*
 * fuzz_admit.c: libFuzzer target for server/admit.c, which reads the Host and Origin headers of
 * every request (untrusted bytes, not NUL-terminated). The input, from a private exact-size
 * copy so any read past the end is caught, is judged as a Host and as an Origin under a few
 * settings. Checks memory safety and that a loopback name is never refused. Built only with
 * clang and -DRUNBOX_FUZZ=ON; the seed corpus (tests/fuzz/corpus/admit/) is replayed by
 * tests/server/test_admit.c.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/admit.h"

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n)
{
    char *copy = malloc(n > 0 ? n : 1);
    if (n > 0)
        memcpy(copy, in, n);
    static char *const allowed[] = {NULL, (char *)"runbox.internal, other.example:9", (char *)"*"};
    for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++) {
        server_settings cfg;
        memset(&cfg, 0, sizeof(cfg));
        cfg.listen = (char *)"127.0.0.1:8080";
        cfg.allowed_hosts = allowed[i];
        cfg.allowed_origins = allowed[i];
        (void)admit_host(&cfg, copy, n);
        (void)admit_origin(&cfg, copy, n);
        if (!admit_host(&cfg, "localhost", 9) || !admit_origin(&cfg, "http://127.0.0.1", 16))
            abort();
    }
    free(copy);
    return 0;
}
