/*
 * ring.c: the bounded ring of usage samples (core/usage/ring.h).
 */
#include "core/usage/ring.h"

#include <assert.h>
#include <stdlib.h>

#include "base/mem.h"

usage_ring *usage_ring_new(size_t cap)
{
    assert(cap > 0);
    usage_ring *r = xcalloc(1, sizeof(*r));
    r->items = xcalloc(cap, sizeof(*r->items));
    r->cap = cap;
    return r;
}

void usage_ring_free(usage_ring *r)
{
    if (r == NULL)
        return;
    free(r->items);
    free(r);
}

void usage_ring_push(usage_ring *r, const usage_sample *s)
{
    r->items[r->next] = *s;
    r->next = (r->next + 1) % r->cap;
    if (r->n < r->cap)
        r->n++;
}

size_t usage_ring_count(const usage_ring *r)
{
    return r->n;
}

const usage_sample *usage_ring_at(const usage_ring *r, size_t i)
{
    assert(i < r->n);
    /* the oldest is at next once the ring is full, at 0 before */
    size_t oldest = r->n < r->cap ? 0 : r->next;
    return &r->items[(oldest + i) % r->cap];
}

const usage_sample *usage_ring_last(const usage_ring *r)
{
    return r->n == 0 ? NULL : &r->items[(r->next + r->cap - 1) % r->cap];
}
