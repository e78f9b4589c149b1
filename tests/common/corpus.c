/*
 * corpus.c: see corpus.h.
 */
#include "tests/common/corpus.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEED_MAX (16u * 1024 * 1024)

char *corpus_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    size_t cap = 4096, n = 0, got;
    char *tmp = malloc(cap);
    cr_assert_not_null(tmp);
    while ((got = fread(tmp + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            cr_assert_lt(cap, (size_t)SEED_MAX, "%s is too large for a seed", path);
            cap *= 2;
            tmp = realloc(tmp, cap);
            cr_assert_not_null(tmp);
        }
    }
    fclose(f);
    char *buf = malloc(n + 1);
    cr_assert_not_null(buf);
    memcpy(buf, tmp, n);
    buf[n] = '\0';
    free(tmp);
    *len = n;
    return buf;
}

int corpus_each(const char *name, corpus_seed_cb cb, void *data)
{
    char dir[1024];
    snprintf(dir, sizeof(dir), "%s/tests/fuzz/corpus/%s", RB_SOURCE_DIR, name);
    DIR *dp = opendir(dir);
    cr_assert_not_null(dp, "no seed corpus at %s", dir);
    struct dirent *de;
    int seeds = 0;
    while ((de = readdir(dp)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        char path[1536];
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        size_t len;
        char *buf = corpus_slurp(path, &len);
        cb(data, de->d_name, path, buf, len);
        free(buf);
        seeds++;
    }
    closedir(dp);
    return seeds;
}
