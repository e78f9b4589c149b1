/*
 * audit_query.c: reading the audit trail (core_audit_query, core/core.h): who may, and a page
 * of events in the API's shape.
 */
#include "base/base.h"
#include "core/audit/audit.h"
#include "core/heart.h"
#include "store/store.h"

#define PAGE_DEFAULT 100
#define PAGE_MAX 1000

rb_err core_audit_query(rb_core *c, const core_caller *who, const core_audit_filter *q, json_t **out, char *err)
{
    *out = NULL;
    if (who != NULL && who->role == CORE_ROLE_USER)
        return rb_fail(RB_EFORBIDDEN, err,
                       "only admin and viewer keys (role= in the api-keys file) read the audit trail; the key '%s' "
                       "is a user",
                       who->owner);
    int limit = q->limit == 0 ? PAGE_DEFAULT : q->limit;
    if (limit < 1 || limit > PAGE_MAX)
        return rb_fail(RB_EINVAL, err, "'limit' is 1 to %d events a page", PAGE_MAX);
    if (q->since < 0 || q->until < 0 || q->after < 0)
        return rb_fail(RB_EINVAL, err, "'since', 'until' and 'after' must not be negative");
    /* one more than the page, to know whether another follows */
    store_audit_filter f = {q->key, q->session, q->kind, q->since, q->until, q->after, limit + 1};
    json_t *rows = NULL;
    rb_err e = store_audit_query(core_heart_store(c), &f, &rows, err);
    if (e != RB_OK)
        return e;
    json_t *events = json_array();
    size_t i;
    json_t *row;
    json_int_t last = 0;
    json_array_foreach(rows, i, row)
    {
        if (i == (size_t)limit)
            break;
        last = json_integer_value(json_object_get(row, "seq"));
        core_json_time(row, "at", json_integer_value(json_object_get(row, "at"))); /* the row is ours */
        json_array_append(events, row);
    }
    int more = json_array_size(rows) > (size_t)limit;
    json_decref(rows);
    *out = json_pack("{s:o, s:o}", "events", events, "next", more ? json_integer(last) : json_null());
    return RB_OK;
}
