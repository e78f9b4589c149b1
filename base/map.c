/*
 * map.c: a small open-addressing hash map from strings to borrowed pointers (base/map.h).
 * Keys are copied; values are not owned.
 */
#include "base/map.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"

struct rb_map_slot {
    char *key; /* NULL = empty; TOMBSTONE = deleted */
    void *value;
};

/* Only its address is used (a key no string can have); nothing is ever written to it. */
static const char tombstone;
#define TOMBSTONE ((char *)&tombstone)

static uint64_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

void map_init(rb_map *m)
{
    m->slots = NULL;
    m->cap = m->len = m->used = 0;
}

void map_dispose(rb_map *m)
{
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].key != NULL && m->slots[i].key != TOMBSTONE)
            free(m->slots[i].key);
    free(m->slots);
    map_init(m);
}

static struct rb_map_slot *find(const rb_map *m, const char *key)
{
    if (m->cap == 0)
        return NULL;
    size_t i = hash(key) & (m->cap - 1);
    for (;;) {
        struct rb_map_slot *sl = &m->slots[i];
        if (sl->key == NULL)
            return NULL;
        if (sl->key != TOMBSTONE && strcmp(sl->key, key) == 0)
            return sl;
        i = (i + 1) & (m->cap - 1);
    }
}

static void grow(rb_map *m)
{
    struct rb_map_slot *old = m->slots;
    size_t oldcap = m->cap;
    m->cap = oldcap ? oldcap * 2 : 16;
    /* Shrink back to the same size when the table is mostly tombstones. */
    if (oldcap && m->len * 4 < oldcap)
        m->cap = oldcap;
    m->slots = xcalloc(m->cap, sizeof(*m->slots));
    m->used = m->len;
    for (size_t i = 0; i < oldcap; i++) {
        if (old[i].key == NULL || old[i].key == TOMBSTONE)
            continue;
        size_t j = hash(old[i].key) & (m->cap - 1);
        while (m->slots[j].key != NULL)
            j = (j + 1) & (m->cap - 1);
        m->slots[j] = old[i];
    }
    free(old);
}

void *map_get(const rb_map *m, const char *key)
{
    struct rb_map_slot *sl = find(m, key);
    return sl ? sl->value : NULL;
}

void map_put(rb_map *m, const char *key, void *value)
{
    struct rb_map_slot *sl = find(m, key);
    if (sl != NULL) {
        sl->value = value;
        return;
    }
    if ((m->used + 1) * 4 >= m->cap * 3)
        grow(m);
    size_t i = hash(key) & (m->cap - 1);
    while (m->slots[i].key != NULL && m->slots[i].key != TOMBSTONE)
        i = (i + 1) & (m->cap - 1);
    if (m->slots[i].key == NULL)
        m->used++;
    m->slots[i].key = xstrdup(key);
    m->slots[i].value = value;
    m->len++;
}

void map_del(rb_map *m, const char *key)
{
    struct rb_map_slot *sl = find(m, key);
    if (sl == NULL)
        return;
    free(sl->key);
    sl->key = TOMBSTONE;
    sl->value = NULL;
    m->len--;
}

void *map_next(const rb_map *m, size_t *pos)
{
    while (*pos < m->cap) {
        struct rb_map_slot *sl = &m->slots[(*pos)++];
        if (sl->key != NULL && sl->key != TOMBSTONE)
            return sl->value;
    }
    return NULL;
}
