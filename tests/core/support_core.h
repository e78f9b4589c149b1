/*
 * support_core.h: what the Docker-backed core/ tests (test_core.c, test_pool.c) share: a fresh
 * loop, settings and SQLite file per test, running the loop until a flag is set or a deadline
 * passes, and synchronous wrappers over the asynchronous core calls that fail the test when a
 * call does. Every core/ test binary links this file; the tests without Docker just do not call
 * it. Names carry the sup_ prefix so that they cannot clash with a test file's statics.
 */
#ifndef RB_TEST_SUPPORT_CORE_H
#define RB_TEST_SUPPORT_CORE_H

#include <jansson.h>
#include <uv.h>

#include "core/core.h"

/** The loop and config of the running test, set up by sup_fixture_open. */
extern uv_loop_t sup_loop;
extern core_settings sup_cfg;

/** Replaces the heap string *field (a core_settings member) by a copy of value. */
void sup_set(char **field, const char *value);

/** Makes /tmp/runbox-<name>-XXXXXX with a database path in it, inits sup_loop and sup_cfg
 * (defaults, that database, no idle timeout, a 1 s grace) and sets the log level. */
void sup_fixture_open(const char *name, rb_log_level level);
/** Drains and closes sup_loop, disposes sup_cfg and removes the directory. */
void sup_fixture_close(void);

/** Runs the loop until *flag is set or ms pass. */
void sup_run_until(int *flag, int ms);
/** Runs the loop for about ms (timers and Docker callbacks keep it turning). */
void sup_run_for(int ms);

/** core_new on sup_loop and sup_cfg (asserts success), then waits up to 10 s for Docker. */
rb_core *sup_core_open(void);
/** For a fixture's fini, whatever happened before: removes every container labelled
 * runbox.instance=instance (no assertions) and closes the loop's leftover handles. */
void sup_sweep_instance(const char *instance);
/** Runs the loop until c's first probe found Docker reachable (at most 10 s). */
void sup_wait_docker(rb_core *c);
/** Runs the loop until core_pending(c) is 0 or ms pass. */
void sup_wait_pending(rb_core *c, int ms);
/** Stops the core, gives background container removals up to removal_ms (expecting them all
 * to finish), frees the core and drains the loop. */
void sup_core_close(rb_core *c, int removal_ms);

/** The result of one core_op_cb call (body is owned by the receiver). */
typedef struct sup_result {
    int done;
    rb_err err;
    char msg[RB_ERR_LEN];
    json_t *body;
} sup_result;

/** core_op_cb that records into a sup_result (data). */
void sup_op_cb(void *data, rb_err err, const char *msg, json_t *body);

/** Creates a session (opts_json may be NULL), asserting it comes up "ready"; returns its API
 * object (json_decref it). */
json_t *sup_session_create(rb_core *c, const char *opts_json);
/** The same; returns only its id (heap, free it). */
char *sup_session_create_id(rb_core *c, const char *opts_json);
/** Deletes a session, asserting success. */
void sup_session_delete(rb_core *c, const char *sid);

/** What a watch reported: the number of output and status events and the final document
 * (a new reference, once done). */
typedef struct sup_watch {
    int done;
    int outputs, statuses;
    json_t *final;
} sup_watch;

/** core_event_cb that records into a sup_watch (data). */
void sup_watch_cb(void *data, const char *event, json_t *payload);

/** Executes code (with timeout in seconds when > 0) and waits for the result document (json_decref it). */
json_t *sup_run_code(rb_core *c, const char *sid, const char *code, double timeout);
/** Executes code, asserts it completed and returns its stdout (heap, free it). */
char *sup_run_stdout(rb_core *c, const char *sid, const char *code);
/** Runs a long cell in sid and, once it runs, SIGKILLs the runner's supervisor from outside (user
 * code may not: privilege separation), as the container's root through docker exec; waits for
 * the result document (json_decref it). The container exits with its supervisor. */
json_t *sup_run_code_killing_the_runner(rb_core *c, const char *sid);

/** The string member k of o, or "(null)". */
const char *sup_str(json_t *o, const char *k);

#endif
