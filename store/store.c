/*
 * store.c: runbox's durable state in one SQLite file: the connection, the schema and the
 * statements. Sessions, executions, MCP sessions and a key/value meta table are rows whose
 * searchable fields are columns; each row also keeps the caller's whole JSON document verbatim
 * in `doc` (document.c), so what goes in comes back out exactly. The schema is versioned with
 * PRAGMA user_version: `migrations[]` is applied in order, one step per version, so a later
 * feature (MCP sessions, files) adds one entry and nothing else. The per-table operations live
 * in session.c and execution.c; this file keeps the meta table and store_prune, which spans
 * the tables.
 *
 * One connection, used on the loop thread only; statements for every call are prepared once
 * and cached. An exclusive flock on `<db>.lock` keeps a second runboxd off the same file, since
 * two servers driving the same sessions would corrupt them. Autocheckpoint is replaced by
 * store_checkpoint (core calls it from a timer) plus a safety-net checkpoint when the WAL grows
 * very large. This module holds no policy and never logs: it returns errors with their text.
 */
#include "store/store_private.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* How long one statement waits for a lock held by another process (a sqlite3 shell, a backup
 * tool) before failing with a clear error; runboxd itself is the only writer. */
#define STORE_BUSY_TIMEOUT_MS 2000
/* Safety net: if the timer checkpoints stop, checkpoint inline once the WAL has this many pages. */
#define STORE_WAL_FORCE_PAGES 16384
/* After a checkpoint resets the WAL, SQLite truncates the file down to this size. */
#define STORE_JOURNAL_SIZE_LIMIT (16 * 1024 * 1024)
/* PRAGMA application_id of a runbox database: 'RBOX'. */
#define STORE_APPLICATION_ID 0x52424F58

/*
 * Schema migrations: migrations[i] takes the database from user_version i to i + 1. Append new
 * steps; never edit a released one.
 */
static const char *const migrations[] = {
    /* 1: sessions, executions, meta */
    "CREATE TABLE sessions ("
    "  session_id TEXT PRIMARY KEY NOT NULL,"
    "  status TEXT NOT NULL,"
    "  container_id TEXT,"
    "  created_at INTEGER NOT NULL,"
    "  last_used_at INTEGER NOT NULL,"
    "  ended_at INTEGER,"
    "  doc TEXT NOT NULL);"
    "CREATE INDEX sessions_by_created ON sessions(created_at);"
    "CREATE INDEX sessions_by_ended ON sessions(ended_at) WHERE ended_at IS NOT NULL;"
    "CREATE TABLE executions ("
    "  request_id TEXT PRIMARY KEY NOT NULL,"
    "  session_id TEXT NOT NULL,"
    "  status TEXT NOT NULL,"
    "  created_at INTEGER NOT NULL,"
    "  started_at INTEGER,"
    "  completed_at INTEGER,"
    "  doc TEXT NOT NULL);"
    "CREATE INDEX executions_by_session ON executions(session_id, created_at);"
    "CREATE INDEX executions_by_completed ON executions(completed_at) WHERE completed_at IS NOT NULL;"
    "CREATE TABLE meta (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL);",
    /* 2: MCP sessions (core/mcp_sessions.c) */
    "CREATE TABLE mcp_sessions ("
    "  mcp_session_id TEXT PRIMARY KEY NOT NULL,"
    "  created_at INTEGER NOT NULL,"
    "  last_used_at INTEGER NOT NULL,"
    "  ended_at INTEGER,"
    "  doc TEXT NOT NULL);"
    "CREATE INDEX mcp_sessions_by_ended ON mcp_sessions(ended_at) WHERE ended_at IS NOT NULL;",
    /* 3: volumes (core/volumes/): one name per owner */
    "CREATE TABLE volumes ("
    "  volume_id TEXT PRIMARY KEY NOT NULL,"
    "  owner TEXT NOT NULL,"
    "  name TEXT NOT NULL,"
    "  created_at INTEGER NOT NULL,"
    "  doc TEXT NOT NULL);"
    "CREATE UNIQUE INDEX volumes_by_owner ON volumes(owner, name);",
    /* 4: the audit trail (core/audit/): what each key did, in order */
    "CREATE TABLE audit ("
    "  seq INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  at INTEGER NOT NULL,"
    "  key TEXT NOT NULL,"
    "  session TEXT,"
    "  kind TEXT NOT NULL,"
    "  doc TEXT NOT NULL);"
    "CREATE INDEX audit_by_at ON audit(at);"
    "CREATE INDEX audit_by_key ON audit(key, seq);"
    "CREATE INDEX audit_by_session ON audit(session, seq);",
};
#define STORE_SCHEMA_VERSION ((int)(sizeof(migrations) / sizeof(migrations[0])))

static const char *const stmt_sql[STORE__STMT_COUNT] = {
    [STORE__STMT_BEGIN] = "BEGIN IMMEDIATE",
    [STORE__STMT_COMMIT] = "COMMIT",
    [STORE__STMT_ROLLBACK] = "ROLLBACK",
    /* Internal multi-statement operations use a savepoint: atomic whether or not the caller
     * has a store_begin open, and undone alone on failure. */
    [STORE__STMT_SP_BEGIN] = "SAVEPOINT store_op",
    [STORE__STMT_SP_RELEASE] = "RELEASE store_op",
    [STORE__STMT_SP_ROLLBACK] = "ROLLBACK TO store_op",
    /* Upserts leave the immutable columns (id, created_at, session_id) out of SET so that an
     * update does not rewrite their index entries (about a third of a put's cost); the WHERE
     * turns an attempt to change them into "no row changed", reported as RB_EINVAL. */
    [STORE__STMT_SESSION_PUT] =
        "INSERT INTO sessions (session_id, status, container_id, created_at, last_used_at, ended_at, doc)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (session_id) DO UPDATE SET"
        " status = excluded.status, container_id = excluded.container_id,"
        " last_used_at = excluded.last_used_at, ended_at = excluded.ended_at, doc = excluded.doc"
        " WHERE sessions.created_at = excluded.created_at",
    [STORE__STMT_SESSION_GET] = "SELECT doc FROM sessions WHERE session_id = ?1",
    [STORE__STMT_SESSION_LIST_ALL] = "SELECT doc FROM sessions ORDER BY created_at DESC, rowid DESC",
    [STORE__STMT_SESSION_LIST_LIVE] =
        "SELECT doc FROM sessions WHERE ended_at IS NULL ORDER BY created_at DESC, rowid DESC",
    [STORE__STMT_SESSION_DELETE] = "DELETE FROM sessions WHERE session_id = ?1",
    [STORE__STMT_EXEC_PUT] =
        "INSERT INTO executions (request_id, session_id, status, created_at, started_at, completed_at, doc)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (request_id) DO UPDATE SET"
        " status = excluded.status, started_at = excluded.started_at,"
        " completed_at = excluded.completed_at, doc = excluded.doc"
        " WHERE executions.session_id = excluded.session_id AND executions.created_at = excluded.created_at",
    [STORE__STMT_EXEC_GET] = "SELECT doc FROM executions WHERE request_id = ?1",
    /* Newest `limit` rows (-1 = all), handed back oldest first. */
    [STORE__STMT_EXEC_LIST] =
        "SELECT doc FROM (SELECT doc, created_at, rowid AS r FROM executions WHERE session_id = ?1"
        " ORDER BY created_at DESC, rowid DESC LIMIT ?2) ORDER BY created_at, r",
    [STORE__STMT_EXEC_UNFINISHED] = "SELECT doc FROM executions WHERE status IN ('queued', 'running')",
    [STORE__STMT_PRUNE_EXECUTIONS] = "DELETE FROM executions WHERE completed_at IS NOT NULL AND completed_at < ?1"
                                     " AND session_id NOT IN (SELECT session_id FROM sessions WHERE ended_at IS NULL)",
    [STORE__STMT_PRUNE_SESSIONS] = "DELETE FROM sessions WHERE ended_at IS NOT NULL AND ended_at < ?1",
    [STORE__STMT_META_GET] = "SELECT value FROM meta WHERE key = ?1",
    [STORE__STMT_META_PUT] =
        "INSERT INTO meta (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
    [STORE__STMT_MCP_PUT] = "INSERT INTO mcp_sessions (mcp_session_id, created_at, last_used_at, ended_at, doc)"
                            " VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (mcp_session_id) DO UPDATE SET"
                            " last_used_at = excluded.last_used_at, ended_at = excluded.ended_at, doc = excluded.doc"
                            " WHERE mcp_sessions.created_at = excluded.created_at",
    [STORE__STMT_MCP_GET] = "SELECT doc FROM mcp_sessions WHERE mcp_session_id = ?1",
    [STORE__STMT_MCP_LIST_ALL] = "SELECT doc FROM mcp_sessions ORDER BY created_at DESC, rowid DESC",
    [STORE__STMT_MCP_LIST_LIVE] =
        "SELECT doc FROM mcp_sessions WHERE ended_at IS NULL ORDER BY created_at DESC, rowid DESC",
    [STORE__STMT_MCP_DELETE] = "DELETE FROM mcp_sessions WHERE mcp_session_id = ?1",
    [STORE__STMT_PRUNE_MCP] = "DELETE FROM mcp_sessions WHERE ended_at IS NOT NULL AND ended_at < ?1",
    [STORE__STMT_VOLUME_PUT] = "INSERT INTO volumes (volume_id, owner, name, created_at, doc) VALUES (?1, ?2, ?3, ?4, ?5)"
                               " ON CONFLICT (volume_id) DO UPDATE SET doc = excluded.doc"
                               " WHERE volumes.owner = excluded.owner AND volumes.name = excluded.name"
                               " AND volumes.created_at = excluded.created_at",
    [STORE__STMT_VOLUME_GET] = "SELECT doc FROM volumes WHERE volume_id = ?1",
    [STORE__STMT_VOLUME_LIST] = "SELECT doc FROM volumes ORDER BY created_at, rowid",
    [STORE__STMT_VOLUME_DELETE] = "DELETE FROM volumes WHERE volume_id = ?1",
    [STORE__STMT_AUDIT_ADD] = "INSERT INTO audit (at, key, session, kind, doc) VALUES (?1, ?2, ?3, ?4, ?5)",
    [STORE__STMT_AUDIT_QUERY] = "SELECT json_set(doc, '$.seq', seq) FROM audit WHERE (?1 IS NULL OR key = ?1) AND "
                                "(?2 IS NULL OR session = ?2) AND (?3 IS NULL OR kind = ?3) AND at >= ?4 AND "
                                "at < ?5 AND seq > ?6 ORDER BY seq LIMIT ?7",
    [STORE__STMT_AUDIT_PRUNE_AT] = "DELETE FROM audit WHERE at < ?1",
    [STORE__STMT_AUDIT_PRUNE_ROWS] = "DELETE FROM audit WHERE seq <= (SELECT MAX(seq) FROM audit) - ?1",
};

/* ---- errors and statements ---- */

rb_err store__fail_sql(store *st, int rc, const char *what, char *err)
{
    const char *msg = st->db != NULL ? sqlite3_errmsg(st->db) : sqlite3_errstr(rc);
    const char *hint = "";
    switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        hint = "; another process holds a lock on the database file (close any sqlite3 shell or backup on it)";
        break;
    case SQLITE_NOTADB:
        hint = "; the file is not a SQLite database: move it away or point --db elsewhere";
        break;
    case SQLITE_CORRUPT:
        hint = "; the database file is corrupt: restore a backup or move it away";
        break;
    case SQLITE_FULL:
        hint = "; free disk space";
        break;
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
        hint = "; check the permissions of the file and its directory";
        break;
    default:
        break;
    }
    return rb_fail(RB_ESTORE, err, "store: %s failed on database %s: %s%s", what, st->path, msg, hint);
}

/* Returns the cached statement for id, preparing it on first use. */
sqlite3_stmt *store__stmt_get(store *st, int id, char *err, rb_err *rc_out)
{
    if (st->stmt[id] == NULL) {
        int rc = sqlite3_prepare_v3(st->db, stmt_sql[id], -1, SQLITE_PREPARE_PERSISTENT, &st->stmt[id], NULL);
        if (rc != SQLITE_OK) {
            *rc_out = store__fail_sql(st, rc, "preparing a statement", err);
            return NULL;
        }
    }
    *rc_out = RB_OK;
    return st->stmt[id];
}

void store__stmt_done(sqlite3_stmt *s)
{
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
}

/* Steps a statement that returns no rows, then resets it. */
rb_err store__stmt_run(store *st, sqlite3_stmt *s, const char *what, char *err)
{
    int rc = sqlite3_step(s);
    rb_err e = RB_OK;
    if (rc != SQLITE_DONE && rc != SQLITE_ROW)
        e = store__fail_sql(st, rc, what, err);
    store__stmt_done(s);
    return e;
}

/* Runs one cached statement without parameters. */
static rb_err run_id(store *st, int id, const char *what, char *err)
{
    rb_err e;
    sqlite3_stmt *s = store__stmt_get(st, id, err, &e);
    if (s == NULL)
        return e;
    return store__stmt_run(st, s, what, err);
}

/* The internal savepoint pair for multi-statement operations. */
rb_err store__op_begin(store *st, char *err)
{
    return run_id(st, STORE__STMT_SP_BEGIN, "starting a savepoint", err);
}

rb_err store__op_end(store *st, rb_err result, char *err)
{
    if (result != RB_OK) {
        /* Keep the first error's text; undo this operation's writes only. */
        run_id(st, STORE__STMT_SP_ROLLBACK, "rolling back a savepoint", NULL);
        run_id(st, STORE__STMT_SP_RELEASE, "releasing a savepoint", NULL);
        return result;
    }
    return run_id(st, STORE__STMT_SP_RELEASE, "releasing a savepoint", err);
}

/* ---- open and close ---- */

/* Fails with the missing directory named when path's directory does not exist. */
static rb_err check_dir(const char *path, char *err)
{
    const char *slash = strrchr(path, '/');
    if (slash == NULL)
        return RB_OK; /* current directory */
    char *dir = slash == path ? xstrdup("/") : xstrndup(path, (size_t)(slash - path));
    struct stat sb;
    rb_err e = RB_OK;
    if (stat(dir, &sb) != 0)
        e = rb_fail(RB_ESTORE, err,
                    "store: directory %s of database %s does not exist (%s); create it or choose another --db", dir,
                    path, strerror(errno));
    else if (!S_ISDIR(sb.st_mode))
        e = rb_fail(RB_ESTORE, err, "store: %s (the directory part of database path %s) is not a directory", dir, path);
    free(dir);
    return e;
}

/* Takes an exclusive flock on <path>.lock and writes our pid into it. */
static rb_err lock_take(store *st, char *err)
{
    char *lpath = xasprintf("%s.lock", st->path);
    rb_err e = RB_OK;
    int fd = open(lpath, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        e = rb_fail(RB_ESTORE, err, "store: cannot create lock file %s for database %s: %s", lpath, st->path,
                    strerror(errno));
        goto cleanup;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int saved = errno;
        if (saved == EWOULDBLOCK) {
            char text[32];
            ssize_t n = pread(fd, text, sizeof(text) - 1, 0);
            long pid = 0;
            if (n > 0) {
                text[n] = '\0';
                char *end;
                pid = strtol(text, &end, 10);
                if (end == text)
                    pid = 0;
            }
            if (pid > 0)
                e = rb_fail(RB_ESTORE, err,
                            "store: database %s is in use by another runboxd (pid %ld?); stop it or give this server "
                            "another --db",
                            st->path, pid);
            else
                e = rb_fail(RB_ESTORE, err,
                            "store: database %s is in use by another runboxd (pid unknown); stop it or give this "
                            "server another --db",
                            st->path);
        } else {
            e = rb_fail(RB_ESTORE, err, "store: cannot lock %s: %s", lpath, strerror(saved));
        }
        close(fd);
        goto cleanup;
    }
    /* The pid is only a hint for the error above; failing to write it is harmless. */
    char pidtext[32];
    int n = snprintf(pidtext, sizeof(pidtext), "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) == 0 && pwrite(fd, pidtext, (size_t)n, 0) < 0) {
        /* ignored */
    }
    st->lock_fd = fd;
cleanup:
    free(lpath);
    return e;
}

static int wal_hook(void *data, sqlite3 *db, const char *name, int pages)
{
    (void)data;
    if (pages >= STORE_WAL_FORCE_PAGES)
        sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    return SQLITE_OK;
}

/* Runs a pragma returning one integer. */
static rb_err pragma_int(store *st, const char *sql, int *out, char *err)
{
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(st->db, sql, -1, &s, NULL);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(s);
        if (rc == SQLITE_ROW) {
            *out = sqlite3_column_int(s, 0);
            rc = SQLITE_OK;
        }
    }
    rb_err e = rc == SQLITE_OK ? RB_OK : store__fail_sql(st, rc, "opening", err);
    sqlite3_finalize(s);
    return e;
}

static rb_err exec_sql(store *st, const char *sql, const char *what, char *err)
{
    int rc = sqlite3_exec(st->db, sql, NULL, NULL, NULL);
    return rc == SQLITE_OK ? RB_OK : store__fail_sql(st, rc, what, err);
}

/* Switches to WAL; a file database that stays in another mode (a filesystem without shared
 * memory support, such as some network mounts) is refused rather than run slowly and unsafely. */
static rb_err enable_wal(store *st, char *err)
{
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(st->db, "PRAGMA journal_mode=WAL", -1, &s, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(s);
    if (rc != SQLITE_ROW) {
        rb_err e = store__fail_sql(st, rc, "enabling WAL", err);
        sqlite3_finalize(s);
        return e;
    }
    const char *mode = (const char *)sqlite3_column_text(s, 0);
    rb_err e = RB_OK;
    if (st->lock_fd >= 0 && (mode == NULL || strcmp(mode, "wal") != 0))
        e = rb_fail(RB_ESTORE, err,
                    "store: database %s cannot use WAL (journal mode stays %s); put it on a local filesystem",
                    st->path, mode != NULL ? mode : "unknown");
    sqlite3_finalize(s);
    return e;
}

/* Applies the pragmas and brings the schema to STORE_SCHEMA_VERSION. */
static rb_err setup(store *st, char *err)
{
    rb_err e;
    int version = 0, app_id = 0, tables = 0;
    /* The first read of the file: a text file or a damaged header fails here. */
    if ((e = pragma_int(st, "SELECT count(*) FROM sqlite_schema", &tables, err)) != RB_OK)
        return e;
    if ((e = pragma_int(st, "PRAGMA user_version", &version, err)) != RB_OK ||
        (e = pragma_int(st, "PRAGMA application_id", &app_id, err)) != RB_OK)
        return e;
    if (app_id != 0 && app_id != STORE_APPLICATION_ID)
        return rb_fail(RB_ESTORE, err,
                       "store: %s is a SQLite database of another program (application_id %d), not runbox's; "
                       "choose another --db",
                       st->path, app_id);
    if (app_id == 0 && version == 0 && tables > 0)
        return rb_fail(RB_ESTORE, err,
                       "store: %s is a SQLite database with tables of another program, not runbox's; "
                       "choose another --db",
                       st->path);
    if (version > STORE_SCHEMA_VERSION)
        return rb_fail(RB_ESTORE, err,
                       "store: database %s has schema version %d but this runboxd knows only up to %d; "
                       "upgrade runboxd",
                       st->path, version, STORE_SCHEMA_VERSION);

    if ((e = enable_wal(st, err)) != RB_OK ||
        (e = exec_sql(st, "PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON", "setting pragmas", err)) != RB_OK)
        return e;
    char sql[96];
    snprintf(sql, sizeof(sql), "PRAGMA journal_size_limit=%d", STORE_JOURNAL_SIZE_LIMIT);
    if ((e = exec_sql(st, sql, "setting pragmas", err)) != RB_OK)
        return e;
    /* Replaces autocheckpoint (the two share this hook): store_checkpoint does the work. */
    sqlite3_wal_hook(st->db, wal_hook, st);

    if (version == STORE_SCHEMA_VERSION)
        return RB_OK;
    if ((e = exec_sql(st, "BEGIN IMMEDIATE", "starting the schema migration", err)) != RB_OK)
        return e;
    for (int v = version; v < STORE_SCHEMA_VERSION; v++) {
        char what[64];
        snprintf(what, sizeof(what), "migrating the schema to version %d", v + 1);
        if ((e = exec_sql(st, migrations[v], what, err)) != RB_OK)
            goto rollback;
        snprintf(sql, sizeof(sql), "PRAGMA user_version=%d; PRAGMA application_id=%d", v + 1, STORE_APPLICATION_ID);
        if ((e = exec_sql(st, sql, what, err)) != RB_OK)
            goto rollback;
    }
    if ((e = exec_sql(st, "COMMIT", "committing the schema migration", err)) != RB_OK)
        goto rollback;
    return RB_OK;
rollback:
    sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    return e;
}

rb_err store_open(const char *path, store **out, char *err)
{
    if (path == NULL || *path == '\0' || out == NULL)
        return rb_fail(RB_EINVAL, err, "store: the database path is empty");
    *out = NULL;
    int memory = strcmp(path, ":memory:") == 0;
    rb_err e;
    if (!memory && (e = check_dir(path, err)) != RB_OK)
        return e;

    store *st = xcalloc(1, sizeof(*st));
    st->path = xstrdup(path);
    st->lock_fd = -1;
    rb_buf_init(&st->doc, STORE_DOC_MAX);
    if (!memory && (e = lock_take(st, err)) != RB_OK)
        goto fail;

    int rc = sqlite3_open_v2(path, &st->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        e = store__fail_sql(st, rc, "opening", err);
        goto fail;
    }
    sqlite3_extended_result_codes(st->db, 1);
    sqlite3_busy_timeout(st->db, STORE_BUSY_TIMEOUT_MS);
    if ((e = setup(st, err)) != RB_OK)
        goto fail;
    *out = st;
    return RB_OK;
fail:
    store_close(st);
    return e;
}

void store_close(store *st)
{
    if (st == NULL)
        return;
    for (int i = 0; i < STORE__STMT_COUNT; i++)
        sqlite3_finalize(st->stmt[i]);
    if (st->db != NULL) {
        /* An unbalanced store_begin is rolled back by sqlite3_close. */
        store_checkpoint(st);
        sqlite3_close(st->db);
    }
    if (st->lock_fd >= 0)
        close(st->lock_fd); /* releases the flock; the file stays (unlinking it would race) */
    rb_buf_dispose(&st->doc);
    free(st->path);
    free(st);
}

void store_checkpoint(store *st)
{
    if (st == NULL || st->db == NULL || st->lock_fd < 0)
        return;
    /* Never fatal: a checkpoint that cannot run now runs at the next tick. */
    sqlite3_wal_checkpoint_v2(st->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
}

rb_err store_begin(store *st, char *err)
{
    if (st->depth == 0) {
        rb_err e = run_id(st, STORE__STMT_BEGIN, "beginning a transaction", err);
        if (e != RB_OK)
            return e;
    }
    st->depth++;
    return RB_OK;
}

rb_err store_commit(store *st, char *err)
{
    if (st->depth <= 0)
        return rb_fail(RB_EINTERNAL, err, "store: store_commit without a matching store_begin");
    if (--st->depth > 0)
        return RB_OK;
    rb_err e = run_id(st, STORE__STMT_COMMIT, "committing a transaction", err);
    if (e != RB_OK && !sqlite3_get_autocommit(st->db)) {
        /* Leave no transaction open behind a failed commit; the writes are lost and said so. */
        run_id(st, STORE__STMT_ROLLBACK, "rolling back", NULL);
    }
    return e;
}

rb_err store_prune(store *st, int64_t before_ms, int *deleted, char *err)
{
    static const int ids[] = {STORE__STMT_PRUNE_EXECUTIONS, STORE__STMT_PRUNE_SESSIONS, STORE__STMT_PRUNE_MCP};
    rb_err e;
    int count = 0;
    if (deleted != NULL)
        *deleted = 0;
    if ((e = store__op_begin(st, err)) != RB_OK)
        return e;
    for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]) && e == RB_OK; i++) {
        sqlite3_stmt *s = store__stmt_get(st, ids[i], err, &e);
        if (s == NULL)
            break;
        sqlite3_bind_int64(s, 1, (sqlite3_int64)before_ms);
        if ((e = store__stmt_run(st, s, "pruning", err)) == RB_OK)
            count += sqlite3_changes(st->db);
    }
    e = store__op_end(st, e, err);
    if (e == RB_OK && deleted != NULL)
        *deleted = count;
    return e;
}

/* ---- meta ---- */

rb_err store_meta_get(store *st, const char *key, char **out, char *err)
{
    rb_err e;
    *out = NULL;
    sqlite3_stmt *s = store__stmt_get(st, STORE__STMT_META_GET, err, &e);
    if (s == NULL)
        return e;
    sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        const char *v = (const char *)sqlite3_column_text(s, 0);
        *out = xstrndup(v != NULL ? v : "", (size_t)sqlite3_column_bytes(s, 0));
    } else if (rc == SQLITE_DONE) {
        e = rb_fail(RB_ENOTFOUND, err, "no meta value for key %s", key);
    } else {
        e = store__fail_sql(st, rc, "reading meta", err);
    }
    store__stmt_done(s);
    return e;
}

rb_err store_meta_put(store *st, const char *key, const char *value, char *err)
{
    rb_err e;
    sqlite3_stmt *s = store__stmt_get(st, STORE__STMT_META_PUT, err, &e);
    if (s == NULL)
        return e;
    sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, value, -1, SQLITE_STATIC);
    return store__stmt_run(st, s, "saving meta", err);
}
