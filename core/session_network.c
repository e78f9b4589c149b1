/*
 * session_network.c: a live session's network policy changed while it runs (PUT
 * /sessions/{id}/network, E2B's network update). The policy is checked against the operator's
 * limits (core/network/netpolicy.h), written into the session's egress proxy
 * (core/network/egress.h), and only then stored and answered: the next connection the sandbox
 * opens obeys it, also after a restart of runboxd.
 */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

typedef struct net_change {
    rb_core *c;
    core_op *op;
    char session_id[RB_ID_LEN];
    json_t *policy;
} net_change;

static void updated_cb(void *data, rb_err err, const char *msg)
{
    net_change *nc = data;
    session *s = map_get(&nc->c->sessions, nc->session_id);
    json_t *out = NULL;
    if (err == RB_OK && s == NULL) {
        err = RB_ENOTFOUND;
        msg = "the session ended";
    }
    if (err == RB_OK) {
        json_decref(s->net_policy);
        s->net_policy = json_incref(nc->policy);
        json_object_set(s->options, "network", nc->policy);
        session_persist(s);
        out = session_to_api(s);
    }
    if (!nc->op->cancelled)
        nc->op->cb(nc->op->data, err, err == RB_OK ? NULL : msg, out);
    else
        json_decref(out);
    free(nc->op);
    json_decref(nc->policy);
    free(nc);
}

rb_err core_session_network(rb_core *c, const core_caller *who, const char *session_id, json_t *body, core_cb cb,
                            void *data, core_op **handle, char *err)
{
    session *s = core__live_session(c, who, session_id, err);
    if (s == NULL)
        return RB_ENOTFOUND;
    static const char *const keys[] = {"network", NULL};
    if (!json_is_object(body) || json_object_get(body, "network") == NULL)
        return rb_fail(RB_EINVAL, err,
                       "the body must be {\"network\": false | true | {\"allow\": [host patterns], \"deny\": [host "
                       "patterns]}}");
    rb_err e = core__check_keys(body, "the request", keys, err);
    if (e != RB_OK)
        return e;
    json_t *pol = NULL;
    if ((e = egress_policy(c, who ? who->egress : NULL, who ? who->owner : NULL, json_object_get(body, "network"),
                           "'network'", &pol, err)) != RB_OK)
        return e;
    /* secrets need the session CA its sandbox trusts, made when it was created with secrets */
    int had = json_object_get(s->net_policy, "secrets") != NULL;
    if (pol != NULL && json_object_get(pol, "secrets") != NULL && !had) {
        json_decref(pol);
        return rb_fail(RB_ECONFLICT, err,
                       "session %s was created without secrets: its sandbox does not trust a CA of its proxy; create a "
                       "new session whose execution_options.network names \"secrets\"",
                       session_id);
    }
    if (s->egress_net == NULL && s->net_policy == NULL) {
        json_decref(pol);
        return rb_fail(RB_ECONFLICT, err,
                       "session %s was created without a network: its sandbox has no network interface to give a "
                       "policy to; create a new session with execution_options.network",
                       session_id);
    }
    if (pol == NULL) /* false: nothing allowed from now on (the sandbox keeps its proxy) */
        pol = json_pack("{s:[], s:[]}", "allow", "deny");
    if (had && json_object_get(pol, "secrets") == NULL) /* none now; the CA stays */
        json_object_set_new(pol, "secrets", json_array());
    net_change *nc = xcalloc(1, sizeof(*nc));
    nc->c = c;
    snprintf(nc->session_id, sizeof(nc->session_id), "%s", s->id);
    nc->policy = pol;
    nc->op = xcalloc(1, sizeof(*nc->op));
    nc->op->cb = cb;
    nc->op->data = data;
    if ((e = egress_update(c, s->id, pol, updated_cb, nc, err)) != RB_OK) {
        free(nc->op);
        json_decref(pol);
        free(nc);
        return e;
    }
    if (handle != NULL)
        *handle = nc->op;
    return RB_OK;
}
