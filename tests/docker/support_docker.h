/*
 * support_docker.h: helpers shared by the docker/ tests: running the loop until a flag is set
 * (with a hang guard, not a timing assertion), synchronous wrappers over the async calls, and
 * throw-away containers from the runbox-test-busybox image, named runbox-test-* and labelled
 * runbox.test=1 so that even a crashed test's leftovers can be found and removed.
 */
#ifndef RB_TEST_SUPPORT_DOCKER_H
#define RB_TEST_SUPPORT_DOCKER_H

#include "docker/docker.h"

#define SUP_SOCKET "/var/run/docker.sock"
#define SUP_IMAGE "runbox-test-busybox:latest"

/** The result of one docker_cb call (body is a new reference, or NULL). */
typedef struct sup_result {
    int calls;
    rb_err err;
    char msg[RB_ERR_LEN];
    int status;
    json_t *body;
} sup_result;

/** Skips the test if the engine's socket is missing; builds the test image if needed. */
void sup_require_docker(void);
/** A fresh loop and client on SUP_SOCKET (asserts success). */
void sup_open(uv_loop_t *loop, docker **d);
/** Frees the client, drains the loop and asserts that uv_loop_close succeeds (nothing leaked). */
void sup_close(uv_loop_t *loop, docker *d);
/** Runs the loop until *flag becomes non-zero; fails the test after a generous hang guard. */
void sup_run_until(uv_loop_t *loop, const int *flag);
/** Runs the loop until it has nothing left to do. */
void sup_drain(uv_loop_t *loop);

/** docker_cb that records into a sup_result (data). */
void sup_cb(void *data, rb_err err, const char *errmsg, int status, json_t *body);
void sup_result_dispose(sup_result *r);

/** Creates (not starts) a container running argv (NULL-terminated) with OpenStdin, Tty false,
 * NetworkMode none; name gets "runbox-test-<random>" and is remembered for sup_cleanup.
 * extra_label (may be NULL) is "key=value". Writes the id (65 bytes) into id. */
void sup_container_create(uv_loop_t *loop, docker *d, const char *const *argv, const char *extra_label, char *id,
                          char *name, size_t name_len);
void sup_container_start(uv_loop_t *loop, docker *d, const char *id);
void sup_container_remove(uv_loop_t *loop, docker *d, const char *id);
/** Removes every container this process created and did not remove (Criterion .fini). */
void sup_cleanup(void);

#endif
