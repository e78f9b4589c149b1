/*
 * jupyter_msg.c: reading and writing Jupyter messages (server/jupyter/jupyter_msg.h). The
 * replies follow the messaging specification 5.3 (jupyter-client's docs, "Messaging in
 * Jupyter"): what a kernel that runs code but offers no completion or introspection answers
 * honestly (status "ok", nothing found).
 */
#include "server/jupyter/jupyter_msg.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <sys/time.h>

#include "base/clock.h"

static int name_ok(json_t *v)
{
    if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) > JMSG_NAME_MAX)
        return 0;
    const char *s = json_string_value(v);
    for (size_t i = 0; s[i]; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
              s[i] == '_' || s[i] == '.' || s[i] == '-'))
            return 0;
    return 1;
}

rb_err jmsg_parse(const char *buf, size_t len, json_t **out, char *err)
{
    *out = NULL;
    json_error_t je;
    json_t *m = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
    if (m == NULL)
        return rb_fail(RB_EINVAL, err, "the message is not JSON (line %d, column %d: %.100s)", je.line, je.column,
                       je.text);
    if (!json_is_object(m)) {
        json_decref(m);
        return rb_fail(RB_EINVAL, err, "a message must be a JSON object {header, parent_header, metadata, content}");
    }
    json_t *h = json_object_get(m, "header");
    if (!json_is_object(h) || !name_ok(json_object_get(h, "msg_type"))) {
        json_decref(m);
        return rb_fail(RB_EINVAL, err, "a message needs a header object with a msg_type (a name of at most %d "
                       "letters, digits, '_', '.' and '-')", JMSG_NAME_MAX);
    }
    static const char *const ids[] = {"msg_id", "session", "username"};
    for (size_t i = 0; i < 3; i++) {
        json_t *v = json_object_get(h, ids[i]);
        if (v != NULL && (!json_is_string(v) || json_string_length(v) > JMSG_ID_MAX)) {
            json_decref(m);
            return rb_fail(RB_EINVAL, err, "header.%s must be a string of at most %d bytes", ids[i], JMSG_ID_MAX);
        }
    }
    json_t *c = json_object_get(m, "content");
    if (c == NULL || json_is_null(c))
        json_object_set_new(m, "content", json_object());
    else if (!json_is_object(c)) {
        json_decref(m);
        return rb_fail(RB_EINVAL, err, "a message's content must be an object");
    }
    json_t *ch = json_object_get(m, "channel");
    if (ch == NULL || json_is_null(ch))
        json_object_set_new(m, "channel", json_string("shell"));
    else if (!name_ok(ch)) {
        json_decref(m);
        return rb_fail(RB_EINVAL, err, "a message's channel must be shell, control or stdin");
    }
    *out = m;
    return RB_OK;
}

const char *jmsg_type(json_t *msg)
{
    const char *t = json_string_value(json_object_get(json_object_get(msg, "header"), "msg_type"));
    return t != NULL ? t : "";
}

const char *jmsg_channel(json_t *msg)
{
    const char *c = json_string_value(json_object_get(msg, "channel"));
    return c != NULL ? c : "shell";
}

/* Now as Jupyter writes it: ISO 8601 in UTC with microseconds. */
static void iso_now(char *buf, size_t len)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    time_t t = tv.tv_sec;
    gmtime_r(&t, &tm);
    snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
             tm.tm_hour, tm.tm_min, tm.tm_sec, (long)tv.tv_usec);
}

json_t *jmsg_make(json_t *parent, const char *channel, const char *msg_type, json_t *content, const char *session)
{
    char id[40], date[64];
    rb_random_id("", id, sizeof(id));
    iso_now(date, sizeof(date));
    json_t *ph = json_object_get(parent, "header");
    const char *user = json_string_value(json_object_get(ph, "username"));
    json_t *header = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "msg_id", id, "msg_type", msg_type, "session",
                               session, "username", user != NULL ? user : "runbox", "date", date, "version",
                               JMSG_PROTOCOL);
    /* msg_id and msg_type beside the header too: Jupyter Server's websocket JSON carries them
     * (jupyter_client's Session.msg), and clients read them there (Open WebUI, AutoGen) */
    json_t *parent_header = json_is_object(ph) ? json_incref(ph) : json_object();
    return json_pack("{s:o, s:s, s:s, s:o, s:{}, s:o, s:s, s:[]}", "header", header, "msg_id", id, "msg_type",
                     msg_type, "parent_header", parent_header, "metadata", "content",
                     content != NULL ? content : json_object(), "channel", channel, "buffers");
}

#define ANSI_RED "\x1b[31m"
#define ANSI_GREEN "\x1b[32m"
#define ANSI_RESET "\x1b[39m"

json_t *jmsg_colour_traceback(json_t *lines, const char *ename)
{
    json_t *out = json_array();
    size_t n = json_array_size(lines), en = ename != NULL ? strlen(ename) : 0;
    for (size_t i = 0; i < n; i++) {
        json_t *line = json_array_get(lines, i);
        if (!json_is_string(line))
            continue;
        const char *s = json_string_value(line);
        size_t len = json_string_length(line);
        static const char file[] = "  File \"";
        const char *nl = memchr(s, '\n', len);
        size_t head = nl != NULL ? (size_t)(nl - s) : len;
        json_t *coloured = NULL;
        if (len >= sizeof(file) - 1 && memcmp(s, file, sizeof(file) - 1) == 0) {
            coloured = json_sprintf(ANSI_GREEN "%.*s" ANSI_RESET "%.*s", (int)head, s, (int)(len - head), s + head);
        } else if (i + 1 == n && en > 0 && len >= en && memcmp(s, ename, en) == 0 &&
                   (len == en || s[en] == ':' || s[en] == '\n')) {
            coloured = json_sprintf(ANSI_RED "%.*s" ANSI_RESET "%.*s", (int)en, s, (int)(len - en), s + en);
        }
        json_array_append_new(out, coloured != NULL ? coloured : json_incref(line));
    }
    return out;
}

static const struct {
    const char *language, *kernel, *display, *version, *mimetype, *ext;
} KERNELS[] = {
    {"python", "python3", "Python 3 (runbox)", "3", "text/x-python", ".py"},
    {"bash", "bash", "Bash (runbox)", "5", "text/x-sh", ".sh"},
    {"javascript", "javascript", "JavaScript (Node.js, runbox)", "18", "application/javascript", ".js"},
    {"typescript", "typescript", "TypeScript (Node.js, runbox)", "5", "text/typescript", ".ts"},
};
#define NKERNELS (sizeof(KERNELS) / sizeof(KERNELS[0]))

const char *jmsg_kernel_name(const char *language)
{
    for (size_t i = 0; i < NKERNELS; i++)
        if (language != NULL && strcmp(KERNELS[i].language, language) == 0)
            return KERNELS[i].kernel;
    return "python3";
}

const char *jmsg_language_of(const char *kernel_name)
{
    if (kernel_name == NULL || kernel_name[0] == '\0' || strcmp(kernel_name, "python") == 0)
        return "python";
    for (size_t i = 0; i < NKERNELS; i++)
        if (strcmp(KERNELS[i].kernel, kernel_name) == 0)
            return KERNELS[i].language;
    return NULL;
}

static json_t *language_info(const char *language)
{
    if (strcmp(language, "python") == 0) /* as ipykernel says it (the real version: jupyter_ask.c) */
        return json_pack("{s:s, s:s, s:s, s:s, s:{s:s, s:i}, s:s, s:s}", "name", "python", "version", "3", "mimetype",
                         "text/x-python", "file_extension", ".py", "codemirror_mode", "name", "ipython", "version", 3,
                         "pygments_lexer", "ipython3", "nbconvert_exporter", "python");
    for (size_t i = 0; i < NKERNELS; i++)
        if (strcmp(KERNELS[i].language, language) == 0)
            return json_pack("{s:s, s:s, s:s, s:s}", "name", KERNELS[i].language, "version", KERNELS[i].version,
                             "mimetype", KERNELS[i].mimetype, "file_extension", KERNELS[i].ext);
    return json_pack("{s:s}", "name", language);
}

json_t *jmsg_simple_reply(json_t *msg, const char *language)
{
    const char *t = jmsg_type(msg);
    json_t *content = json_object_get(msg, "content");
    if (strcmp(t, "kernel_info_request") == 0)
        return json_pack("{s:s, s:s, s:s, s:s, s:o, s:s, s:[], s:b}", "status", "ok", "protocol_version",
                         JMSG_PROTOCOL, "implementation", "runbox", "implementation_version", RUNBOX_VERSION,
                         "language_info", language_info(language), "banner",
                         strcmp(language, "python") == 0 ? "runbox: IPython in a sandbox (no input())"
                                                         : "runbox: a sandboxed kernel (no completion, no introspection, no input())",
                         "help_links",
                         "debugger", 0);
    if (strcmp(t, "complete_request") == 0) {
        json_t *pos = json_object_get(content, "cursor_pos");
        json_int_t p = json_is_integer(pos) ? json_integer_value(pos) : 0;
        return json_pack("{s:s, s:[], s:I, s:I, s:{}}", "status", "ok", "matches", "cursor_start", p, "cursor_end", p,
                         "metadata");
    }
    if (strcmp(t, "inspect_request") == 0)
        return json_pack("{s:s, s:b, s:{}, s:{}}", "status", "ok", "found", 0, "data", "metadata");
    if (strcmp(t, "is_complete_request") == 0) /* runbox cannot tell: the client decides */
        return json_pack("{s:s}", "status", "unknown");
    if (strcmp(t, "comm_info_request") == 0)
        return json_pack("{s:s, s:{}}", "status", "ok", "comms");
    if (strcmp(t, "history_request") == 0)
        return json_pack("{s:s, s:[]}", "status", "ok", "history");
    return NULL;
}
