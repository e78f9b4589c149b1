/*
 * test_multipart.c: server/rest/multipart.c (boundaries, parts, fields, malformed bodies, limits,
 * a replay of the libFuzzer seed corpus in tests/fuzz/corpus/multipart/) and the file routes
 * of server/rest/rest.c over real HTTP against the fake file calls (support_fake_files.c): raw and
 * multipart uploads, list, download headers, delete, and their errors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "server/rest/multipart.h"
#include "tests/server/harness.h"
#include "tests/server/support_fake_files.h"
#include "tests/common/corpus.h"

typedef struct parts {
    int n;
    char names[8][64], filenames[8][64];
    int has_filename[8];
    char data[8][256];
    size_t lens[8];
} parts;

static int collect(void *data, const multipart_part *p)
{
    parts *ps = data;
    if (ps->n >= 8)
        return 1;
    snprintf(ps->names[ps->n], 64, "%.*s", (int)p->name_len, p->name);
    ps->has_filename[ps->n] = p->filename != NULL;
    if (p->filename)
        snprintf(ps->filenames[ps->n], 64, "%.*s", (int)p->filename_len, p->filename);
    memcpy(ps->data[ps->n], p->data, p->len < 256 ? p->len : 256);
    ps->lens[ps->n] = p->len;
    ps->n++;
    return 0;
}

static int count_parts(void *data, const multipart_part *p)
{
    (void)p;
    (*(int *)data)++;
    return 0;
}

Test(multipart, boundary_from_content_type)
{
    char b[MULTIPART_BOUNDARY_MAX + 1], err[RB_ERR_LEN];
    const char *ct = "multipart/form-data; boundary=----WebKitFormBoundary7MA4YWxkTrZu0gW";
    cr_assert_eq(multipart_boundary(ct, strlen(ct), b, err), RB_OK, "%s", err);
    cr_assert_str_eq(b, "----WebKitFormBoundary7MA4YWxkTrZu0gW");
    ct = "Multipart/Form-Data;charset=utf-8; BOUNDARY=\"quoted value\"";
    cr_assert_eq(multipart_boundary(ct, strlen(ct), b, err), RB_OK, "%s", err);
    cr_assert_str_eq(b, "quoted value");
    ct = "application/json";
    cr_assert_eq(multipart_boundary(ct, strlen(ct), b, err), RB_EMEDIA);
    ct = "multipart/form-data";
    cr_assert_eq(multipart_boundary(ct, strlen(ct), b, err), RB_EINVAL);
    ct = "multipart/form-data; boundary=";
    cr_assert_eq(multipart_boundary(ct, strlen(ct), b, err), RB_EINVAL);
    ct = "multipart/form-data; boundary=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    cr_assert_eq(multipart_boundary(ct, strlen(ct), b, err), RB_EINVAL);
    ct = "multipart/form-data; boundary=a<b";
    cr_assert_eq(multipart_boundary(ct, strlen(ct), b, err), RB_EINVAL);
}

Test(multipart, parts_fields_and_binary_data)
{
    static const char body[] = "preamble\r\n"
                               "--XX\r\n"
                               "Content-Disposition: form-data; name=\"dir\"\r\n\r\n"
                               "up\r\n"
                               "--XX\r\n"
                               "content-disposition: form-data; name=file; filename=\"a b.bin\"\r\n"
                               "Content-Type: application/octet-stream\r\n\r\n"
                               "\0\r\n--X\r\n"
                               "--XX\r\n"
                               "Content-Disposition: form-data; name=\"empty\"; filename=\"e\"\r\n\r\n"
                               "\r\n"
                               "--XX--\r\nepilogue";
    parts ps = {0};
    char err[RB_ERR_LEN];
    cr_assert_eq(multipart_parse(body, sizeof(body) - 1, "XX", collect, &ps, err), RB_OK, "%s", err);
    cr_assert_eq(ps.n, 3);
    cr_assert_str_eq(ps.names[0], "dir");
    cr_assert(!ps.has_filename[0]);
    cr_assert_eq(ps.lens[0], 2);
    cr_assert_str_eq(ps.names[1], "file");
    cr_assert_str_eq(ps.filenames[1], "a b.bin");
    cr_assert_eq(ps.lens[1], 6);
    cr_assert(memcmp(ps.data[1], "\0\r\n--X", 6) == 0);
    cr_assert_eq(ps.lens[2], 0);
}

Test(multipart, malformed_bodies_are_errors)
{
    char err[RB_ERR_LEN];
    parts ps = {0};
    const char *cases[] = {
        "no boundary at all",
        "--XX\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nnever closed",
        "--XX\r\nContent-Type: text/plain\r\n\r\nno disposition\r\n--XX--",
        "--XX\r\nContent-Disposition: attachment; name=\"a\"\r\n\r\nx\r\n--XX--",
        "--XX\r\nContent-Disposition: form-data; filename=\"a\"\r\n\r\nno name\r\n--XX--",
        "--XX\r\nContent-Disposition: form-data; name=\"a\r\n\r\nx\r\n--XX--",
        "--XXgarbage\r\n",
        "--XX\r\nno colon here\r\n\r\nx\r\n--XX--",
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        cr_assert_eq(multipart_parse(cases[i], strlen(cases[i]), "XX", collect, &ps, err), RB_EINVAL, "case %zu", i);

    /* headers that never end within the limit */
    rb_buf b;
    rb_buf_init(&b, 1 << 20);
    static const char head[] = "--XX\r\nContent-Disposition: form-data; name=\"a\"\r\n", pad[] = "X-Pad: aaaaaaaaaaaa\r\n",
                      tail[] = "\r\nx\r\n--XX--";
    rb_buf_append(&b, head, sizeof(head) - 1);
    for (int i = 0; i < 1000; i++)
        rb_buf_append(&b, pad, sizeof(pad) - 1);
    rb_buf_append(&b, tail, sizeof(tail) - 1);
    cr_assert_eq(multipart_parse(b.data, b.len, "XX", collect, &ps, err), RB_EINVAL);
    cr_assert(strstr(err, "headers") != NULL, "%s", err);
    rb_buf_reset(&b);
    /* too many parts */
    static const char part[] = "--XX\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nx\r\n";
    for (int i = 0; i < MULTIPART_MAX_PARTS; i++)
        rb_buf_append(&b, part, sizeof(part) - 1);
    rb_buf_append(&b, "--XX--", 6);
    int count = 0;
    cr_assert_eq(multipart_parse(b.data, b.len, "XX", count_parts, &count, err), RB_OK, "%s", err);
    cr_assert_eq(count, MULTIPART_MAX_PARTS);
    b.len -= 6;
    rb_buf_append(&b, part, sizeof(part) - 1);
    rb_buf_append(&b, "--XX--", 6);
    count = 0;
    cr_assert_eq(multipart_parse(b.data, b.len, "XX", count_parts, &count, err), RB_EINVAL);
    cr_assert(strstr(err, "parts") != NULL, "%s", err);
    /* a callback may stop early */
    parts many = {0};
    cr_assert_eq(multipart_parse(b.data, b.len, "XX", collect, &many, err), RB_OK);
    cr_assert_eq(many.n, 8);
    rb_buf_dispose(&b);
}

/* The first line of a seed is the Content-Type, the rest the body (as in fuzz_multipart). */
static void check_multipart_seed(void *data, const char *seed, const char *path, const char *in, size_t len)
{
    int *ok = data;
    (void)path;
    const char *nl = memchr(in, '\n', len);
    if (nl == NULL) /* the fuzzer ignores such inputs too */
        return;
    char boundary[MULTIPART_BOUNDARY_MAX + 1], err[RB_ERR_LEN];
    if (multipart_boundary(in, (size_t)(nl - in), boundary, err) == RB_OK) {
        parts ps = {0};
        rb_err e = multipart_parse(nl + 1, len - (size_t)(nl + 1 - in), boundary, collect, &ps, err);
        cr_assert(e == RB_OK || e == RB_EINVAL, "%s: %s", seed, rb_strerror(e));
        *ok += e == RB_OK;
    }
}

Test(multipart, fuzz_corpus_replay)
{
    int ok = 0;
    cr_assert_geq(corpus_each("multipart", check_multipart_seed, &ok), 4);
    cr_assert_geq(ok, 2);
}

/* ---- the REST routes over HTTP ------------------------------------------------------------ */

static harness h;

static void http_setup(void)
{
    harness_start(&h, 0);
}

static void http_teardown(void)
{
    harness_stop(&h);
}

TestSuite(files_http, .init = http_setup, .fini = http_teardown, .timeout = 60);

Test(files_http, raw_upload_list_download_delete)
{
    http_resp r;
    cr_assert_eq(http_do(h.port, "POST", "/sessions/s_1/files?path=data/a%20b.csv", "Content-Type: text/csv\r\n",
                         "x,y\n1,2\n", 8, &r),
                 0);
    cr_assert_eq(r.status, 201, "%s", r.body);
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(r.json, "files"), 0), "path")),
                     "data/a b.csv");
    http_resp_dispose(&r);
    size_t len;
    const char *got = fake_files_get("s_1", "data/a b.csv", &len);
    cr_assert(got != NULL && len == 8 && memcmp(got, "x,y\n1,2\n", 8) == 0);

    cr_assert_eq(http_json(h.port, "GET", "/sessions/s_1/files", NULL, &r), 0);
    cr_assert_eq(r.status, 200, "%s", r.body);
    cr_assert_eq(json_array_size(json_object_get(r.json, "files")), 1);
    http_resp_dispose(&r);

    cr_assert_eq(http_json(h.port, "GET", "/sessions/s_1/files/download?path=data/a%20b.csv", NULL, &r), 0);
    cr_assert_eq(r.status, 200, "%s", r.body);
    cr_assert_eq(r.body_len, 8);
    cr_assert(memcmp(r.body, "x,y\n1,2\n", 8) == 0);
    cr_assert_str_eq(http_header(&r, "content-type"), "text/csv; charset=utf-8");
    const char *cd = http_header(&r, "content-disposition");
    cr_assert(cd != NULL && strstr(cd, "attachment; filename=\"a b.csv\"") != NULL, "%s", cd);
    cr_assert(strstr(cd, "filename*=UTF-8''a%20b.csv") != NULL, "%s", cd);
    cr_assert_str_eq(http_header(&r, "x-content-type-options"), "nosniff");
    http_resp_dispose(&r);

    cr_assert_eq(http_json(h.port, "DELETE", "/sessions/s_1/files?path=data/a%20b.csv", NULL, &r), 0);
    cr_assert_eq(r.status, 200, "%s", r.body);
    cr_assert(json_is_true(json_object_get(r.json, "deleted")));
    http_resp_dispose(&r);
    cr_assert_null(fake_files_get("s_1", "data/a b.csv", &len));
}

Test(files_http, multipart_upload_with_dir_and_several_files)
{
    static const char body[] = "--b0undary\r\n"
                               "Content-Disposition: form-data; name=\"dir\"\r\n\r\n"
                               "in\r\n"
                               "--b0undary\r\n"
                               "Content-Disposition: form-data; name=\"f\"; filename=\"C:\\\\Users\\\\me\\\\one.txt\"\r\n\r\n"
                               "first\r\n"
                               "--b0undary\r\n"
                               "Content-Disposition: form-data; name=\"f\"; filename=\"two.bin\"\r\n\r\n"
                               "\x00second\r\n"
                               "--b0undary--\r\n";
    http_resp r;
    cr_assert_eq(http_do(h.port, "POST", "/sessions/s_2/files",
                         "Content-Type: multipart/form-data; boundary=b0undary\r\n", body, sizeof(body) - 1, &r),
                 0);
    cr_assert_eq(r.status, 201, "%s", r.body);
    cr_assert_eq(json_array_size(json_object_get(r.json, "files")), 2);
    http_resp_dispose(&r);
    size_t len;
    const char *got = fake_files_get("s_2", "in/one.txt", &len);
    cr_assert(got != NULL && len == 5 && memcmp(got, "first", 5) == 0);
    got = fake_files_get("s_2", "in/two.bin", &len);
    cr_assert(got != NULL && len == 7 && memcmp(got, "\0second", 7) == 0);
}

/* A field name ending in a backslash, as Python's and browsers' encoders write it (no escapes):
 * it used to read as an unterminated quoted value (400). */
Test(files_http, a_backslash_in_a_quoted_value_escapes_nothing)
{
    static const char body[] = "--b0undary\r\n"
                               "Content-Disposition: form-data; name=\"odd\\\"\r\n\r\n"
                               "ignored\r\n"
                               "--b0undary\r\n"
                               "Content-Disposition: form-data; name=\"file\"; filename=\"b\\\"\r\n\r\n"
                               "x\r\n"
                               "--b0undary\r\n"
                               "Content-Disposition: form-data; name=\"file\"; filename=\"three.txt\"\r\n\r\n"
                               "3\r\n"
                               "--b0undary--\r\n";
    http_resp r;
    /* the second part's file name is "b\": a client-side folder and no name, which is refused */
    cr_assert_eq(http_do(h.port, "POST", "/sessions/s_2/files",
                         "Content-Type: multipart/form-data; boundary=b0undary\r\n", body, sizeof(body) - 1, &r),
                 0);
    cr_assert_eq(r.status, 400, "%s", r.body);
    cr_assert(strstr(r.body, "not a usable file name") != NULL, "%s", r.body);
    http_resp_dispose(&r);
    static const char ok[] = "--b0undary\r\n"
                             "Content-Disposition: form-data; name=\"odd\\\"\r\n\r\n"
                             "ignored\r\n"
                             "--b0undary\r\n"
                             "Content-Disposition: form-data; name=\"file\"; filename=\"three.txt\"\r\n\r\n"
                             "3\r\n"
                             "--b0undary--\r\n";
    cr_assert_eq(http_do(h.port, "POST", "/sessions/s_2/files",
                         "Content-Type: multipart/form-data; boundary=b0undary\r\n", ok, sizeof(ok) - 1, &r),
                 0);
    cr_assert_eq(r.status, 201, "%s", r.body);
    http_resp_dispose(&r);
    size_t len;
    const char *got = fake_files_get("s_2", "three.txt", &len);
    cr_assert(got != NULL && len == 1 && got[0] == '3');
}

static void expect_error(const http_resp *r, int status, const char *code)
{
    cr_assert_eq(r->status, status, "status %d, want %d: %s", r->status, status, r->body);
    cr_assert_not_null(r->json, "error body is not JSON: %s", r->body);
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(r->json, "error"), "code")), code);
}

Test(files_http, errors)
{
    http_resp r;
    /* raw upload without a path */
    cr_assert_eq(http_do(h.port, "POST", "/sessions/s_3/files", "Content-Type: text/plain\r\n", "x", 1, &r), 0);
    expect_error(&r, 400, "invalid_request");
    http_resp_dispose(&r);
    /* a multipart body that does not parse */
    cr_assert_eq(http_do(h.port, "POST", "/sessions/s_3/files", "Content-Type: multipart/form-data; boundary=zz\r\n",
                         "garbage", 7, &r),
                 0);
    expect_error(&r, 400, "invalid_request");
    http_resp_dispose(&r);
    /* multipart without any file part */
    static const char nofile[] = "--zz\r\nContent-Disposition: form-data; name=\"dir\"\r\n\r\nx\r\n--zz--";
    cr_assert_eq(http_do(h.port, "POST", "/sessions/s_3/files", "Content-Type: multipart/form-data; boundary=zz\r\n",
                         nofile, sizeof(nofile) - 1, &r),
                 0);
    expect_error(&r, 400, "invalid_request");
    http_resp_dispose(&r);
    /* a file name that is a traversal */
    static const char dots[] =
        "--zz\r\nContent-Disposition: form-data; name=\"f\"; filename=\"..\"\r\n\r\nx\r\n--zz--";
    cr_assert_eq(http_do(h.port, "POST", "/sessions/s_3/files", "Content-Type: multipart/form-data; boundary=zz\r\n",
                         dots, sizeof(dots) - 1, &r),
                 0);
    expect_error(&r, 400, "invalid_request");
    http_resp_dispose(&r);
    /* core's refusals map to their statuses */
    cr_assert_eq(http_do(h.port, "POST", "/sessions/s_3/files?path=../x", "Content-Type: text/plain\r\n", "x", 1, &r),
                 0);
    expect_error(&r, 403, "forbidden");
    http_resp_dispose(&r);
    cr_assert_eq(http_json(h.port, "GET", "/sessions/s_gone/files", NULL, &r), 0);
    expect_error(&r, 404, "not_found");
    http_resp_dispose(&r);
    cr_assert_eq(http_json(h.port, "GET", "/sessions/s_3/files/download", NULL, &r), 0);
    expect_error(&r, 400, "invalid_request");
    http_resp_dispose(&r);
    cr_assert_eq(http_json(h.port, "DELETE", "/sessions/s_3/files", NULL, &r), 0);
    expect_error(&r, 400, "invalid_request");
    http_resp_dispose(&r);
    cr_assert_eq(http_json(h.port, "PATCH", "/sessions/s_3/files", NULL, &r), 0);
    expect_error(&r, 405, "method_not_allowed");
    http_resp_dispose(&r);
}

Test(files_http, upload_over_the_limit_is_413)
{
    /* the harness's max-upload is the default (64 MiB): h2o refuses a larger body itself */
    size_t n = h.cfg.max_upload + 1;
    char *big = xcalloc(1, n);
    http_resp r;
    int rc = http_do(h.port, "POST", "/sessions/s_4/files?path=big.bin", "Content-Type: application/octet-stream\r\n",
                     big, n, &r);
    free(big);
    if (rc == 0) {
        cr_assert_eq(r.status, 413, "%s", r.body);
        http_resp_dispose(&r);
    } /* else: the server closed the connection while we were still sending, also a refusal */
    cr_assert_eq(fake_files_count() >= 0, 1);
    cr_assert_null(fake_files_get("s_4", "big.bin", &n));
}
