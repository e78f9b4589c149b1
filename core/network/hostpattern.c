/*
 * hostpattern.c: host patterns of network policies (core/network/hostpattern.h). The grammar
 * and the reasons are docker/web/egress_policy.py's parse_pattern, word for word, so that a
 * pattern runboxd accepts is one the proxy accepts, and a refusal reads the same from both.
 */
#include "core/network/hostpattern.h"

#include <stdio.h>
#include <string.h>

static int fail(char *why, const char *text)
{
    snprintf(why, HOSTPATTERN_WHY_MAX, "%s", text);
    return -1;
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Whether a name's last label reads as a number (decimal, octal or 0x hex), which resolvers take
 * for an IPv4 address (127.1, 2130706433, 0x7f.1): egress_policy.is_address. */
static int last_label_is_number(const char *name, size_t len)
{
    size_t b = len;
    while (b > 0 && name[b - 1] != '.')
        b--;
    const char *l = name + b;
    size_t n = len - b;
    if (n == 0)
        return 0;
    if (n >= 2 && l[0] == '0' && l[1] == 'x') {
        for (size_t i = 2; i < n; i++)
            if (!is_digit(l[i]) && !(l[i] >= 'a' && l[i] <= 'f'))
                return 0;
        return 1;
    }
    for (size_t i = 0; i < n; i++)
        if (!is_digit(l[i]))
            return 0;
    return 1;
}

int hostpattern_parse(const char *text, size_t len, hostpattern *out, char *why)
{
    size_t i, colons = 0, blank = 1;
    for (i = 0; i < len; i++) {
        colons += text[i] == ':';
        if (!(text[i] == ' ' || (text[i] >= '\t' && text[i] <= '\r')))
            blank = 0;
    }
    if (blank)
        return fail(why, "empty");
    if (len > HOSTPATTERN_NAME_MAX + 1 + 6)
        return fail(why, "too long (a name has at most 253 characters)");
    if (text[0] == '[' || colons > 1)
        return fail(why, "an IP address, not a name (patterns match host names only)");
    size_t name_len = len;
    out->port = 0;
    const char *colon = memchr(text, ':', len);
    if (colon != NULL) {
        name_len = (size_t)(colon - text);
        size_t plen = len - name_len - 1;
        long port = 0;
        if (plen == 0 || plen > 5)
            return fail(why, "the port is not a number");
        for (i = 0; i < plen; i++) {
            if (!is_digit(colon[1 + i]))
                return fail(why, "the port is not a number");
            port = port * 10 + (colon[1 + i] - '0');
        }
        if (port < 1 || port > 65535)
            return fail(why, "port out of range (1-65535)");
        out->port = (int)port;
    }
    const char *name = text;
    out->wildcard = name_len >= 2 && name[0] == '*' && name[1] == '.';
    if (out->wildcard) {
        name += 2;
        name_len -= 2;
    }
    if (name_len > 0 && name[name_len - 1] == '.')
        name_len--; /* a trailing dot: the same name */
    if (memchr(name, '*', name_len) != NULL)
        return fail(why, "'*' only as the whole first label, as in *.example.org");
    if (name_len == 0)
        return fail(why, out->wildcard ? "a wildcard needs a domain after it, as in *.example.org" : "empty");
    if (name_len > HOSTPATTERN_NAME_MAX)
        return fail(why, "too long (a name has at most 253 characters)");
    size_t label = 0;
    for (i = 0; i <= name_len; i++) {
        char c = i < name_len ? name[i] : '.';
        if (c == '.') {
            if (label == 0)
                return fail(why, "empty label");
            if (label > HOSTPATTERN_LABEL_MAX)
                return fail(why, "a label is longer than 63 characters");
            label = 0;
            if (i < name_len)
                out->domain[i] = '.';
            continue;
        }
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (!((c >= 'a' && c <= 'z') || is_digit(c) || c == '-' || c == '_'))
            return fail(why, "bad characters (letters, digits, '-', '_' and '.' only; the xn-- form of international "
                             "names)");
        out->domain[i] = c;
        label++;
    }
    out->domain[name_len] = '\0';
    if (last_label_is_number(out->domain, name_len))
        return fail(why, "an IP address, not a name (patterns match host names only)");
    return 0;
}

void hostpattern_text(const hostpattern *p, char *out)
{
    char port[8] = "";
    if (p->port)
        snprintf(port, sizeof(port), ":%d", p->port);
    snprintf(out, HOSTPATTERN_TEXT_MAX, "%s%s%s", p->wildcard ? "*." : "", p->domain, port);
}

/* Whether name is below domain (name ends with "." domain). */
static int below(const char *name, const char *domain)
{
    size_t n = strlen(name), d = strlen(domain);
    return n > d + 1 && name[n - d - 1] == '.' && strcmp(name + n - d, domain) == 0;
}

int hostpattern_within(const hostpattern *req, const hostpattern *max, const int *default_ports, size_t n_ports)
{
    int names;
    if (max->wildcard)
        names = below(req->domain, max->domain) || (req->wildcard && strcmp(req->domain, max->domain) == 0);
    else
        names = !req->wildcard && strcmp(req->domain, max->domain) == 0;
    if (!names)
        return 0;
    if (req->port == 0 || req->port == max->port)
        return max->port == 0 || req->port == max->port;
    if (max->port != 0)
        return 0;
    for (size_t i = 0; i < n_ports; i++)
        if (default_ports[i] == req->port)
            return 1;
    return 0;
}
