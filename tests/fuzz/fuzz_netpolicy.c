/*
 * fuzz_netpolicy.c: libFuzzer target for a caller's network request (core/network/: the JSON of
 * `network` in REST's execution_options, MCP and E2B, any bytes, and the host patterns in it).
 * The input is parsed as JSON (anything jansson takes) and given to netpolicy_request under
 * fixed operator limits. Checks memory safety and the promises: the answer is RB_OK, RB_EINVAL
 * or RB_EFORBIDDEN with a message; a policy is {"allow": [...], "deny": [...]} of patterns that
 * parse again to their own text, at most NETPOLICY_PATTERNS_MAX each, the operator's deny list
 * among the deny ones. Built only with clang and -DRUNBOX_FUZZ=ON; the seed corpus
 * (tests/fuzz/corpus/netpolicy/) is replayed by tests/core/test_netpolicy.c.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/network/netpolicy.h"

static void check_list(json_t *list)
{
    if (!json_is_array(list) || json_array_size(list) > NETPOLICY_PATTERNS_MAX)
        abort();
    size_t i;
    json_t *v;
    json_array_foreach (list, i, v) {
        hostpattern p;
        char why[HOSTPATTERN_WHY_MAX], t[HOSTPATTERN_TEXT_MAX];
        const char *s = json_string_value(v);
        if (s == NULL || hostpattern_parse(s, strlen(s), &p, why) != 0)
            abort();
        hostpattern_text(&p, t);
        if (strcmp(t, s) != 0)
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n)
{
    static const char *const flags[3] = {"--egress-allow", "--egress-max", "--egress-deny"};
    netpolicy_limits l;
    char err[RB_ERR_LEN];
    if (netpolicy_limits_init(&l, 1, "pypi.org,*.pythonhosted.org", "pypi.org,*.pythonhosted.org,*.example.test:8443",
                              "bad.example.test", flags, err) != RB_OK)
        abort();
    json_t *v = json_loadb((const char *)in, n, JSON_DECODE_ANY, NULL);
    if (v != NULL) {
        json_t *out = NULL;
        err[0] = '\0';
        rb_err e = netpolicy_request(&l, v, "'network'", &out, err);
        if (e == RB_OK) {
            if (out != NULL) {
                check_list(json_object_get(out, "allow"));
                check_list(json_object_get(out, "deny"));
                if (json_object_size(out) != 2 || json_array_size(json_object_get(out, "deny")) < 1)
                    abort();
            }
        } else if ((e != RB_EINVAL && e != RB_EFORBIDDEN) || out != NULL || err[0] == '\0' ||
                   memchr(err, '\0', RB_ERR_LEN) == NULL) {
            abort();
        }
        json_decref(out);
        json_decref(v);
    }
    netpolicy_limits_dispose(&l);
    return 0;
}
