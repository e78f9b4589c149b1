/*
 * contexts.c: a session's code contexts, each an interpreter of its own (its language, its
 * variables, its working directory) in the one sandbox whose files they share. Every session
 * has one default context per language, whose id is the language's name: the session's own
 * language's is the interpreter it always had, the others are started when first used.
 * core_context_create adds more (at most CORE_CONTEXTS_MAX), with ids "ctx_..."; they are kept
 * in the session's document, so they survive a restart of runboxd. An execution names a context
 * or a language (core__context_pick) and carries its description to the runner, which starts
 * the context's worker when a cell first needs it (docker/runner/PROTOCOL.md), so a sandbox
 * made again (a resume from hibernation) needs nothing replayed. Per-execution environment
 * variables are checked here too. Not here: queueing and running (session.c, sandbox_runner.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

#define CONTEXT_CWD_MAX 4096 /* bytes: openapi.yaml's 1024 characters of up to 4 bytes each */
#define ENV_VARS_MAX 256
#define ENV_BYTES_MAX (256 * 1024)

static const char *const languages[] = {"python", "javascript", "typescript", "bash"};

/* The created context with this id, or NULL. Borrowed. */
static json_t *find_created(const session *s, const char *id)
{
    size_t i;
    json_t *item;
    json_array_foreach (s->contexts, i, item) {
        const char *cid = json_string_value(json_object_get(item, "id"));
        if (cid != NULL && strcmp(cid, id) == 0)
            return item;
    }
    return NULL;
}

static json_t *context_object(const char *id, const char *language, const char *cwd, int is_default)
{
    return json_pack("{s:s, s:s, s:s?, s:b}", "id", id, "language", language, "cwd", cwd, "default", is_default);
}

rb_err core_context_list(rb_core *c, const core_caller *who, const char *session_id, json_t **out, char *err)
{
    session *s = core__live_session(c, who, session_id, err);
    if (s == NULL)
        return RB_ENOTFOUND;
    json_t *list = json_array();
    json_array_append_new(list, context_object(s->language, s->language, NULL, 1));
    for (size_t i = 0; i < sizeof(languages) / sizeof(languages[0]); i++)
        if (strcmp(languages[i], s->language) != 0)
            json_array_append_new(list, context_object(languages[i], languages[i], NULL, 1));
    size_t i;
    json_t *item;
    json_array_foreach (s->contexts, i, item) {
        json_t *o = json_deep_copy(item);
        json_object_set_new(o, "default", json_false());
        json_array_append_new(list, o);
    }
    *out = list;
    return RB_OK;
}

rb_err core_context_create(rb_core *c, const core_caller *who, const char *session_id, json_t *req, json_t **out,
                           char *err)
{
    static const char *const keys[] = {"language", "cwd", NULL};
    rb_err e;
    if (!json_is_object(req))
        return rb_fail(RB_EINVAL, err, "the request body must be a JSON object like {\"language\": \"python\"}");
    if ((e = core__check_keys(req, "a context", keys, err)) != RB_OK)
        return e;
    session *s = core__live_session(c, who, session_id, err);
    if (s == NULL)
        return RB_ENOTFOUND;
    json_t *lang = json_object_get(req, "language"), *cwd = json_object_get(req, "cwd");
    const char *l = json_is_null(lang) || lang == NULL ? "python" : json_string_value(lang);
    if (!core_language_known(l))
        return rb_fail(RB_EINVAL, err, "'language' must be " CORE_LANGUAGES_TEXT " or be omitted (python)");
    const char *dir = json_string_value(cwd);
    if (cwd != NULL && !json_is_null(cwd) &&
        (dir == NULL || dir[0] != '/' || json_string_length(cwd) > CONTEXT_CWD_MAX ||
         strlen(dir) != json_string_length(cwd)))
        return rb_fail(RB_EINVAL, err, "'cwd' must be an absolute path (e.g. \"/workspace\") of at most 1024 characters, "
                                       "or be omitted (the sandbox's working directory)");
    if (s->contexts != NULL && json_array_size(s->contexts) >= CORE_CONTEXTS_MAX)
        return rb_fail(RB_ECONFLICT, err,
                       "session '%s' has %d contexts already, the most a session may have beside its default ones; "
                       "remove one first",
                       s->id, CORE_CONTEXTS_MAX);
    char id[RB_ID_LEN];
    rb_random_id("ctx_", id, sizeof(id));
    if (s->contexts == NULL)
        s->contexts = json_array();
    json_array_append_new(s->contexts, json_pack("{s:s, s:s, s:s?}", "id", id, "language", l, "cwd", dir));
    session_persist(s);
    *out = context_object(id, l, dir, 0);
    return RB_OK;
}

rb_err core_context_remove(rb_core *c, const core_caller *who, const char *session_id, const char *context_id,
                           char *err)
{
    session *s = core__live_session(c, who, session_id, err);
    if (s == NULL)
        return RB_ENOTFOUND;
    if (core_language_known(context_id) || strcmp(context_id, "default") == 0)
        return rb_fail(RB_ECONFLICT, err,
                       "'%s' is a default context, which every session has: restart it to clear its state, or remove "
                       "a context made with create",
                       context_id);
    size_t i;
    json_t *item;
    json_array_foreach (s->contexts, i, item) {
        const char *cid = json_string_value(json_object_get(item, "id"));
        if (cid != NULL && strcmp(cid, context_id) == 0) {
            if (s->sb != NULL)
                sandbox_close_context(s->sb, cid);
            json_array_remove(s->contexts, i);
            session_persist(s);
            return RB_OK;
        }
    }
    return rb_fail(RB_ENOTFOUND, err, "session '%s' has no context '%.64s'; list them to see which it has", s->id,
                   context_id);
}

static rb_err env_check(json_t *env, char *err);

rb_err core__context_pick(session *s, json_t *req, json_t **spec, const char **language, char *err)
{
    json_t *lang = json_object_get(req, "language"), *ctx = json_object_get(req, "context");
    const char *l = json_string_value(lang), *id = json_string_value(ctx);
    *spec = NULL;
    *language = s->language;
    rb_err e = env_check(json_object_get(req, "env"), err);
    if (e != RB_OK)
        return e;
    if (lang != NULL && !json_is_null(lang) && !core_language_known(l))
        return rb_fail(RB_EINVAL, err, "'language' must be " CORE_LANGUAGES_TEXT " or be omitted (the session's)");
    if (ctx != NULL && !json_is_null(ctx) && id == NULL)
        return rb_fail(RB_EINVAL, err, "'context' must be a context id (a string: \"%s\", another language, or an id "
                                       "from creating a context)", s->language);
    if (id != NULL && strcmp(id, "default") == 0)
        id = s->language;
    const char *cwd = NULL, *want = l;
    if (id != NULL && core_language_known(id)) {
        l = id;
    } else if (id != NULL) {
        json_t *item = s->contexts != NULL ? find_created(s, id) : NULL;
        if (item == NULL)
            return rb_fail(RB_ENOTFOUND, err, "session '%s' has no context '%.64s'; list its contexts, or create one",
                           s->id, id);
        l = json_string_value(json_object_get(item, "language"));
        cwd = json_string_value(json_object_get(item, "cwd"));
    } else if (l == NULL) {
        return RB_OK; /* neither: the session's own interpreter, as always */
    }
    if (want != NULL && strcmp(want, l) != 0)
        return rb_fail(RB_ECONFLICT, err, "'language' is %s but context '%s' runs %s; give one of the two", want, id,
                       l);
    *language = l;
    if (id == NULL || core_language_known(id)) {
        if (strcmp(l, s->language) == 0)
            return RB_OK; /* the session's own interpreter */
        id = l;
    }
    *spec = json_pack("{s:s, s:s, s:s?}", "id", id, "language", l, "cwd", cwd);
    return RB_OK;
}

void core__context_apply(execution *ex, json_t *req)
{
    const char *l;
    char err[RB_ERR_LEN];
    if (core__context_pick(ex->s, req, &ex->context, &l, err) != RB_OK)
        ex->context = NULL; /* checked by the caller before: cannot fail */
    json_t *env = json_object_get(req, "env");
    ex->env = json_is_object(env) && json_object_size(env) > 0 ? json_incref(env) : NULL;
}

static rb_err env_check(json_t *env, char *err)
{
    if (env == NULL || json_is_null(env))
        return RB_OK;
    if (!json_is_object(env))
        return rb_fail(RB_EINVAL, err, "'env' must be an object of variable names to string values");
    if (json_object_size(env) > ENV_VARS_MAX)
        return rb_fail(RB_EINVAL, err, "'env' has more than %d variables", ENV_VARS_MAX);
    size_t bytes = 0;
    const char *k;
    json_t *v;
    json_object_foreach (env, k, v) {
        int ok = (k[0] == '_' || (k[0] >= 'A' && k[0] <= 'Z') || (k[0] >= 'a' && k[0] <= 'z')) && strlen(k) <= 256;
        for (const char *p = k; ok && *p != '\0'; p++)
            ok = *p == '_' || (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9');
        if (!ok)
            return rb_fail(RB_EINVAL, err, "'env': '%.64s' is not a variable name (letters, digits and '_', not "
                                           "starting with a digit)", k);
        if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
            return rb_fail(RB_EINVAL, err, "'env': the value of %.64s must be a string without NUL characters", k);
        bytes += strlen(k) + json_string_length(v);
    }
    if (bytes > ENV_BYTES_MAX)
        return rb_fail(RB_ETOOBIG, err, "'env' is larger than %d bytes", ENV_BYTES_MAX);
    return RB_OK;
}
