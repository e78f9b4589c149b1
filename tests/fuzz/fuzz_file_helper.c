/*
 * fuzz_file_helper.c: libFuzzer target for what runboxd accepts of the file helper's answer
 * (core/files/file_helper.c's file_helper_answer and file_helper_listing): the helper runs inside a
 * session's sandbox, whose code may have replaced it, so its exit code and output are hostile.
 * The first input byte picks the operation, the second the exit code; the rest, from a private
 * exact-size copy so any read past the end is caught, is the output. Checks memory safety and
 * that what is accepted is what files.c relies on: an answer only with RB_OK or RB_ETOOBIG,
 * listed paths and answered folders in canonical name form under /workspace, and messages that
 * carry no control character (so no traceback line). Built only with clang and -DRUNBOX_FUZZ=ON;
 * the seed corpus (tests/fuzz/corpus/file_helper/) is replayed by tests/core/test_file_helper.c.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/codec.h"
#include "core/files/file_helper.h"

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n)
{
    if (n < 2)
        return 0;
    file_helper_op op = (file_helper_op)(in[0] % (FILE_HELPER_DISCARD + 1));
    int code = in[1] % 10;
    size_t len = n - 2;
    char *copy = malloc(len > 0 ? len : 1);
    if (len > 0)
        memcpy(copy, in + 2, len);
    char err[RB_ERR_LEN] = "";
    json_t *doc = NULL;
    rb_err e = file_helper_answer(op, "x", code, copy, len, &doc, err);
    if ((e == RB_OK || e == RB_ETOOBIG) != (doc != NULL))
        abort();
    if (e != RB_OK) {
        for (const char *p = err; *p; p++)
            if ((unsigned char)*p < 0x20)
                abort();
    } else if (op == FILE_HELPER_LIST) {
        size_t i;
        json_t *f;
        json_array_foreach(json_object_get(doc, "files"), i, f)
        {
            char *abs = malloc(strlen(json_string_value(json_object_get(f, "path"))) + 16);
            strcpy(abs, "/workspace/");
            strcat(abs, json_string_value(json_object_get(f, "path")));
            if (!file_helper_path_ok(abs, 0))
                abort();
            free(abs);
        }
    } else if (op == FILE_HELPER_PUT) {
        if (!file_helper_path_ok(json_string_value(json_object_get(doc, "dir")), 1) ||
            !file_helper_name_ok(json_string_value(json_object_get(doc, "name"))))
            abort();
    } else if (op == FILE_HELPER_GET) {
        const char *real = json_string_value(json_object_get(doc, "real"));
        char *raw = NULL;
        size_t rlen;
        if (!file_helper_path_ok(real, 0) || codec_name_unescape(real, &raw, &rlen, NULL) != RB_OK ||
            memchr(raw, '\0', rlen) != NULL)
            abort();
        free(raw);
    }
    json_decref(doc);
    free(copy);
    return 0;
}
