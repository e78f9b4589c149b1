/*
 * jupyter_login.c: how a Jupyter client gives its API key (server/jupyter/jupyter.h), beside the
 * headers every protocol takes (Authorization: Bearer or token, X-API-Key): Jupyter's ?token=
 * query parameter (a browser's websocket cannot set headers), and password mode, which Open
 * WebUI uses: GET /jupyter/login sets an _xsrf cookie, a form POST /jupyter/login with that
 * _xsrf and password=API key sets the login cookie, and requests then carry the cookie (and,
 * when they change something, X-XSRFToken equal to the _xsrf cookie, as Jupyter Server asks).
 *
 * A login cookie is a random name for the key, kept in memory (JUPYTER_LOGINS_MAX, the oldest
 * forgotten first; all forgotten at a restart: the client logs in again); the key itself never
 * goes into a cookie.
 */
#include "server/jupyter/jupyter_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/mem.h"
#include "server/query.h"

/* The value of cookie name in req (inside req's headers), or NULL. */
static const char *cookie(h2o_req_t *req, const char *name, size_t *len)
{
    size_t nlen = strlen(name);
    for (ssize_t i = -1; (i = h2o_find_header(&req->headers, H2O_TOKEN_COOKIE, i)) != -1;) {
        const char *p = req->headers.entries[i].value.base, *end = p + req->headers.entries[i].value.len;
        while (p < end) {
            while (p < end && (*p == ' ' || *p == ';'))
                p++;
            const char *semi = memchr(p, ';', (size_t)(end - p));
            const char *stop = semi != NULL ? semi : end;
            if ((size_t)(stop - p) > nlen && memcmp(p, name, nlen) == 0 && p[nlen] == '=') {
                *len = (size_t)(stop - p - (ptrdiff_t)nlen - 1);
                return p + nlen + 1;
            }
            p = stop;
        }
    }
    return NULL;
}

static int safe_method(h2o_req_t *req)
{
    return h2o_memis(req->method.base, req->method.len, H2O_STRLIT("GET")) ||
           h2o_memis(req->method.base, req->method.len, H2O_STRLIT("HEAD"));
}

int jupyter__credential(void *data, h2o_req_t *req, const char **tok, size_t *len)
{
    jupyter *j = data;
    const char *q = req->path.base != NULL ? memchr(req->path.base, '?', req->path.len) : NULL;
    if (q != NULL) {
        const char *v;
        size_t vlen;
        size_t qn = req->path.len - (size_t)(q + 1 - req->path.base);
        if (query_find(q + 1, qn, "token", &v, &vlen) && vlen > 0 && !query_holds_nul(q + 1, qn)) {
            char *dec = h2o_mem_alloc_pool(&req->pool, vlen + 1);
            *len = query_decode(v, vlen, dec);
            *tok = dec;
            return 1;
        }
    }
    size_t clen = 0;
    const char *c = cookie(req, JUPYTER_COOKIE, &clen);
    if (c == NULL || clen == 0 || clen >= sizeof(j->logins[0].cookie))
        return 0;
    if (!safe_method(req)) { /* a change made with the cookie: X-XSRFToken must match the _xsrf cookie */
        size_t xlen = 0;
        const char *x = cookie(req, "_xsrf", &xlen);
        ssize_t h = h2o_find_header_by_str(&req->headers, H2O_STRLIT("x-xsrftoken"), -1);
        if (x == NULL || h < 0 || req->headers.entries[h].value.len != xlen ||
            memcmp(req->headers.entries[h].value.base, x, xlen) != 0)
            return 0;
    }
    for (size_t i = 0; i < JUPYTER_LOGINS_MAX; i++)
        if (j->logins[i].key != NULL && strlen(j->logins[i].cookie) == clen &&
            memcmp(j->logins[i].cookie, c, clen) == 0) {
            *tok = j->logins[i].key;
            *len = strlen(j->logins[i].key);
            return 1;
        }
    return 0;
}

/* Path=/, as Jupyter Server's own (its base_url): aiohttp's jar, whose update_cookies() Open WebUI
 * calls without the response's URL, sends a cookie of another path to no IP-address host (it
 * keeps only Path=/ ones as shared), so Path=/jupyter broke password mode against
 * http://127.0.0.1:PORT/jupyter. The cookie is honoured under /jupyter/ only (jupyter__credential). */
static void set_cookie(h2o_req_t *req, const char *name, const char *value, int http_only)
{
    char *v = h2o_mem_alloc_pool(&req->pool, 256);
    int n = snprintf(v, 256, "%s=%s; Path=/; SameSite=Strict%s", name, value, http_only ? "; HttpOnly" : "");
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_SET_COOKIE, NULL, v, (size_t)n);
}

static void send_page(h2o_req_t *req, int status, const char *xsrf, const char *note)
{
    char *body = h2o_mem_alloc_pool(&req->pool, 1024);
    int n = snprintf(body, 1024,
                     "<!doctype html><title>runbox: Jupyter login</title><p>%s</p>"
                     "<form method=post action=\"%s/login\"><input type=hidden name=_xsrf value=\"%s\">"
                     "<label>API key <input type=password name=password></label><button>Log in</button></form>\n",
                     note, JUPYTER_PREFIX, xsrf);
    req->res.status = status;
    req->res.reason = status == 200 ? "OK" : "Unauthorized";
    req->res.content_length = (size_t)n;
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, H2O_STRLIT("text/html; charset=utf-8"));
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CACHE_CONTROL, NULL, H2O_STRLIT("no-store"));
    h2o_send_inline(req, body, (size_t)n);
}

int jupyter__login_page(http_call *call)
{
    char xsrf[40];
    rb_random_id("", xsrf, sizeof(xsrf));
    set_cookie(call->req, "_xsrf", xsrf, 0);
    send_page(call->req, 200, xsrf, "Log in with a runbox API key (the password).");
    return 0;
}

/* The form field name of body[0..n) decoded into buf (room for n + 1; '+' is a space), or NULL. */
static const char *form_field(const char *body, size_t n, const char *name, char *buf)
{
    const char *v;
    size_t vlen;
    if (!query_find(body, n, name, &v, &vlen) || query_holds_nul(body, n))
        return NULL;
    for (size_t i = 0; i < vlen; i++)
        buf[i] = v[i] == '+' ? ' ' : v[i];
    query_decode(buf, vlen, buf); /* in place: decoding only shortens */
    return buf;
}

int jupyter__login(http_call *call)
{
    jupyter *j = call->data;
    h2o_req_t *req = call->req;
    size_t n = req->entity.len;
    if (n > 4096) {
        jupyter__fail(req, RB_ETOOBIG, "the login form is at most 4 KiB");
        return 0;
    }
    char *xsrf = h2o_mem_alloc_pool(&req->pool, n + 1), *password = h2o_mem_alloc_pool(&req->pool, n + 1);
    size_t clen = 0;
    const char *c = cookie(req, "_xsrf", &clen);
    if (form_field(req->entity.base, n, "_xsrf", xsrf) == NULL || c == NULL || strlen(xsrf) != clen ||
        memcmp(xsrf, c, clen) != 0) {
        jupyter__fail(req, RB_EFORBIDDEN, "'_xsrf' argument missing from POST or not the _xsrf cookie: GET "
                                          JUPYTER_PREFIX "/login first");
        return 0;
    }
    if (form_field(req->entity.base, n, "password", password) == NULL || password[0] == '\0' ||
        strlen(password) > 1024 || !server_key_valid(call->server, password, strlen(password))) {
        send_page(req, 401, xsrf, "Invalid credentials: the password is a runbox API key.");
        return 0;
    }
    size_t slot = 0;
    for (size_t i = 0; i < JUPYTER_LOGINS_MAX; i++) {
        if (j->logins[i].key == NULL) {
            slot = i;
            break;
        }
        if (j->logins[i].at < j->logins[slot].at)
            slot = i;
    }
    free(j->logins[slot].key);
    j->logins[slot].key = xstrdup(password);
    j->logins[slot].at = rb_now_ms();
    rb_random_id("", j->logins[slot].cookie, sizeof(j->logins[slot].cookie));
    set_cookie(req, JUPYTER_COOKIE, j->logins[slot].cookie, 1);
    req->res.status = 302;
    req->res.reason = "Found";
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_LOCATION, NULL, H2O_STRLIT(JUPYTER_PREFIX "/"));
    h2o_send_inline(req, NULL, 0);
    return 0;
}
