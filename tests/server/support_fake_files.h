/*
 * support_fake_files.h: inspection helpers of the fake file calls (support_fake_files.c).
 */
#ifndef RB_TEST_SUPPORT_FAKE_FILES_H
#define RB_TEST_SUPPORT_FAKE_FILES_H

#include <stddef.h>

/** Number of files the fake holds (all sessions). */
int fake_files_count(void);
/** The bytes stored for session_id/path (borrowed), or NULL. */
const char *fake_files_get(const char *session_id, const char *path, size_t *len);

#endif
