/*
 * egress_internal.h: what egress.c (the chain, the calls, the removals) and egress_events.c (the
 * proxy's output: readiness, counts, each execution's report) share. Private to core/network/.
 */
#ifndef RB_CORE_NETWORK_EGRESS_INTERNAL_H
#define RB_CORE_NETWORK_EGRESS_INTERNAL_H

#include "base/map.h"
#include "core/network/egress.h"
#include "core/network/netpolicy.h"
#include "core/network/secrets.h"

#define PROXY_MEMORY ((int64_t)128 * 1024 * 1024)
#define PROXY_TMP ((int64_t)16 * 1024 * 1024)
#define PROXY_POLICY_DIR "/policy"
#define PROXY_CA_DIR "/policy/ca" /* the session CA of a proxy that adds secrets (key and bundle) */
#define PROXY_CA_BUNDLE ".runbox-egress-ca.pem" /* in PROXY_CA_DIR, copied into the sandbox's /workspace */
#define SANDBOX_CA_BUNDLE "/workspace/" PROXY_CA_BUNDLE
#define PROXY_POLICY_SIZE ((int64_t)8 * 1024 * 1024)
#define PROXY_PIDS 64
#define PROXY_CONNECTIONS "256"
#define PROXY_SCRIPT "/opt/runbox-egress/egress_proxy.py"
#define LINE_MAX_BYTES 8192
#define RESTART_MS 1000
#define CHAIN_MAX_MS 30000 /* from the first step to "ready" */
#define NET_REMOVE_TRIES 60
#define NET_RETRY_MS 200 /* the sweep (every second) tries again once this has passed */
#define LOG_REFUSALS 20 /* refusals logged a minute */

enum { E_OPENING, E_OPEN, E_DOWN, E_CLOSED };

typedef struct entry {
    rb_core *c;
    char sid[RB_ID_LEN];
    char net[160];         /* the internal network (pinned) */
    char proxy[200];       /* the proxy's container name */
    json_t *policy;
    int state;
    int refs;              /* engine calls in flight */
    int ready;             /* the proxy said "ready" since its last start */
    int written;           /* its policy file is written since its last start */
    int recovering;        /* taken over after a restart: the proxy may have said "ready" long ago */
    int chain;             /* a (re)start chain is running */
    int att_opening;       /* backend_attach_open called, its on_open not yet come */
    int orphaned;          /* the room was disposed of while calls were in flight: freed by the last */
    int writing, dirty;    /* a policy write is in flight; the policy changed since it began */
    int64_t chain_started; /* when the running chain began (epoch ms) */
    int replacing;         /* the chain removes a proxy container left by an earlier try */
    int proxy_gone;        /* closing: the proxy is removed */
    int net_tries;
    int64_t next_try;      /* the sweep's next restart or removal try (epoch ms) */
    backend_attach *att;
    rb_buf line;
    int line_skip;
    egress_open_cb open_cb;
    void *open_data;
    json_t *reached, *refused; /* this execution's report: "host:port" -> entry */
    struct update *updates;    /* policy writes waiting for the proxy to be up */
    int intercept;             /* its proxy has a session CA and adds secrets (the policy names "secrets") */
    struct ca_copy *ca_copy;   /* the CA bundle being copied into the sandbox (egress_ready) */
    int ca_copied;             /* the sandbox has it: a proxy made anew (a new CA) copies it again */
} entry;

typedef struct update {
    entry *e;
    egress_done_cb cb;
    void *data;
    struct update *next;
} update;

typedef struct room {
    netpolicy_limits limits;
    rb_map entries;        /* session id -> entry (open, opening, down) */
    rb_map closing;        /* network name -> entry being removed */
    egress_counts counts;
    int64_t log_window;    /* when the current minute of refusal logging began */
    int logged, log_dropped;
    secret_set secrets;    /* the operator's (--secrets-file), reloaded on SIGHUP */
    char *upstream_ca;     /* --egress-ca-file's PEM text, or NULL */
} room;

/** The room of c (made on first use). */
room *egress__room(rb_core *c);
/** Drops one reference of e; 1 when e is closed (the caller stops; e may be freed). */
int egress__unref(entry *e);
/** The chain reached its end once the policy is written and the proxy said ready: e is open. */
void egress__maybe_open(entry *e);
/** A step failed: the opener or the waiters hear it; the sweep tries again. */
void egress__chain_failed(entry *e, rb_err err, const char *what, const char *msg);
/** The proxy's attach stream: its output, and its end. */
void egress__proxy_data(void *data, int stream, const char *buf, size_t len);
void egress__proxy_closed(void *data, rb_err err, const char *errmsg);

/* egress_secrets.c */
/** Loads --secrets-file and --egress-ca-file into r (egress_init). */
rb_err egress__secrets_init(rb_core *c, room *r, char *err);
void egress__secrets_dispose(room *r);
/** The secrets of e's policy its session's key may use, as the proxy's policy file lists them
 * (new array; values inside: never logged). */
json_t *egress__proxy_secrets(entry *e);
/** Whether policy names secrets (has the "secrets" key: the session has a CA). */
int egress__policy_intercepts(json_t *policy);
/** e's proxy said ready again after a restart: its bundle is copied into the sandbox again (a
 * proxy made anew has a new CA), in the background. */
void egress__ca_recopy(entry *e);
/** The room is disposed of: e's CA copy no longer calls back (freed now or by its engine call). */
void egress__ca_copy_orphan(entry *e);
/** The pending CA copy of e ends: its waiter hears RB_ECANCELED (egress_close). */
void egress__ca_copy_cancel(entry *e);
/** Checks names (a caller's "secrets") for owner and adds them to pol ("secrets", their hosts in
 * "allow"); RB_EINVAL / RB_EFORBIDDEN naming what. */
rb_err egress__policy_add_secrets(rb_core *c, const char *owner, json_t *names, const char *what, json_t *pol,
                                  char *err);
/** Copies e's CA bundle into container once e is open, then cb (egress_ready). */
rb_err egress__ca_copy_start(entry *e, const char *container, egress_done_cb cb, void *data, char *err);
/* egress.c */
/** e's proxy is given its policy again (the secrets changed). */
void egress__policy_changed(entry *e);
/** cb once e is open (at once if it is). */
rb_err egress__wait_open(entry *e, egress_done_cb cb, void *data, char *err);
/** Records a proxy's secret_used / secret_refused event. */
void egress__secret_event(entry *e, json_t *ev, const char *kind);

#endif
