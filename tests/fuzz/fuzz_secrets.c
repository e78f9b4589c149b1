/*
 * fuzz_secrets.c: libFuzzer target for the operator's secrets file (core/network/secrets.h), any
 * bytes. Checks memory safety and the promises: RB_OK with at most SECRETS_MAX secrets, each with
 * a name, 1..SECRET_HOSTS_MAX host patterns that parse again to their own text, a header, a
 * variable and a source; or RB_EINVAL with a message and nothing kept. A value in the input never
 * appears in the message (checked with the marker "FUZZVALUE" when it is only ever after value=). Built only with
 * clang and -DRUNBOX_FUZZ=ON; the seed corpus (tests/fuzz/corpus/secrets/) is replayed by
 * tests/core/test_secrets.c.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/network/secrets.h"

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n);

/* Whether every "FUZZVALUE" of in[0..n) follows "value=" (then the message must not show it). */
static int marker_only_as_value(const uint8_t *in, size_t n)
{
    int found = 0;
    for (size_t i = 0; i + 9 <= n; i++) {
        if (memcmp(in + i, "FUZZVALUE", 9) != 0)
            continue;
        if (i < 6 || memcmp(in + i - 6, "value=", 6) != 0)
            return 0;
        found = 1;
    }
    return found;
}

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n)
{
    secret_set s;
    char err[RB_ERR_LEN];
    err[0] = '\0';
    rb_err e = secrets_parse((const char *)in, n, &s, err);
    if (e == RB_OK) {
        if (s.n > SECRETS_MAX)
            abort();
        for (size_t i = 0; i < s.n; i++) {
            const secret_def *d = &s.items[i];
            if (d->name[0] == '\0' || d->n_hosts == 0 || d->n_hosts > SECRET_HOSTS_MAX || d->header[0] == '\0' ||
                d->var[0] == '\0' || d->keys == NULL || d->source_text == NULL || d->value != NULL)
                abort();
            for (size_t h = 0; h < d->n_hosts; h++) {
                char t[HOSTPATTERN_TEXT_MAX], why[HOSTPATTERN_WHY_MAX];
                hostpattern p;
                hostpattern_text(&d->hosts[h], t);
                if (hostpattern_parse(t, strlen(t), &p, why) != 0)
                    abort();
            }
        }
        secrets_dispose(&s);
    } else if (e != RB_EINVAL || s.n != 0 || s.items != NULL || err[0] == '\0' ||
               memchr(err, '\0', RB_ERR_LEN) == NULL ||
               (marker_only_as_value(in, n) && strstr(err, "FUZZVALUE") != NULL)) {
        abort();
    }
    return 0;
}
