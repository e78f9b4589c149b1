/*
 * console.c: serves the console's embedded files (server/console/console.h). Each answer carries
 * the same headers: a Content-Security-Policy that lets the page load only its own script and
 * style and talk only to runboxd's origin (no inline script or style, no frame, no form), nosniff,
 * no Referer and no caching (a new runboxd serves its new page at once). Its icon is also served at
 * /favicon.ico, where browsers look for one without being told (an SVG: browsers go by its type).
 */
#include "server/console/console.h"

#include <string.h>

#include "server/console/console_static.h"

#define CONSOLE_CSP                                                                                                   \
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "           \
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

/* The Content-Type of a file, by its extension. */
static const char *type_of(const char *name)
{
    const char *dot = strrchr(name, '.');
    if (dot != NULL && strcmp(dot, ".html") == 0)
        return "text/html; charset=utf-8";
    if (dot != NULL && strcmp(dot, ".js") == 0)
        return "text/javascript; charset=utf-8";
    if (dot != NULL && strcmp(dot, ".css") == 0)
        return "text/css; charset=utf-8";
    if (dot != NULL && strcmp(dot, ".svg") == 0)
        return "image/svg+xml";
    return "application/octet-stream";
}

/* The embedded file named name, or NULL. */
static const console_static_file *find(const char *name)
{
    for (size_t i = 0; i < console_static_nfiles; i++)
        if (strcmp(console_static_files[i].name, name) == 0)
            return &console_static_files[i];
    return NULL;
}

static void set(h2o_req_t *req, const char *name, const char *value)
{
    h2o_set_header_by_str(&req->pool, &req->res.headers, name, strlen(name), 1, value, strlen(value), 1);
}

/* Answers f (static bytes: they outlive the response) with the console's headers. */
static void send_file(h2o_req_t *req, const console_static_file *f)
{
    static h2o_generator_t generator = {NULL, NULL};
    h2o_iovec_t body = h2o_iovec_init(f->bytes, f->len);
    req->res.status = 200;
    req->res.reason = "OK";
    req->res.content_length = f->len;
    set(req, "content-type", type_of(f->name));
    set(req, "content-security-policy", CONSOLE_CSP);
    set(req, "x-content-type-options", "nosniff");
    set(req, "referrer-policy", "no-referrer");
    set(req, "cache-control", "no-store");
    set(req, "x-frame-options", "DENY");
    h2o_start_response(req, &generator);
    if (h2o_memis(req->method.base, req->method.len, H2O_STRLIT("HEAD")))
        h2o_send(req, NULL, 0, H2O_SEND_STATE_FINAL);
    else
        h2o_send(req, &body, 1, H2O_SEND_STATE_FINAL);
}

static int on_index(http_call *call)
{
    const console_static_file *f = find("index.html");
    if (f == NULL)
        http_send_error_as(call->req, 404, "not_found", "this runboxd was built without its console");
    else
        send_file(call->req, f);
    return 0;
}

static int on_file(http_call *call)
{
    /* Only the names of the table: no folder, nothing read from disk. */
    const console_static_file *f = find(call->params[0]);
    if (f == NULL || strcmp(f->name, "index.html") == 0) {
        http_send_error_as(call->req, 404, "not_found",
                           "no such file in the console (/console/, console.js, console.css, favicon.svg)");
        return 0;
    }
    send_file(call->req, f);
    return 0;
}

static int on_favicon(http_call *call)
{
    const console_static_file *f = find("favicon.svg");
    if (f == NULL)
        http_send_error_as(call->req, 404, "not_found", "this runboxd was built without its console");
    else
        send_file(call->req, f);
    return 0;
}

/* The files need no API key: the router leaves every path under /console (after h2o has
 * resolved dot segments, so /console/../sessions is not one) to this protocol, whose answers
 * are the static files or 404; and /favicon.ico, the icon. */
static int own_auth(h2o_req_t *req)
{
    h2o_iovec_t p = req->path_normalized;
    if (h2o_memis(p.base, p.len, H2O_STRLIT("/favicon.ico")))
        return 1;
    return p.base != NULL && p.len >= 8 && memcmp(p.base, "/console", 8) == 0 && (p.len == 8 || p.base[8] == '/');
}

static const http_route routes[] = {
    {"GET", "/console", on_index},
    {"GET", "/console/", on_index},
    {"GET", "/console/{file}", on_file},
    {"HEAD", "/console", on_index},
    {"HEAD", "/console/", on_index},
    {"HEAD", "/console/{file}", on_file},
    {"GET", "/favicon.ico", on_favicon},
    {"HEAD", "/favicon.ico", on_favicon},
};

void console_register(rb_server *s)
{
    http_protocol p = {0};
    p.name = "console";
    p.routes = routes;
    p.nroutes = sizeof(routes) / sizeof(routes[0]);
    p.own_auth = own_auth;
    server_register(s, &p);
}
