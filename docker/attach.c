/*
 * attach.c: a container's attach stream (stdin in, multiplexed stdout/stderr out) and an exec's
 * start (its output while it runs, docker_exec_attach) as a raw HTTP/1.1 Upgrade over a
 * uv_pipe_t to the engine's socket, or a uv_tcp_t to a tcp:// engine, with TLS (OpenSSL on
 * memory BIOs: the socket's bytes go through the loop, OpenSSL only transforms them) when the
 * client has TLS files; plus the frame demultiplexer.
 * libcurl is not used here because libcurl 7.88 cannot write to an upgraded connection.
 *
 * Lifetime: the handle is freed only once the uv_close callbacks of its pipe and its deadline
 * timer have run, so docker_attach_close may be called at any point (while connecting, from
 * inside on_data, twice); after it, or after on_open(error)/on_close, no callback runs. It does
 * not reconnect: callers do. Until the engine has answered the upgrade a deadline runs (the
 * client's attach_ms); an open stream has none, since it lives as long as its container.
 * Writes use write(2) on a unix socket, so the process must ignore SIGPIPE (runboxd does
 * signal(SIGPIPE, SIG_IGN)); a write to a dropped stream then fails with EPIPE -> RB_EIO.
 */
#include "docker/docker_private.h"

#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <stdlib.h>
#include <string.h>

#define ATTACH_HDR_MAX (16u * 1024)
#define ATTACH_READ_SIZE (64u * 1024)
#define ATTACH_QUEUE_MAX (64u * 1024 * 1024)
#define DEMUX_FRAME_MAX (16u * 1024 * 1024)

enum attach_state { A_CONNECTING, A_HANDSHAKE, A_OPEN, A_DONE };

struct docker_attach {
    docker *d; /* NULL once unlinked */
    docker_attach *prev, *next;
    union {
        uv_pipe_t pipe; /* a unix socket engine */
        uv_tcp_t tcp;   /* a tcp:// engine */
    } io;
    uv_stream_t *stream; /* &io.pipe or &io.tcp */
    uv_getaddrinfo_t gai; /* a tcp:// engine's name being resolved */
    int resolving;
    char *host;          /* a tcp:// engine's host, else NULL */
    int port;
    SSL *ssl;            /* TLS on memory BIOs, else NULL */
    BIO *net_in, *net_out; /* bytes from and to the socket (owned by ssl) */
    int tls_ready;       /* the TLS handshake is done */
    uv_timer_t deadline; /* until the upgrade is answered */
    int open_handles;    /* stream and timer not yet closed, plus a resolution in flight */
    long deadline_ms;
    uv_connect_t conn;
    uv_shutdown_t shutdown; /* docker_attach_close_write's */
    int write_closed;       /* docker_attach_close_write was called */
    docker_attach_cbs cbs;
    void *data;
    enum attach_state state;
    int closed;         /* no further callbacks */
    int paused;         /* reading stopped by docker_attach_pause */
    int handle_closing; /* uv_close called; memory goes in close_cb */
    char *id;
    const char *kind; /* "container" (attach) or "exec" (an exec's start): for messages */
    char *socket_path;
    size_t queued;
    size_t hdr_end;   /* offset past "\r\n\r\n" once found, else 0 */
    size_t body_need; /* error answers: header end + Content-Length */
    int status;       /* HTTP status of the upgrade answer */
    uint64_t started_ns; /* uv_hrtime() of docker_attach_start, for the statistics */
    docker_demux demux;
    int tty;          /* an exec started with a terminal: its output is raw bytes, no frames */
    size_t hdr_len;
    char hdr[ATTACH_HDR_MAX];
    char readbuf[ATTACH_READ_SIZE];
};

typedef struct attach_write {
    uv_write_t req;
    docker_attach *a;
    size_t len;
    char bytes[];
} attach_write;

/* ---- demultiplexer ---- */

void docker_demux_init(docker_demux *m) { memset(m, 0, sizeof(*m)); }

rb_err docker_demux_feed(docker_demux *m, const char *buf, size_t len, docker_demux_cb cb, void *data)
{
    size_t off = 0;
    if (m->stream < 0)
        return RB_EIO; /* an earlier protocol error is sticky */
    while (off < len) {
        if (m->remaining == 0) {
            size_t take = sizeof(m->hdr) - m->hdr_len;
            if (take > len - off)
                take = len - off;
            memcpy(m->hdr + m->hdr_len, buf + off, take);
            m->hdr_len += take;
            off += take;
            if (m->hdr_len < sizeof(m->hdr))
                break;
            m->hdr_len = 0;
            uint32_t n =
                (uint32_t)m->hdr[4] << 24 | (uint32_t)m->hdr[5] << 16 | (uint32_t)m->hdr[6] << 8 | (uint32_t)m->hdr[7];
            if (m->hdr[0] > 2 || n > DEMUX_FRAME_MAX) {
                m->stream = -1;
                return RB_EIO;
            }
            m->stream = m->hdr[0];
            m->remaining = n; /* a zero-length frame delivers nothing */
            continue;
        }
        size_t take = m->remaining;
        if (take > len - off)
            take = len - off;
        m->remaining -= (uint32_t)take;
        cb(data, m->stream, buf + off, take);
        off += take;
    }
    return RB_OK;
}

/* ---- lifetime ---- */

static void unlink_attach(docker_attach *a)
{
    if (a->d == NULL)
        return;
    docker_attach **head = docker__attach_head(a->d);
    if (a->prev != NULL)
        a->prev->next = a->next;
    else
        *head = a->next;
    if (a->next != NULL)
        a->next->prev = a->prev;
    a->prev = a->next = NULL;
    a->d = NULL;
}

static void attach_release(docker_attach *a)
{
    if (--a->open_handles > 0)
        return;
    if (a->ssl != NULL)
        SSL_free(a->ssl);
    free(a->id);
    free(a->socket_path);
    free(a->host);
    free(a);
}

static void handle_close_cb(uv_handle_t *h)
{
    attach_release(h->data);
}

/* Stops everything without callbacks; idempotent. Pending connect and write requests get
 * UV_ECANCELED callbacks before handle_close_cb frees the memory. */
static void shut(docker_attach *a)
{
    a->closed = 1;
    a->state = A_DONE;
    unlink_attach(a);
    if (!a->handle_closing) {
        a->handle_closing = 1;
        uv_timer_stop(&a->deadline);
        if (a->resolving)
            uv_cancel((uv_req_t *)&a->gai); /* its callback still runs, then releases */
        uv_close((uv_handle_t *)&a->deadline, handle_close_cb);
        uv_close((uv_handle_t *)a->stream, handle_close_cb);
    }
}

/* Counts the handshake's outcome: open (e == RB_OK) or why it failed. */
static void observe(docker_attach *a, rb_err e)
{
    if (a->d == NULL)
        return;
    int f = -1;
    if (e == RB_ETIMEDOUT)
        f = DOCKER_FAIL_TIMEOUT;
    else if (e == RB_EUNAVAILABLE)
        f = DOCKER_FAIL_UNREACHABLE;
    else if (e != RB_OK)
        f = a->status >= 500 ? DOCKER_FAIL_HTTP_5XX : a->status >= 400 ? DOCKER_FAIL_HTTP_4XX : DOCKER_FAIL_CONNECTION;
    docker__observe(a->d, DOCKER_OP_ATTACH, a->started_ns, f);
}

/* Ends the stream from inside the module with exactly one user callback. */
static void finish(docker_attach *a, rb_err e, const char *msg)
{
    if (a->closed)
        return;
    int was_open = a->state == A_OPEN;
    if (!was_open)
        observe(a, e);
    shut(a);
    if (was_open) {
        if (a->cbs.on_close != NULL)
            a->cbs.on_close(a->data, e, e == RB_OK ? NULL : msg);
    } else if (a->cbs.on_open != NULL) {
        a->cbs.on_open(a->data, e, msg);
    }
}

void docker_attach_close(docker_attach *a)
{
    if (a != NULL)
        shut(a);
}

void docker__attach_abort(docker_attach *a)
{
    shut(a);
}

/* ---- writing ---- */

static void on_write(uv_write_t *req, int status)
{
    attach_write *w = (attach_write *)req;
    docker_attach *a = w->a;
    a->queued -= w->len;
    free(w);
    if (status < 0 && !a->closed) {
        char msg[RB_ERR_LEN];
        rb_fail(RB_EIO, msg, "writing to the attach stream of %s %s failed: %s", a->kind, a->id, uv_strerror(status));
        finish(a, RB_EIO, msg);
    }
}

/* Queues len bytes for the socket as they are (ciphertext under TLS). */
static rb_err socket_write(docker_attach *a, const char *buf, size_t len, char *err)
{
    if (len == 0)
        return RB_OK;
    attach_write *w = xmalloc(sizeof(*w) + len);
    w->a = a;
    w->len = len;
    memcpy(w->bytes, buf, len);
    uv_buf_t b = uv_buf_init(w->bytes, (unsigned)len);
    int rc = uv_write(&w->req, a->stream, &b, 1, on_write);
    if (rc < 0) {
        free(w);
        return rb_fail(RB_EIO, err, "writing to the attach stream of %s %s failed: %s", a->kind, a->id, uv_strerror(rc));
    }
    a->queued += len;
    return RB_OK;
}

/* Sends what OpenSSL has written to net_out. */
static rb_err tls_flush(docker_attach *a, char *err)
{
    char buf[16 * 1024];
    int n;
    while ((n = BIO_read(a->net_out, buf, sizeof(buf))) > 0) {
        rb_err e = socket_write(a, buf, (size_t)n, err);
        if (e != RB_OK)
            return e;
    }
    return RB_OK;
}

/* The last OpenSSL error (or the certificate check's verdict) as text. */
static void tls_error_text(docker_attach *a, char *buf, size_t n)
{
    long v = a->ssl != NULL ? SSL_get_verify_result(a->ssl) : X509_V_OK;
    unsigned long e = ERR_get_error();
    if (v != X509_V_OK)
        snprintf(buf, n, "the engine's certificate was refused: %s", X509_verify_cert_error_string(v));
    else if (e != 0)
        ERR_error_string_n(e, buf, n);
    else
        snprintf(buf, n, "the connection ended during the handshake");
    ERR_clear_error();
}

static rb_err queue_write(docker_attach *a, const char *buf, size_t len, char *err)
{
    if (len == 0)
        return RB_OK;
    if (len > ATTACH_QUEUE_MAX || a->queued > ATTACH_QUEUE_MAX - len)
        return rb_fail(RB_ETOOBIG, err, "more than %u bytes are already queued for %s %s's stdin",
                       ATTACH_QUEUE_MAX, a->kind, a->id);
    if (a->ssl == NULL)
        return socket_write(a, buf, len, err);
    /* Memory BIOs take everything: SSL_write only fails for a broken session. */
    if (SSL_write(a->ssl, buf, (int)len) != (int)len) {
        char detail[256];
        tls_error_text(a, detail, sizeof(detail));
        return rb_fail(RB_EIO, err, "writing to the TLS attach stream of %s %s failed: %s", a->kind, a->id, detail);
    }
    return tls_flush(a, err);
}

rb_err docker_attach_write(docker_attach *a, const char *buf, size_t len, char *err)
{
    if (a == NULL || a->closed || a->state != A_OPEN || a->write_closed)
        return rb_fail(RB_ECONFLICT, err, "the attach stream is not open");
    return queue_write(a, buf, len, err);
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
    (void)req;
    (void)status; /* a failure shows as the stream's end, read as usual */
}

rb_err docker_attach_close_write(docker_attach *a, char *err)
{
    if (a == NULL || a->closed || a->state != A_OPEN || a->write_closed)
        return rb_fail(RB_ECONFLICT, err, "the attach stream is not open");
    if (a->ssl != NULL) { /* close_notify first: the engine reads it as the end of stdin */
        SSL_shutdown(a->ssl);
        if (tls_flush(a, err) != RB_OK)
            return RB_EIO;
    }
    int rc = uv_shutdown(&a->shutdown, a->stream, on_shutdown);
    if (rc < 0)
        return rb_fail(RB_EIO, err, "closing the input of %s %s failed: %s", a->kind, a->id, uv_strerror(rc));
    a->write_closed = 1;
    return RB_OK;
}

/* ---- reading ---- */

static void on_frame(void *data, int stream, const char *buf, size_t len)
{
    docker_attach *a = data;
    if (a->closed || a->cbs.on_data == NULL)
        return;
    /* Like moby's stdcopy, a stdin-typed frame (0) is shown as stdout. */
    a->cbs.on_data(a->data, stream == 2 ? 2 : 1, buf, len);
}

static void feed_stream(docker_attach *a, const char *buf, size_t len)
{
    if (len == 0 || a->closed)
        return;
    if (a->tty) {
        on_frame(a, 1, buf, len);
        return;
    }
    if (docker_demux_feed(&a->demux, buf, len, on_frame, a) != RB_OK) {
        char msg[RB_ERR_LEN];
        rb_fail(RB_EIO, msg, "malformed frame header on the attach stream of %s %s", a->kind, a->id);
        finish(a, RB_EIO, msg);
    }
}

/* Case-insensitive header lookup in hdr[0..end); copies a trimmed value into out. */
static int find_header(const char *hdr, size_t end, const char *name, char *out, size_t outlen)
{
    size_t nlen = strlen(name);
    const char *p = memchr(hdr, '\n', end);
    while (p != NULL && (size_t)(p - hdr) + 1 < end) {
        const char *line = p + 1;
        size_t left = end - (size_t)(line - hdr);
        const char *eol = memchr(line, '\n', left);
        size_t llen = eol != NULL ? (size_t)(eol - line) : left;
        if (llen > nlen && line[nlen] == ':' && strncasecmp(line, name, nlen) == 0) {
            const char *v = line + nlen + 1;
            const char *ve = line + llen;
            while (v < ve && (*v == ' ' || *v == '\t'))
                v++;
            while (ve > v && (ve[-1] == '\r' || ve[-1] == ' ' || ve[-1] == '\t'))
                ve--;
            size_t vl = (size_t)(ve - v);
            if (vl >= outlen)
                vl = outlen - 1;
            memcpy(out, v, vl);
            out[vl] = '\0';
            return 1;
        }
        p = eol;
    }
    return 0;
}

/* Reports a non-upgrade answer as the open error, with Docker's message when there is one:
 * JSON {"message":..} or, as 20.10 sends for attach, plain text. */
static void fail_status(docker_attach *a)
{
    char msg[RB_ERR_LEN], text[320];
    const char *body = a->hdr + a->hdr_end;
    size_t blen = a->hdr_len - a->hdr_end;
    json_t *j = blen > 0 ? json_loadb(body, blen, 0, NULL) : NULL;
    const char *dm = json_string_value(json_object_get(j, "message"));
    if (dm == NULL) {
        size_t n = 0;
        for (size_t i = 0; i < blen && n < sizeof(text) - 1; i++)
            text[n++] = (unsigned char)body[i] < ' ' || body[i] == 0x7f ? ' ' : body[i];
        while (n > 0 && text[n - 1] == ' ')
            n--;
        text[n] = '\0';
        dm = n > 0 ? text : "no message";
    }
    rb_err e = a->status == 404 ? RB_ENOTFOUND : a->status == 409 ? RB_ECONFLICT : RB_EIO;
    rb_fail(e, msg, "%s (Docker answered HTTP %d to attach for %s %s)", dm, a->status, a->kind, a->id);
    json_decref(j);
    finish(a, e, msg);
}

/* Parses the answer once its headers are complete: opens the stream or fails. */
static void handle_headers(docker_attach *a)
{
    char msg[RB_ERR_LEN], ctype[128], clen[32];
    const char *h = a->hdr;
    if (a->hdr_end < 14 || memcmp(h, "HTTP/1.", 7) != 0 || (h[7] != '0' && h[7] != '1') || h[8] != ' ' || h[9] < '1' ||
        h[9] > '5' || h[10] < '0' || h[10] > '9' || h[11] < '0' || h[11] > '9' || (h[12] != ' ' && h[12] != '\r')) {
        rb_fail(RB_EIO, msg, "Docker's answer to attach for %s %s is not HTTP", a->kind, a->id);
        finish(a, RB_EIO, msg);
        return;
    }
    a->status = (h[9] - '0') * 100 + (h[10] - '0') * 10 + (h[11] - '0');
    int have_ctype = find_header(h, a->hdr_end, "Content-Type", ctype, sizeof(ctype));
    int raw = have_ctype && (strncmp(ctype, "application/vnd.docker.raw-stream", 33) == 0 ||
                             strncmp(ctype, "application/vnd.docker.multiplexed-stream", 41) == 0);
    if (a->status == 101 || (a->status == 200 && raw)) {
        observe(a, RB_OK);
        a->state = A_OPEN;
        uv_timer_stop(&a->deadline);
        if (a->cbs.on_open != NULL)
            a->cbs.on_open(a->data, RB_OK, NULL);
        feed_stream(a, a->hdr + a->hdr_end, a->hdr_len - a->hdr_end);
        return;
    }
    /* An error answer: wait for its body (up to Content-Length, or EOF without one), as far as
     * the buffer holds it. */
    a->body_need = sizeof(a->hdr);
    if (find_header(h, a->hdr_end, "Content-Length", clen, sizeof(clen))) {
        size_t n = 0;
        int ok = clen[0] != '\0';
        for (const char *p = clen; *p && ok; p++) {
            if (*p < '0' || *p > '9' || n > ATTACH_HDR_MAX)
                ok = 0;
            else
                n = n * 10 + (size_t)(*p - '0');
        }
        if (ok && n <= ATTACH_HDR_MAX - a->hdr_end)
            a->body_need = a->hdr_end + n;
    }
    if (a->hdr_len < a->body_need)
        return;
    fail_status(a);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)suggested;
    docker_attach *a = h->data;
    *buf = uv_buf_init(a->readbuf, sizeof(a->readbuf));
}

static void on_handshake_bytes(docker_attach *a, const char *buf, size_t len)
{
    char msg[RB_ERR_LEN];
    if (a->hdr_end > 0) { /* collecting an error body */
        size_t take = a->body_need - a->hdr_len;
        if (take > len)
            take = len;
        memcpy(a->hdr + a->hdr_len, buf, take);
        a->hdr_len += take;
        if (a->hdr_len >= a->body_need)
            fail_status(a);
        return;
    }
    size_t room = sizeof(a->hdr) - a->hdr_len;
    size_t take = len < room ? len : room;
    size_t scan_from = a->hdr_len >= 3 ? a->hdr_len - 3 : 0;
    memcpy(a->hdr + a->hdr_len, buf, take);
    a->hdr_len += take;
    for (size_t i = scan_from; i + 4 <= a->hdr_len; i++) {
        if (memcmp(a->hdr + i, "\r\n\r\n", 4) == 0) {
            a->hdr_end = i + 4;
            break;
        }
    }
    if (a->hdr_end == 0) {
        if (a->hdr_len == sizeof(a->hdr)) {
            rb_fail(RB_EIO, msg, "Docker's answer to attach for %s %s has over %u bytes of headers", a->kind, a->id,
                    ATTACH_HDR_MAX);
            finish(a, RB_EIO, msg);
        }
        return;
    }
    /* Bytes beyond the buffer (the stream's start, if the read was large) follow the ones kept. */
    size_t tail_off = take;
    handle_headers(a);
    if (!a->closed && a->state == A_OPEN)
        feed_stream(a, buf + tail_off, len - tail_off);
}

/* Bytes of the HTTP exchange (decrypted under TLS). */
static void on_plain(docker_attach *a, const char *buf, size_t len)
{
    if (a->state == A_OPEN)
        feed_stream(a, buf, len);
    else
        on_handshake_bytes(a, buf, len);
}

static void send_request(docker_attach *a);

/* Feeds bytes from the socket to OpenSSL and what it decrypts to on_plain; drives the TLS
 * handshake until it is done, then sends the upgrade request. */
static void tls_input(docker_attach *a, const char *buf, size_t len)
{
    char msg[RB_ERR_LEN], detail[256];
    if (len > 0 && BIO_write(a->net_in, buf, (int)len) != (int)len) {
        rb_fail(RB_EINTERNAL, msg, "TLS buffer of %s %s refused bytes", a->kind, a->id);
        finish(a, RB_EIO, msg);
        return;
    }
    if (!a->tls_ready) {
        int r = SSL_do_handshake(a->ssl);
        if (tls_flush(a, msg) != RB_OK) {
            finish(a, RB_EUNAVAILABLE, msg);
            return;
        }
        if (r != 1) {
            int e = SSL_get_error(a->ssl, r);
            if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
                return;
            tls_error_text(a, detail, sizeof(detail));
            rb_fail(RB_EUNAVAILABLE, msg,
                    "the TLS handshake with Docker at %s failed: %s; check that its certificate is signed by "
                    "--docker-tls-ca for this address and that it accepts runboxd's client certificate",
                    a->socket_path, detail);
            finish(a, RB_EUNAVAILABLE, msg);
            return;
        }
        a->tls_ready = 1;
        send_request(a);
    }
    char plain[ATTACH_READ_SIZE];
    while (!a->closed) {
        int n = SSL_read(a->ssl, plain, sizeof(plain));
        if (n > 0) {
            on_plain(a, plain, (size_t)n);
            continue;
        }
        int e = SSL_get_error(a->ssl, n);
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
            break;
        if (e == SSL_ERROR_ZERO_RETURN) { /* close_notify: the stream's end */
            if (a->state == A_OPEN)
                finish(a, RB_OK, NULL);
            else if (a->hdr_end > 0)
                fail_status(a);
            else {
                rb_fail(RB_EIO, msg, "Docker closed the attach connection for %s %s before answering", a->kind, a->id);
                finish(a, RB_EIO, msg);
            }
            return;
        }
        tls_error_text(a, detail, sizeof(detail));
        rb_fail(RB_EIO, msg, "the TLS attach stream of %s %s failed: %s", a->kind, a->id, detail);
        finish(a, RB_EIO, msg);
        return;
    }
    if (!a->closed && tls_flush(a, msg) != RB_OK) /* renegotiation or alerts */
        finish(a, RB_EIO, msg);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    docker_attach *a = s->data;
    char msg[RB_ERR_LEN];
    if (a->closed)
        return;
    if (nread < 0) {
        if (a->state == A_OPEN) {
            if (nread == UV_EOF) {
                finish(a, RB_OK, NULL);
            } else {
                rb_fail(RB_EIO, msg, "the attach stream of %s %s failed: %s", a->kind, a->id, uv_strerror((int)nread));
                finish(a, RB_EIO, msg);
            }
        } else if (a->hdr_end > 0) {
            fail_status(a); /* the error body was cut short: report what arrived */
        } else {
            rb_fail(RB_EIO, msg, "Docker closed the attach connection for %s %s before answering: %s", a->kind, a->id,
                    uv_strerror((int)nread));
            finish(a, RB_EIO, msg);
        }
        return;
    }
    if (nread == 0)
        return;
    if (a->ssl != NULL)
        tls_input(a, buf->base, (size_t)nread);
    else
        on_plain(a, buf->base, (size_t)nread);
}

static void on_deadline(uv_timer_t *t)
{
    docker_attach *a = t->data;
    char msg[RB_ERR_LEN], span[32];
    if (a->closed || a->state == A_OPEN)
        return;
    if (a->deadline_ms % 1000 == 0)
        snprintf(span, sizeof(span), "%ld s", a->deadline_ms / 1000);
    else
        snprintf(span, sizeof(span), "%ld ms", a->deadline_ms);
    rb_fail(RB_ETIMEDOUT, msg, "Docker at %s did not answer attach for %s %s within %s", a->socket_path, a->kind, a->id,
            span);
    finish(a, RB_ETIMEDOUT, msg);
}

/* Sends the upgrade request (over TLS once its handshake is done). */
static void send_request(docker_attach *a)
{
    char msg[RB_ERR_LEN];
    const char *version = a->d != NULL ? docker_api_version(a->d) : "1.41";
    char *http;
    if (strcmp(a->kind, "exec") == 0) {
        const char *body = a->tty ? "{\"Detach\":false,\"Tty\":true}" : "{\"Detach\":false,\"Tty\":false}";
        http = xasprintf("POST /v%s/exec/%s/start HTTP/1.1\r\nHost: docker\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n"
                         "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
                         version, a->id, strlen(body), body);
    } else {
        http = xasprintf("POST /v%s/containers/%s/attach?stream=1&stdin=1&stdout=1&stderr=1 HTTP/1.1\r\n"
                         "Host: docker\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n",
                         version, a->id);
    }
    rb_err e = queue_write(a, http, strlen(http), msg);
    free(http);
    if (e != RB_OK)
        finish(a, RB_EUNAVAILABLE, msg);
}

/* Starts TLS on a connected socket: the peer must present a certificate of the CA for the
 * engine's address (an IP address in its subject alternative names) or name. */
static rb_err tls_start(docker_attach *a, char *err)
{
    a->ssl = SSL_new(a->d->ssl_ctx);
    BIO *in = BIO_new(BIO_s_mem()), *out = BIO_new(BIO_s_mem());
    if (a->ssl == NULL || in == NULL || out == NULL) {
        BIO_free(in);
        BIO_free(out);
        return rb_fail(RB_EINTERNAL, err, "OpenSSL could not make a TLS session");
    }
    BIO_set_mem_eof_return(in, -1); /* no bytes yet is "want read", not the end */
    SSL_set_bio(a->ssl, in, out);
    a->net_in = in;
    a->net_out = out;
    SSL_set_connect_state(a->ssl);
    X509_VERIFY_PARAM *vp = SSL_get0_param(a->ssl);
    if (X509_VERIFY_PARAM_set1_ip_asc(vp, a->host) != 1) { /* not an address: a name */
        X509_VERIFY_PARAM_set_hostflags(vp, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        if (SSL_set1_host(a->ssl, a->host) != 1 || SSL_set_tlsext_host_name(a->ssl, a->host) != 1)
            return rb_fail(RB_EINTERNAL, err, "OpenSSL refused the engine's name %s", a->host);
    }
    ERR_clear_error();
    tls_input(a, NULL, 0); /* writes the ClientHello */
    return RB_OK;
}

static void on_connect(uv_connect_t *req, int status)
{
    docker_attach *a = req->data;
    char msg[RB_ERR_LEN];
    if (a->closed)
        return;
    if (status < 0) {
        rb_fail(RB_EUNAVAILABLE, msg, "Docker is not reachable at %s: %s; %s", a->socket_path, uv_strerror(status),
                a->host == NULL ? "is the daemon running and is the socket mounted?"
                                : "is the engine up, and its address and port reachable from runboxd?");
        finish(a, RB_EUNAVAILABLE, msg);
        return;
    }
    a->state = A_HANDSHAKE;
    int rc = uv_read_start(a->stream, on_alloc, on_read);
    if (rc < 0) {
        rb_fail(RB_EIO, msg, "reading the attach stream of %s %s failed: %s", a->kind, a->id, uv_strerror(rc));
        finish(a, RB_EIO, msg);
        return;
    }
    if (a->d != NULL && a->d->ssl_ctx != NULL) {
        if (tls_start(a, msg) != RB_OK)
            finish(a, RB_EINTERNAL, msg);
        return;
    }
    send_request(a);
}

static void on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
    docker_attach *a = req->data;
    char msg[RB_ERR_LEN];
    a->resolving = 0;
    if (!a->closed && (status < 0 || res == NULL)) {
        rb_fail(RB_EUNAVAILABLE, msg, "Docker is not reachable at %s: its name does not resolve (%s)", a->socket_path,
                uv_strerror(status < 0 ? status : UV_EAI_NONAME));
        finish(a, RB_EUNAVAILABLE, msg);
    } else if (!a->closed) {
        int rc = uv_tcp_connect(&a->conn, &a->io.tcp, res->ai_addr, on_connect);
        if (rc < 0) {
            rb_fail(RB_EUNAVAILABLE, msg, "Docker is not reachable at %s: %s", a->socket_path, uv_strerror(rc));
            finish(a, RB_EUNAVAILABLE, msg);
        }
    }
    uv_freeaddrinfo(res);
    attach_release(a); /* the resolution's hold */
}

static rb_err attach_start(docker *d, const char *kind, int tty, const char *container_id,
                           const docker_attach_cbs *cbs, void *data, docker_attach **out, char *err)
{
    if (docker__freeing(d))
        return rb_fail(RB_ECANCELED, err, "the Docker client is shutting down");
    if (docker__check_ref(container_id, err) != RB_OK)
        return RB_EINVAL;
    if (cbs == NULL)
        return rb_fail(RB_EINVAL, err, "attach needs callbacks");
    docker_attach *a = xcalloc(1, sizeof(*a));
    int tcp = docker__socket_path(d) == NULL;
    int rc = tcp ? uv_tcp_init(docker__loop(d), &a->io.tcp) : uv_pipe_init(docker__loop(d), &a->io.pipe, 0);
    if (rc < 0) {
        free(a);
        return rb_fail(RB_EINTERNAL, err, "%s failed: %s", tcp ? "uv_tcp_init" : "uv_pipe_init", uv_strerror(rc));
    }
    a->stream = tcp ? (uv_stream_t *)&a->io.tcp : (uv_stream_t *)&a->io.pipe;
    uv_timer_init(docker__loop(d), &a->deadline);
    a->open_handles = 2;
    a->stream->data = a;
    a->deadline.data = a;
    a->conn.data = a;
    a->cbs = *cbs;
    a->data = data;
    a->id = xstrdup(container_id);
    a->kind = kind;
    a->tty = tty;
    a->socket_path = xstrdup(docker__where(d)); /* how messages name the engine */
    if (tcp) {
        a->host = xstrdup(d->host);
        a->port = d->port;
    }
    a->state = A_CONNECTING;
    a->started_ns = uv_hrtime();
    docker_demux_init(&a->demux);
    docker_attach **head = docker__attach_head(d);
    a->d = d;
    a->next = *head;
    if (*head != NULL)
        (*head)->prev = a;
    *head = a;
    a->deadline_ms = docker__timeouts(d)->attach_ms;
    uv_timer_start(&a->deadline, on_deadline, (uint64_t)a->deadline_ms, 0);
    if (!tcp) {
        uv_pipe_connect(&a->conn, &a->io.pipe, docker__socket_path(d), on_connect);
    } else {
        char port[8];
        snprintf(port, sizeof(port), "%d", a->port);
        struct addrinfo hints;
        memset(&hints, 0, sizeof(hints));
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        a->gai.data = a;
        a->open_handles++; /* released by on_resolved, which always runs */
        a->resolving = 1;
        rc = uv_getaddrinfo(docker__loop(d), &a->gai, on_resolved, a->host, port, &hints);
        if (rc < 0) {
            a->resolving = 0;
            a->open_handles--;
            char msg[RB_ERR_LEN];
            rb_fail(RB_EUNAVAILABLE, msg, "Docker is not reachable at %s: %s", a->socket_path, uv_strerror(rc));
            shut(a); /* no callback runs; the memory goes with the handles' close */
            return rb_fail(RB_EUNAVAILABLE, err, "%s", msg);
        }
    }
    if (out != NULL)
        *out = a;
    return RB_OK;
}

rb_err docker_attach_start(docker *d, const char *container_id, const docker_attach_cbs *cbs, void *data,
                           docker_attach **out, char *err)
{
    return attach_start(d, "container", 0, container_id, cbs, data, out, err);
}

rb_err docker_exec_attach(docker *d, const char *exec_id, int tty, const docker_attach_cbs *cbs, void *data,
                          docker_attach **out, char *err)
{
    return attach_start(d, "exec", tty, exec_id, cbs, data, out, err);
}

void docker_attach_pause(docker_attach *a, int paused)
{
    if (a == NULL || a->closed || a->handle_closing || a->state != A_OPEN || a->paused == !!paused)
        return;
    a->paused = !!paused;
    if (a->paused)
        uv_read_stop(a->stream);
    else if (uv_read_start(a->stream, on_alloc, on_read) < 0)
        a->paused = 1; /* the stream is going away; its close is reported as usual */
}
