/*
 * map: a small open-addressing hash map from NUL-terminated strings to borrowed pointers (FNV-1a,
 * power-of-two capacity, tombstones). Keys are copied and owned by the map; values are not.
 * Used for core's in-memory indexes of live sessions, executions and MCP client sessions.
 */
#ifndef RB_BASE_MAP_H
#define RB_BASE_MAP_H

#include <stddef.h>

typedef struct rb_map {
    struct rb_map_slot *slots;
    size_t cap, len, used;
} rb_map;
/** Initialises an empty map (allocates nothing). */
void map_init(rb_map *m);
/** Frees the keys and the table; the values are the caller's. The map is empty afterwards. */
void map_dispose(rb_map *m);
/** The value stored under key, or NULL. */
void *map_get(const rb_map *m, const char *key);
/** Stores value under key (copied), replacing an earlier value. value must not be NULL. */
void map_put(rb_map *m, const char *key, void *value);
/** Removes key if present. */
void map_del(rb_map *m, const char *key);
/** Iteration: *pos starts at 0; returns the next value or NULL at the end. Safe against
 * map_del of the returned key while iterating. */
void *map_next(const rb_map *m, size_t *pos);

#endif
