/*
 * latency.c: the call latency histogram (base/latency.h).
 */
#include "base/latency.h"

double rb_latency_bound(int i)
{
    static const double bounds[RB_LATENCY_BUCKETS] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                                      1,     2.5,  5,     10,   30,  120};
    return i >= 0 && i < RB_LATENCY_BUCKETS ? bounds[i] : 0;
}

void rb_latency_add(rb_latency *h, double seconds)
{
    if (!(seconds > 0))
        seconds = 0;
    int b = 0;
    while (b < RB_LATENCY_BUCKETS && seconds > rb_latency_bound(b))
        b++;
    h->bucket[b]++;
    h->count++;
    h->sum += seconds;
}

void rb_latency_merge(rb_latency *into, const rb_latency *from)
{
    for (int b = 0; b <= RB_LATENCY_BUCKETS; b++)
        into->bucket[b] += from->bucket[b];
    into->count += from->count;
    into->sum += from->sum;
}
