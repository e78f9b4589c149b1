/*
 * dify_wire.c: dify-sandbox's wire for runboxd's Dify surface (server/dify/dify_wire.h): the run
 * request read as gin binds it, the envelope, the run's data and the error table. Pure: jansson
 * and base/ only.
 */
#include "server/dify/dify_wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Output one answer may carry: runbox caps what an execution keeps (--output-limit); this only
 * bounds the copy. */
#define DIFY_OUTPUT_MAX (256u * 1024 * 1024)

/* ---- the request ------------------------------------------------------------------------- */

/* The fields of run.go's request struct, in its order, with their JSON names and Go types. */
enum { F_LANGUAGE, F_CODE, F_PRELOAD, F_NETWORK, F_COUNT };
static const char *const field_json[F_COUNT] = {"language", "code", "preload", "enable_network"};
static const char *const field_go[F_COUNT] = {"Language", "Code", "Preload", "EnableNetwork"};

/* reflect's String() of run.go's anonymous request struct, which encoding/json names when the
 * body is not an object. */
#define RUN_STRUCT_TYPE                                                                                                \
    "struct { Language string \"json:\\\"language\\\" form:\\\"language\\\" binding:\\\"required\\\"\"; Code string "  \
    "\"json:\\\"code\\\" form:\\\"code\\\" binding:\\\"required\\\"\"; Preload string \"json:\\\"preload\\\" "         \
    "form:\\\"preload\\\"\"; EnableNetwork bool \"json:\\\"enable_network\\\" form:\\\"enable_network\\\"\" }"

/* encoding/json's word for the kind of a JSON value (UnmarshalTypeError.Value). */
static const char *json_kind(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "object";
    case JSON_ARRAY: return "array";
    case JSON_STRING: return "string";
    case JSON_INTEGER:
    case JSON_REAL: return "number";
    case JSON_TRUE:
    case JSON_FALSE: return "bool";
    default: return "null";
    }
}

/* The field a JSON key binds to: an exact match, else a case-insensitive one (encoding/json
 * accepts both); -1 for a key the struct does not have (ignored). */
static int field_of(const char *key)
{
    for (int f = 0; f < F_COUNT; f++)
        if (strcmp(key, field_json[f]) == 0)
            return f;
    for (int f = 0; f < F_COUNT; f++)
        if (strcasecmp(key, field_json[f]) == 0)
            return f;
    return -1;
}

/* What encoding/json says of a body that is not JSON: "EOF" for an empty one, "unexpected EOF"
 * for one cut short, "invalid character" for a first byte no value starts with; else the
 * parser's own words. */
static void syntax_message(const char *bytes, size_t len, const json_error_t *je, char *msg, size_t msglen)
{
    size_t i = 0;
    while (i < len && (bytes[i] == ' ' || bytes[i] == '\t' || bytes[i] == '\r' || bytes[i] == '\n'))
        i++;
    if (i == len) {
        snprintf(msg, msglen, "EOF");
        return;
    }
    unsigned char ch = (unsigned char)bytes[i];
    if (strchr("{[\"-0123456789tfn", ch) == NULL || ch == '\0') {
        if (ch == '\'')
            snprintf(msg, msglen, "invalid character '\\'' looking for beginning of value");
        else if (ch >= 0x20 && ch < 0x7f)
            snprintf(msg, msglen, "invalid character '%c' looking for beginning of value", ch);
        else
            snprintf(msg, msglen, "invalid character '\\x%02x' looking for beginning of value", ch);
        return;
    }
    if (strstr(je->text, "premature end of input") != NULL || strstr(je->text, "unexpected newline") != NULL)
        snprintf(msg, msglen, "unexpected EOF");
    else
        snprintf(msg, msglen, "invalid JSON: %.200s (line %d, column %d)", je->text, je->line, je->column);
}

dify_parse dify_run_parse(const char *bytes, size_t len, dify_run_request *out, json_t **doc, char *msg,
                          size_t msglen)
{
    memset(out, 0, sizeof(*out));
    *doc = NULL;
    msg[0] = '\0';
    json_error_t je;
    /* json.Decoder reads the first value and ignores what follows it. */
    json_t *body = json_loadb(bytes, len, JSON_DECODE_ANY | JSON_DISABLE_EOF_CHECK, &je);
    if (body == NULL) {
        syntax_message(bytes, len, &je, msg, msglen);
        return DIFY_PARSE_BIND;
    }
    if (!json_is_object(body) && !json_is_null(body)) {
        snprintf(msg, msglen, "json: cannot unmarshal %s into Go value of type " RUN_STRUCT_TYPE, json_kind(body));
        json_decref(body);
        return DIFY_PARSE_BIND;
    }
    json_t *value[F_COUNT] = {NULL, NULL, NULL, NULL};
    const char *key;
    json_t *v;
    int type_error = 0;
    json_object_foreach(body, key, v)
    {
        int f = field_of(key);
        if (f < 0 || json_is_null(v)) /* unknown keys are ignored; null leaves the zero value */
            continue;
        int want_bool = f == F_NETWORK;
        if (want_bool ? !json_is_boolean(v) : !json_is_string(v)) {
            /* encoding/json keeps decoding and reports the first mismatch */
            if (!type_error)
                snprintf(msg, msglen, "json: cannot unmarshal %s into Go struct field .%s of type %s", json_kind(v),
                         key, want_bool ? "bool" : "string");
            type_error = 1;
            continue;
        }
        value[f] = v;
    }
    if (type_error) {
        json_decref(body);
        return DIFY_PARSE_BIND;
    }
    /* gin's validator: required fields, in the struct's order, one line each */
    size_t n = 0;
    for (int f = F_LANGUAGE; f <= F_CODE; f++) {
        if (value[f] != NULL && json_string_length(value[f]) > 0)
            continue;
        int w = snprintf(msg + n, msglen - n,
                         "%sKey: '%s' Error:Field validation for '%s' failed on the 'required' tag", n > 0 ? "\n" : "",
                         field_go[f], field_go[f]);
        n = w < 0 || (size_t)w >= msglen - n ? msglen - 1 : n + (size_t)w;
    }
    if (n > 0) {
        json_decref(body);
        return DIFY_PARSE_BIND;
    }
    const char *language = json_string_value(value[F_LANGUAGE]);
    if (strcmp(language, "python3") == 0) {
        out->language = "python";
    } else if (strcmp(language, "nodejs") == 0) {
        out->language = "javascript";
    } else {
        snprintf(msg, msglen, "unsupported language");
        json_decref(body);
        return DIFY_PARSE_LANGUAGE;
    }
    out->code = json_string_value(value[F_CODE]);
    out->preload = value[F_PRELOAD] != NULL ? json_string_value(value[F_PRELOAD]) : "";
    out->enable_network = json_is_true(value[F_NETWORK]);
    *doc = body;
    return DIFY_PARSE_OK;
}

int dify_bind_status(const char *content_type, size_t len)
{
    return content_type != NULL && len == strlen("application/json") &&
                   memcmp(content_type, "application/json", len) == 0
               ? 400
               : 200;
}

/* ---- answers ------------------------------------------------------------------------------ */

json_t *dify_envelope(int code, const char *message, json_t *data)
{
    if (code != DIFY_SUCCESS && code >= 0)
        code = -1;
    return json_pack("{s:i, s:s, s:o}", "code", code, "message", message != NULL ? message : "", "data",
                     data != NULL ? data : json_null());
}

void dify_error_of(rb_err e, int *status, int *code)
{
    *status = 200;
    switch (e) {
    case RB_EBUSY:
    case RB_EUNAVAILABLE: /* middleware.MaxRequest's answer, which Dify calls "unavailable" */
        *status = 503;
        *code = -503;
        return;
    case RB_EINVAL:
    case RB_EMEDIA: *code = -400; return;
    case RB_EFORBIDDEN: *code = -403; return;
    case RB_ENOTFOUND: *code = -404; return;
    case RB_ETOOBIG: *code = -413; return;
    case RB_EQUOTA: *code = -429; return; /* as python.ErrUIDPoolExhausted */
    default: *code = -500; return;        /* as any other error of runner.Run */
    }
}

/* ---- the run's data ----------------------------------------------------------------------- */

static void append(rb_buf *b, const char *s)
{
    if (s != NULL)
        rb_buf_append(b, s, strlen(s));
}

static void append_string(rb_buf *b, json_t *v)
{
    if (json_is_string(v))
        rb_buf_append(b, json_string_value(v), json_string_length(v));
}

/* Ends b with a newline unless it is empty or already does. */
static void end_line(rb_buf *b)
{
    if (b->len > 0 && b->data[b->len - 1] != '\n')
        rb_buf_append(b, "\n", 1);
}

/* The traceback of an error object as the interpreter prints it on stderr. */
static void append_traceback(rb_buf *b, json_t *error)
{
    json_t *tb = json_object_get(error, "traceback"), *line;
    size_t i;
    end_line(b);
    if (json_array_size(tb) > 0) {
        json_array_foreach(tb, i, line) append_string(b, line);
    } else {
        const char *ename = json_string_value(json_object_get(error, "ename"));
        const char *evalue = json_string_value(json_object_get(error, "evalue"));
        append(b, ename != NULL ? ename : "Error");
        if (evalue != NULL && evalue[0] != '\0') {
            append(b, ": ");
            append(b, evalue);
        }
    }
    end_line(b);
}

/* b as a JSON string (its pieces are UTF-8 text, so it is too; "" should it not be). */
static json_t *text_of(const rb_buf *b)
{
    json_t *v = json_stringn(b->data != NULL ? b->data : "", b->len);
    return v != NULL ? v : json_string("");
}

/* The exit code of Python's SystemExit(evalue) as the interpreter leaves it: None or nothing is 0,
 * an int n is n & 0xff, anything else is printed to stderr and exits 1. */
static int system_exit_code(const char *evalue, rb_buf *stderr_buf)
{
    if (evalue == NULL || evalue[0] == '\0' || strcmp(evalue, "None") == 0)
        return 0;
    char *end = NULL;
    long n = strtol(evalue, &end, 10);
    if (end != evalue && *end == '\0' && strlen(evalue) < 20)
        return (int)(n & 0xff);
    end_line(stderr_buf);
    append(stderr_buf, evalue);
    end_line(stderr_buf);
    return 1;
}

json_t *dify_run_data(const char *prior_stdout, const char *prior_stderr, json_t *doc, int python, const char *note)
{
    rb_buf out, err, error;
    rb_buf_init(&out, DIFY_OUTPUT_MAX);
    rb_buf_init(&err, DIFY_OUTPUT_MAX);
    rb_buf_init(&error, DIFY_OUTPUT_MAX);
    append(&out, prior_stdout);
    append_string(&out, json_object_get(doc, "stdout"));
    append(&err, prior_stderr);
    append_string(&err, json_object_get(doc, "stderr"));

    const char *status = json_string_value(json_object_get(doc, "status"));
    json_t *failure = json_object_get(doc, "error");
    const char *ename = json_string_value(json_object_get(failure, "ename"));
    const char *why = NULL; /* run by the sandbox, not the code: output_capture.go's "error: ..." */
    int exit_code = 0;
    if (status == NULL || strcmp(status, "completed") == 0) {
        exit_code = 0;
    } else if (strcmp(status, "timeout") == 0) {
        exit_code = DIFY_EXIT_KILLED;
        why = "timeout";
    } else if (strcmp(status, "error") == 0 && python && ename != NULL && strcmp(ename, "SystemExit") == 0) {
        exit_code = system_exit_code(json_string_value(json_object_get(failure, "evalue")), &err);
    } else if (strcmp(status, "error") == 0 && json_is_object(failure)) {
        append_traceback(&err, failure);
        exit_code = python ? DIFY_EXIT_PYTHON_ERROR : DIFY_EXIT_NODE_ERROR;
    } else {
        /* cancelled, or an interpreter that died (killed: out of memory) */
        exit_code = DIFY_EXIT_KILLED;
        why = json_string_value(json_object_get(doc, "reset_reason"));
        if (why == NULL)
            why = strcmp(status, "cancelled") == 0 ? "cancelled" : "the interpreter stopped";
    }
    char line[512];
    if (json_is_true(json_object_get(doc, "truncated"))) {
        snprintf(line, sizeof(line),
                 "[runbox: %lld bytes of output were dropped: the run passed runboxd's output limit (--output-limit)]",
                 (long long)json_integer_value(json_object_get(doc, "dropped_bytes")));
        end_line(&err);
        append(&err, line);
        end_line(&err);
    }
    if (note != NULL && note[0] != '\0' && exit_code != 0) { /* a run that worked needs no such words */
        end_line(&err);
        append(&err, note);
        end_line(&err);
    }
    if (exit_code != 0) {
        /* run_code.go's buildExecutionError: the exit code, the sandbox's own error, then stderr */
        snprintf(line, sizeof(line), "process exited with code %d", exit_code);
        append(&error, line);
        if (why != NULL) {
            end_line(&error);
            snprintf(line, sizeof(line), "error: %.400s\n", why);
            append(&error, line);
        }
        if (err.len > 0) {
            end_line(&error);
            rb_buf_append(&error, err.data, err.len);
        }
    }
    json_t *data = json_object();
    json_object_set_new(data, "stdout", text_of(&out));
    json_object_set_new(data, "stderr", text_of(&err));
    json_object_set_new(data, "error", text_of(&error));
    json_object_set_new(data, "exit_code", json_integer(exit_code));
    rb_buf_dispose(&out);
    rb_buf_dispose(&err);
    rb_buf_dispose(&error);
    return data;
}

json_t *dify_dependencies(json_t *packages)
{
    json_t *list = json_array(), *p;
    size_t i;
    json_array_foreach(json_object_get(packages, "packages"), i, p)
    {
        json_t *name = json_object_get(p, "name"), *version = json_object_get(p, "version");
        if (json_is_string(name))
            json_array_append_new(list, json_pack("{s:O, s:s}", "name", name, "version",
                                                  json_is_string(version) ? json_string_value(version) : ""));
    }
    return json_pack("{s:o}", "dependencies", list);
}
