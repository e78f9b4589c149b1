/*
 * fuzz_web.c: libFuzzer target for core/web/web_wire.c, which reads untrusted bytes three ways: a
 * caller's URL, the browser container's answer and the egress proxy's event lines (both from
 * containers that load hostile pages). The input, from a private exact-size copy so any read
 * past the end is caught, goes to all three. Checks memory safety, that an accepted URL starts
 * with http(s):// and carries no credentials or spaces, and that a parsed answer has its text
 * within the limit. Built only with clang and -DRUNBOX_FUZZ=ON; the seed corpus
 * (tests/fuzz/corpus/web/) is replayed by tests/core/test_web_wire.c.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/web/web_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n)
{
    char *copy = malloc(n > 0 ? n : 1);
    if (n > 0)
        memcpy(copy, in, n);
    char err[RB_ERR_LEN];
    if (web_url_check(copy, n, err) == RB_OK) {
        if (n < 8 || (strncasecmp(copy, "http://", 7) != 0 && strncasecmp(copy, "https://", 8) != 0))
            abort();
        for (size_t i = 0; i < n; i++)
            if ((unsigned char)copy[i] <= 0x20 || (unsigned char)copy[i] >= 0x7f)
                abort();
    }
    web_limits lim = {5, 64};
    rb_err code;
    int net;
    json_t *doc = web_result_parse(copy, n, &lim, &code, &net, err);
    if (doc != NULL) {
        json_t *text = json_object_get(doc, "text");
        if (!json_is_string(text) || json_string_length(text) > 5 * 4)
            abort();
        json_decref(doc);
    } else if (code == RB_OK) {
        abort();
    }
    json_decref(web_event_parse(copy, n));
    free(copy);
    return 0;
}
