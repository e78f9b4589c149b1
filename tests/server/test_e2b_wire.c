/*
 * test_e2b_wire.c: server/e2b/e2b_wire.c: E2B paths mapped onto the workspace and the metadata
 * filter of GET /e2b/v2/sandboxes, and a replay of the libFuzzer seed corpus in
 * tests/fuzz/corpus/e2b/ through the checks of tests/fuzz/fuzz_e2b.c.
 */
#include <criterion/criterion.h>
#include <string.h>

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
    cr_assert_eq(e2b_time_parse("2026-11-21T23:59:01.123Z", &ms), 0);
    cr_expect_eq(ms, 1795305541123LL);
    cr_assert_eq(e2b_time_parse("2026-11-22T00:59:01.123456+01:00", &ms), 0);
    cr_expect_eq(ms, 1795305541123LL);
    cr_assert_eq(e2b_time_parse("2026-11-21T18:59:01-05:00", &ms), 0);
    cr_expect_eq(ms, 1795305541000LL);
    cr_assert_eq(e2b_time_parse("1970-01-01T00:00:00", &ms), 0);
    cr_expect_eq(ms, 0);
    cr_expect_eq(e2b_time_parse("2026-02-29T00:00:00Z", &ms), -1);
    cr_expect_eq(e2b_time_parse("2024-02-29T00:00:00Z", &ms), 0);
    cr_expect_eq(e2b_time_parse("2026-13-01T00:00:00Z", &ms), -1);
    cr_expect_eq(e2b_time_parse("2026-11-21T23:59:01.Z", &ms), -1);
    cr_expect_eq(e2b_time_parse("2026-11-21T23:59:01+0100", &ms), -1);
    cr_expect_eq(e2b_time_parse("2026-11-21", &ms), -1);
    cr_expect_eq(e2b_time_parse("2026-11-21T23:59:01Zjunk", &ms), -1);
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
