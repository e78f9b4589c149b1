/*
 * support_store.c: helpers for the store/ tests (see support_store.h).
 */
#include "support_store.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char sup_dir[64];
char sup_db_path[128];

void sup_tmpdir_open(const char *name)
{
    snprintf(sup_dir, sizeof(sup_dir), "/tmp/runbox-test-%s-XXXXXX", name);
    cr_assert_not_null(mkdtemp(sup_dir));
    snprintf(sup_db_path, sizeof(sup_db_path), "%s/runbox.db", sup_dir);
}

void sup_tmpdir_close(void)
{
    DIR *d = opendir(sup_dir);
    if (d == NULL)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char p[512];
        snprintf(p, sizeof(p), "%s/%s", sup_dir, e->d_name);
        unlink(p);
    }
    closedir(d);
    rmdir(sup_dir);
}

store *sup_store_open(char *err)
{
    store *st = NULL;
    rb_err e = store_open(sup_db_path, &st, err);
    cr_assert_eq(e, RB_OK, "store_open: %s", err);
    cr_assert_not_null(st);
    return st;
}
