/*
 * Tests of core/files/file_helper.c without Docker: the helper's command line and environment
 * changes leave nothing to the session's PATH or loader variables, its answers are accepted
 * only in canonical name form under /workspace, every failure maps to one error whose message
 * carries nothing of the sandbox's output, and the seed corpus of tests/fuzz/fuzz_file_helper.c
 * (tests/fuzz/corpus/file_helper/) is replayed. tests/core/test_files.c and
 * tests/files/test_file_helper.py check the same through the files API on the real engine.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "base/codec.h"
#include "core/files/file_helper.h"
#include "tests/common/corpus.h"

Test(file_helper, runs_absolute_programs_with_a_fixed_environment)
{
    const char *argv[FILE_HELPER_ARGV_LEN];
    file_helper_argv(argv, FILE_HELPER_GET, "data/x.csv", "100");
    cr_assert_str_eq(argv[0], "/usr/bin/env");
    cr_assert_str_eq(argv[1], "-i");
    int python = -1;
    for (int i = 2; argv[i] != NULL; i++) {
        if (argv[i][0] == '/' && python < 0)
            python = i;
        if (python < 0)
            cr_assert(strchr(argv[i], '=') != NULL, "before the program only NAME=value: %s", argv[i]);
    }
    cr_assert(python > 0 && strcmp(argv[python], "/usr/bin/python3") == 0);
    cr_assert_str_eq(argv[python + 1], "-I");
    cr_assert_str_eq(argv[python + 2], "-S");
    cr_assert_str_eq(argv[FILE_HELPER_ARGV_LEN - 4], "get");
    char temp[48];
    file_helper_temp_name(temp);
    cr_assert(file_helper_temp_name_ok(temp), "%s", temp);
    cr_assert(strncmp(temp, FILE_HELPER_TEMP_PREFIX, strlen(FILE_HELPER_TEMP_PREFIX)) == 0);
    cr_assert(!file_helper_temp_name_ok(".runbox-tmp-xyz") && !file_helper_temp_name_ok("x") &&
              !file_helper_temp_name_ok(NULL));
    cr_assert_str_eq(argv[FILE_HELPER_ARGV_LEN - 3], "data/x.csv");
    cr_assert_str_eq(argv[FILE_HELPER_ARGV_LEN - 2], "100");
    cr_assert_null(argv[FILE_HELPER_ARGV_LEN - 1]);

    json_t *vars = json_pack("{s:s, s:s, s:s}", "PATH", "/workspace/bin", "LD_PRELOAD", "/workspace/x.so", "MY_VAR",
                             "1");
    const char **env = file_helper_env(vars);
    size_t n = 0;
    int path_set = 0;
    for (; env[n] != NULL; n++) {
        if (strncmp(env[n], "PATH=", 5) == 0) {
            path_set = 1;
            cr_assert(strstr(env[n], "/workspace") == NULL, "%s", env[n]);
        } else {
            cr_assert(strchr(env[n], '=') == NULL, "a session variable is removed, not set: %s", env[n]);
            cr_assert(json_object_get(vars, env[n]) != NULL, "%s", env[n]);
        }
    }
    cr_assert_eq(n, 4);
    cr_assert(path_set);
    free(env);
    json_decref(vars);
    env = file_helper_env(NULL);
    cr_assert(env[0] != NULL && strncmp(env[0], "PATH=", 5) == 0 && env[1] == NULL);
    free(env);
}

Test(file_helper, paths_are_checked_exactly)
{
    static const char *const good[] = {"/workspace/a", "/workspace/a/b.txt", "/workspace/.hidden", "/workspace/a..b",
                                       "/workspace/...", "/workspace/é", "/workspace/bad\\xff.bin",
                                       "/workspace/new\\x0aline", "/workspace/back\\x5cslash/\\x01"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        cr_expect(file_helper_path_ok(good[i], 0), "%s", good[i]);
    cr_expect(file_helper_path_ok("/workspace", 1));
    cr_expect(!file_helper_path_ok("/workspace", 0));

    static const char *const bad[] = {
        "/workspace/../etc/x", "/workspace/a/../../etc", "/workspace/..", "/workspace/.", "/workspace/./a",
        "/workspace//a",       "/workspace/a/",          "/workspace/",   "/workspacex", "/workspacex/a",
        "workspace/a",         "/etc/passwd",            "",              "/",           "/workspace/a\nb",
        "/workspace/a\x7f",
        /* the name form, canonical only: escapes where none is needed, upper case, an escaped
         * '/', a bare backslash */
        "/workspace/\\x41", "/workspace/a\\xFF", "/workspace/a\\x2fb", "/workspace/\\x2e\\x2e", "/workspace/a\\q",
        "/workspace/a\\", "/workspace/a\\x00",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_expect(!file_helper_path_ok(bad[i], 1), "%s", bad[i]);
    cr_expect(!file_helper_path_ok(NULL, 1));

    char *longp = malloc(5000);
    strcpy(longp, "/workspace");
    for (size_t n = strlen(longp); n < 4990; n = strlen(longp))
        strcat(longp, "/abcdefgh");
    cr_expect(!file_helper_path_ok(longp, 0));
    free(longp);

    cr_expect(file_helper_name_ok("x.csv"));
    cr_expect(file_helper_name_ok("..x"));
    static const char *const bad_names[] = {"", ".", "..", "a/b", "/", "a\tb"};
    for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++)
        cr_expect(!file_helper_name_ok(bad_names[i]), "%s", bad_names[i]);
    cr_expect(!file_helper_name_ok(NULL));
    char name[300];
    memset(name, 'n', sizeof(name) - 1);
    name[sizeof(name) - 1] = '\0';
    cr_expect(!file_helper_name_ok(name));
}

Test(file_helper, listings_keep_only_well_formed_entries)
{
    json_t *in = json_loads("["
                            "{\"path\":\"a.txt\",\"type\":\"file\",\"size\":3,\"modified\":0,\"extra\":\"x\"},"
                            "{\"path\":\"ln\",\"type\":\"symlink\",\"size\":0,\"modified\":0,\"target\":\"/etc\","
                            "\"escapes\":true},"
                            "{\"path\":\"../etc/passwd\",\"type\":\"file\",\"size\":1,\"modified\":0},"
                            "{\"path\":\"/abs\",\"type\":\"file\",\"size\":1,\"modified\":0},"
                            "{\"path\":\"a\",\"type\":\"device\",\"size\":1,\"modified\":0},"
                            "{\"path\":\"b\",\"type\":\"file\",\"size\":\"1\",\"modified\":0},"
                            "{\"path\":\"c\",\"type\":\"file\",\"size\":-1,\"modified\":0},"
                            "{\"path\":\"d\",\"type\":\"file\",\"size\":1},"
                            "{\"path\":7,\"type\":\"file\",\"size\":1,\"modified\":0},"
                            "\"not an object\""
                            "]",
                            0, NULL);
    cr_assert_not_null(in);
    json_t *out = file_helper_listing(in);
    cr_assert_eq(json_array_size(out), 2, "%s", json_dumps(out, 0));
    json_t *a = json_array_get(out, 0);
    cr_assert_str_eq(json_string_value(json_object_get(a, "path")), "a.txt");
    cr_assert_null(json_object_get(a, "extra"));
    cr_assert(json_is_string(json_object_get(a, "modified")));
    json_t *ln = json_array_get(out, 1);
    cr_assert_str_eq(json_string_value(json_object_get(ln, "target")), "/etc");
    cr_assert(json_is_true(json_object_get(ln, "escapes")));
    json_decref(out);
    json_decref(in);
}

Test(file_helper, listings_give_the_bytes_of_escaped_names)
{
    json_t *in = json_loads("[{\"path\":\"d\\\\xfe/bad\\\\xff.bin\",\"type\":\"file\",\"size\":1,\"modified\":0},"
                            "{\"path\":\"plain\",\"type\":\"file\",\"size\":1,\"modified\":0},"
                            "{\"path\":\"\\\\x41\",\"type\":\"file\",\"size\":1,\"modified\":0},"
                            "{\"path\":\"ln\",\"type\":\"symlink\",\"size\":0,\"modified\":0,"
                            "\"target\":\"a\\nb\"}]",
                            0, NULL);
    cr_assert_not_null(in);
    json_t *out = file_helper_listing(in);
    cr_assert_eq(json_array_size(out), 3, "%s", json_dumps(out, 0));
    json_t *bad = json_array_get(out, 0);
    cr_assert_str_eq(json_string_value(json_object_get(bad, "path")), "d\\xfe/bad\\xff.bin");
    cr_assert_str_eq(json_string_value(json_object_get(bad, "path_bytes")), "ZP4vYmFk/y5iaW4=");
    cr_assert_null(json_object_get(json_array_get(out, 1), "path_bytes"));
    /* a raw newline in a target is not the name form: the target is left out, the link listed */
    json_t *ln = json_array_get(out, 2);
    cr_assert_null(json_object_get(ln, "target"));
    cr_assert(json_is_true(json_object_get(ln, "escapes")));
    json_decref(out);
    json_decref(in);
}

/* file_helper_answer of op for exit code and out; *msg gets the message. */
static rb_err answer_of(file_helper_op op, int code, const char *out, json_t **doc, char *msg)
{
    return file_helper_answer(op, "data/x.csv", code, out, strlen(out), doc, msg);
}

Test(file_helper, answers_map_to_one_error_each_and_never_carry_the_sandboxs_words)
{
    char msg[RB_ERR_LEN];
    json_t *doc = NULL;
    static const struct {
        file_helper_op op;
        int code;
        const char *out;
        rb_err want;
        const char *mention;
    } v[] = {
        {FILE_HELPER_PUT, 7, "{\"errno\":\"ENOSPC\",\"error\":\"No space left on device\"}", RB_ENOSPC,
         "workspace_size"},
        {FILE_HELPER_MKDIR, 7, "{\"errno\":\"EDQUOT\",\"error\":\"\"}", RB_ENOSPC, "quota"},
        {FILE_HELPER_GET, 7, "{\"errno\":\"EACCES\",\"error\":\"Permission denied\"}", RB_EFORBIDDEN,
         "permission denied"},
        {FILE_HELPER_DELETE, 7, "{\"errno\":\"EPERM\"}", RB_EFORBIDDEN, "delete 'data/x.csv'"},
        {FILE_HELPER_GET, 7, "{\"errno\":\"ENOENT\"}", RB_ENOTFOUND, "no such file"},
        {FILE_HELPER_MKDIR, 7, "{\"errno\":\"EEXIST\"}", RB_ECONFLICT, "make the folder 'data/x.csv'"},
        {FILE_HELPER_PUT, 7, "{\"errno\":\"ENAMETOOLONG\"}", RB_EINVAL, "too long"},
        {FILE_HELPER_LIST, 7, "{\"errno\":\"EIO\",\"error\":\"bad\\u001b[31m\\nthing\"}", RB_EIO, "bad?[31m?thing"},
        {FILE_HELPER_GET, 3, "{}", RB_EFORBIDDEN, "leads outside /workspace"},
        {FILE_HELPER_GET, 4, "{}", RB_ENOTFOUND, "no file 'data/x.csv'"},
        {FILE_HELPER_GET, 5, "{\"type\":\"directory\"}", RB_ECONFLICT, "a folder"},
        {FILE_HELPER_PUT, 5, "{\"type\":\"directory\"}", RB_ECONFLICT, "not a regular file"},
        {FILE_HELPER_PUT, 9, "{\"target\":\"/etc/passwd\"}", RB_EFORBIDDEN,
         "'data/x.csv' is a symbolic link (to '/etc/passwd'): an upload neither replaces nor follows a link"},
        {FILE_HELPER_COMMIT, 9, "{\"target\":\"a\\u001b[31m\\nb\"}", RB_EFORBIDDEN,
         "'data/x.csv' is a symbolic link: an upload"},
        {FILE_HELPER_COMMIT, 9, "{}", RB_EFORBIDDEN, "delete the link first"},
        {FILE_HELPER_GET, 1, "Traceback (most recent call last):\n  File \"<string>\"\nPermissionError: x", RB_EIO,
         "no answer"},
        {FILE_HELPER_GET, 0, "", RB_EIO, "no answer"},
        {FILE_HELPER_GET, 0, "[1]", RB_EIO, "no answer"},
        {FILE_HELPER_GET, 8, "{\"error\":\"ValueError\"}", RB_EIO, "exit code 8"},
        {FILE_HELPER_GET, 6, "{\"size\":\"big\"}", RB_EIO, "exit code 6"},
        {FILE_HELPER_PUT, 0, "{\"dir\":\"/workspace\",\"name\":\"x\"}", RB_EIO, "unusable"},
        {FILE_HELPER_GET, 0, "{\"real\":\"/workspace/x\",\"size\":1,\"modified\":0,\"linked\":true}", RB_EIO,
         "unusable"},
        {FILE_HELPER_LIST, 0, "{\"files\":{}}", RB_EIO, "no file list"},
    };
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        rb_err e = answer_of(v[i].op, v[i].code, v[i].out, &doc, msg);
        cr_expect_eq(e, v[i].want, "vector %zu: %d (%s)", i, e, msg);
        cr_expect(strstr(msg, v[i].mention) != NULL, "vector %zu: '%s' lacks '%s'", i, msg, v[i].mention);
        cr_expect(strstr(msg, "Traceback") == NULL && strstr(msg, "Error:") == NULL && strchr(msg, '\n') == NULL &&
                      strchr(msg, 0x1b) == NULL,
                  "vector %zu: %s", i, msg);
        cr_expect_null(doc, "vector %zu", i);
        json_decref(doc);
        doc = NULL;
    }

    cr_assert_eq(answer_of(FILE_HELPER_GET, 6, "{\"size\":99}", &doc, msg), RB_ETOOBIG);
    cr_assert_eq(json_integer_value(json_object_get(doc, "size")), 99);
    json_decref(doc);
    cr_assert_eq(answer_of(FILE_HELPER_PUT, 0,
                           "{\"dir\":\"/workspace/d\\\\xfe\",\"name\":\"n\\\\x0a\",\"free\":4096,\"total\":8192}", &doc,
                           msg),
                 RB_OK, "%s", msg);
    cr_assert_str_eq(json_string_value(json_object_get(doc, "dir")), "/workspace/d\\xfe");
    cr_assert_eq(json_integer_value(json_object_get(doc, "free")), 4096);
    cr_assert_null(json_object_get(doc, "block"));
    json_decref(doc);
    /* the file system's block size comes through when it is a count, and only then */
    cr_assert_eq(answer_of(FILE_HELPER_PUT, 0, "{\"dir\":\"/workspace\",\"name\":\"n\",\"free\":1,\"total\":2,\"block\":65536}",
                           &doc, msg),
                 RB_OK, "%s", msg);
    cr_assert_eq(json_integer_value(json_object_get(doc, "block")), 65536);
    json_decref(doc);
    cr_assert_eq(answer_of(FILE_HELPER_PUT, 0, "{\"dir\":\"/workspace\",\"name\":\"n\",\"free\":1,\"total\":2,\"block\":-1}",
                           &doc, msg),
                 RB_OK, "%s", msg);
    cr_assert_null(json_object_get(doc, "block"));
    json_decref(doc);
    cr_assert_eq(answer_of(FILE_HELPER_GET, 0,
                           "{\"real\":\"/workspace/.runbox-tmp-0123456789abcdef\",\"size\":1,\"modified\":0,"
                           "\"linked\":true}",
                           &doc, msg),
                 RB_OK, "%s", msg);
    cr_assert(json_is_true(json_object_get(doc, "linked")));
    json_decref(doc);
    cr_assert_eq(answer_of(FILE_HELPER_COMMIT, 0, "{}", &doc, msg), RB_OK);
    cr_assert(json_is_object(doc));
    json_decref(doc);
}

/* A seed as fuzz_file_helper.c reads it: operation, exit code, output; the same checks. */
static void check_seed(void *data, const char *seed, const char *path, const char *buf, size_t len)
{
    (void)path;
    (*(int *)data)++;
    if (len < 2)
        return;
    file_helper_op op = (file_helper_op)((unsigned char)buf[0] % (FILE_HELPER_DISCARD + 1));
    char err[RB_ERR_LEN] = "";
    json_t *doc = NULL;
    rb_err e = file_helper_answer(op, "x", (unsigned char)buf[1] % 10, buf + 2, len - 2, &doc, err);
    cr_expect_eq(e == RB_OK || e == RB_ETOOBIG, doc != NULL, "%s", seed);
    for (const char *p = err; *p; p++)
        cr_expect((unsigned char)*p >= 0x20, "%s: %s", seed, err);
    if (e == RB_OK && op == FILE_HELPER_GET)
        cr_expect(file_helper_path_ok(json_string_value(json_object_get(doc, "real")), 0), "%s", seed);
    if (e == RB_OK && op == FILE_HELPER_PUT)
        cr_expect(file_helper_path_ok(json_string_value(json_object_get(doc, "dir")), 1), "%s", seed);
    json_decref(doc);
}

Test(file_helper, fuzz_corpus_replay)
{
    int n = 0;
    corpus_each("file_helper", check_seed, &n);
    cr_assert_gt(n, 0, "no seeds in tests/fuzz/corpus/file_helper");
}
