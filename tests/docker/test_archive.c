/*
 * test_archive.c: docker/archive.c and the raw request path of docker/docker.c against the real
 * engine: a tar uploaded with PUT /archive comes back byte for byte from GET /archive, missing
 * paths are RB_ENOTFOUND, answers over the caller's limit are RB_ETOOBIG, container wait and
 * logs (demultiplexed) of a finished container, and volume create/remove.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "support_docker.h"

static void setup(void)
{
    sup_require_docker();
}

static void teardown(void)
{
    sup_cleanup();
}

TestSuite(archive, .init = setup, .fini = teardown, .timeout = 300);

typedef struct raw_result {
    int calls;
    rb_err err;
    char msg[RB_ERR_LEN];
    int status;
    rb_buf body;
} raw_result;

static void raw_cb(void *data, rb_err err, const char *errmsg, int status, const char *body, size_t len)
{
    raw_result *r = data;
    r->calls++;
    r->err = err;
    r->status = status;
    snprintf(r->msg, sizeof(r->msg), "%s", errmsg != NULL ? errmsg : "");
    rb_buf_init(&r->body, 1 << 24);
    if (err == RB_OK) {
        cr_assert_not_null(body);
        rb_buf_append(&r->body, body, len);
    }
}

/* A one-file ustar archive, built by hand so this test does not depend on base/tar.c. */
static size_t make_tar(char *out, size_t cap, const char *name, const char *content)
{
    size_t n = strlen(content);
    size_t total = 512 + ((n + 511) / 512) * 512 + 1024;
    cr_assert_leq(total, cap);
    memset(out, 0, total);
    snprintf(out, 100, "%s", name);
    snprintf(out + 100, 8, "%07o", 0644);
    snprintf(out + 108, 8, "%07o", 1000);
    snprintf(out + 116, 8, "%07o", 1000);
    snprintf(out + 124, 12, "%011o", (unsigned)n); /* n <= cap: small */
    snprintf(out + 136, 12, "%011o", 1700000000);
    out[156] = '0';
    memcpy(out + 257, "ustar\0" "00", 8);
    memset(out + 148, ' ', 8);
    unsigned sum = 0;
    for (int i = 0; i < 512; i++)
        sum += (unsigned char)out[i];
    snprintf(out + 148, 8, "%06o", sum);
    memcpy(out + 512, content, n);
    return total;
}

static int memfind(const char *hay, size_t n, const char *needle)
{
    size_t k = strlen(needle);
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(hay + i, needle, k) == 0)
            return 1;
    return 0;
}

Test(archive, put_then_get_round_trip)
{
    uv_loop_t loop;
    docker *d;
    char err[RB_ERR_LEN], id[65], name[64], tar[4096];
    sup_open(&loop, &d);
    const char *argv[] = {"sleep", "600", NULL};
    sup_container_create(&loop, d, argv, NULL, id, name, sizeof(name));
    sup_container_start(&loop, d, id);

    size_t n = make_tar(tar, sizeof(tar), "hello.txt", "hello through the archive API\n");
    raw_result put = {0};
    cr_assert_eq(docker_archive_put(d, id, "/tmp", tar, n, raw_cb, &put, err), RB_OK, "%s", err);
    cr_assert_eq(put.calls, 0, "callback ran synchronously");
    sup_run_until(&loop, &put.calls);
    cr_assert_eq(put.err, RB_OK, "%s", put.msg);
    cr_assert_eq(put.status, 200);

    raw_result get = {0};
    cr_assert_eq(docker_archive_get(d, id, "/tmp/hello.txt", 1 << 20, raw_cb, &get, err), RB_OK, "%s", err);
    sup_run_until(&loop, &get.calls);
    cr_assert_eq(get.err, RB_OK, "%s", get.msg);
    cr_assert_geq(get.body.len, 1024);
    cr_assert_eq(get.body.len % 512, 0);
    cr_assert(memfind(get.body.data, get.body.len, "hello through the archive API\n"));
    cr_assert(memfind(get.body.data, get.body.len, "hello.txt"));

    raw_result small = {0};
    cr_assert_eq(docker_archive_get(d, id, "/tmp/hello.txt", 100, raw_cb, &small, err), RB_OK, "%s", err);
    sup_run_until(&loop, &small.calls);
    cr_assert_eq(small.err, RB_ETOOBIG, "%s: %s", rb_strerror(small.err), small.msg);

    raw_result missing = {0};
    cr_assert_eq(docker_archive_get(d, id, "/tmp/no such file", 1 << 20, raw_cb, &missing, err), RB_OK, "%s", err);
    sup_run_until(&loop, &missing.calls);
    cr_assert_eq(missing.err, RB_ENOTFOUND, "%s: %s", rb_strerror(missing.err), missing.msg);
    cr_assert_eq(missing.status, 404);

    raw_result nodir = {0};
    cr_assert_eq(docker_archive_put(d, id, "/no/such/dir", tar, n, raw_cb, &nodir, err), RB_OK, "%s", err);
    sup_run_until(&loop, &nodir.calls);
    cr_assert_eq(nodir.err, RB_ENOTFOUND, "%s: %s", rb_strerror(nodir.err), nodir.msg);

    cr_assert_eq(docker_archive_get(d, id, "relative", 100, raw_cb, &nodir, err), RB_EINVAL);
    cr_assert_eq(docker_archive_put(d, "bad/id", "/tmp", tar, n, raw_cb, &nodir, err), RB_EINVAL);
    cr_assert_eq(docker_archive_put(d, id, "/tmp", tar, 0, raw_cb, &nodir, err), RB_EINVAL);

    rb_buf_dispose(&put.body);
    rb_buf_dispose(&get.body);
    rb_buf_dispose(&small.body);
    rb_buf_dispose(&missing.body);
    rb_buf_dispose(&nodir.body);
    sup_container_remove(&loop, d, id);
    sup_close(&loop, d);
}

typedef struct demuxed {
    rb_buf out[3];
} demuxed;

static void on_frame(void *data, int stream, const char *buf, size_t len)
{
    demuxed *m = data;
    rb_buf_append(&m->out[stream], buf, len);
}

Test(archive, wait_and_logs_of_a_finished_container)
{
    uv_loop_t loop;
    docker *d;
    char err[RB_ERR_LEN], id[65], name[64];
    sup_open(&loop, &d);
    const char *argv[] = {"sh", "-c", "echo to-stdout; echo to-stderr >&2; exit 3", NULL};
    sup_container_create(&loop, d, argv, NULL, id, name, sizeof(name));
    sup_container_start(&loop, d, id);
    sup_result w = {0};
    cr_assert_eq(docker_container_wait(d, id, 60000, sup_cb, &w, err), RB_OK, "%s", err);
    sup_run_until(&loop, &w.calls);
    cr_assert_eq(w.err, RB_OK, "%s", w.msg);
    cr_assert_eq(json_integer_value(json_object_get(w.body, "StatusCode")), 3);
    sup_result_dispose(&w);

    raw_result logs = {0};
    cr_assert_eq(docker_container_logs(d, id, 1 << 20, raw_cb, &logs, err), RB_OK, "%s", err);
    sup_run_until(&loop, &logs.calls);
    cr_assert_eq(logs.err, RB_OK, "%s", logs.msg);
    demuxed m;
    for (int i = 0; i < 3; i++)
        rb_buf_init(&m.out[i], 1 << 20);
    docker_demux dm;
    docker_demux_init(&dm);
    cr_assert_eq(docker_demux_feed(&dm, logs.body.data, logs.body.len, on_frame, &m), RB_OK);
    cr_assert_eq(m.out[1].len, strlen("to-stdout\n"));
    cr_assert(memcmp(m.out[1].data, "to-stdout\n", m.out[1].len) == 0);
    cr_assert_eq(m.out[2].len, strlen("to-stderr\n"));
    for (int i = 0; i < 3; i++)
        rb_buf_dispose(&m.out[i]);
    rb_buf_dispose(&logs.body);
    sup_container_remove(&loop, d, id);
    sup_close(&loop, d);
}

Test(archive, volume_create_and_remove)
{
    uv_loop_t loop;
    docker *d;
    char err[RB_ERR_LEN], name[64];
    sup_open(&loop, &d);
    rb_random_id("runbox-test-", name, sizeof(name));
    json_t *cfg = json_pack("{s:s, s:{s:s}}", "Name", name, "Labels", "runbox.test", "1");
    sup_result c = {0};
    cr_assert_eq(docker_volume_create(d, cfg, sup_cb, &c, err), RB_OK, "%s", err);
    json_decref(cfg);
    sup_run_until(&loop, &c.calls);
    cr_assert_eq(c.err, RB_OK, "%s", c.msg);
    cr_assert_str_eq(json_string_value(json_object_get(c.body, "Name")), name);
    sup_result_dispose(&c);

    sup_result r = {0};
    cr_assert_eq(docker_volume_remove(d, name, sup_cb, &r, err), RB_OK, "%s", err);
    sup_run_until(&loop, &r.calls);
    cr_assert_eq(r.err, RB_OK, "%s", r.msg);
    sup_result r2 = {0};
    cr_assert_eq(docker_volume_remove(d, name, sup_cb, &r2, err), RB_OK, "%s", err);
    sup_run_until(&loop, &r2.calls);
    cr_assert_eq(r2.err, RB_ENOTFOUND, "%s: %s", rb_strerror(r2.err), r2.msg);
    sup_result_dispose(&r);
    sup_result_dispose(&r2);
    sup_close(&loop, d);
}

Test(archive, exec_output_and_exit_code)
{
    uv_loop_t loop;
    docker *d;
    char err[RB_ERR_LEN], id[65], name[64];
    sup_open(&loop, &d);
    const char *argv[] = {"sleep", "600", NULL};
    sup_container_create(&loop, d, argv, NULL, id, name, sizeof(name));
    sup_container_start(&loop, d, id);

    json_t *cfg = json_pack("{s:[s,s,s], s:b, s:b}", "Cmd", "sh", "-c", "echo exec-out; echo exec-err >&2; exit 4",
                            "AttachStdout", 1, "AttachStderr", 1);
    sup_result c = {0};
    cr_assert_eq(docker_exec_create(d, id, cfg, sup_cb, &c, err), RB_OK, "%s", err);
    json_decref(cfg);
    sup_run_until(&loop, &c.calls);
    cr_assert_eq(c.err, RB_OK, "%s", c.msg);
    char exec_id[80];
    snprintf(exec_id, sizeof(exec_id), "%s", json_string_value(json_object_get(c.body, "Id")));
    sup_result_dispose(&c);

    raw_result out = {0};
    cr_assert_eq(docker_exec_start(d, exec_id, 1 << 20, 60000, raw_cb, &out, err), RB_OK, "%s", err);
    sup_run_until(&loop, &out.calls);
    cr_assert_eq(out.err, RB_OK, "%s", out.msg);
    demuxed m;
    for (int i = 0; i < 3; i++)
        rb_buf_init(&m.out[i], 1 << 20);
    docker_demux dm;
    docker_demux_init(&dm);
    cr_assert_eq(docker_demux_feed(&dm, out.body.data, out.body.len, on_frame, &m), RB_OK);
    cr_assert_eq(m.out[1].len, strlen("exec-out\n"));
    cr_assert(memcmp(m.out[1].data, "exec-out\n", m.out[1].len) == 0);
    cr_assert_eq(m.out[2].len, strlen("exec-err\n"));
    for (int i = 0; i < 3; i++)
        rb_buf_dispose(&m.out[i]);
    rb_buf_dispose(&out.body);

    sup_result in = {0};
    cr_assert_eq(docker_exec_inspect(d, exec_id, sup_cb, &in, err), RB_OK, "%s", err);
    sup_run_until(&loop, &in.calls);
    cr_assert_eq(in.err, RB_OK, "%s", in.msg);
    cr_assert_eq(json_integer_value(json_object_get(in.body, "ExitCode")), 4);
    sup_result_dispose(&in);
    sup_container_remove(&loop, d, id);
    sup_close(&loop, d);
}
