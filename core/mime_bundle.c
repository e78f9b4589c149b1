/*
 * mime_bundle.c: see mime_bundle.h.
 */
#include "core/mime_bundle.h"

#include "core/core.h"

#include <string.h>

static const char *const binary_mimes[] = {"image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf"};

/* Most shown first: what a notebook front end picks from a bundle (images, then rich text). */
static const char *const main_order[] = {"image/png",        "image/jpeg",             "image/svg+xml",
                                         "text/html",        "text/markdown",          "text/latex",
                                         "application/json", "application/javascript", "application/pdf",
                                         "text/plain"};

int mime_bundle_is_binary(const char *mime)
{
    for (size_t i = 0; i < sizeof(binary_mimes) / sizeof(binary_mimes[0]); i++)
        if (strcmp(mime, binary_mimes[i]) == 0)
            return 1;
    return 0;
}

static int name_part_ok(const char *p, size_t n)
{
    if (n == 0 || n > 63)
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)p[i];
        int alnum = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
        if (!alnum && (i == 0 || strchr("!#$&^_.+-", ch) == NULL || ch == '\0'))
            return 0;
    }
    return 1;
}

int mime_bundle_name_ok(const char *name)
{
    const char *slash = strchr(name, '/');
    if (slash == NULL || strchr(slash + 1, '/') != NULL)
        return 0;
    return name_part_ok(name, (size_t)(slash - name)) && name_part_ok(slash + 1, strlen(slash + 1));
}

const char *mime_bundle_main(json_t *bundle)
{
    for (size_t i = 0; i < sizeof(main_order) / sizeof(main_order[0]); i++)
        if (json_object_get(bundle, main_order[i]) != NULL)
            return main_order[i];
    void *it = json_object_iter(bundle);
    return it != NULL ? json_object_iter_key(it) : NULL;
}

json_t *mime_bundle_read(json_t *in, size_t text_cap, size_t *bytes, size_t bytes_max, int64_t *dropped)
{
    json_t *out = json_object();
    const char *mime;
    json_t *value;
    json_object_foreach(in, mime, value)
    {
        size_t n = json_string_length(value);
        int ok = json_is_string(value) && json_object_size(out) < MIME_BUNDLE_FORMATS_MAX && mime_bundle_name_ok(mime);
        if (ok && strcmp(mime, "text/plain") != 0 && !mime_bundle_is_binary(mime) && n > text_cap)
            ok = 0;
        if (!ok || *bytes + n > bytes_max) {
            *dropped += (int64_t)n;
            continue;
        }
        *bytes += n;
        json_object_set(out, mime, value);
    }
    return out;
}

json_t *mime_bundle_metadata(json_t *in)
{
    if (!json_is_object(in) || json_object_size(in) == 0)
        return json_object();
    size_t n = json_dumpb(in, NULL, 0, JSON_COMPACT);
    return n > 0 && n <= MIME_BUNDLE_METADATA_MAX ? json_incref(in) : json_object();
}

/* Whether mime's values are JSON documents: application/json and any "+json" type. */
static int is_json(const char *mime)
{
    size_t n = strlen(mime);
    return strcmp(mime, "application/json") == 0 || (n > 5 && strcmp(mime + n - 5, "+json") == 0);
}

json_t *core_output_bundle(json_t *item)
{
    const char *type = json_string_value(json_object_get(item, "type"));
    json_t *bundle = json_object_get(item, "bundle"), *out = json_object();
    if (type == NULL)
        return out;
    if (!json_is_object(bundle)) {
        const char *mime = json_string_value(json_object_get(item, "mime"));
        if (strcmp(type, "result") == 0)
            json_object_set(out, "text/plain", json_object_get(item, "text"));
        else if (strcmp(type, "display") == 0 && mime != NULL)
            json_object_set(out, mime, json_object_get(item, "data"));
        return out;
    }
    const char *mime;
    json_t *value;
    json_object_foreach(bundle, mime, value)
    {
        json_t *parsed = is_json(mime) && json_is_string(value)
                             ? json_loadb(json_string_value(value), json_string_length(value), JSON_DECODE_ANY, NULL)
                             : NULL;
        json_object_set_new(out, mime, parsed != NULL ? parsed : json_incref(value));
    }
    return out;
}
