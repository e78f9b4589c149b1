/*
 * packages.c: what the sandbox image has preinstalled, for GET /packages and the MCP tool
 * (core_packages in core/core.h). One one-shot container (core/deps/oneshot.h) without network,
 * capabilities or user code lists the image's Python distributions with importlib.metadata and
 * the Node modules Debian installed (for javascript and typescript sessions);
 * the answer is kept per image id, so that it is listed again only after the image changed.
 * The image's Python packages are PyPI wheels pinned in docker/sandbox/requirements.lock.
 * It does not install anything (core/deps/deps.c does) and does not see a session's own packages.
 * The answer kept is the room's (deps_room, core/deps/deps_internal.h); the heart is reached only
 * through core/heart.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/deps/deps_internal.h"
#include "core/deps/oneshot.h"
#include "core/heart.h"

#define LISTING_TIMEOUT_MS (2L * 60 * 1000)

/* Prints {python, packages: [{name, version, modules}], node, node_modules: [{name, version}]}
 * sorted by name. packages: one entry per
 * distribution that can really be imported, the first of a name on sys.path (pip's wheels in
 * /usr/local before Debian's). modules are its top-level import names (top_level.txt, else its
 * RECORD) that import from its own folder; a distribution none of whose modules does (its files
 * removed, or shadowed by another's) is left out. find_spec imports no package. node and
 * node_modules (the Node modules Debian installs for every script, under /usr/share/nodejs and
 * /usr/lib/nodejs) are null and [] without Node.js. */
static const char packages_py[] =
    "import json, os, subprocess, sys, importlib.metadata as m, importlib.util as u\n"
    "def tops(d):\n"
    "    t = d.read_text(\"top_level.txt\") or \"\"\n"
    "    out = {x for x in t.split() if x.isidentifier()}\n"
    "    if not out:\n"
    "        for f in d.files or ():\n"
    "            p = f.parts\n"
    "            if len(p) > 1 and p[0].isidentifier() and p[0] != \"__pycache__\":\n"
    "                out.add(p[0])\n"
    "            elif len(p) == 1 and p[0].endswith((\".py\", \".so\")) and p[0].split(\".\")[0].isidentifier():\n"
    "                out.add(p[0].split(\".\")[0])\n"
    "    return sorted(out)\n"
    "def found(name, root):\n"
    "    try:\n"
    "        s = u.find_spec(name)\n"
    "    except Exception:\n"
    "        return False\n"
    "    where = [s.origin] if s and s.origin else list(s.submodule_search_locations or ()) if s else []\n"
    "    return any(os.path.realpath(w).startswith(root) for w in where if w)\n"
    "seen = {}\n"
    "for d in m.distributions():\n"
    "    n = d.metadata[\"Name\"]\n"
    "    if not n or n.lower() in seen:\n"
    "        continue\n"
    "    root = os.path.realpath(str(d.locate_file(\"\"))) + os.sep\n"
    "    mods = [t for t in tops(d) if found(t, root)]\n"
    "    seen[n.lower()] = {\"name\": n, \"version\": d.version, \"modules\": mods}\n"
    "node = None\n"
    "try:\n"
    "    node = subprocess.run([\"node\", \"--version\"], capture_output=True, text=True, timeout=30).stdout.strip().lstrip(\"v\") or None\n"
    "except (OSError, subprocess.SubprocessError):\n"
    "    pass\n"
    "nmods = {}\n"
    "for base in (\"/usr/share/nodejs\", \"/usr/lib/nodejs\", \"/usr/lib/x86_64-linux-gnu/nodejs\"):\n"
    "    try:\n"
    "        names = os.listdir(base)\n"
    "    except OSError:\n"
    "        continue\n"
    "    for n in names:\n"
    "        subs = [n]\n"
    "        if n.startswith(\"@\"):\n"
    "            try:\n"
    "                subs = [n + \"/\" + x for x in os.listdir(os.path.join(base, n))]\n"
    "            except OSError:\n"
    "                subs = []\n"
    "        for x in subs:\n"
    "            try:\n"
    "                p = json.load(open(os.path.join(base, x, \"package.json\")))\n"
    "            except (OSError, ValueError):\n"
    "                continue\n"
    "            if isinstance(p, dict) and isinstance(p.get(\"name\"), str) and p[\"name\"] not in nmods:\n"
    "                nmods[p[\"name\"]] = {\"name\": p[\"name\"], \"version\": str(p.get(\"version\", \"\"))}\n"
    "print(json.dumps({\"python\": sys.version.split()[0],\n"
    "                  \"packages\": sorted((p for p in seen.values() if p[\"modules\"]), key=lambda p: p[\"name\"].lower()),\n"
    "                  \"node\": node, \"node_modules\": sorted(nmods.values(), key=lambda p: p[\"name\"].lower())}))\n";

/* One core_packages call in flight. */
typedef struct listing {
    rb_core *c;
    core_op *op;
    char *image_id;
} listing;

/* Answers (unless cancelled) and frees l; body is handed over. */
static void listing_finish(listing *l, rb_err e, const char *msg, json_t *body)
{
    if (!l->op->cancelled)
        l->op->cb(l->op->data, e, e == RB_OK ? NULL : msg, body);
    else
        json_decref(body);
    free(l->op);
    free(l->image_id);
    free(l);
}

static void on_listed(void *data, rb_err err, const char *msg, const backend_exec_result *r)
{
    listing *l = data;
    char m2[RB_ERR_LEN];
    if (err != RB_OK) {
        listing_finish(l, err, msg, NULL);
        return;
    }
    json_t *doc = json_loadb(r->out, r->out_len, 0, NULL);
    if (r->exit_code != 0 || !json_is_array(json_object_get(doc, "packages"))) {
        snprintf(m2, sizeof(m2), "listing the image's packages failed (exit code %d): %.200s", r->exit_code, r->err);
        json_decref(doc);
        listing_finish(l, RB_EIO, m2, NULL);
        return;
    }
    deps_room *room = deps__room(l->c);
    json_object_set_new(doc, "image", json_string(core_heart_settings(l->c)->image));
    json_object_set_new(doc, "image_id", json_string(l->image_id));
    json_decref(room->packages_cache);
    room->packages_cache = json_pack("{s:s, s:O}", "image_id", l->image_id, "answer", doc);
    listing_finish(l, RB_OK, NULL, doc);
}

static void on_image_id(void *data, rb_err err, const char *errmsg, const char *id)
{
    listing *l = data;
    char msg[RB_ERR_LEN];
    if (err != RB_OK) {
        snprintf(msg, sizeof(msg), "cannot inspect the sandbox image '%s': %s", core_heart_settings(l->c)->image,
                 errmsg);
        listing_finish(l, err == RB_ENOTFOUND ? RB_EUNAVAILABLE : err, msg, NULL);
        return;
    }
    l->image_id = xstrdup(id);
    json_t *kept = deps__room(l->c)->packages_cache;
    const char *cached = json_string_value(json_object_get(kept, "image_id"));
    if (cached != NULL && strcmp(cached, id) == 0) {
        listing_finish(l, RB_OK, NULL, json_deep_copy(json_object_get(kept, "answer")));
        return;
    }
    const char *const cmd[] = {"python3", "-I", "-c", packages_py, NULL};
    const backend_label labels[] = {{"runbox.instance", core_heart_instance(l->c)}, {"runbox.managed", "1"}};
    backend_spec spec;
    oneshot_spec_init(&spec, core_heart_settings(l->c)->image, NULL);
    spec.cmd = cmd;
    spec.user = "1000";
    spec.labels = labels;
    spec.n_labels = 2;
    rb_err e = oneshot_run(l->c, "packages", &spec, LISTING_TIMEOUT_MS, on_listed, l, msg);
    if (e != RB_OK)
        listing_finish(l, e, msg, NULL);
}

rb_err core_packages(rb_core *c, core_cb cb, void *data, core_op **handle, char *err)
{
    const char *why = NULL;
    if (!core_heart_engine_ok(c, &why))
        return rb_fail(RB_EUNAVAILABLE, err, "Docker is not reachable (%s)", why);
    listing *l = xcalloc(1, sizeof(*l));
    l->c = c;
    l->op = xcalloc(1, sizeof(*l->op));
    l->op->cb = cb;
    l->op->data = data;
    rb_err e = backend_image_id(core_heart_backend(c), core_heart_settings(c)->image, on_image_id, l, err);
    if (e != RB_OK) {
        free(l->op);
        free(l);
        return e;
    }
    if (handle != NULL)
        *handle = l->op;
    return RB_OK;
}
