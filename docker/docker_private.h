/*
 * docker_private.h: what docker.c (JSON calls, client lifetime), container.c (container and
 * image calls), archive.c and attach.c (the raw attach stream) share inside the docker module. Not part of the module's interface: nothing outside
 * docker/ includes it.
 */
#ifndef RB_DOCKER_PRIVATE_H
#define RB_DOCKER_PRIVATE_H

#include "docker/docker.h"

/** The loop the client runs on. */
uv_loop_t *docker__loop(docker *d);
/** The engine's socket path (owned by d). */
const char *docker__socket_path(docker *d);
/** Non-zero once docker_free has started: no new work is accepted. */
int docker__freeing(const docker *d);
/** Head of the client's list of live attach streams (attach.c links and unlinks them). */
docker_attach **docker__attach_head(docker *d);
/** Closes an attach stream on behalf of docker_free: unlinks it, no callback runs afterwards. */
void docker__attach_abort(docker_attach *a);
/** Non-zero if s is a plausible container id or name (no characters that need escaping). */
int docker__valid_ref(const char *s);
/** RB_OK if id (may be NULL) is a valid container or exec reference (docker__valid_ref), else
 * RB_EINVAL with the rule in err. */
rb_err docker__check_ref(const char *id, char *err);
/** The kind of a call, which decides its connection budget and default deadline (docker.h). */
typedef enum docker__kind {
    DOCKER__SHORT, /* short_ms; at most DOCKER_SHORT_CONNECTIONS at once */
    DOCKER__WAIT,  /* long_ms; shares the long budget (DOCKER_LONG_CONNECTIONS) with transfers */
    DOCKER__TRANSFER, /* transfer_ms; the long budget */
    DOCKER__PING,  /* ping_ms; never waits for a connection */
} docker__kind;
/** The client's deadlines (borrowed). */
const docker_timeouts *docker__timeouts(const docker *d);
/** docker_request as a call of the given kind (JSON answer). */
rb_err docker__request(docker *d, docker__kind kind, const char *method, const char *path, json_t *body,
                       long timeout_ms, docker_cb cb, void *data, docker_req **out, char *err);
/** docker_request_raw as a call of the given kind (DOCKER__WAIT or DOCKER__TRANSFER). */
rb_err docker__request_raw(docker *d, docker__kind kind, const char *method, const char *path,
                           const char *content_type, const void *body, size_t len, size_t max_resp, long timeout_ms,
                           docker_raw_cb cb, void *data, docker_req **out, char *err);
/** docker__request of method pre<id>post (body borrowed, may be NULL) after docker__check_ref(id). */
rb_err docker__ref_request(docker *d, docker__kind kind, const char *method, const char *pre, const char *id,
                           const char *post, json_t *body, long timeout_ms, docker_cb cb, void *data, char *err);


#endif
