/*
 * crashpoint.c: the test-only crash hook (base/crashpoint.h).
 */
#include "base/crashpoint.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"

static int loaded;
static char want[64]; /* the step named, "" when inactive */
static long times = 1; /* passages left until the kill */

static void load(void)
{
    loaded = 1;
    const char *v = getenv("RUNBOX_TEST_CRASH_AT");
    if (v == NULL || v[0] == '\0' || strlen(v) >= sizeof(want))
        return;
    strcpy(want, v);
    char *hash = strchr(want, '#');
    if (hash != NULL) {
        *hash = '\0';
        times = strtol(hash + 1, NULL, 10);
        if (times < 1)
            times = 1;
    }
}

int rb_crash_armed(void)
{
    if (!loaded)
        load();
    return want[0] != '\0';
}

void rb_crash_point(const char *step)
{
    if (!rb_crash_armed() || strcmp(step, want) != 0 || --times > 0)
        return;
    rb_warn("RUNBOX_TEST_CRASH_AT: killing runboxd at %s", step);
    raise(SIGKILL);
}
