/*
 * test_dify_wire.c: server/dify/dify_wire.c: the body of POST /v1/sandbox/run read as
 * dify-sandbox's gin controller binds it (internal/controller/run.go and base.go in
 * github.com/langgenius/dify-sandbox: its messages, its statuses), the envelope
 * (internal/types/response.go), the run's data as internal/service/run_code.go builds it, and a
 * replay of the libFuzzer seed corpus in tests/fuzz/corpus/dify/ through the checks of
 * tests/fuzz/fuzz_dify.c.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "server/dify/dify_wire.h"
#include "tests/common/corpus.h"

/* The fuzz target, with its checks as Criterion assertions naming the seed. */
static const char *replay_seed = "";
#define FUZZ_CHECK(cond) cr_assert(cond, "%s: check failed: %s", replay_seed, #cond)
#include "tests/fuzz/fuzz_dify.c"

static char msg[RB_ERR_LEN];

static int starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The document the last parse's request borrows from. */
static json_t *last_doc;

static void drop_doc(void)
{
    json_decref(last_doc);
    last_doc = NULL;
}

/* dify_run_parse on a text: the outcome, with msg set (rq valid until the next parse). */
static dify_parse parse(const char *text, dify_run_request *rq)
{
    drop_doc();
    return dify_run_parse(text, strlen(text), rq, &last_doc, msg, sizeof(msg));
}

Test(dify_wire, what_dify_sends_binds, .fini = drop_doc)
{
    dify_run_request rq;
    /* code_executor.py's body: language, code, preload, enable_network (always true) */
    cr_assert_eq(parse("{\"language\": \"python3\", \"code\": \"print(1)\", \"preload\": \"\", "
                       "\"enable_network\": true}",
                       &rq),
                 DIFY_PARSE_OK, "%s", msg);
    cr_expect_str_eq(rq.language, "python");
    cr_expect_str_eq(rq.code, "print(1)");
    cr_expect_str_eq(rq.preload, "");
    cr_expect_eq(rq.enable_network, 1);
    cr_assert_eq(parse("{\"language\": \"nodejs\", \"code\": \"console.log(1)\", \"preload\": \"var x = 1\"}", &rq),
                 DIFY_PARSE_OK, "%s", msg);
    cr_expect_str_eq(rq.language, "javascript");
    cr_expect_str_eq(rq.preload, "var x = 1");
    cr_expect_eq(rq.enable_network, 0);
    /* older Dify sent dependencies too; the struct has no such field: ignored */
    cr_assert_eq(parse("{\"language\": \"python3\", \"code\": \"1\", \"dependencies\": [{\"name\": \"jinja2\"}]}", &rq),
                 DIFY_PARSE_OK, "%s", msg);
    /* encoding/json: null keeps the zero value, keys match case-insensitively, the last one wins,
     * and what follows the first value is not read */
    cr_assert_eq(parse("{\"language\": \"python3\", \"code\": \"1\", \"preload\": null, \"enable_network\": null}",
                       &rq),
                 DIFY_PARSE_OK, "%s", msg);
    cr_expect_str_eq(rq.preload, "");
    cr_assert_eq(parse("{\"LANGUAGE\": \"python3\", \"Code\": \"a\", \"code\": \"b\"} trailing", &rq), DIFY_PARSE_OK,
                 "%s", msg);
    cr_expect_str_eq(rq.code, "b");
}

Test(dify_wire, refusals_in_gins_words, .fini = drop_doc)
{
    dify_run_request rq;
    cr_assert_eq(parse("{\"language\": \"ruby\", \"code\": \"1\"}", &rq), DIFY_PARSE_LANGUAGE);
    cr_expect_str_eq(msg, "unsupported language");
    /* language names are dify-sandbox's, not runbox's */
    cr_assert_eq(parse("{\"language\": \"python\", \"code\": \"1\"}", &rq), DIFY_PARSE_LANGUAGE);
    cr_assert_eq(parse("{\"language\": \"python3\"}", &rq), DIFY_PARSE_BIND);
    cr_expect_str_eq(msg, "Key: 'Code' Error:Field validation for 'Code' failed on the 'required' tag");
    cr_assert_eq(parse("{\"language\": \"\", \"code\": \"\"}", &rq), DIFY_PARSE_BIND);
    cr_expect_str_eq(msg, "Key: 'Language' Error:Field validation for 'Language' failed on the 'required' tag\n"
                          "Key: 'Code' Error:Field validation for 'Code' failed on the 'required' tag");
    cr_assert_eq(parse("{\"language\": 3, \"code\": \"1\"}", &rq), DIFY_PARSE_BIND);
    cr_expect_str_eq(msg, "json: cannot unmarshal number into Go struct field .language of type string");
    cr_assert_eq(parse("{\"language\": \"python3\", \"code\": \"1\", \"enable_network\": \"true\"}", &rq),
                 DIFY_PARSE_BIND);
    cr_expect_str_eq(msg, "json: cannot unmarshal string into Go struct field .enable_network of type bool");
    cr_assert_eq(parse("", &rq), DIFY_PARSE_BIND);
    cr_expect_str_eq(msg, "EOF");
    cr_assert_eq(parse("{\"language\": \"pyth", &rq), DIFY_PARSE_BIND);
    cr_expect_str_eq(msg, "unexpected EOF");
    cr_assert_eq(parse("language=python3", &rq), DIFY_PARSE_BIND);
    cr_expect_str_eq(msg, "invalid character 'l' looking for beginning of value");
    cr_assert_eq(parse("[]", &rq), DIFY_PARSE_BIND);
    cr_expect(starts(msg, "json: cannot unmarshal array into Go value of type struct { Language string"), "%s", msg);
    /* BindJSON writes 400 for Content-Type application/json exactly; ShouldBind leaves 200 */
    cr_expect_eq(dify_bind_status("application/json", 16), 400);
    cr_expect_eq(dify_bind_status("application/json; charset=utf-8", 31), 200);
    cr_expect_eq(dify_bind_status(NULL, 0), 200);
}

Test(dify_wire, envelope_and_error_table)
{
    json_t *ok = dify_envelope(DIFY_SUCCESS, "success", json_pack("{s:s}", "stdout", "1\n"));
    char *text = json_dumps(ok, JSON_COMPACT);
    cr_expect_str_eq(text, "{\"code\":0,\"message\":\"success\",\"data\":{\"stdout\":\"1\\n\"}}");
    free(text);
    json_decref(ok);
    json_t *bad = dify_envelope(7, "x", NULL); /* ErrorResponse: a code >= 0 becomes -1 */
    text = json_dumps(bad, JSON_COMPACT);
    cr_expect_str_eq(text, "{\"code\":-1,\"message\":\"x\",\"data\":null}");
    free(text);
    json_decref(bad);
    int status, code;
    dify_error_of(RB_EBUSY, &status, &code);
    cr_expect(status == 503 && code == -503);
    dify_error_of(RB_EUNAVAILABLE, &status, &code);
    cr_expect(status == 503 && code == -503);
    dify_error_of(RB_EQUOTA, &status, &code);
    cr_expect(status == 200 && code == -429);
    dify_error_of(RB_ETOOBIG, &status, &code);
    cr_expect(status == 200 && code == -413);
    dify_error_of(RB_EIO, &status, &code);
    cr_expect(status == 200 && code == -500);
}

/* dify_run_data of a result document text: a field of the data. */
static json_t *run_data(const char *doc_text, int python, const char *note)
{
    json_t *doc = json_loads(doc_text, 0, NULL);
    cr_assert_not_null(doc, "%s", doc_text);
    json_t *data = dify_run_data(NULL, NULL, doc, python, note);
    json_decref(doc);
    return data;
}

#define S(data, key) json_string_value(json_object_get(data, key))
#define CODE(data) json_integer_value(json_object_get(data, "exit_code"))

Test(dify_wire, run_data_as_dify_sandbox_builds_it)
{
    /* a success keeps stderr out of error (run_code_test.go) */
    json_t *d = run_data(
        "{\"status\": \"completed\", \"stdout\": \"<<RESULT>>{}<<RESULT>>\\n\", \"stderr\": \"INFO\\n\"}", 1, NULL);
    cr_expect_str_eq(S(d, "stdout"), "<<RESULT>>{}<<RESULT>>\n");
    cr_expect_str_eq(S(d, "stderr"), "INFO\n");
    cr_expect_str_eq(S(d, "error"), "");
    cr_expect_eq(CODE(d), 0);
    json_decref(d);
    /* an uncaught exception: prescript.py's excepthook prints it and exits 255 */
    d = run_data("{\"status\": \"error\", \"stdout\": \"partial\\n\", \"stderr\": \"\", \"error\": {\"ename\": "
                 "\"ValueError\", \"evalue\": \"bad input\", \"traceback\": "
                 "[\"Traceback (most recent call last):\\n\", "
                 "\"ValueError: bad input\\n\"]}}",
                 1, NULL);
    cr_expect_str_eq(S(d, "stderr"), "Traceback (most recent call last):\nValueError: bad input\n");
    cr_expect_str_eq(S(d, "error"), "process exited with code 255\nTraceback (most recent call last):\nValueError: bad "
                                    "input\n");
    cr_expect_eq(CODE(d), 255);
    json_decref(d);
    /* node exits 1 */
    d = run_data("{\"status\": \"error\", \"error\": {\"ename\": \"Error\", \"evalue\": \"boom\"}}", 0, NULL);
    cr_expect_str_eq(S(d, "error"), "process exited with code 1\nError: boom\n");
    json_decref(d);
    /* a timeout: output_capture.go's words; the interrupt's traceback is runbox's, not the code's */
    d = run_data("{\"status\": \"timeout\", \"stdout\": \"a\\n\", \"stderr\": \"\", \"error\": {\"ename\": "
                 "\"KeyboardInterrupt\", \"evalue\": \"\", \"traceback\": [\"KeyboardInterrupt\\n\"]}}",
                 1, NULL);
    cr_expect_str_eq(S(d, "error"), "process exited with code -1\nerror: timeout\n");
    cr_expect_str_eq(S(d, "stdout"), "a\n");
    cr_expect_str_eq(S(d, "stderr"), "");
    cr_expect_eq(CODE(d), -1);
    json_decref(d);
    /* SystemExit exits with its code */
    d = run_data("{\"status\": \"error\", \"error\": {\"ename\": \"SystemExit\", \"evalue\": \"0\"}}", 1, NULL);
    cr_expect(CODE(d) == 0 && strcmp(S(d, "error"), "") == 0);
    json_decref(d);
    d = run_data("{\"status\": \"error\", \"error\": {\"ename\": \"SystemExit\", \"evalue\": \"-1\"}}", 1, NULL);
    cr_expect_eq(CODE(d), 255);
    cr_expect_str_eq(S(d, "error"), "process exited with code 255");
    json_decref(d);
    /* a note (a run without the network it asked for) goes to stderr and error on a failure only:
     * a run that worked says nothing (Dify shows every node's output) */
    d = run_data("{\"status\": \"completed\", \"stdout\": \"\", \"stderr\": \"\"}", 1, "[no network]");
    cr_expect_str_eq(S(d, "stderr"), "");
    cr_expect_str_eq(S(d, "error"), "");
    json_decref(d);
    d = run_data("{\"status\": \"cancelled\", \"truncated\": true, \"dropped_bytes\": 5}", 1, "[no network]");
    cr_expect_eq(CODE(d), -1);
    cr_expect(starts(S(d, "error"), "process exited with code -1\nerror: cancelled\n[runbox: 5 bytes"), "%s",
              S(d, "error"));
    cr_expect(strstr(S(d, "error"), "[no network]\n") != NULL);
    cr_expect(strstr(S(d, "stderr"), "[no network]\n") != NULL);
    json_decref(d);
}

Test(dify_wire, preload_output_comes_first)
{
    json_t *doc = json_pack("{s:s, s:s, s:s}", "status", "completed", "stdout", "code\n", "stderr", "w\n");
    json_t *d = dify_run_data("pre\n", "pw\n", doc, 1, NULL);
    cr_expect_str_eq(S(d, "stdout"), "pre\ncode\n");
    cr_expect_str_eq(S(d, "stderr"), "pw\nw\n");
    json_decref(d);
    json_decref(doc);
}

Test(dify_wire, dependencies)
{
    json_t *p = json_loads("{\"packages\": [{\"name\": \"numpy\", \"version\": \"1.26.4\"}, {\"name\": \"x\"}, 3]}", 0,
                           NULL);
    json_t *d = dify_dependencies(p);
    char *text = json_dumps(d, JSON_COMPACT);
    cr_expect_str_eq(text, "{\"dependencies\":[{\"name\":\"numpy\",\"version\":\"1.26.4\"},"
                           "{\"name\":\"x\",\"version\":\"\"}]}");
    free(text);
    json_decref(d);
    json_decref(p);
}

static void check_dify_seed(void *data, const char *seed, const char *path, const char *buf, size_t len)
{
    (void)data;
    (void)path;
    replay_seed = seed;
    LLVMFuzzerTestOneInput((const uint8_t *)buf, len);
}

Test(dify_wire, fuzz_corpus_replay)
{
    cr_assert_geq(corpus_each("dify", check_dify_seed, NULL), 20);
}
