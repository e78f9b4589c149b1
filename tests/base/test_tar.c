/*
 * test_tar.c: base/tar.c: archives built by tar_build_file walk back to the same bytes (short
 * and PAX long names), archives written by GNU tar in every format are read, malformed ones
 * (bad checksum, truncated data, runaway PAX records) are rejected without reading out of
 * bounds, and a replay of the libFuzzer seed corpus in tests/fuzz/corpus/tar/.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/tar.h"
#include "tests/common/corpus.h"

typedef struct seen {
    int n;
    char names[8][TAR_NAME_MAX + 1];
    char types[8];
    char links[8][128];
    char data[8][1024];
    uint64_t sizes[8];
    int64_t mtimes[8];
} seen;

static int collect(void *data, const tar_entry *e)
{
    seen *s = data;
    if (s->n >= 8)
        return 1;
    snprintf(s->names[s->n], sizeof(s->names[0]), "%s", e->name);
    snprintf(s->links[s->n], sizeof(s->links[0]), "%.127s", e->link);
    s->types[s->n] = e->type;
    s->sizes[s->n] = e->size;
    s->mtimes[s->n] = e->mtime;
    if (e->data != NULL && e->size < sizeof(s->data[0]))
        memcpy(s->data[s->n], e->data, e->size);
    s->n++;
    return 0;
}

Test(tar, build_and_walk_round_trip)
{
    rb_buf b;
    rb_buf_init(&b, 1 << 20);
    char err[RB_ERR_LEN];
    cr_assert_eq(tar_build_file(&b, "data.csv", "a,b\n1,2\n", 8, 0644, 1000, 1000, 1700000000, err), RB_OK, "%s", err);
    cr_assert_eq(b.len % 512, 0);
    seen s = {0};
    cr_assert_eq(tar_walk(b.data, b.len, collect, &s, err), RB_OK, "%s", err);
    cr_assert_eq(s.n, 1);
    cr_assert_str_eq(s.names[0], "data.csv");
    cr_assert_eq(s.types[0], TAR_FILE);
    cr_assert_eq(s.sizes[0], 8);
    cr_assert_eq(s.mtimes[0], 1700000000);
    cr_assert_str_eq(s.data[0], "a,b\n1,2\n");
    rb_buf_dispose(&b);
}

Test(tar, long_names_use_pax)
{
    char name[301];
    memset(name, 'n', 300);
    name[300] = '\0';
    name[100] = '/';
    rb_buf b;
    rb_buf_init(&b, 1 << 20);
    char err[RB_ERR_LEN];
    cr_assert_eq(tar_build_file(&b, name, "", 0, 0600, 1000, 1000, 1, err), RB_OK, "%s", err);
    seen s = {0};
    cr_assert_eq(tar_walk(b.data, b.len, collect, &s, err), RB_OK, "%s", err);
    cr_assert_eq(s.n, 1);
    cr_assert_str_eq(s.names[0], name);
    cr_assert_eq(s.sizes[0], 0);
    rb_buf_dispose(&b);

    char huge[TAR_NAME_MAX + 2];
    memset(huge, 'x', sizeof(huge) - 1);
    huge[sizeof(huge) - 1] = '\0';
    rb_buf_init(&b, 1 << 20);
    cr_assert_eq(tar_build_file(&b, huge, "", 0, 0600, 0, 0, 0, err), RB_EINVAL);
    cr_assert_eq(tar_build_file(&b, "", "", 0, 0600, 0, 0, 0, err), RB_EINVAL);
    rb_buf_dispose(&b);
}

Test(tar, size_limit_is_an_error_not_a_crash)
{
    rb_buf b;
    rb_buf_init(&b, 1024);
    char err[RB_ERR_LEN], data[2048] = {0};
    cr_assert_eq(tar_build_file(&b, "f", data, sizeof(data), 0644, 0, 0, 0, err), RB_ETOOBIG);
    cr_assert_eq(b.len, 0);
    rb_buf_dispose(&b);
}

Test(tar, reads_gnu_tar_formats)
{
    char err[RB_ERR_LEN];
    size_t len;
    seen s = {0};
    char *t = corpus_slurp(RB_SOURCE_DIR "/tests/fuzz/corpus/tar/pax-tree.tar", &len);
    cr_assert_eq(tar_walk(t, len, collect, &s, err), RB_OK, "%s", err);
    free(t);
    int found_long = 0, found_link = 0, found_big = 0;
    for (int i = 0; i < s.n; i++) {
        if (strlen(s.names[i]) == strlen("d/") + 150)
            found_long = 1;
        if (strcmp(s.names[i], "d/link") == 0 && s.types[i] == TAR_SYMLINK && strcmp(s.links[i], "../a.txt") == 0)
            found_link = 1;
        if (strcmp(s.names[i], "d/big.txt") == 0 && s.sizes[i] == 700 && s.data[i][699] == 'x')
            found_big = 1;
    }
    cr_assert(found_long && found_link && found_big, "long %d link %d big %d", found_long, found_link, found_big);

    memset(&s, 0, sizeof(s));
    t = corpus_slurp(RB_SOURCE_DIR "/tests/fuzz/corpus/tar/gnu-longname.tar", &len);
    cr_assert_eq(tar_walk(t, len, collect, &s, err), RB_OK, "%s", err);
    free(t);
    found_long = 0;
    for (int i = 0; i < s.n; i++)
        if (strlen(s.names[i]) == strlen("d/") + 150)
            found_long = 1;
    cr_assert(found_long);
}

Test(tar, rejects_malformed_archives)
{
    rb_buf b;
    rb_buf_init(&b, 1 << 20);
    char err[RB_ERR_LEN];
    cr_assert_eq(tar_build_file(&b, "f.txt", "hello", 5, 0644, 0, 0, 0, err), RB_OK);
    seen s = {0};

    /* bad checksum */
    char *bad = xmalloc(b.len);
    memcpy(bad, b.data, b.len);
    bad[0] ^= 1;
    cr_assert_eq(tar_walk(bad, b.len, collect, &s, err), RB_EINVAL);
    cr_assert(strstr(err, "checksum") != NULL, "%s", err);

    /* data past the end */
    memcpy(bad, b.data, b.len);
    cr_assert_eq(tar_walk(bad, 514, collect, &s, err), RB_EINVAL);
    cr_assert(strstr(err, "past the end") != NULL, "%s", err);

    /* a size field that is not octal (checksum recomputed so only the size is wrong) */
    memcpy(bad, b.data, b.len);
    memcpy(bad + 124, "99999999999", 11);
    memset(bad + 148, ' ', 8);
    unsigned sum = 0;
    for (int i = 0; i < 512; i++)
        sum += (unsigned char)bad[i];
    snprintf(bad + 148, 8, "%06o", sum);
    cr_assert_eq(tar_walk(bad, b.len, collect, &s, err), RB_EINVAL);
    free(bad);
    rb_buf_dispose(&b);

    /* a PAX record whose length points past its data */
    rb_buf_init(&b, 1 << 20);
    char name[200];
    memset(name, 'a', 199);
    name[199] = '\0';
    cr_assert_eq(tar_build_file(&b, name, "x", 1, 0644, 0, 0, 0, err), RB_OK);
    bad = xmalloc(b.len);
    memcpy(bad, b.data, b.len);
    memcpy(bad + 512, "999", 3);
    cr_assert_eq(tar_walk(bad, b.len, collect, &s, err), RB_EINVAL);
    free(bad);
    rb_buf_dispose(&b);

    /* garbage shorter than a block is an empty archive, not an error */
    cr_assert_eq(tar_walk("abc", 3, collect, &s, err), RB_OK);
}

/* A seed is a valid archive or a clean RB_EINVAL, never anything else. */
static void check_tar_seed(void *data, const char *seed, const char *path, const char *t, size_t len)
{
    (void)data;
    (void)path;
    seen s = {0};
    char err[RB_ERR_LEN];
    rb_err e = tar_walk(t, len, collect, &s, err);
    cr_assert(e == RB_OK || e == RB_EINVAL, "%s: %s", seed, rb_strerror(e));
}

Test(tar, fuzz_corpus_replay)
{
    cr_assert_geq(corpus_each("tar", check_tar_seed, NULL), 4);
}
