/*
 * test_jupyter_msg.c: Jupyter's messages as server/jupyter/jupyter_msg.c reads and writes them:
 * a client's message with and without its channel, what is refused and why, the replies made
 * to it (parent_header, fresh ids, the protocol version), the requests answered without running
 * anything, kernel names; and a replay of the libFuzzer seed corpus in tests/fuzz/corpus/jupyter/
 * through the checks of tests/fuzz/fuzz_jupyter.c.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "server/jupyter/jupyter_msg.h"
#include "tests/common/corpus.h"

static const char *replay_seed = "";
#define FUZZ_CHECK(cond) cr_assert(cond, "%s: check failed: %s", replay_seed, #cond)
#include "tests/fuzz/fuzz_jupyter.c"

static json_t *parse(const char *text, rb_err want, char *err)
{
    json_t *m = NULL;
    rb_err e = jmsg_parse(text, strlen(text), &m, err);
    cr_assert_eq(e, want, "%s: %s", text, err);
    return m;
}

Test(jupyter_msg, a_message_with_or_without_its_channel)
{
    char err[RB_ERR_LEN];
    json_t *m = parse("{\"header\":{\"msg_id\":\"1\",\"msg_type\":\"execute_request\",\"session\":\"s\"},"
                      "\"content\":{\"code\":\"1\"}}",
                      RB_OK, err);
    cr_assert_str_eq(jmsg_type(m), "execute_request");
    cr_assert_str_eq(jmsg_channel(m), "shell");
    json_decref(m);
    m = parse("{\"header\":{\"msg_type\":\"interrupt_request\"},\"channel\":\"control\",\"content\":null}", RB_OK, err);
    cr_assert_str_eq(jmsg_channel(m), "control");
    cr_assert(json_is_object(json_object_get(m, "content")));
    json_decref(m);
}

Test(jupyter_msg, what_is_refused_says_why)
{
    char err[RB_ERR_LEN];
    parse("[]", RB_EINVAL, err);
    cr_assert(strstr(err, "JSON object") != NULL, "%s", err);
    parse("{\"content\":{}}", RB_EINVAL, err);
    cr_assert(strstr(err, "msg_type") != NULL, "%s", err);
    parse("{\"header\":{\"msg_type\":\"a b\"}}", RB_EINVAL, err);
    parse("{\"header\":{\"msg_type\":\"x\"},\"content\":[1]}", RB_EINVAL, err);
    cr_assert(strstr(err, "content") != NULL, "%s", err);
    parse("{\"header\":{\"msg_type\":\"x\",\"session\":{}}}", RB_EINVAL, err);
    cr_assert(strstr(err, "header.session") != NULL, "%s", err);
    parse("{\"header\":{\"msg_type\":\"x\"},\"header\":{\"msg_type\":\"y\"}}", RB_EINVAL, err);
    parse("{\"header\":", RB_EINVAL, err);
    cr_assert(strstr(err, "not JSON") != NULL, "%s", err);
}

Test(jupyter_msg, a_reply_answers_its_request)
{
    char err[RB_ERR_LEN];
    json_t *m = parse("{\"header\":{\"msg_id\":\"req-1\",\"msg_type\":\"kernel_info_request\",\"username\":\"ann\"}}",
                      RB_OK, err);
    json_t *a = jmsg_make(m, "shell", "kernel_info_reply", jmsg_simple_reply(m, "python"), "k1");
    json_t *b = jmsg_make(m, "iopub", "status", json_pack("{s:s}", "execution_state", "idle"), "k1");
    json_t *ha = json_object_get(a, "header"), *hb = json_object_get(b, "header");
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(a, "parent_header"), "msg_id")), "req-1");
    cr_assert_str_neq(json_string_value(json_object_get(ha, "msg_id")), json_string_value(json_object_get(hb, "msg_id")));
    cr_assert_str_eq(json_string_value(json_object_get(ha, "username")), "ann");
    cr_assert_str_eq(json_string_value(json_object_get(ha, "session")), "k1");
    cr_assert_str_eq(json_string_value(json_object_get(ha, "version")), "5.3");
    cr_assert_str_eq(json_string_value(json_object_get(a, "channel")), "shell");
    /* Open WebUI and AutoGen read msg_type at the top level, as Jupyter Server sends it */
    cr_assert_str_eq(json_string_value(json_object_get(a, "msg_type")), "kernel_info_reply");
    cr_assert_str_eq(json_string_value(json_object_get(a, "msg_id")), json_string_value(json_object_get(ha, "msg_id")));
    json_t *c = json_object_get(a, "content");
    cr_assert_str_eq(json_string_value(json_object_get(c, "protocol_version")), "5.3");
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(c, "language_info"), "name")), "python");
    json_t *none = jmsg_make(NULL, "iopub", "status", NULL, "k1");
    cr_assert_eq(json_object_size(json_object_get(none, "parent_header")), 0);
    json_decref(none);
    json_decref(a);
    json_decref(b);
    json_decref(m);
}

Test(jupyter_msg, requests_answered_without_running_anything)
{
    char err[RB_ERR_LEN];
    static const char *const known[] = {"kernel_info_request", "complete_request", "inspect_request",
                                        "is_complete_request", "comm_info_request", "history_request"};
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
        char text[200];
        snprintf(text, sizeof(text), "{\"header\":{\"msg_type\":\"%s\"},\"content\":{\"cursor_pos\":4}}", known[i]);
        json_t *m = parse(text, RB_OK, err);
        json_t *r = jmsg_simple_reply(m, "bash");
        cr_assert_not_null(r, "%s", known[i]);
        json_decref(r);
        json_decref(m);
    }
    json_t *m = parse("{\"header\":{\"msg_type\":\"complete_request\"},\"content\":{\"code\":\"pri\",\"cursor_pos\":3}}",
                      RB_OK, err);
    json_t *r = jmsg_simple_reply(m, "python");
    cr_assert_eq(json_array_size(json_object_get(r, "matches")), 0);
    cr_assert_eq(json_integer_value(json_object_get(r, "cursor_start")), 3);
    json_decref(r);
    json_decref(m);
    m = parse("{\"header\":{\"msg_type\":\"execute_request\"}}", RB_OK, err);
    cr_assert_null(jmsg_simple_reply(m, "python"), "code runs elsewhere");
    json_decref(m);
}

Test(jupyter_msg, tracebacks_in_colour)
{
    json_t *tb = json_pack("[s, s, i, s]", "Traceback (most recent call last):\n",
                           "  File \"<cell-1>\", line 1, in <module>\n    1/0", 7, "ZeroDivisionError: division by zero");
    json_t *c = jmsg_colour_traceback(tb, "ZeroDivisionError");
    cr_assert_eq(json_array_size(c), 3, "the integer is left out");
    cr_assert_str_eq(json_string_value(json_array_get(c, 0)), "Traceback (most recent call last):\n");
    cr_assert_str_eq(json_string_value(json_array_get(c, 1)),
                     "\x1b[32m  File \"<cell-1>\", line 1, in <module>\x1b[39m\n    1/0");
    cr_assert_str_eq(json_string_value(json_array_get(c, 2)), "\x1b[31mZeroDivisionError\x1b[39m: division by zero");
    json_decref(c);
    c = jmsg_colour_traceback(tb, "ValueError"); /* another name: the last line as it is */
    cr_assert_str_eq(json_string_value(json_array_get(c, 2)), "ZeroDivisionError: division by zero");
    json_decref(c);
    json_decref(tb);
    c = jmsg_colour_traceback(NULL, NULL);
    cr_assert_eq(json_array_size(c), 0);
    json_decref(c);
}

Test(jupyter_msg, python_language_info_as_ipykernel)
{
    char err[RB_ERR_LEN];
    json_t *m = parse("{\"header\":{\"msg_type\":\"kernel_info_request\"}}", RB_OK, err);
    json_t *r = jmsg_simple_reply(m, "python");
    json_t *li = json_object_get(r, "language_info");
    cr_assert_str_eq(json_string_value(json_object_get(li, "pygments_lexer")), "ipython3");
    cr_assert_str_eq(json_string_value(json_object_get(li, "nbconvert_exporter")), "python");
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(li, "codemirror_mode"), "name")), "ipython");
    json_decref(r);
    json_decref(m);
}

Test(jupyter_msg, kernel_names)
{
    cr_assert_str_eq(jmsg_kernel_name("python"), "python3");
    cr_assert_str_eq(jmsg_kernel_name("typescript"), "typescript");
    cr_assert_str_eq(jmsg_language_of("python3"), "python");
    cr_assert_str_eq(jmsg_language_of(NULL), "python");
    cr_assert_str_eq(jmsg_language_of("bash"), "bash");
    cr_assert_null(jmsg_language_of("ir"));
}

static void check_seed(void *data, const char *seed, const char *path, const char *buf, size_t len)
{
    (void)data;
    (void)path;
    replay_seed = seed;
    LLVMFuzzerTestOneInput((const uint8_t *)buf, len);
}

Test(jupyter_msg, fuzz_corpus_replay)
{
    cr_assert_geq(corpus_each("jupyter", check_seed, NULL), 20);
}
