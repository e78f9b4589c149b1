/*
 * admit.c: Host and Origin checks (server/admit.h).
 */
#include "server/admit.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

/* Longest host name compared (DNS names are at most 253 bytes; IPv6 literals are shorter). */
#define NAME_MAX_LEN 255

/* The host part of "name", "name:port", "[v6]" or "[v6]:port" in s[0..n): written lower-cased
 * into out (NUL-terminated; brackets kept for IPv6). Returns 0, or -1 when it is not of that
 * form (empty name, junk after the port, a port that is not digits, or too long). */
static int host_part(const char *s, size_t n, char out[NAME_MAX_LEN + 1])
{
    size_t end;
    if (n > 0 && s[0] == '[') {
        const char *close = memchr(s, ']', n);
        if (close == NULL)
            return -1;
        end = (size_t)(close - s) + 1;
    } else {
        const char *colon = memchr(s, ':', n);
        end = colon != NULL ? (size_t)(colon - s) : n;
    }
    if (end == 0 || end > NAME_MAX_LEN)
        return -1;
    if (end < n) {
        if (s[end] != ':' || end + 1 == n)
            return -1;
        for (size_t i = end + 1; i < n; i++)
            if (!isdigit((unsigned char)s[i]))
                return -1;
    }
    for (size_t i = 0; i < end; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c <= ' ' || c >= 0x7f || c == '/' || c == '@' || c == '\\')
            return -1;
        out[i] = (char)tolower(c);
    }
    out[end] = '\0';
    return 0;
}

static int is_loopback_name(const char *name)
{
    return strcmp(name, "localhost") == 0 || strcmp(name, "127.0.0.1") == 0 || strcmp(name, "[::1]") == 0;
}

/* Calls match(name of each entry) for the comma-separated list; returns 1 if an entry is "*"
 * or equal to name (host part only). */
static int listed(const char *list, const char *name)
{
    while (list != NULL && *list != '\0') {
        const char *comma = strchr(list, ',');
        const char *a = list, *b = comma != NULL ? comma : list + strlen(list);
        while (a < b && isspace((unsigned char)*a))
            a++;
        while (b > a && isspace((unsigned char)b[-1]))
            b--;
        char entry[NAME_MAX_LEN + 1];
        if (b - a == 1 && *a == '*')
            return 1;
        if (host_part(a, (size_t)(b - a), entry) == 0 && strcmp(entry, name) == 0)
            return 1;
        list = comma != NULL ? comma + 1 : NULL;
    }
    return 0;
}

int admit_host(const server_settings *cfg, const char *host, size_t len)
{
    if (host == NULL)
        return 1;
    char name[NAME_MAX_LEN + 1];
    if (host_part(host, len, name) != 0)
        return 0;
    if (is_loopback_name(name))
        return 1;
    char listen[NAME_MAX_LEN + 1];
    if (cfg->listen != NULL && host_part(cfg->listen, strlen(cfg->listen), listen) == 0 &&
        strcmp(listen, "0.0.0.0") != 0 && strcmp(listen, "[::]") != 0 && strcmp(listen, name) == 0)
        return 1;
    return listed(cfg->allowed_hosts, name);
}

/* "http://" or "https://" then a host part and nothing else but an optional trailing '/'. */
static int is_local_origin(const char *o, size_t n)
{
    size_t skip;
    if (n >= 7 && strncasecmp(o, "http://", 7) == 0)
        skip = 7;
    else if (n >= 8 && strncasecmp(o, "https://", 8) == 0)
        skip = 8;
    else
        return 0;
    o += skip;
    n -= skip;
    if (n > 0 && o[n - 1] == '/')
        n--;
    char name[NAME_MAX_LEN + 1];
    return host_part(o, n, name) == 0 && is_loopback_name(name);
}

int admit_origin(const server_settings *cfg, const char *origin, size_t len)
{
    if (origin == NULL)
        return 1;
    if (is_local_origin(origin, len))
        return 1;
    const char *list = cfg->allowed_origins;
    while (list != NULL && *list != '\0') {
        const char *comma = strchr(list, ',');
        const char *end = comma ? comma : list + strlen(list);
        const char *a = list;
        while (a < end && isspace((unsigned char)*a))
            a++;
        const char *b = end;
        while (b > a && (isspace((unsigned char)b[-1]) || b[-1] == '/'))
            b--;
        size_t olen = len;
        while (olen > 0 && origin[olen - 1] == '/')
            olen--;
        if ((b - a == 1 && *a == '*') || ((size_t)(b - a) == olen && strncasecmp(a, origin, olen) == 0))
            return 1;
        list = comma ? comma + 1 : NULL;
    }
    return 0;
}
