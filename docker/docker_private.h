/*
 * docker_private.h: what docker.c (JSON calls, client lifetime) and attach.c (the raw attach
 * stream) share inside the docker module. Not part of the module's interface: nothing outside
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
/** docker_request of method pre<id>post (body borrowed, may be NULL) after docker__check_ref(id). */
rb_err docker__ref_request(docker *d, const char *method, const char *pre, const char *id, const char *post,
                           json_t *body, long timeout_ms, docker_cb cb, void *data, char *err);


#endif
