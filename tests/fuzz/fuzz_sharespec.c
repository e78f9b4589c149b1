/*
 * fuzz_sharespec.c: libFuzzer target for a caller's shared-folder mounts (core/shares/: the JSON
 * of `mounts` in REST's execution_options, MCP's create_session and E2B's metadata, any bytes).
 * The input is parsed as JSON (anything jansson takes) and given to sharespec_mounts under fixed
 * declarations for a key that may mount two of three shares. Checks memory safety and the
 * promises: the answer is RB_OK, RB_EINVAL or RB_EFORBIDDEN with a message; a list holds at
 * most SHARESPEC_MOUNTS_MAX {share, path, readonly} of shares the key may mount, each path in
 * canonical form under /workspace (it reads back as itself), a read-only share never writable,
 * no path twice or inside another. Built only with clang and -DRUNBOX_FUZZ=ON; the seed corpus
 * (tests/fuzz/corpus/sharespec/) is replayed by tests/core/test_shares.c.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/shares/sharespec.h"

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n)
{
    sharespec_list l;
    char err[RB_ERR_LEN];
    if (sharespec_parse("photos=/srv/p,out=/srv/o:rw,secret=/srv/s:rw", &l, err) != RB_OK)
        abort();
    core_caller who = {.owner = "fuzz", .shares = "photos,out"};
    json_t *v = json_loadb((const char *)in, n, JSON_DECODE_ANY, NULL);
    if (v != NULL) {
        json_t *out = NULL;
        err[0] = '\0';
        rb_err e = sharespec_mounts(&l, &who, v, &out, err);
        if (e == RB_OK) {
            if (!json_is_array(out) || json_array_size(out) > SHARESPEC_MOUNTS_MAX)
                abort();
            size_t i, j;
            json_t *m, *o;
            json_array_foreach (out, i, m) {
                const char *share = json_string_value(json_object_get(m, "share"));
                const char *path = json_string_value(json_object_get(m, "path"));
                json_t *ro = json_object_get(m, "readonly");
                const sharespec_decl *d = sharespec_find(&l, share);
                char *again = NULL;
                if (json_object_size(m) != 3 || d == NULL || !sharespec_allowed(&who, share) || path == NULL ||
                    !json_is_boolean(ro) || (!d->rw && !json_is_true(ro)) ||
                    sharespec_mount_path(path, strlen(path), "p", &again, err) != RB_OK || strcmp(again, path) != 0)
                    abort();
                free(again);
                json_array_foreach (out, j, o) {
                    const char *q = json_string_value(json_object_get(o, "path"));
                    size_t lp = strlen(path);
                    if (i != j && (strcmp(path, q) == 0 || (strncmp(path, q, lp) == 0 && q[lp] == '/')))
                        abort();
                }
            }
        } else if ((e != RB_EINVAL && e != RB_EFORBIDDEN) || out != NULL || err[0] == '\0' ||
                   memchr(err, '\0', RB_ERR_LEN) == NULL) {
            abort();
        }
        json_decref(out);
        json_decref(v);
    }
    sharespec_list_dispose(&l);
    return 0;
}
