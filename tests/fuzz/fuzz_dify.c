/*
 * fuzz_dify.c: libFuzzer target for server/dify/dify_wire.c, what runboxd's Dify surface reads
 * from untrusted bytes (the body of POST /v1/sandbox/run) and what it builds from documents
 * (an execution's result, the package list). The input is used three ways:
 *   - as a run request body: dify_run_parse answers DIFY_PARSE_OK with a document, language
 *     "python" or "javascript", non-empty code, a preload and a 0/1 enable_network that agree with
 *     the body; or no document and a message (DIFY_PARSE_LANGUAGE: exactly "unsupported
 *     language");
 *   - as JSON, an execution's result document: dify_run_data gives {stdout, stderr, error,
 *     exit_code} (strings and an integer), error empty exactly when exit_code is 0, a timeout's
 *     error as dify-sandbox words it, and the note in stderr (and in error on a failure);
 *   - as JSON, core_packages' answer: dify_dependencies lists {name, version} strings only.
 * Built only with clang and -DRUNBOX_FUZZ=ON. The seed corpus (tests/fuzz/corpus/dify/) is
 * replayed through these same checks by tests/server/test_dify_wire.c, which includes this file.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/base.h"
#include "server/dify/dify_wire.h"
#include "tests/fuzz/fuzz_check.h"

static void check_request(const char *in, size_t n)
{
    dify_run_request rq;
    json_t *doc = NULL;
    char msg[RB_ERR_LEN];
    dify_parse p = dify_run_parse(in, n, &rq, &doc, msg, sizeof(msg));
    if (p != DIFY_PARSE_OK) {
        FUZZ_CHECK(doc == NULL && msg[0] != '\0' && strlen(msg) < sizeof(msg));
        FUZZ_CHECK((p == DIFY_PARSE_LANGUAGE) == (strcmp(msg, "unsupported language") == 0));
        return;
    }
    FUZZ_CHECK(json_is_object(doc));
    FUZZ_CHECK(strcmp(rq.language, "python") == 0 || strcmp(rq.language, "javascript") == 0);
    FUZZ_CHECK(rq.code != NULL && rq.code[0] != '\0' && rq.preload != NULL);
    FUZZ_CHECK(rq.enable_network == 0 || rq.enable_network == 1);
    /* with one key for the code (in any case, as encoding/json matches them), that is the code */
    const char *key, *only = NULL;
    json_t *v;
    int keys = 0;
    json_object_foreach(doc, key, v)
    {
        if (strcasecmp(key, "code") == 0 && !json_is_null(v)) {
            keys++;
            only = json_string_value(v);
        }
    }
    FUZZ_CHECK(keys >= 1);
    if (keys == 1)
        FUZZ_CHECK(only != NULL && strcmp(only, rq.code) == 0);
    json_decref(doc);
}

static void check_result(json_t *doc, int python)
{
    static const char note[] = "[a note]";
    json_t *data = dify_run_data("pre-out ", NULL, doc, python, note);
    FUZZ_CHECK(json_is_object(data) && json_object_size(data) == 4);
    json_t *out = json_object_get(data, "stdout"), *err = json_object_get(data, "stderr");
    json_t *error = json_object_get(data, "error"), *code = json_object_get(data, "exit_code");
    FUZZ_CHECK(json_is_string(out) && json_is_string(err) && json_is_string(error) && json_is_integer(code));
    FUZZ_CHECK(strncmp(json_string_value(out), "pre-out ", 8) == 0);
    json_int_t exit_code = json_integer_value(code);
    FUZZ_CHECK((strstr(json_string_value(err), note) != NULL) == (exit_code != 0)); /* a failure's words only */
    FUZZ_CHECK((exit_code == 0) == (json_string_length(error) == 0));
    if (exit_code != 0) {
        FUZZ_CHECK(strncmp(json_string_value(error), "process exited with code ", 25) == 0);
        FUZZ_CHECK(strstr(json_string_value(error), note) != NULL);
    }
    const char *status = json_string_value(json_object_get(doc, "status"));
    if (status != NULL && strcmp(status, "timeout") == 0)
        FUZZ_CHECK(exit_code == -1 &&
                   strncmp(json_string_value(error), "process exited with code -1\nerror: timeout\n", 43) == 0);
    if (status == NULL || strcmp(status, "completed") == 0)
        FUZZ_CHECK(exit_code == 0);
    json_decref(data);
}

static void check_dependencies(json_t *doc)
{
    json_t *deps = dify_dependencies(doc);
    json_t *list = json_object_get(deps, "dependencies"), *d;
    size_t i;
    FUZZ_CHECK(json_is_object(deps) && json_object_size(deps) == 1 && json_is_array(list));
    json_array_foreach(list, i, d)
    {
        FUZZ_CHECK(json_object_size(d) == 2);
        FUZZ_CHECK(json_is_string(json_object_get(d, "name")) && json_is_string(json_object_get(d, "version")));
    }
    json_decref(deps);
}

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n)
{
    char *s = malloc(n > 0 ? n : 1); /* exact size: a read past the end is caught */
    memcpy(s, in, n);
    check_request(s, n);
    json_t *doc = json_loadb(s, n, 0, NULL);
    if (json_is_object(doc)) {
        check_result(doc, 1);
        check_result(doc, 0);
        check_dependencies(doc);
    }
    json_decref(doc);
    free(s);
    return 0;
}
