/*
 * test_e2b_wire.c: server/e2b/e2b_wire.c: E2B paths mapped onto the workspace and the metadata
 * filter of GET /e2b/v2/sandboxes, and a replay of the libFuzzer seed corpus in
 * tests/fuzz/corpus/e2b/ through the checks of tests/fuzz/fuzz_e2b.c.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "base/clock.h"
#include "server/e2b/e2b_wire.h"
#include "tests/common/corpus.h"

/* The fuzz target, with its checks as Criterion assertions naming the seed. */
static const char *replay_seed = "";
#define FUZZ_CHECK(cond) cr_assert(cond, "%s: check failed: %s", replay_seed, #cond)
#include "tests/fuzz/fuzz_e2b.c"

static const char *mapped(const char *p)
{
    const char *m = e2b_path_map(p);
    return m != NULL ? m : "<refused>";
}

Test(e2b_wire, paths_map_home_onto_the_workspace)
{
    cr_expect_str_eq(mapped("/home/user/a.txt"), "a.txt");
    cr_expect_str_eq(mapped("/home/user//out/p.png"), "out/p.png");
    cr_expect_str_eq(mapped("/home/user"), "/workspace");
    cr_expect_str_eq(mapped("/home/user/"), "/workspace");
    cr_expect_str_eq(mapped("data/x.csv"), "data/x.csv");
    cr_expect_str_eq(mapped("/home/username/a"), "<refused>");
    cr_expect_str_eq(mapped("/etc/passwd"), "<refused>");
    cr_expect_str_eq(mapped("/tmp/x"), "<refused>");
    cr_expect_str_eq(mapped(""), "<refused>");
    /* ".." is left to core, which refuses it for every protocol */
    cr_expect_str_eq(mapped("/home/user/../../etc/x"), "../../etc/x");
}

Test(e2b_wire, metadata_filter)
{
    json_t *meta = json_pack("{s:s, s:s}", "n", "1", "who am", "i&you");
    cr_expect(e2b_metadata_match("", 0, meta));
    cr_expect(e2b_metadata_match("n=1", 3, meta));
    cr_expect(e2b_metadata_match("who%20am=i%26you&n=1", 20, meta));
    cr_expect(!e2b_metadata_match("n=2", 3, meta));
    cr_expect(!e2b_metadata_match("n", 1, meta));
    cr_expect(!e2b_metadata_match("x=1", 3, meta));
    cr_expect(e2b_metadata_match("&&n=1&", 6, meta));
    json_decref(meta);
}

Test(e2b_wire, times_as_the_sdk_sends_them)
{
    int64_t ms = -1;
    cr_assert_eq(rb_time_parse("2026-11-21T23:59:01.123Z", &ms), 0);
    cr_expect_eq(ms, 1795305541123LL);
    cr_assert_eq(rb_time_parse("2026-11-22T00:59:01.123456+01:00", &ms), 0);
    cr_expect_eq(ms, 1795305541123LL);
    cr_assert_eq(rb_time_parse("2026-11-21T18:59:01-05:00", &ms), 0);
    cr_expect_eq(ms, 1795305541000LL);
    cr_assert_eq(rb_time_parse("1970-01-01T00:00:00", &ms), 0);
    cr_expect_eq(ms, 0);
    cr_expect_eq(rb_time_parse("2026-02-29T00:00:00Z", &ms), -1);
    cr_expect_eq(rb_time_parse("2024-02-29T00:00:00Z", &ms), 0);
    cr_expect_eq(rb_time_parse("2026-13-01T00:00:00Z", &ms), -1);
    cr_expect_eq(rb_time_parse("2026-11-21T23:59:01.Z", &ms), -1);
    cr_expect_eq(rb_time_parse("2026-11-21T23:59:01+0100", &ms), -1);
    cr_expect_eq(rb_time_parse("2026-11-21", &ms), -1);
    cr_expect_eq(rb_time_parse("2026-11-21T23:59:01Zjunk", &ms), -1);
}

static void check_e2b_seed(void *data, const char *seed, const char *path, const char *buf, size_t len)
{
    (void)data;
    (void)path;
    replay_seed = seed;
    LLVMFuzzerTestOneInput((const uint8_t *)buf, len);
}

Test(e2b_wire, short_language_names)
{
    cr_assert_str_eq(e2b_language("js"), "javascript");
    cr_assert_str_eq(e2b_language("ts"), "typescript");
    cr_assert_str_eq(e2b_language("python"), "python");
    cr_assert_str_eq(e2b_language("JS"), "JS"); /* only the documented names; the sandbox check refuses it */
    cr_assert_null(e2b_language(NULL));
}

Test(e2b_wire, fuzz_corpus_replay)
{
    cr_assert_geq(corpus_each("e2b", check_e2b_seed, NULL), 8);
}

/* e2b_network_map on JSON texts: the policy as compact JSON ("null" for no network), or
 * "error: <message>". */
static char *net_map(const char *internet, const char *net, int update)
{
    static char text[RB_ERR_LEN + 16];
    json_t *i = internet ? json_loads(internet, JSON_DECODE_ANY, NULL) : NULL;
    json_t *n = net ? json_loads(net, JSON_DECODE_ANY, NULL) : NULL;
    json_t *out = (json_t *)1;
    char err[RB_ERR_LEN] = "";
    rb_err e = e2b_network_map(i, n, update, &out, err);
    if (e != RB_OK) {
        cr_expect_null(out, "no policy with an error");
        snprintf(text, sizeof(text), "error: %s", err);
    } else {
        char *s = out ? json_dumps(out, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
        snprintf(text, sizeof(text), "%s", s ? s : "null");
        free(s);
    }
    json_decref(out);
    json_decref(i);
    json_decref(n);
    return text;
}

Test(e2b_wire, network_options_map_onto_host_policies)
{
    /* allow_internet_access alone: the operator's default list, or no network */
    cr_expect_str_eq(net_map("true", NULL, 0), "true");
    cr_expect_str_eq(net_map("false", NULL, 0), "null");
    cr_expect_str_eq(net_map(NULL, NULL, 0), "null");
    cr_expect_str_eq(net_map(NULL, "{}", 0), "null");
    /* allowOut names the hosts; ALL_TRAFFIC in denyOut is runbox's model anyway */
    cr_expect_str_eq(net_map(NULL, "{\"allowOut\": [\"api.example.test\"], \"denyOut\": [\"0.0.0.0/0\"]}", 0),
                     "{\"allow\":[\"api.example.test\"],\"deny\":[]}");
    cr_expect_str_eq(net_map("true", "{\"allowOut\": [\"*.example.test:8080\"], \"denyOut\": [\"bad.example.test\"]}", 0),
                     "{\"allow\":[\"*.example.test:8080\"],\"deny\":[\"bad.example.test\"]}");
    cr_expect_str_eq(net_map("true", "{\"denyOut\": [\"0.0.0.0/0\"]}", 0), "{\"allow\":[],\"deny\":[]}");
    cr_expect_str_eq(net_map(NULL, "{\"denyOut\": [\"0.0.0.0/0\"]}", 0), "null");
    /* the inbound and DNS options in their "off" values */
    cr_expect_str_eq(net_map("true", "{\"allowPublicTraffic\": false, \"dnsServers\": [], \"rules\": {}, "
                                     "\"egressProxy\": null, \"httpsPorts\": []}", 0),
                     "true");
    /* the update body: the same, its allow_internet_access key skipped; nothing given: nothing allowed */
    cr_expect_str_eq(net_map(NULL, "{}", 1), "null");
    cr_expect_str_eq(net_map("true", "{\"allow_internet_access\": true}", 1), "true");
    cr_expect_str_eq(net_map(NULL, "{\"allowOut\": [\"pypi.example.test\"]}", 1),
                     "{\"allow\":[\"pypi.example.test\"],\"deny\":[]}");
}

Test(e2b_wire, network_options_runbox_cannot_honour_are_refused)
{
    const char *addresses[] = {"10.0.0.1", "8.8.8.0/24", "0.0.0.0/0", "::1", "[2001:db8::1]:443", "127.1",
                               "0x7f.1", "1.2.3.4:80", "10.0.0.1."};
    for (size_t i = 0; i < sizeof(addresses) / sizeof(addresses[0]); i++) {
        char net[200];
        snprintf(net, sizeof(net), "{\"allowOut\": [\"%s\"]}", addresses[i]);
        const char *got = net_map("true", net, 0);
        cr_expect(strstr(got, "error: network.allowOut[0]") == got && strstr(got, "--egress-cidr") != NULL,
                  "%s: %s", addresses[i], got);
    }
    cr_expect(strstr(net_map(NULL, "{\"allowOut\": [\"a.test\"], \"denyOut\": [\"10.0.0.0/8\"]}", 0),
                     "network.denyOut[0]: '10.0.0.0/8' is an IP address") != NULL);
    cr_expect(strstr(net_map(NULL, "{\"denyOut\": [\"192.168.1.1\"]}", 1), "error: denyOut[0]") != NULL);
    /* names that merely contain digits are names */
    cr_expect_str_eq(net_map(NULL, "{\"allowOut\": [\"s3.eu-1.example.test\", \"1password.test:443\"]}", 0),
                     "{\"allow\":[\"s3.eu-1.example.test\",\"1password.test:443\"],\"deny\":[]}");
    cr_expect(strstr(net_map("false", "{\"allowOut\": [\"a.test\"]}", 0), "allow_internet_access is false") != NULL);
    cr_expect(strstr(net_map("true", "{\"denyOut\": [\"bad.test\"]}", 0), "need allowOut") != NULL);
    cr_expect(strstr(net_map(NULL, "{\"allowPublicTraffic\": true}", 0), "network.allowPublicTraffic") != NULL);
    cr_expect(strstr(net_map(NULL, "{\"maskRequestHost\": \"${PORT}-x.test\"}", 0), "maskRequestHost") != NULL);
    cr_expect(strstr(net_map(NULL, "{\"dnsServers\": [\"1.1.1.1\"]}", 0), "DNS") != NULL);
    cr_expect(strstr(net_map(NULL, "{\"egressProxy\": {\"address\": \"p.test:1080\"}}", 1), "egressProxy") != NULL);
    cr_expect(strstr(net_map(NULL, "{\"rules\": {\"a.test\": [{}]}}", 1), "rewrite") != NULL);
    cr_expect(strstr(net_map(NULL, "{\"allowPublicTraffic\": false}", 1), "not a network option") != NULL);
    cr_expect(strstr(net_map(NULL, "{\"allow\": [\"a.test\"]}", 0), "not a network option") != NULL);
    cr_expect(strstr(net_map(NULL, "{\"allowOut\": \"a.test\"}", 0), "must be a list") != NULL);
    cr_expect(strstr(net_map(NULL, "{\"allowOut\": [1]}", 0), "not a string") != NULL);
    cr_expect(strstr(net_map("\"yes\"", NULL, 0), "true or false") != NULL);
    cr_expect(strstr(net_map("null", "{}", 1), "true or false") != NULL);
    /* null only where E2B's schema takes it */
    cr_expect(strstr(net_map(NULL, "null", 0), "must be an object") != NULL);
    cr_expect(strstr(net_map(NULL, "{\"denyOut\": null}", 1), "must be a list") != NULL);
    cr_expect(strstr(net_map(NULL, "{\"dnsServers\": null}", 0), "DNS") != NULL);
    cr_expect_str_eq(net_map(NULL, "{\"egressProxy\": null, \"allowPublicTraffic\": null}", 0), "null");
    cr_expect(strstr(net_map(NULL, "[]", 0), "must be an object") != NULL);
}

/* e2b_pause_mode on a JSON text (NULL: no body): the mode, or "error: <message>". */
static char *pause_mode(const char *body)
{
    static char text[RB_ERR_LEN + 16];
    json_t *b = body ? json_loads(body, JSON_DECODE_ANY, NULL) : NULL;
    const char *mode = NULL;
    char err[RB_ERR_LEN] = "";
    if (e2b_pause_mode(b, &mode, err) != RB_OK)
        snprintf(text, sizeof(text), "error: %s", err);
    else
        snprintf(text, sizeof(text), "%s", mode);
    json_decref(b);
    return text;
}

Test(e2b_wire, pause_requests_map_onto_suspend_and_hibernate)
{
    cr_expect_str_eq(pause_mode(NULL), "suspend");
    cr_expect_str_eq(pause_mode("null"), "suspend");
    cr_expect_str_eq(pause_mode("{}"), "suspend");
    cr_expect_str_eq(pause_mode("{\"memory\": true}"), "suspend");
    cr_expect_str_eq(pause_mode("{\"memory\": true, \"requireHealthyGuest\": true}"), "suspend");
    cr_expect(strstr(pause_mode("{\"memory\": null}"), "error: memory:") != NULL);
    cr_expect_str_eq(pause_mode("{\"memory\": false}"), "hibernate");
    cr_expect(strstr(pause_mode("{\"memory\": \"false\"}"), "error: memory:") != NULL);
    cr_expect(strstr(pause_mode("{\"requireHealthyGuest\": 1}"), "error: requireHealthyGuest") != NULL);
    cr_expect(strstr(pause_mode("{\"mode\": \"filesystem\"}"), "not an option of E2B's pause") != NULL);
    cr_expect(strstr(pause_mode("[]"), "must be an object") != NULL);
}

/* e2b_lifecycle_map on a create body: "action onTimeout autoResume", or "error: <message>". */
static char *lifecycle(const char *body)
{
    static char text[RB_ERR_LEN + 16];
    json_t *b = json_loads(body, 0, NULL), *life = (json_t *)1;
    const char *action = NULL;
    char err[RB_ERR_LEN] = "";
    cr_assert_not_null(b, "%s", body);
    if (e2b_lifecycle_map(b, &action, &life, err) != RB_OK) {
        cr_expect_null(life, "no lifecycle with an error");
        snprintf(text, sizeof(text), "error: %s", err);
    } else {
        snprintf(text, sizeof(text), "%s %s %s", action, json_string_value(json_object_get(life, "onTimeout")),
                 json_is_true(json_object_get(life, "autoResume")) ? "true" : "false");
    }
    json_decref(life);
    json_decref(b);
    return text;
}

Test(e2b_wire, auto_pause_is_what_the_deadline_does)
{
    cr_expect_str_eq(lifecycle("{\"templateID\": \"base\"}"), "end kill false");
    cr_expect_str_eq(lifecycle("{\"autoPause\": false, \"autoResume\": {\"enabled\": false}}"), "end kill false");
    cr_expect_str_eq(lifecycle("{\"autoPause\": true}"), "suspend pause false");
    cr_expect_str_eq(lifecycle("{\"autoPause\": true, \"autoPauseMemory\": true, \"autoResume\": true}"),
                     "suspend pause true");
    cr_expect_str_eq(lifecycle("{\"autoPause\": true, \"autoPauseMemory\": false}"), "hibernate pause false");
    cr_expect_str_eq(lifecycle("{\"autoPause\": true, \"autoResume\": {\"enabled\": true}}"), "suspend pause true");
    cr_expect_str_eq(lifecycle("{\"autoPause\": false, \"autoPauseMemory\": false}"), "end kill false");
    cr_expect(strstr(lifecycle("{\"autoPause\": null}"), "error: autoPause:") != NULL);
    cr_expect(strstr(lifecycle("{\"autoPause\": true, \"autoResume\": null}"), "error: autoResume:") != NULL);
    cr_expect(strstr(lifecycle("{\"autoPause\": \"yes\"}"), "error: autoPause:") != NULL);
    cr_expect(strstr(lifecycle("{\"autoPauseMemory\": 0}"), "error: autoPauseMemory:") != NULL);
    cr_expect(strstr(lifecycle("{\"autoResume\": {\"enabled\": true}}"), "only with autoPause") != NULL);
    cr_expect(strstr(lifecycle("{\"autoPause\": true, \"autoResume\": {}}"), "autoResume.enabled: required") != NULL);
    cr_expect(strstr(lifecycle("{\"autoPause\": true, \"autoResume\": {\"on\": 1}}"), "autoResume.on") != NULL);
    cr_expect(strstr(lifecycle("{\"autoResume\": \"on\"}"), "error: autoResume:") != NULL);
}

Test(e2b_wire, state_filters)
{
    cr_expect_eq(e2b_state_filter("running", 7), E2B_STATE_RUNNING);
    cr_expect_eq(e2b_state_filter("paused", 6), E2B_STATE_PAUSED);
    cr_expect_eq(e2b_state_filter("running,paused", 14), E2B_STATE_RUNNING | E2B_STATE_PAUSED);
    cr_expect_eq(e2b_state_filter("paused,paused", 13), E2B_STATE_PAUSED);
    cr_expect_eq(e2b_state_filter("", 0), -1);
    cr_expect_eq(e2b_state_filter("paused,", 7), -1);
    cr_expect_eq(e2b_state_filter("Running", 7), -1);
    cr_expect_eq(e2b_state_filter("running paused", 14), -1);
    cr_expect_eq(e2b_state_filter("runningX", 7), E2B_STATE_RUNNING); /* n bytes only */
}

/* The mounts of volumeMounts: one {"volume", "path"} per item, /home/user read as /workspace. */
static json_t *volume_mounts(const char *text, char *err)
{
    json_t *in = json_loads(text, JSON_DECODE_ANY, NULL), *out = NULL;
    cr_assert(in != NULL, "%s", text);
    rb_err e = e2b_volume_mounts_map(in, &out, err);
    json_decref(in);
    if (e != RB_OK) {
        cr_expect_null(out);
        return NULL;
    }
    return out;
}

Test(e2b_wire, volume_mounts_become_volume_items)
{
    char err[RB_ERR_LEN];
    json_t *out = volume_mounts("[{\"name\": \"data\", \"path\": \"/workspace/data\"},"
                                " {\"name\": \"vol_ab\", \"path\": \"/home/user/in/x\"}]",
                                err);
    cr_assert(out != NULL, "%s", err);
    json_t *want = json_loads("[{\"volume\": \"data\", \"path\": \"/workspace/data\"}, {\"volume\": \"vol_ab\", "
                              "\"path\": \"/workspace/in/x\"}]",
                              0, NULL);
    cr_expect(json_equal(out, want));
    json_decref(want);
    json_decref(out);
    /* none: nothing to mount */
    json_t *none = NULL;
    cr_expect_eq(e2b_volume_mounts_map(NULL, &none, err), RB_OK);
    cr_expect_null(none);
    cr_expect_null(volume_mounts("[]", err));
    cr_expect_null(volume_mounts("null", err));
}

Test(e2b_wire, volume_mounts_outside_the_workspace_are_refused)
{
    char err[RB_ERR_LEN];
    static const char *const bad[] = {
        "[{\"name\": \"d\", \"path\": \"/mnt/data\"}]",
        "[{\"name\": \"d\", \"path\": \"/workspaces/x\"}]",
        "[{\"name\": \"d\", \"path\": \"/home/username\"}]",
        "[{\"name\": \"d\", \"path\": \"data\"}]",
        NULL,
    };
    for (size_t i = 0; bad[i] != NULL; i++) {
        cr_expect_null(volume_mounts(bad[i], err), "%s", bad[i]);
        cr_expect(strstr(err, "is outside /workspace") != NULL, "%s: %s", bad[i], err);
    }
    static const char *const whole[] = {"/workspace", "/home/user/", "/workspace//", NULL};
    for (size_t i = 0; whole[i] != NULL; i++) {
        char text[128];
        snprintf(text, sizeof(text), "[{\"name\": \"d\", \"path\": \"%s\"}]", whole[i]);
        cr_expect_null(volume_mounts(text, err), "%s", text);
        cr_expect(strstr(err, "is the whole workspace") != NULL, "%s: %s", text, err);
    }
    static const char *const malformed[] = {
        "{\"name\": \"d\", \"path\": \"/workspace/d\"}",
        "[{\"name\": \"d\"}]",
        "[{\"name\": 1, \"path\": \"/workspace/d\"}]",
        "[\"d\"]",
        "[{\"name\": \"d\", \"path\": \"/workspace/d\", \"readOnly\": true}]",
        NULL,
    };
    for (size_t i = 0; malformed[i] != NULL; i++) {
        cr_expect_null(volume_mounts(malformed[i], err), "%s", malformed[i]);
        cr_expect(strstr(err, "volumeMounts") != NULL, "%s: %s", malformed[i], err);
    }
    cr_expect(strstr(err, "readOnly") != NULL, "%s", err);
}
