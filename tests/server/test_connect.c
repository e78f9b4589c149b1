/*
 * test_connect.c: server/e2b/connect.c: the request envelope of a Connect streaming call, the
 * envelopes written back, the end of stream, the error codes and their statuses, and a replay
 * of the libFuzzer seed corpus in tests/fuzz/corpus/connect/ through the checks of
 * tests/fuzz/fuzz_connect.c.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "server/e2b/connect.h"
#include "tests/common/corpus.h"

static const char *replay_seed = "";
#define FUZZ_CHECK(cond) cr_assert(cond, "%s: check failed: %s", replay_seed, #cond)
#include "tests/fuzz/fuzz_connect.c"

static size_t envelope(char *out, unsigned flags, const char *json)
{
    size_t n = strlen(json);
    out[0] = (char)flags;
    out[1] = (char)(n >> 24);
    out[2] = (char)(n >> 16);
    out[3] = (char)(n >> 8);
    out[4] = (char)n;
    memcpy(out + 5, json, n);
    return n + 5;
}

Test(connect, parses_one_request_envelope)
{
    char body[256], err[RB_ERR_LEN];
    size_t n = envelope(body, 0, "{\"process\":{\"cmd\":\"/bin/bash\"},\"stdin\":false}");
    json_t *v = NULL;
    cr_assert_eq(connect_parse_request(body, n, 1024, &v, err), RB_OK, "%s", err);
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(v, "process"), "cmd")), "/bin/bash");
    json_decref(v);
}

Test(connect, refuses_what_is_not_one_envelope)
{
    char body[256], err[RB_ERR_LEN];
    json_t *v = NULL;
    cr_assert_eq(connect_parse_request("\0\0", 2, 1024, &v, err), RB_EINVAL);
    cr_assert(strstr(err, "too few") != NULL, "%s", err);
    size_t n = envelope(body, 0, "{}");
    cr_assert_eq(connect_parse_request(body, n + 1, 1024, &v, err), RB_EINVAL, "a byte after the envelope");
    cr_assert_eq(connect_parse_request(body, n - 1, 1024, &v, err), RB_EINVAL, "a message cut short");
    n = envelope(body, CONNECT_FLAG_COMPRESSED, "{}");
    cr_assert_eq(connect_parse_request(body, n, 1024, &v, err), RB_EINVAL);
    cr_assert(strstr(err, "compressed") != NULL, "%s", err);
    n = envelope(body, 0, "[1]");
    cr_assert_eq(connect_parse_request(body, n, 1024, &v, err), RB_EINVAL);
    n = envelope(body, 0, "{\"a\": ");
    cr_assert_eq(connect_parse_request(body, n, 1024, &v, err), RB_EINVAL);
    cr_assert(strstr(err, "column") != NULL, "%s", err);
    n = envelope(body, 0, "{\"a\":\"0123456789\"}");
    cr_assert_eq(connect_parse_request(body, n, 8, &v, err), RB_ETOOBIG);
    cr_assert_null(v);
}

Test(connect, writes_data_and_end_envelopes)
{
    rb_buf b;
    rb_buf_init(&b, 1024);
    json_t *m = json_pack("{s:{s:{s:i}}}", "event", "start", "pid", 42);
    cr_assert_eq(connect_envelope(&b, 0, m), RB_OK);
    json_decref(m);
    static const char want[] = "\0\0\0\0\x1e{\"event\":{\"start\":{\"pid\":42}}}";
    cr_assert_eq(b.len, sizeof(want) - 1);
    cr_assert(memcmp(b.data, want, b.len) == 0);
    rb_buf_reset(&b);
    cr_assert_eq(connect_end_stream(&b, NULL, NULL), RB_OK);
    cr_assert_eq(b.len, 7);
    cr_assert(memcmp(b.data, "\x02\0\0\0\x02{}", 7) == 0);
    rb_buf_reset(&b);
    cr_assert_eq(connect_end_stream(&b, "not_found", "no process 7"), RB_OK);
    cr_assert(strstr(b.data + 5, "\"code\":\"not_found\"") != NULL);
    rb_buf_dispose(&b);
    rb_buf small;
    rb_buf_init(&small, 6);
    cr_assert_eq(connect_end_stream(&small, NULL, NULL), RB_ETOOBIG);
    cr_assert_eq(small.len, 0);
    rb_buf_dispose(&small);
}

Test(connect, error_codes_and_statuses)
{
    cr_assert_str_eq(connect_code_of(RB_ENOTFOUND), "not_found");
    cr_assert_str_eq(connect_code_of(RB_EINVAL), "invalid_argument");
    cr_assert_eq(connect_http_status("not_found"), 404);
    cr_assert_eq(connect_http_status("unimplemented"), 501);
    cr_assert_eq(connect_http_status("resource_exhausted"), 429);
    cr_assert_eq(connect_http_status("unauthenticated"), 401);
    cr_assert_eq(connect_http_status("no such code"), 500);
}

static void check_seed(void *data, const char *seed, const char *path, const char *buf, size_t len)
{
    (void)data;
    (void)path;
    replay_seed = seed;
    LLVMFuzzerTestOneInput((const uint8_t *)buf, len);
}

Test(connect, fuzz_corpus_replay)
{
    cr_assert_geq(corpus_each("connect", check_seed, NULL), 10);
}
