/*
 * log.c: the logger (base/log.h).
 */
#include "base/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/clock.h"

/* Process-wide on purpose, like the sink (stderr) it filters: set once at start-up by the daemon
 * (or a test), read by every layer. */
static rb_log_level log_level = RB_LOG_INFO;

void rb_log_set_level(rb_log_level lvl)
{
    log_level = lvl;
}

int rb_log_parse_level(const char *s, rb_log_level *out)
{
    static const char *const names[] = {"debug", "info", "warn", "error"};
    for (int i = 0; i < 4; i++) {
        if (strcmp(s, names[i]) == 0) {
            *out = (rb_log_level)i;
            return 0;
        }
    }
    return -1;
}

void rb_log(rb_log_level lvl, const char *fmt, ...)
{
    static const char *const tags[] = {"debug", "info", "warn", "error"};
    if (lvl < log_level)
        return;
    char ts[32], line[2048];
    rb_time_format(rb_now_ms(), ts, sizeof(ts));
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    /* One event, one line: fold any CR/LF that slipped into the message. */
    for (char *p = line; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    fprintf(stderr, "%s %s %s\n", ts, tags[lvl], line);
}
