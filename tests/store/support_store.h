/*
 * support_store.h: what the store/ tests share: a fresh mkdtemp directory per test with the
 * database path in it (removed afterwards), and opening the store there.
 */
#ifndef RB_TEST_SUPPORT_STORE_H
#define RB_TEST_SUPPORT_STORE_H

#include "store/store.h"

/** The running test's directory and the database path in it, set by sup_tmpdir_open. */
extern char sup_dir[64];
extern char sup_db_path[128];

/** Makes /tmp/runbox-test-<name>-XXXXXX and sets sup_db_path to runbox.db in it. */
void sup_tmpdir_open(const char *name);
/** Removes the files in the directory and the directory. */
void sup_tmpdir_close(void);
/** Opens the store at sup_db_path, failing the test (with err's text) unless it opens. */
store *sup_store_open(char *err);

#endif
