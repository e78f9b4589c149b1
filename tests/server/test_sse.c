/*
 * test_sse.c: GET /execute/{id}/events over real HTTP: the first comment line, event order
 * (status, output..., done) with id counters, the stream ending after done, replay of a
 * finished execution, 404 before streaming, and a client vanishing mid-stream (the watch is
 * stopped and nothing crashes; run under ASan too).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "tests/server/harness.h"

static harness h;

static void setup(void)
{
    harness_start(&h, 0);
}

static void teardown(void)
{
    harness_stop(&h);
}

TestSuite(sse, .init = setup, .fini = teardown, .timeout = 60);

static char *start_execution(const char *code)
{
    http_resp r;
    cr_assert_eq(http_json(h.port, "POST", "/sessions", "{}", &r), 0);
    char *sid = xstrdup(json_string_value(json_object_get(r.json, "session_id")));
    http_resp_dispose(&r);
    char body[256];
    snprintf(body, sizeof(body), "{\"session_id\":\"%s\",\"code\":\"%s\"}", sid, code);
    cr_assert_eq(http_json(h.port, "POST", "/execute", body, &r), 0);
    cr_assert_eq(r.status, 202);
    char *eid = xstrdup(json_string_value(json_object_get(r.json, "request_id")));
    http_resp_dispose(&r);
    free(sid);
    return eid;
}

/* Collects "event:" names in order into names (space separated) and checks ids count up. */
static void parse_events(const char *body, char *names, size_t len, json_t **done)
{
    names[0] = '\0';
    *done = NULL;
    long expect_id = 1;
    const char *p = body;
    cr_assert(strncmp(p, ": ", 2) == 0, "the stream starts with a comment: %.40s", p);
    while ((p = strstr(p, "id: ")) != NULL) {
        long id = strtol(p + 4, NULL, 10);
        cr_assert_eq(id, expect_id, "event ids count up");
        expect_id++;
        const char *ev = strstr(p, "\nevent: ");
        cr_assert_not_null(ev);
        ev += 8;
        const char *eol = strchr(ev, '\n');
        size_t used = strlen(names);
        snprintf(names + used, len - used, "%s%.*s", used ? " " : "", (int)(eol - ev), ev);
        const char *data = strstr(eol, "data: ");
        cr_assert_not_null(data);
        data += 6;
        const char *dend = strstr(data, "\n\n");
        cr_assert_not_null(dend, "each event ends with a blank line");
        json_t *v = json_loadb(data, (size_t)(dend - data), 0, NULL);
        cr_assert_not_null(v, "event data is JSON");
        if ((size_t)(eol - ev) == 4 && strncmp(ev, "done", 4) == 0)
            *done = v;
        else
            json_decref(v);
        p = dend;
    }
}

Test(sse, events_in_order_and_stream_ends)
{
    char *eid = start_execution("print(1)");
    char path[128];
    snprintf(path, sizeof(path), "/execute/%s/events", eid);
    http_resp r;
    /* http_do reads to EOF: returning at all means the stream ended after done. */
    cr_assert_eq(http_json(h.port, "GET", path, NULL, &r), 0);
    cr_assert_eq(r.status, 200);
    cr_assert_str_eq(http_header(&r, "content-type"), "text/event-stream");
    char names[512];
    json_t *done;
    parse_events(r.body, names, sizeof(names), &done);
    cr_assert(strncmp(names, "status", 6) == 0, "%s", names);
    cr_assert(strstr(names, "output output output output done") != NULL, "%s", names);
    cr_assert(strcmp(names + strlen(names) - 4, "done") == 0, "done is last: %s", names);
    cr_assert_not_null(done);
    cr_assert_str_eq(json_string_value(json_object_get(done, "status")), "completed");
    cr_assert_str_eq(json_string_value(json_object_get(done, "stdout")), "hello\n");
    json_decref(done);
    http_resp_dispose(&r);

    /* Replay: a finished execution streams its past output, then done, then ends. */
    cr_assert_eq(http_json(h.port, "GET", path, NULL, &r), 0);
    parse_events(r.body, names, sizeof(names), &done);
    cr_assert_str_eq(names, "status output output output output done");
    json_decref(done);
    http_resp_dispose(&r);
    free(eid);
}

Test(sse, unknown_execution_is_json_404)
{
    http_resp r;
    cr_assert_eq(http_json(h.port, "GET", "/execute/e_0000/events", NULL, &r), 0);
    cr_assert_eq(r.status, 404);
    cr_assert_not_null(r.json);
    http_resp_dispose(&r);
}

Test(sse, cancel_ends_the_stream_with_done)
{
    char *eid = start_execution("FOREVER");
    char path[128];
    snprintf(path, sizeof(path), "/execute/%s/events", eid);
    int fd = http_connect(h.port);
    cr_assert_geq(fd, 0);
    char req[256];
    int n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", path);
    cr_assert_eq(write(fd, req, (size_t)n), n);
    /* wait for a tick, then cancel from another connection */
    char buf[65536];
    size_t got = 0;
    buf[0] = '\0';
    while (strstr(buf, "tick") == NULL) {
        ssize_t k = read(fd, buf + got, sizeof(buf) - 1 - got);
        cr_assert_gt(k, 0);
        got += (size_t)k;
        buf[got] = '\0';
    }
    http_resp r;
    snprintf(path, sizeof(path), "/execute/%s", eid);
    cr_assert_eq(http_json(h.port, "DELETE", path, NULL, &r), 0);
    cr_assert_eq(r.status, 200, "%s", r.body);
    http_resp_dispose(&r);
    ssize_t k;
    while (got < sizeof(buf) - 1 && (k = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0)
        got += (size_t)k;
    buf[got] = '\0';
    close(fd);
    cr_assert(strstr(buf, "event: done") != NULL);
    cr_assert(strstr(buf, "\"cancelled\"") != NULL);
    free(eid);
}

Test(sse, client_disconnect_stops_the_watch)
{
    char *eid = start_execution("FOREVER");
    char path[128];
    snprintf(path, sizeof(path), "/execute/%s/events", eid);
    for (int round = 0; round < 3; round++) {
        int fd = http_connect(h.port);
        cr_assert_geq(fd, 0);
        char req[256];
        int n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", path);
        cr_assert_eq(write(fd, req, (size_t)n), n);
        char buf[4096];
        ssize_t k = read(fd, buf, sizeof(buf) - 1);
        cr_assert_gt(k, 0);
        buf[k] = '\0';
        cr_assert(strstr(buf, "200") != NULL);
        close(fd); /* vanish mid-stream */
    }
    /* The fake keeps printing; the server notices failed writes and stops each watch. */
    int live = -1;
    for (int i = 0; i < 3000 && (live = fake_core_live_watches(h.core)) != 0; i++)
        usleep(10000);
    cr_assert_eq(live, 0, "watches still live after the clients left");
    http_resp r;
    cr_assert_eq(http_json(h.port, "GET", "/health", NULL, &r), 0);
    cr_assert_eq(r.status, 200);
    http_resp_dispose(&r);
    free(eid);
}

Test(sse, server_stop_ends_open_streams)
{
    char *eid = start_execution("FOREVER");
    char path[128];
    snprintf(path, sizeof(path), "/execute/%s/events", eid);
    int fd = http_connect(h.port);
    cr_assert_geq(fd, 0);
    char req[256];
    int n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", path);
    cr_assert_eq(write(fd, req, (size_t)n), n);
    char buf[65536];
    ssize_t k = read(fd, buf, sizeof(buf) - 1);
    cr_assert_gt(k, 0);
    /* Stop while the stream is open: teardown's harness_stop must not hang or crash, and the
     * client sees the stream end. */
    harness_request_stop(&h);
    size_t got = 0;
    while (got < sizeof(buf) - 1 && (k = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0)
        got += (size_t)k;
    buf[got] = '\0';
    close(fd);
    cr_assert(strstr(buf, "shutting down") != NULL || got == 0 || strstr(buf, "0\r\n\r\n") != NULL);
    free(eid);
}
