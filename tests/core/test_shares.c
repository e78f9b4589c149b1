/*
 * test_shares.c: the shares room (core/shares/): the operator's declarations and a key's shares=
 * (sharespec.c, pure), a caller's mounts and the default mounts, and the checks of a host folder
 * at start-up and when a sandbox mounts it (shares.c) on real folders and links made in /tmp.
 * Also replays the libFuzzer seed corpus of mounts (tests/fuzz/corpus/sharespec/, fuzz_sharespec.c).
 * Mounting into a real sandbox is tests/integration/test_shares.py's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "core/settings.h"
#include "core/shares/shares.h"
#include "core/shares/sharespec.h"
#include "tests/common/corpus.h"

static json_t *js(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &e);
    cr_assert_not_null(v, "%s: %s", text, e.text);
    return v;
}

Test(sharespec, names)
{
    const char *good[] = {"photos", "a", "0data", "my_share-2",
                          "abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghij123"};
    const char *bad[] = {"",    "Photos", "_x",  "-x", "a b",
                         "a.b", "a/b",    "abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghij1234"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        cr_assert(sharespec_name_ok(good[i], strlen(good[i])), "%s", good[i]);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_assert(!sharespec_name_ok(bad[i], strlen(bad[i])), "%s", bad[i]);
}

Test(sharespec, declarations)
{
    sharespec_list l;
    char err[RB_ERR_LEN];
    cr_assert_eq(sharespec_parse(NULL, &l, err), RB_OK);
    cr_assert_eq(l.n, 0);
    cr_assert_eq(sharespec_parse(" photos=/srv/My Photos ;out=/srv/out:rw\nro=/srv/ro:ro,", &l, err), RB_OK, "%s", err);
    cr_assert_eq(l.n, 3);
    cr_assert_str_eq(l.v[0].name, "photos");
    cr_assert_str_eq(l.v[0].host_path, "/srv/My Photos");
    cr_assert_eq(l.v[0].rw, 0, "read-only by default");
    cr_assert_eq(l.v[1].rw, 1);
    cr_assert_eq(l.v[2].rw, 0);
    cr_assert_eq(sharespec_find(&l, "out"), &l.v[1]);
    cr_assert_null(sharespec_find(&l, "nope"));
    sharespec_list_dispose(&l);

    const char *bad[][2] = {
        {"photos", "NAME=/host/path"},          {"Photos=/srv", "the name"},
        {"p=srv", "absolute"},                  {"p=/srv/", "end with /"},
        {"p=/srv//x", "empty component"},       {"p=/srv/../etc", "'..'"},
        {"p=/srv/./x", "'.'"},                  {"p=/srv:rx", "not a mode"},
        {"p=/srv:ro:rw", "not a mode"},         {"p=/a,p=/b", "declared twice"},
        {"p=/a\tb", "control character"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cr_assert_eq(sharespec_parse(bad[i][0], &l, err), RB_EINVAL, "accepted %s", bad[i][0]);
        cr_assert_eq(l.n, 0);
        cr_assert(strstr(err, bad[i][1]) != NULL, "%s -> %s", bad[i][0], err);
    }
}

Test(sharespec, keys)
{
    char err[RB_ERR_LEN];
    cr_assert_eq(sharespec_key_check("none", err), RB_OK);
    cr_assert_eq(sharespec_key_check("*", err), RB_OK);
    cr_assert_eq(sharespec_key_check("photos, data", err), RB_OK);
    cr_assert_eq(sharespec_key_check("photos,Data", err), RB_EINVAL);
    cr_assert(strstr(err, "Data") != NULL, "%s", err);
    cr_assert_eq(sharespec_key_check(",", err), RB_EINVAL);

    core_caller some = {.owner = "a", .shares = "photos,data"}, all = {.owner = "b", .shares = "*"};
    core_caller none = {.owner = "c", .shares = "none"}, unset = {.owner = "d"};
    cr_assert(sharespec_allowed(NULL, "photos"), "without keys: every share");
    cr_assert(sharespec_allowed(&some, "data"));
    cr_assert(!sharespec_allowed(&some, "dat"));
    cr_assert(!sharespec_allowed(&some, "other"));
    cr_assert(sharespec_allowed(&all, "other"));
    cr_assert(!sharespec_allowed(&none, "photos"));
    cr_assert(!sharespec_allowed(&unset, "photos"), "a key without shares= mounts none");
}

Test(sharespec, mount_paths)
{
    char err[RB_ERR_LEN], *out;
    const char *good[][2] = {{"/workspace/photos", "/workspace/photos"},
                             {"photos", "/workspace/photos"},
                             {"/workspace/in/photos 2024", "/workspace/in/photos 2024"},
                             {"/workspace/.hidden", "/workspace/.hidden"},
                             {"/workspace/runbox", "/workspace/runbox"}};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        cr_assert_eq(sharespec_mount_path(good[i][0], strlen(good[i][0]), "p", &out, err), RB_OK, "%s: %s",
                     good[i][0], err);
        cr_assert_str_eq(out, good[i][1]);
        free(out);
    }
    const char *bad[] = {"/workspace",      "/workspace/",   "", "/tmp/x", "/workspacex/y", "/workspace//x",
                         "/workspace/a/../b", "/workspace/./a", "/workspace/x/", "/workspace/.runbox",
                         "/workspace/.runbox/site-packages", "/workspace/a:b", "/workspace/a,b", "/workspace/a\nb",
                         "/workspace/a\\b", "..", "../etc"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_assert_eq(sharespec_mount_path(bad[i], strlen(bad[i]), "p", &out, err), RB_EINVAL, "accepted '%s'",
                     bad[i]);
    /* a NUL inside a JSON string is a control character */
    cr_assert_eq(sharespec_mount_path("/workspace/a\0b", 14, "p", &out, err), RB_EINVAL);
}

Test(sharespec, mounts_of_a_request)
{
    sharespec_list l;
    char err[RB_ERR_LEN];
    cr_assert_eq(sharespec_parse("photos=/srv/p,out=/srv/o:rw,secret=/srv/s", &l, err), RB_OK);
    core_caller alice = {.owner = "alice", .shares = "photos,out"};
    json_t *out, *v;

    v = js("[{\"share\": \"photos\"}, {\"share\": \"out\", \"path\": \"results\"}, "
           "{\"share\": \"out\", \"path\": \"/workspace/ro-out\", \"readonly\": true}]");
    cr_assert_eq(sharespec_mounts(&l, &alice, v, &out, err), RB_OK, "%s", err);
    json_t *want = js("[{\"share\": \"photos\", \"path\": \"/workspace/photos\", \"readonly\": true},"
                      "{\"share\": \"out\", \"path\": \"/workspace/results\", \"readonly\": false},"
                      "{\"share\": \"out\", \"path\": \"/workspace/ro-out\", \"readonly\": true}]");
    cr_assert(json_equal(out, want), "%s", json_dumps(out, 0));
    json_decref(want);
    json_decref(out);
    json_decref(v);

    /* refused: 403 for a share the key may not mount (or that does not exist: the same words) and
     * for writing a read-only one; 400 for the rest */
    const struct {
        const char *req;
        rb_err e;
        const char *words;
    } bad[] = {
        {"[{\"share\": \"secret\"}]", RB_EFORBIDDEN, "no share 'secret' that this caller may mount; shares it may "
                                                     "mount: photos, out"},
        {"[{\"share\": \"nosuch\"}]", RB_EFORBIDDEN, "no share 'nosuch'"},
        {"[{\"share\": \"photos\", \"readonly\": false}]", RB_EFORBIDDEN, "read-only"},
        {"{\"share\": \"photos\"}", RB_EINVAL, "must be a list"},
        {"[\"photos\"]", RB_EINVAL, "must be an object"},
        {"[{\"share\": \"photos\", \"mode\": \"ro\"}]", RB_EINVAL, "unknown field 'mode'"},
        {"[{\"share\": 3}]", RB_EINVAL, "share must be the name"},
        {"[{\"share\": \"photos\", \"readonly\": \"yes\"}]", RB_EINVAL, "true or false"},
        {"[{\"share\": \"photos\", \"path\": \"/etc\"}]", RB_EINVAL, "not under /workspace"},
        {"[{\"share\": \"photos\", \"path\": 7}]", RB_EINVAL, "must be a path"},
        {"[{\"share\": \"photos\"}, {\"share\": \"out\", \"path\": \"/workspace/photos\"}]", RB_EINVAL,
         "two mounts at /workspace/photos"},
        {"[{\"share\": \"photos\"}, {\"share\": \"out\", \"path\": \"/workspace/photos/out\"}]", RB_EINVAL,
         "mounts may not nest"},
        {"[{\"share\": \"out\", \"path\": \"/workspace/a/b\"}, {\"share\": \"photos\", \"path\": \"a\"}]", RB_EINVAL,
         "mounts may not nest"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        v = js(bad[i].req);
        cr_assert_eq(sharespec_mounts(&l, &alice, v, &out, err), bad[i].e, "%s: %s", bad[i].req, err);
        cr_assert_null(out);
        cr_assert(strstr(err, bad[i].words) != NULL, "%s -> %s", bad[i].req, err);
        json_decref(v);
    }
    /* at most SHARESPEC_MOUNTS_MAX */
    v = json_array();
    for (int i = 0; i <= SHARESPEC_MOUNTS_MAX; i++)
        json_array_append_new(v, json_pack("{s:s, s:s}", "share", "photos", "path", "x"));
    cr_assert_eq(sharespec_mounts(&l, NULL, v, &out, err), RB_EINVAL);
    cr_assert(strstr(err, "at most 16") != NULL, "%s", err);
    json_decref(v);
    /* a key without shares= may mount none, and is told so */
    core_caller bob = {.owner = "bob"};
    v = js("[{\"share\": \"photos\"}]");
    cr_assert_eq(sharespec_mounts(&l, &bob, v, &out, err), RB_EFORBIDDEN);
    cr_assert(strstr(err, "shares it may mount: none") != NULL, "%s", err);
    json_decref(v);
    sharespec_list_dispose(&l);
}

Test(sharespec, default_mounts)
{
    sharespec_list l;
    char err[RB_ERR_LEN];
    cr_assert_eq(sharespec_parse("photos=/srv/p,out=/srv/o:rw", &l, err), RB_OK);
    json_t *out;
    core_caller alice = {.owner = "alice", .shares = "out"};
    cr_assert_eq(sharespec_defaults(&l, "photos, out:/workspace/results", NULL, &out, err), RB_OK, "%s", err);
    json_t *want = js("[{\"share\": \"photos\", \"path\": \"/workspace/photos\", \"readonly\": true},"
                      "{\"share\": \"out\", \"path\": \"/workspace/results\", \"readonly\": false}]");
    cr_assert(json_equal(out, want), "%s", json_dumps(out, 0));
    json_decref(want);
    json_decref(out);
    /* of the shares the key may mount only; :ro makes a rw share read-only */
    cr_assert_eq(sharespec_defaults(&l, "photos,out:ro", &alice, &out, err), RB_OK, "%s", err);
    want = js("[{\"share\": \"out\", \"path\": \"/workspace/out\", \"readonly\": true}]");
    cr_assert(json_equal(out, want), "%s", json_dumps(out, 0));
    json_decref(want);
    json_decref(out);
    cr_assert_eq(sharespec_defaults(&l, "out:/workspace/r:ro", NULL, &out, err), RB_OK, "%s", err);
    cr_assert(json_is_true(json_object_get(json_array_get(out, 0), "readonly")));
    json_decref(out);
    cr_assert_eq(sharespec_defaults(&l, NULL, NULL, &out, err), RB_OK);
    cr_assert_eq(json_array_size(out), 0);
    json_decref(out);
    const char *bad[] = {"nosuch", "photos:/etc", "photos:/workspace/a:rw", "photos,photos", "photos:a:ro:ro"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cr_assert_eq(sharespec_defaults(&l, bad[i], NULL, &out, err), RB_EINVAL, "accepted %s", bad[i]);
        cr_assert(strstr(err, "default-mounts") != NULL, "%s", err);
    }
    sharespec_list_dispose(&l);
}

/* One seed of fuzz_sharespec: answered as the target promises (fuzz_sharespec.c). */
static void check_seed(void *data, const char *seed, const char *path, const char *buf, size_t len)
{
    (void)path;
    int *accepted = data;
    sharespec_list l;
    char err[RB_ERR_LEN];
    cr_assert_eq(sharespec_parse("photos=/srv/p,out=/srv/o:rw,secret=/srv/s:rw", &l, err), RB_OK);
    core_caller who = {.owner = "fuzz", .shares = "photos,out"};
    json_t *v = json_loadb(buf, len, JSON_DECODE_ANY, NULL), *out = NULL;
    if (v != NULL) {
        err[0] = '\0';
        rb_err e = sharespec_mounts(&l, &who, v, &out, err);
        cr_expect(e == RB_OK || ((e == RB_EINVAL || e == RB_EFORBIDDEN) && out == NULL && err[0] != '\0'), "%s: %s",
                  seed, err);
        size_t i;
        json_t *m;
        json_array_foreach(out, i, m)
        {
            const sharespec_decl *d = sharespec_find(&l, json_string_value(json_object_get(m, "share")));
            cr_expect(d != NULL && strcmp(d->name, "secret") != 0, "%s", seed);
            cr_expect(d == NULL || d->rw || json_is_true(json_object_get(m, "readonly")), "%s", seed);
        }
        *accepted += e == RB_OK;
        json_decref(out);
        json_decref(v);
    }
    sharespec_list_dispose(&l);
}

Test(sharespec, fuzz_corpus_replay)
{
    int accepted = 0;
    int files = corpus_each("sharespec", check_seed, &accepted);
    cr_assert_geq(files, 8);
    cr_assert_gt(accepted, 0);
}

/* ---- host folders ---------------------------------------------------------------------- */

static char root[64];

static void make_root(void)
{
    snprintf(root, sizeof(root), "/tmp/rb-shares-XXXXXX");
    cr_assert_not_null(mkdtemp(root));
}

static void remove_root(void)
{
    char *cmd = xasprintf("rm -rf '%s'", root);
    cr_assert_eq(system(cmd), 0);
    free(cmd);
}

/* Settings with the one share text and the database in root/data. */
static rb_err check(const char *shares, char *err)
{
    core_settings s;
    core_settings_init(&s);
    free(s.db_path);
    s.db_path = xasprintf("%s/data/runbox.db", root);
    s.shares = xstrdup(shares);
    rb_err e = shares_check_settings(&s, err);
    core_settings_dispose(&s);
    return e;
}

Test(shares, host_folders_are_checked, .init = make_root, .fini = remove_root)
{
    char err[RB_ERR_LEN];
    char *p = xasprintf("%s/data", root);
    cr_assert_eq(mkdir(p, 0755), 0);
    free(p);
    char *real = xasprintf("%s/real", root);
    p = xasprintf("%s/real/photos", root);
    cr_assert_eq(mkdir(real, 0755), 0);
    cr_assert_eq(mkdir(p, 0755), 0);
    char *link = xasprintf("%s/link", root), *file = xasprintf("%s/real/file", root);
    cr_assert_eq(symlink(real, link), 0);
    free(real);
    FILE *f = fopen(file, "w");
    cr_assert_not_null(f);
    fclose(f);

    char *ok = xasprintf("photos=%s:rw", p);
    /* :rw asks that the sandbox user may write there: root's 0755 folder is refused with the fix */
    cr_assert_eq(check(ok, err), RB_EINVAL);
    cr_assert(strstr(err, "share photos: ") != NULL && strstr(err, "cannot write in it") != NULL &&
                  strstr(err, "chown 1000:1000") != NULL && strstr(err, "without :rw") != NULL,
              "%s", err);
    char *ro = xasprintf("photos=%s", p);
    cr_assert_eq(check(ro, err), RB_OK, "%s", err);
    free(ro);
    cr_assert_eq(chown(p, 0, SHARES_SANDBOX_GID), 0);
    cr_assert_eq(check(ok, err), RB_EINVAL, "the group may not write yet");
    cr_assert_eq(chmod(p, 0775), 0);
    cr_assert_eq(check(ok, err), RB_OK, "%s", err);
    cr_assert_eq(chown(p, 0, 0), 0);
    cr_assert_eq(chmod(p, 0777), 0);
    cr_assert_eq(check(ok, err), RB_OK, "%s", err);
    cr_assert_eq(chmod(p, 0755), 0);
    cr_assert_eq(chown(p, SHARES_SANDBOX_UID, SHARES_SANDBOX_GID), 0);
    cr_assert_eq(check(ok, err), RB_OK, "%s", err);
    const struct {
        char *text;
        const char *words;
    } bad[] = {
        {xasprintf("photos=%s/link/photos", root), "is a symbolic link"},
        {xasprintf("photos=%s/link", root), "is a symbolic link"},
        {xasprintf("photos=%s/missing", root), "does not exist"},
        {xasprintf("photos=%s", file), "is not a folder"},
        {xasprintf("photos=%s/x", file), "is not a folder"},
        {xasprintf("photos=%s/data", root), "holds runboxd's own data"},
        {xasprintf("photos=%s", root), "holds runboxd's own data"},
        {xasprintf("photos=%s/data/sub", root), "does not exist"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cr_assert_eq(check(bad[i].text, err), RB_EINVAL, "accepted %s", bad[i].text);
        cr_assert(strstr(err, "share photos: ") != NULL && strstr(err, bad[i].words) != NULL, "%s -> %s",
                  bad[i].text, err);
        free(bad[i].text);
    }
    /* a folder inside the data folder */
    char *sub = xasprintf("%s/data/sub", root);
    cr_assert_eq(mkdir(sub, 0755), 0);
    char *in = xasprintf("photos=%s", sub);
    cr_assert_eq(check(in, err), RB_EINVAL);
    cr_assert(strstr(err, "lies inside runboxd's own data") != NULL, "%s", err);
    free(in);
    free(sub);

    /* the Docker socket's folder, and an engine elsewhere */
    core_settings s;
    core_settings_init(&s);
    free(s.docker_socket);
    s.docker_socket = xasprintf("unix://%s/real/photos/docker.sock", root);
    s.shares = xstrdup(ok);
    cr_assert_eq(shares_check_settings(&s, err), RB_EINVAL);
    cr_assert(strstr(err, "Docker socket") != NULL, "%s", err);
    free(s.docker_socket);
    s.docker_socket = xstrdup("tcp://10.0.0.1:2376");
    cr_assert_eq(shares_check_settings(&s, err), RB_EINVAL);
    cr_assert(strstr(err, "runboxd's own machine") != NULL, "%s", err);
    core_settings_dispose(&s);
    free(ok);
    free(p);
    free(link);
    free(file);
}

Test(shares, mounts_and_binds, .init = make_root, .fini = remove_root)
{
    char err[RB_ERR_LEN];
    char *p = xasprintf("%s/photos", root), *o = xasprintf("%s/out", root);
    cr_assert_eq(mkdir(p, 0755), 0);
    cr_assert_eq(mkdir(o, 0755), 0);
    cr_assert_eq(chown(o, SHARES_SANDBOX_UID, SHARES_SANDBOX_GID), 0);
    core_settings s;
    core_settings_init(&s);
    s.shares = xasprintf("photos=%s,out=%s:rw", p, o);
    json_t *m = NULL;
    cr_assert_eq(shares_mounts(&s, NULL, NULL, &m, err), RB_OK, "%s", err);
    cr_assert_null(m, "no mounts asked, no defaults: none");
    s.default_mounts = xstrdup("photos");
    cr_assert_eq(shares_mounts(&s, NULL, NULL, &m, err), RB_OK, "%s", err);
    cr_assert_eq(json_array_size(m), 1, "the default mounts");
    json_decref(m);
    json_t *none = js("[]");
    cr_assert_eq(shares_mounts(&s, NULL, none, &m, err), RB_OK, "%s", err);
    cr_assert_null(m, "mounts: [] turns the defaults off");
    json_decref(none);
    json_t *v = js("[{\"share\": \"photos\"}, {\"share\": \"out\"}]");
    cr_assert_eq(shares_mounts(&s, NULL, v, &m, err), RB_OK, "%s", err);
    backend_volume *vols;
    size_t n;
    cr_assert_eq(shares_volumes(&s, m, &vols, &n, err), RB_OK, "%s", err);
    cr_assert_eq(n, 2);
    cr_assert_str_eq(vols[0].host_path, p);
    cr_assert_str_eq(vols[0].path, "/workspace/photos");
    cr_assert(vols[0].readonly && vols[0].name == NULL);
    cr_assert_str_eq(vols[1].host_path, o);
    cr_assert(!vols[1].readonly);
    shares_volumes_free(vols, n);

    /* a rw folder the sandbox user can no longer write in (chown after start-up): refused at mount */
    cr_assert_eq(chown(o, 0, 0), 0);
    cr_assert_eq(shares_volumes(&s, m, &vols, &n, err), RB_ECONFLICT);
    cr_assert(strstr(err, "share out") != NULL && strstr(err, "cannot write in it") != NULL, "%s", err);

    /* a folder replaced by a link after start-up is refused when a sandbox would mount it */
    cr_assert_eq(rmdir(o), 0);
    cr_assert_eq(symlink("/etc", o), 0);
    cr_assert_eq(shares_volumes(&s, m, &vols, &n, err), RB_ECONFLICT);
    cr_assert(strstr(err, "share out") != NULL && strstr(err, "symbolic link") != NULL, "%s", err);
    json_t *refused = NULL; /* m keeps the mounts made before (freed below) */
    cr_assert_eq(shares_mounts(&s, NULL, v, &refused, err), RB_ECONFLICT);
    cr_assert_null(refused);
    /* a share no longer declared (a restart with other --share) */
    free(s.shares);
    s.shares = xasprintf("photos=%s", p);
    json_t *m2 = js("[{\"share\": \"out\", \"path\": \"/workspace/out\", \"readonly\": false}]");
    cr_assert_eq(shares_volumes(&s, m2, &vols, &n, err), RB_ECONFLICT);
    cr_assert(strstr(err, "no longer declared") != NULL, "%s", err);
    json_decref(m2);
    json_decref(m);
    json_decref(v);
    core_settings_dispose(&s);
    free(p);
    free(o);
}
