/*
 * fuzz_jupyter.c: libFuzzer target for server/jupyter/jupyter_msg.c, which reads every message a
 * client sends on a kernel's websocket (untrusted bytes). The input is one text frame, from a
 * private exact-size copy. Checks:
 *   - jmsg_parse accepts it or says why; what it accepts has a header with a msg_type of at most
 *     JMSG_NAME_MAX bytes, an object content and a channel;
 *   - a reply made to it (jmsg_make) carries its header as parent_header, a fresh msg_id and the
 *     protocol version, and encodes as JSON that jmsg_parse reads back;
 *   - jmsg_simple_reply answers the requests it knows with status ok or unknown, and nothing else;
 *   - jmsg_colour_traceback of a content.traceback (with content.ename) keeps each string line,
 *     adding at most the escapes of one colour.
 * Built only with clang and -DRUNBOX_FUZZ=ON. The seed corpus (tests/fuzz/corpus/jupyter/) is
 * replayed through these same checks by tests/server/test_jupyter_msg.c, which includes this file.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/jupyter/jupyter_msg.h"
#include "tests/fuzz/fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n)
{
    char *buf = malloc(n > 0 ? n : 1);
    if (n > 0)
        memcpy(buf, in, n);
    json_t *msg = NULL;
    char err[RB_ERR_LEN];
    err[0] = '\0';
    rb_err e = jmsg_parse(buf, n, &msg, err);
    if (e != RB_OK) {
        FUZZ_CHECK(msg == NULL && err[0] != '\0');
        free(buf);
        return 0;
    }
    const char *type = jmsg_type(msg);
    FUZZ_CHECK(type[0] != '\0' && strlen(type) <= JMSG_NAME_MAX);
    FUZZ_CHECK(json_is_object(json_object_get(msg, "content")));
    FUZZ_CHECK(jmsg_channel(msg)[0] != '\0');
    json_t *reply = jmsg_make(msg, "shell", "test_reply", json_object(), "k");
    FUZZ_CHECK(json_equal(json_object_get(reply, "parent_header"), json_object_get(msg, "header")));
    json_t *h = json_object_get(reply, "header");
    FUZZ_CHECK(strcmp(json_string_value(json_object_get(h, "version")), JMSG_PROTOCOL) == 0);
    FUZZ_CHECK(json_string_length(json_object_get(h, "msg_id")) > 0);
    char *text = json_dumps(reply, JSON_COMPACT);
    FUZZ_CHECK(text != NULL);
    json_t *back = NULL;
    FUZZ_CHECK(jmsg_parse(text, strlen(text), &back, err) == RB_OK);
    FUZZ_CHECK(strcmp(jmsg_type(back), "test_reply") == 0);
    json_t *simple = jmsg_simple_reply(msg, "python");
    if (simple != NULL) {
        const char *st = json_string_value(json_object_get(simple, "status"));
        FUZZ_CHECK(st != NULL && (strcmp(st, "ok") == 0 || strcmp(st, "unknown") == 0));
        FUZZ_CHECK(strlen(type) > 8 && strcmp(type + strlen(type) - 8, "_request") == 0);
    }
    json_decref(simple);
    json_t *content = json_object_get(msg, "content"), *tb = json_object_get(content, "traceback");
    json_t *col = jmsg_colour_traceback(tb, json_string_value(json_object_get(content, "ename")));
    size_t strings = 0, i;
    json_t *line;
    json_array_foreach(tb, i, line)
    {
        if (!json_is_string(line))
            continue;
        json_t *o = json_array_get(col, strings++);
        FUZZ_CHECK(json_is_string(o) && json_string_length(o) >= json_string_length(line) &&
                   json_string_length(o) <= json_string_length(line) + 10);
    }
    FUZZ_CHECK(json_array_size(col) == strings);
    json_decref(col);
    json_decref(back);
    free(text);
    json_decref(reply);
    json_decref(msg);
    free(buf);
    return 0;
}
