/*
 * e2b_wire.c: E2B paths and the list's metadata filter (server/e2b/e2b_wire.h), pure
 * functions over untrusted bytes, fuzzed by tests/fuzz/fuzz_e2b.c.
 */
#include "server/e2b/e2b_wire.h"

#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "server/e2b/e2b.h"
#include "server/query.h"

const char *e2b_path_map(const char *path)
{
    static const char home[] = E2B_HOME;
    size_t nh = sizeof(home) - 1;
    if (path == NULL || path[0] == '\0')
        return NULL;
    if (path[0] != '/')
        return path;
    if (strncmp(path, home, nh) != 0 || (path[nh] != '\0' && path[nh] != '/'))
        return NULL;
    const char *rest = path + nh;
    while (*rest == '/')
        rest++;
    return *rest == '\0' ? E2B_WORKDIR : rest;
}

int e2b_metadata_match(const char *filter, size_t n, json_t *meta)
{
    size_t start = 0;
    int ok = 1;
    while (ok && start < n) {
        size_t stop = start;
        while (stop < n && filter[stop] != '&')
            stop++;
        if (stop > start) { /* "a=1&&b=2": empty pairs are skipped */
            const char *eq = memchr(filter + start, '=', stop - start);
            if (eq == NULL) {
                ok = 0;
                break;
            }
            size_t kn = (size_t)(eq - (filter + start)), vn = stop - start - kn - 1;
            char *key = xmalloc(kn + 1), *val = xmalloc(vn + 1);
            size_t klen = query_decode(filter + start, kn, key);
            size_t vlen = query_decode(eq + 1, vn, val);
            json_t *have = strlen(key) == klen ? json_object_get(meta, key) : NULL;
            ok = json_is_string(have) && json_string_length(have) == vlen &&
                 memcmp(json_string_value(have), val, vlen) == 0;
            free(key);
            free(val);
        }
        start = stop + 1;
    }
    return ok;
}
