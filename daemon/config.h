/*
 * config: runboxd's one configuration: the settings of each layer it assembles (server/, core/)
 * and its own, filled from one table of keys. Defaults come from the named macros below, then
 * the environment (RUNBOX_*), then command-line flags; config_validate runs once at start-up
 * and names the bad key. Read-only after start-up. No I/O beyond reading argv/environ.
 */
#ifndef RB_DAEMON_CONFIG_H
#define RB_DAEMON_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "core/settings.h"
#include "server/settings.h"

typedef struct rb_config {
    server_settings server; /* the HTTP layer's (server/settings.h) */
    core_settings core;     /* the session manager's (core/settings.h) */
    char *log_level;        /* --log-level / RUNBOX_LOG_LEVEL: debug|info|warn|error */
} rb_config;

/** Fills cfg with every layer's defaults (heap strings owned by cfg). */
void config_init(rb_config *cfg);
/** Frees the strings. */
void config_dispose(rb_config *cfg);
/** Sets one key by its flag name without dashes ("listen", "db", "max-body", ...) from text.
 * RB_EINVAL naming the key and the expected form when the value is bad or the key unknown. */
rb_err config_set(rb_config *cfg, const char *key, const char *value, char *err);
/** Whether key is a true/false switch, which a command line may give without a value
 * ("--allow-unauthenticated" alone means true). */
int config_is_switch(const char *key);
/** Applies RUNBOX_<KEY> variables from the environment (key upper-cased, '-' -> '_'). */
rb_err config_load_env(rb_config *cfg, char *err);
/** Checks cross-field rules (defaults within maxima, positive sizes); names the bad key. */
rb_err config_validate(const rb_config *cfg, char *err);

/** Callback of config_each: flag name ("max-body"), environment variable ("RUNBOX_MAX_BODY"),
 * the current value as text and a one-line description. All strings are borrowed for the call. */
typedef void (*config_key_cb)(void *data, const char *key, const char *env, const char *value, const char *help);
/** Calls cb once per key, in a stable order (used by --help). */
void config_each(const rb_config *cfg, config_key_cb cb, void *data);

#endif
