/*
 * log: the one logger. One line per event to stderr, with an RFC 3339 time and a level; CR and
 * LF inside a message are folded so that a log line can never be forged by the text it quotes.
 * Libraries (core/, store/, docker/) return errors; the layer that decides logs once.
 */
#ifndef RB_BASE_LOG_H
#define RB_BASE_LOG_H

typedef enum rb_log_level { RB_LOG_DEBUG, RB_LOG_INFO, RB_LOG_WARN, RB_LOG_ERROR } rb_log_level;
/** Events below lvl are dropped (default RB_LOG_INFO). */
void rb_log_set_level(rb_log_level lvl);
/** Parses "debug", "info", "warn" or "error" into *out; returns 0, or -1 for another word. */
int rb_log_parse_level(const char *s, rb_log_level *out);
/** Writes one line "<time> <level> <message>" to stderr when lvl is at or above the level set;
 * the message is cut at about 2 KiB. */
void rb_log(rb_log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define rb_debug(...) rb_log(RB_LOG_DEBUG, __VA_ARGS__)
#define rb_info(...) rb_log(RB_LOG_INFO, __VA_ARGS__)
#define rb_warn(...) rb_log(RB_LOG_WARN, __VA_ARGS__)
#define rb_error(...) rb_log(RB_LOG_ERROR, __VA_ARGS__)

#endif
