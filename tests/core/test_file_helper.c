/*
 * Tests of core/file_helper.c without Docker: the helper's command line and environment
 * changes leave nothing to the session's PATH or loader variables, and its answers are
 * accepted only in normal form under /workspace. tests/core/test_files.c and
 * tests/files/test_file_helper.py check the same through the files API on the real engine.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "core/file_helper.h"

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
                                       "/workspace/...", "/workspace/é"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        cr_expect(file_helper_path_ok(good[i], 0), "%s", good[i]);
    cr_expect(file_helper_path_ok("/workspace", 1));
    cr_expect(!file_helper_path_ok("/workspace", 0));

    static const char *const bad[] = {
        "/workspace/../etc/x", "/workspace/a/../../etc", "/workspace/..", "/workspace/.", "/workspace/./a",
        "/workspace//a",       "/workspace/a/",          "/workspace/",   "/workspacex", "/workspacex/a",
        "workspace/a",         "/etc/passwd",            "",              "/",           "/workspace/a\nb",
        "/workspace/a\x7f",
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
