/*
 * test_web_wire.c: core/web/web_wire.c without Docker: which URLs a caller may ask to read, the
 * --web-* settings, the reading of the browser's answer (types checked, text capped by
 * characters, failures mapped to errors) and of the egress proxy's event lines; then the fuzz
 * corpus (tests/fuzz/corpus/web) replayed.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "core/web/web_wire.h"
#include "tests/common/corpus.h"

static void url_ok(const char *u)
{
    char err[RB_ERR_LEN];
    cr_assert_eq(web_url_check(u, strlen(u), err), RB_OK, "'%s' was refused: %s", u, err);
}

static void url_refused(const char *u, const char *why)
{
    char err[RB_ERR_LEN];
    cr_assert_eq(web_url_check(u, strlen(u), err), RB_EINVAL, "'%s' was accepted", u);
    cr_assert(strstr(err, why) != NULL, "'%s': %s", u, err);
}

Test(web_wire, urls)
{
    url_ok("http://example.com");
    url_ok("https://example.com/a/b?c=d&e=%20#frag");
    url_ok("HTTPS://EXAMPLE.COM:8443/");
    url_ok("http://[2001:db8::1]:8080/x");
    url_ok("http://172.18.0.5:8000/page.html"); /* addresses are judged by the proxy, after resolution */
    url_refused("", "required");
    url_refused("ftp://example.com/", "http:// or https://");
    url_refused("file:///etc/passwd", "http:// or https://");
    url_refused("javascript:alert(1)", "http:// or https://");
    url_refused("example.com", "http:// or https://");
    url_refused("http://user:pw@example.com/", "user name or password");
    url_refused("http://example.com\\@evil/", "user name or password");
    url_refused("http:///path", "no host");
    url_refused("http://:80/", "no host");
    url_refused("http://example.com:0/", "port");
    url_refused("http://example.com:65536/", "port");
    url_refused("http://example.com:8x/", "port");
    url_refused("http://example.com:/", "empty port");
    url_refused("http://[::1/", "closing");
    url_refused("http://[::1]x/", "port");
    url_refused("http://exa mple.com/", "space");
    url_refused("http://example.com/\n", "control");
    url_refused("http://ex\xc3\xa4mple.com/", "non-ASCII");
    char big[WEB_URL_MAX + 2];
    memset(big, 'a', sizeof(big));
    memcpy(big, "http://", 7);
    big[sizeof(big) - 1] = '\0';
    url_refused(big, "at most");
    /* not NUL-terminated: only len bytes count */
    char err[RB_ERR_LEN];
    cr_assert_eq(web_url_check("http://a.com/ trailing", 13, err), RB_OK, "%s", err);
}

static json_t *parse(const char *out, size_t max_chars, rb_err *code, int *net, char *msg)
{
    web_limits lim = {max_chars, 100};
    return web_result_parse(out, strlen(out), &lim, code, net, msg);
}

Test(web_wire, answer_is_typed_and_capped)
{
    rb_err code = RB_OK;
    int net;
    char msg[RB_ERR_LEN];
    json_t *d = parse("chromium noise\n{\"ok\":true,\"url\":\"u\",\"final_url\":\"https://e.com/x\",\"title\":\"T\","
                      "\"status\":200,\"text\":\"h\\u00e9llo \\ud83d\\ude00 world\",\"truncated\":false,\"settled\":"
                      "false,\"redirects\":2,\"screenshot\":\"iVBOR\",\"extra\":{\"x\":1}}\n\n",
                      8, &code, &net, msg);
    cr_assert_not_null(d, "%s", msg);
    cr_assert_str_eq(json_string_value(json_object_get(d, "text")), "h\xc3\xa9llo \xf0\x9f\x98\x80 ",
                     "capped at 8 characters, not bytes");
    cr_assert(json_is_true(json_object_get(d, "truncated")));
    cr_assert(json_is_false(json_object_get(d, "settled")));
    cr_assert_eq(json_integer_value(json_object_get(d, "status")), 200);
    cr_assert_eq(json_integer_value(json_object_get(d, "redirects")), 2);
    cr_assert_str_eq(json_string_value(json_object_get(d, "screenshot")), "iVBOR");
    cr_assert_null(json_object_get(d, "extra"), "unknown members are not passed on");
    cr_assert(json_is_false(json_object_get(d, "byte_cap_reached")));
    json_decref(d);
    /* the browser saw the proxy's byte cap reached: the page was cut, though its text fits */
    d = parse("{\"ok\":true,\"text\":\"all it got\",\"truncated\":false,\"byte_cap\":true}", 100, &code, &net, msg);
    cr_assert_not_null(d, "%s", msg);
    cr_assert_str_eq(json_string_value(json_object_get(d, "text")), "all it got");
    cr_assert(json_is_true(json_object_get(d, "byte_cap_reached")));
    cr_assert(json_is_true(json_object_get(d, "truncated")));
    json_decref(d);
    d = parse("{\"ok\":true,\"text\":\"t\",\"byte_cap\":\"yes\"}", 100, &code, &net, msg);
    cr_assert(json_is_false(json_object_get(d, "byte_cap_reached")), "only true is true");
    cr_assert(json_is_false(json_object_get(d, "truncated")));
    json_decref(d);
    d = parse("{\"ok\":true,\"text\":7,\"status\":\"200\",\"redirects\":-1,\"title\":null}", 100, &code, &net, msg);
    cr_assert_not_null(d);
    cr_assert_str_eq(json_string_value(json_object_get(d, "text")), "");
    cr_assert(json_is_null(json_object_get(d, "status")));
    cr_assert_eq(json_integer_value(json_object_get(d, "redirects")), 0);
    cr_assert_str_eq(json_string_value(json_object_get(d, "title")), "");
    json_decref(d);
}

Test(web_wire, failures_map_to_errors)
{
    rb_err code;
    int net;
    char msg[RB_ERR_LEN];
    cr_assert_null(parse("{\"ok\":false,\"error\":\"refused\",\"message\":\"loopback\"}", 9, &code, &net, msg));
    cr_assert_eq(code, RB_EFORBIDDEN);
    cr_assert(strstr(msg, "loopback") != NULL, "%s", msg);
    cr_assert_null(parse("{\"ok\":false,\"error\":\"timeout\",\"message\":\"m\"}", 9, &code, &net, msg));
    cr_assert_eq(code, RB_ETIMEDOUT);
    cr_assert_null(parse("{\"ok\":false,\"error\":\"navigation_failed\",\"message\":\"net::ERR_X\\nline\"}", 9, &code,
                         &net, msg));
    cr_assert_eq(code, RB_EIO);
    cr_assert_eq(net, 1);
    cr_assert(strstr(msg, "net::ERR_X line") != NULL, "control characters are blanked: %s", msg);
    cr_assert_null(parse("{\"ok\":false,\"error\":\"too_many_redirects\"}", 9, &code, &net, msg));
    cr_assert_eq(code, RB_EIO);
    cr_assert_null(parse("{\"ok\":false,\"error\":\"browser_failed\",\"message\":\"no chromium\"}", 9, &code, &net, msg));
    cr_assert_eq(code, RB_EUNAVAILABLE);
    cr_assert_null(parse("", 9, &code, &net, msg));
    cr_assert_eq(code, RB_EUNAVAILABLE);
    cr_assert(strstr(msg, "no answer") != NULL, "%s", msg);
    cr_assert_null(parse("{\"ok\":true", 9, &code, &net, msg));
    cr_assert_null(parse("{\"ok\":true,\"ok\":false}", 9, &code, &net, msg), "duplicate members are refused");
}

Test(web_wire, proxy_events)
{
    const char *l = "{\"event\":\"refused\",\"host\":\"h\",\"port\":80,\"address\":\"127.0.0.1\",\"reason\":\"loopback "
                    "address\",\"junk\":[1]}";
    json_t *e = web_event_parse(l, strlen(l));
    cr_assert_not_null(e);
    cr_assert_str_eq(json_string_value(json_object_get(e, "reason")), "loopback address");
    cr_assert_eq(json_integer_value(json_object_get(e, "port")), 80);
    cr_assert_null(json_object_get(e, "junk"));
    json_decref(e);
    cr_assert_null(web_event_parse("{\"event\":\"shell\"}", 17));
    cr_assert_null(web_event_parse("not json", 8));
    cr_assert_null(web_event_parse("[1]", 3));
}

static void check_seed(void *data, const char *seed, const char *path, const char *buf, size_t len)
{
    (void)seed;
    (void)path;
    (*(int *)data)++;
    char err[RB_ERR_LEN];
    (void)web_url_check(buf, len, err);
    web_limits lim = {5, 64};
    rb_err code;
    int net;
    json_decref(web_result_parse(buf, len, &lim, &code, &net, err));
    json_decref(web_event_parse(buf, len));
}

Test(web_wire, fuzz_corpus_replay)
{
    int n = 0;
    corpus_each("web", check_seed, &n);
    cr_assert_gt(n, 0, "no seeds in tests/fuzz/corpus/web");
}
