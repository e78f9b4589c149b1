/*
 * isolation.c: the names, the keys' lists and the runtime of each isolation
 * (core/isolation/isolation.h). No I/O.
 */
#include <string.h>

#include "core/core.h"
#include "core/heart.h"
#include "core/isolation/isolation.h"

int isolation_known(const char *name)
{
    return name != NULL && (strcmp(name, "container") == 0 || strcmp(name, "gvisor") == 0);
}

const char *isolation_runtime(const char *isolation, const char *gvisor_runtime)
{
    return isolation != NULL && strcmp(isolation, "gvisor") == 0 ? gvisor_runtime : "runc";
}

/* Calls each(word, len, arg) for every ','-separated word of list until it returns nonzero;
 * returns that value (0 when none did). */
static int each_word(const char *list, int (*each)(const char *w, size_t n, const void *arg), const void *arg)
{
    const char *p = list;
    while (p != NULL && *p) {
        size_t n = strcspn(p, ",");
        int r = each(p, n, arg);
        if (r != 0)
            return r;
        p += n;
        if (*p == ',')
            p++;
    }
    return 0;
}

static int word_bad(const char *w, size_t n, const void *arg)
{
    (void)arg;
    char name[ISOLATION_LEN];
    if (n == 0 || n >= sizeof(name))
        return 1;
    memcpy(name, w, n);
    name[n] = '\0';
    return !isolation_known(name);
}

rb_err isolation_key_check(const char *list, char *err)
{
    if (list != NULL && strcmp(list, "*") == 0)
        return RB_OK;
    if (list == NULL || *list == '\0' || list[strlen(list) - 1] == ',' || each_word(list, word_bad, NULL))
        return rb_fail(RB_EINVAL, err, "isolation= takes * or isolations joined by ',': container, gvisor");
    return RB_OK;
}

static int word_is(const char *w, size_t n, const void *arg)
{
    const char *want = arg;
    return strlen(want) == n && strncmp(w, want, n) == 0;
}

int isolation_key_allows(const char *list, const char *isolation)
{
    if (list == NULL || *list == '\0' || strcmp(list, "*") == 0)
        return isolation_known(isolation);
    return isolation_known(isolation) && each_word(list, word_is, isolation);
}

const char *isolation_key_default(const char *list, const char *server_default)
{
    if (isolation_key_allows(list, server_default))
        return server_default;
    return list != NULL && strncmp(list, "gvisor", 6) == 0 ? "gvisor" : "container";
}

rb_err core_isolation_key_check(const char *list, char *err)
{
    return isolation_key_check(list, err);
}

int64_t isolation_gvisor_host_pids(int64_t nproc)
{
    return ISOLATION_GVISOR_PIDS_BASE + nproc * ISOLATION_GVISOR_PIDS_PER_PROC;
}

int64_t isolation_gvisor_nproc(int64_t pids, int64_t memory)
{
    int64_t by_memory = memory > 0 ? memory / ISOLATION_GVISOR_PROC_MEMORY : pids;
    int64_t n = pids < by_memory ? pids : by_memory;
    return n < 16 ? 16 : n;
}

rb_err isolation_default_check(struct backend *be, const struct core_settings *cfg, char *err)
{
    const char *runtime = isolation_runtime(cfg->isolation, cfg->gvisor_runtime);
    if (backend_offers(be, runtime))
        return RB_OK;
    return rb_fail(RB_EINVAL, err,
                   "isolation: the default isolation %s needs the runtime %s, which no engine offers: register it in "
                   "the engine's daemon.json and declare it (--docker-runtimes runc+%s, or runtimes=runc+%s on "
                   "--engine; docs/security.md)",
                   cfg->isolation, runtime, runtime, runtime);
}
