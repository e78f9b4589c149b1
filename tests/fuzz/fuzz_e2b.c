/*
 * fuzz_e2b.c: libFuzzer target for server/e2b/e2b_wire.c, what runboxd's E2B layer reads from
 * untrusted bytes besides JSON and multipart bodies (fuzzed elsewhere). The input, up to its
 * first NUL, is used both ways, each from a private exact-size copy:
 *   - as a file path: e2b_path_map gives NULL, the workspace, the path itself (relative: it does
 *     not start with '/') or a suffix of it that does not start with '/' and follows
 *     "/home/user/"; NULL exactly for an empty path or an absolute one outside /home/user;
 *   - as a metadata filter: e2b_metadata_match against {"a": "1", "k": "v w"} agrees with a
 *     reference (every non-empty pair has '=' and its decoded key and value are in the object),
 *     and the filter made from the object itself always matches;
 *   - as a time: rb_time_parse never reads past the string, and a time rb_time_format wrote
 *     (from the input's first 8 bytes) parses back to its milliseconds;
 *   - as JSON {"allow_internet_access": ..., "network": ...}: e2b_network_map, both as a create
 *     body and as an update, answers RB_OK with NULL, true or {"allow": [strings], "deny":
 *     [strings]} (ALL_TRAFFIC dropped), or RB_EINVAL with a message;
 *   - as JSON, a pause request and a create body's lifecycle: e2b_pause_mode answers "suspend" or
 *     "hibernate" (hibernate exactly when memory is false) or RB_EINVAL with a message, and
 *     e2b_lifecycle_map an action and a lifecycle that agree ("end" exactly when onTimeout is
 *     "kill") or RB_EINVAL with a message and no lifecycle;
 *   - as the list's state filter: e2b_state_filter agrees with a reference (comma-separated
 *     "running" and "paused" only) and reads no byte past the input.
 * Built only with clang and -DRUNBOX_FUZZ=ON. The seed corpus (tests/fuzz/corpus/e2b/) is
 * replayed through these same checks by tests/server/test_e2b_wire.c, which includes this file.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "server/e2b/e2b.h"
#include "server/e2b/e2b_wire.h"
#include "server/query.h"
#include "tests/fuzz/fuzz_check.h"

static void check_network(const char *s, size_t len)
{
    json_t *doc = json_loadb(s, len, 0, NULL);
    if (!json_is_object(doc)) {
        json_decref(doc);
        return;
    }
    for (int update = 0; update < 2; update++) {
        json_t *out = NULL;
        char err[RB_ERR_LEN] = "";
        rb_err e = e2b_network_map(json_object_get(doc, "allow_internet_access"), json_object_get(doc, "network"),
                                   update, &out, err);
        FUZZ_CHECK(e == RB_OK || (e == RB_EINVAL && out == NULL && err[0] != '\0'));
        if (out != NULL && !json_is_true(out)) {
            FUZZ_CHECK(json_is_object(out) && json_object_size(out) == 2);
            const char *keys[] = {"allow", "deny"};
            for (int k = 0; k < 2; k++) {
                json_t *list = json_object_get(out, keys[k]), *v;
                size_t i;
                FUZZ_CHECK(json_is_array(list));
                json_array_foreach(list, i, v)
                {
                    FUZZ_CHECK(json_is_string(v));
                    FUZZ_CHECK(strcmp(json_string_value(v), E2B_ALL_TRAFFIC) != 0);
                }
            }
        }
        json_decref(out);
    }
    json_decref(doc);
}

static void check_pause_and_lifecycle(const char *s, size_t len)
{
    json_t *doc = json_loadb(s, len, JSON_DECODE_ANY, NULL);
    if (doc == NULL)
        return;
    const char *mode = NULL, *action = NULL;
    char err[RB_ERR_LEN] = "";
    rb_err e = e2b_pause_mode(doc, &mode, err);
    if (e == RB_OK) {
        json_t *memory = json_is_object(doc) ? json_object_get(doc, "memory") : NULL;
        FUZZ_CHECK(strcmp(mode, json_is_false(memory) ? "hibernate" : "suspend") == 0);
        FUZZ_CHECK(json_is_object(doc) || json_is_null(doc));
    } else {
        FUZZ_CHECK(e == RB_EINVAL && err[0] != '\0');
    }
    if (json_is_object(doc)) {
        json_t *life = NULL;
        err[0] = '\0';
        e = e2b_lifecycle_map(doc, &action, &life, err);
        if (e == RB_OK) {
            const char *on = json_string_value(json_object_get(life, "onTimeout"));
            FUZZ_CHECK(json_is_object(life) && json_object_size(life) == 2 && on != NULL);
            FUZZ_CHECK(json_is_boolean(json_object_get(life, "autoResume")));
            FUZZ_CHECK((strcmp(action, "end") == 0) == (strcmp(on, "kill") == 0));
            FUZZ_CHECK(strcmp(action, "end") == 0 || strcmp(action, "suspend") == 0 ||
                       strcmp(action, "hibernate") == 0);
            FUZZ_CHECK(strcmp(on, "kill") == 0 || strcmp(on, "pause") == 0);
        } else {
            FUZZ_CHECK(e == RB_EINVAL && life == NULL && err[0] != '\0');
        }
        json_decref(life);
    }
    json_decref(doc);
}

static int reference_states(const char *s, size_t n)
{
    int mask = 0;
    if (n == 0)
        return -1;
    for (size_t start = 0; start <= n;) {
        size_t stop = start;
        while (stop < n && s[stop] != ',')
            stop++;
        if (stop - start == 7 && strncmp(s + start, "running", 7) == 0)
            mask |= E2B_STATE_RUNNING;
        else if (stop - start == 6 && strncmp(s + start, "paused", 6) == 0)
            mask |= E2B_STATE_PAUSED;
        else
            return -1;
        start = stop + 1;
    }
    return mask;
}

static void check_path(const char *path)
{
    const char *m = e2b_path_map(path);
    size_t n = strlen(path);
    int inside = path[0] != '/' ? n > 0
                                : strncmp(path, E2B_HOME, strlen(E2B_HOME)) == 0 &&
                                      (path[strlen(E2B_HOME)] == '\0' || path[strlen(E2B_HOME)] == '/');
    FUZZ_CHECK((m != NULL) == inside);
    if (m == NULL)
        return;
    if (strcmp(m, E2B_WORKDIR) == 0 && (m < path || m > path + n))
        return; /* the workspace itself */
    FUZZ_CHECK(m >= path && m <= path + n);
    if (path[0] != '/') {
        FUZZ_CHECK(m == path);
        return;
    }
    FUZZ_CHECK(m[0] != '/' && m[0] != '\0');
    FUZZ_CHECK((size_t)(m - path) > strlen(E2B_HOME) && m[-1] == '/');
}

static int reference_match(const char *f, size_t n, json_t *meta)
{
    for (size_t start = 0; start < n;) {
        size_t stop = start;
        while (stop < n && f[stop] != '&')
            stop++;
        if (stop > start) {
            size_t eq = start;
            while (eq < stop && f[eq] != '=')
                eq++;
            if (eq == stop)
                return 0;
            char *k = malloc(eq - start + 1), *v = malloc(stop - eq);
            size_t kl = query_decode(f + start, eq - start, k), vl = query_decode(f + eq + 1, stop - eq - 1, v);
            json_t *have = NULL;
            if (memchr(k, '\0', kl) == NULL)
                have = json_object_get(meta, k);
            int ok = json_is_string(have) && json_string_length(have) == vl && memcmp(json_string_value(have), v, vl) == 0;
            free(k);
            free(v);
            if (!ok)
                return 0;
        }
        start = stop + 1;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n)
{
    const uint8_t *nul = memchr(in, 0, n);
    size_t len = nul != NULL ? (size_t)(nul - in) : n;
    char *s = malloc(len + 1);
    memcpy(s, in, len);
    s[len] = '\0';
    check_path(s);
    check_network(s, len);
    check_pause_and_lifecycle(s, len);

    char *f = malloc(len > 0 ? len : 1); /* exact size: a read past the end is caught */
    memcpy(f, in, len);
    json_t *meta = json_pack("{s:s, s:s}", "a", "1", "k", "v w");
    FUZZ_CHECK(e2b_metadata_match(f, len, meta) == reference_match(f, len, meta));
    static const char own[] = "k=v%20w&a=1";
    FUZZ_CHECK(e2b_metadata_match(own, sizeof(own) - 1, meta));
    json_decref(meta);
    FUZZ_CHECK(e2b_state_filter(f, len) == reference_states(f, len));
    free(f);

    int64_t ms = 0;
    (void)rb_time_parse(s, &ms);
    uint64_t raw = 0;
    memcpy(&raw, in, n < sizeof(raw) ? n : sizeof(raw));
    int64_t want = (int64_t)(raw % 253402300800000ull); /* 1970 .. 9999-12-31 */
    char text[40];
    rb_time_format(want, text, sizeof(text));
    FUZZ_CHECK(rb_time_parse(text, &ms) == 0 && ms == want);
    free(s);
    return 0;
}
