/*
 * e2b_network.c: E2B's network options on runbox's network by policy: the create body's
 * allow_internet_access and network (the policy goes into the session's
 * execution_options.network), PUT /sandboxes/{id}/network (Sandbox.update_network, which
 * core_session_network applies to the running sandbox), and the network a detailed sandbox
 * shows. The translation itself is e2b_network_map (e2b_wire.c); the operator's limits
 * (--egress, --egress-max) are core's to check, and its refusals reach the SDK with core's
 * message. Nothing here opens, or lets a sandbox open, any connection.
 */
#include <stdio.h>
#include <string.h>

#include "server/e2b/e2b_internal.h"
#include "server/e2b/e2b_wire.h"

/* allow_internet_access as the SDK spells it on the wire (also in the update body), or E2B's
 * camel-case spelling of its sandbox objects; NULL when neither is given. -1 after answering 400
 * when both are given and disagree. */
static int internet_of(http_call *call, json_t *body, json_t **out)
{
    json_t *snake = json_object_get(body, "allow_internet_access");
    json_t *camel = json_object_get(body, "allowInternetAccess");
    if (snake != NULL && camel != NULL && !json_equal(snake, camel)) {
        e2b__api_error(call->req, 400, "allow_internet_access and allowInternetAccess disagree: give one of them");
        return -1;
    }
    *out = snake != NULL ? snake : camel;
    return 0;
}

int e2b__network_create(http_call *call, json_t *body, json_t **out)
{
    char err[RB_ERR_LEN];
    json_t *internet = NULL;
    *out = NULL;
    if (internet_of(call, body, &internet) != 0)
        return -1;
    if (e2b_network_map(internet, json_object_get(body, "network"), 0, out, err) != RB_OK) {
        e2b__api_error(call->req, 400, err);
        return -1;
    }
    return 0;
}

void e2b__network_info(json_t *o, json_t *session)
{
    json_t *net = json_object_get(json_object_get(session, "execution_options"), "network");
    json_t *allow = json_object_get(net, "allow"), *deny = json_object_get(net, "deny");
    if (!json_is_object(net) || !json_is_array(allow)) {
        json_object_set_new(o, "allowInternetAccess", json_false());
        return;
    }
    /* runbox lets through nothing but the allow list: in E2B's terms, all traffic is denied */
    json_t *deny_out = json_is_array(deny) ? json_deep_copy(deny) : json_array();
    json_array_append_new(deny_out, json_string(E2B_ALL_TRAFFIC));
    json_object_set_new(o, "allowInternetAccess", json_boolean(json_array_size(allow) > 0));
    json_object_set_new(o, "network", json_pack("{s:O, s:o}", "allowOut", allow, "denyOut", deny_out));
}

/* ---- PUT /sandboxes/{id}/network ------------------------------------------------------------ */

/* Answers core's refusal of a network change in E2B's terms where they differ from REST's. */
static void network_fail(h2o_req_t *req, const char *id, rb_err e, const char *msg)
{
    char text[RB_ERR_LEN];
    if (e == RB_ENOTFOUND) {
        e2b__api_not_found(req, id);
    } else if (e == RB_ECONFLICT) {
        snprintf(text, sizeof(text),
                 "sandbox %.64s was created without a network, so there is no network to change: create the "
                 "sandbox with allow_internet_access=True or network={\"allow_out\": [...]} (runboxd started with "
                 "--egress=true) to change its network later",
                 id);
        e2b__api_error(req, 409, text);
    } else {
        e2b__api_fail(req, e, msg);
    }
}

/* Whether session id has a network (its execution_options.network is a policy): 1, 0, or -1
 * after answering (404 for no such live sandbox). */
static int has_network(http_call *call, const char *id)
{
    char err[RB_ERR_LEN];
    json_t *session = NULL;
    rb_err e = core_session_get(call->core, call->who, id, &session, err);
    if (e != RB_OK) {
        network_fail(call->req, id, e, err);
        return -1;
    }
    const char *status = json_string_value(json_object_get(session, "status"));
    int live = status != NULL && strcmp(status, "ended") != 0 && strcmp(status, "dead") != 0;
    int has = json_is_object(json_object_get(json_object_get(session, "execution_options"), "network"));
    json_decref(session);
    if (!live) {
        network_fail(call->req, id, RB_ENOTFOUND, NULL);
        return -1;
    }
    return has;
}

int e2b__network_update(http_call *call)
{
    char err[RB_ERR_LEN];
    const char *id = call->params[0];
    json_t *body = NULL, *internet = NULL, *policy = NULL, *change = NULL;
    if (!e2b__authorised_body(call, &body))
        return 0;
    if (body == NULL)
        body = json_object(); /* E2B: an omitted field is cleared */
    if (internet_of(call, body, &internet) != 0)
        goto done;
    if (e2b_network_map(internet, body, 1, &policy, err) != RB_OK) {
        e2b__api_error(call->req, 400, err);
        goto done;
    }
    if (policy == NULL) {
        /* Nothing allowed: already so for a sandbox without a network, which core would refuse
         * to give a policy to. */
        int has = has_network(call, id);
        if (has < 0)
            goto done;
        if (has == 0) {
            http_send_no_content(call->req);
            goto done;
        }
        policy = json_false();
    }
    change = json_pack("{s:o}", "network", policy);
    e2b__call_no_content(call, id, change, core_session_network, network_fail);
done:
    json_decref(change);
    json_decref(body);
    return 0;
}
