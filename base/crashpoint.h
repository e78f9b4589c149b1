/*
 * crashpoint: a test-only hook that kills runboxd at a named step (docs/testing.md), so that the
 * integration tests can cut an operation short at each of its steps as `kill -9` would, without
 * racing a timer. Inactive unless the environment variable RUNBOX_TEST_CRASH_AT names a step
 * (read once); then the process raises SIGKILL on itself the Nth time (default 1) it reaches
 * that step: RUNBOX_TEST_CRASH_AT=hibernate:copied, or copier:exited#2 for the second time.
 */
#ifndef RB_BASE_CRASHPOINT_H
#define RB_BASE_CRASHPOINT_H

/** Whether RUNBOX_TEST_CRASH_AT names a step (so callers can skip building a step's name). */
int rb_crash_armed(void);

/** Kills the process with SIGKILL if RUNBOX_TEST_CRASH_AT names step and this is its Nth
 * passage; does nothing otherwise. step is "operation:point". */
void rb_crash_point(const char *step);

#endif
