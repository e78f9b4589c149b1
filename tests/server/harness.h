/*
 * harness.h: what the server/ tests share: a runboxd HTTP server on port 0 over the fake core
 * (support_fake_core.c), its loop in a thread, and a tiny blocking HTTP/1.1 client.
 */
#ifndef RB_TEST_SERVER_HARNESS_H
#define RB_TEST_SERVER_HARNESS_H

#include <jansson.h>
#include <pthread.h>
#include <semaphore.h>
#include <uv.h>

#include "core/settings.h"
#include "core/core.h"
#include "server/http.h"

typedef struct harness {
    pthread_t thread;
    uv_loop_t loop;
    uv_async_t stop;
    sem_t ready, done;
    server_settings cfg;     /* the server's settings (defaults, listen 127.0.0.1:0) */
    core_settings core_cfg;  /* what the fake core reads: max_sessions = 3 */
    rb_core *core;
    rb_server *server;
    int port;
    int stop_sent;
    int close_rc; /* uv_loop_close result after the loop ended: 0 = no handle left behind */
} harness;

/** Starts the server (cfg defaults, listen 127.0.0.1:0, max_body as given, 0 = default). */
void harness_start(harness *h, size_t max_body);
/** Asks the loop thread to stop the server and the core (once). */
void harness_request_stop(harness *h);
/** Stops the server and the core and waits for the loop to end. */
void harness_stop(harness *h);

int fake_core_live_watches(rb_core *c);
int fake_core_cancelled_ops(rb_core *c);

typedef struct http_resp {
    int status;
    char *head; /* status line and headers, NUL-terminated */
    char *body; /* de-chunked, NUL-terminated */
    size_t body_len;
    json_t *json; /* body parsed, or NULL */
} http_resp;

/** Sends one request (Connection: close) and reads the whole answer. extra_headers is a
 * block of "Name: value\r\n" lines or NULL. Returns 0 or -1 on a socket error. */
int http_do(int port, const char *method, const char *path, const char *extra_headers, const char *body,
            size_t body_len, http_resp *out);
/** Same with a JSON body (Content-Type: application/json) or no body (NULL). */
int http_json(int port, const char *method, const char *path, const char *body, http_resp *out);
/** Value of a response header (case-insensitive name) in a static buffer, or NULL. */
const char *http_header(const http_resp *r, const char *name);
void http_resp_dispose(http_resp *r);
/** Opens a blocking TCP connection to 127.0.0.1:port. */
int http_connect(int port);

#endif
