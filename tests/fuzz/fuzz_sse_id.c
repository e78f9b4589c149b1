/*
 * fuzz_sse_id.c: libFuzzer target for the one SSE parser of runboxd: the Last-Event-ID header
 * a client sends to resume an MCP stream, "<boot>-<seq>" (mcp__sse_id_parse in
 * server/mcp/mcp_wire.c). The input is the header value, from a private exact-size copy so that
 * any read past the end is caught. Checks:
 *   - the value is read as it was before the parser became a function of its own (on a
 *     NUL-terminated copy: the boot, '-', then strtoull to the end), for this server's boot and
 *     for another one;
 *   - an accepted value starts with "<boot>-", and is never taken for an id of another boot
 *     (mcp__sse_id_foreign);
 *   - round trip: the id mcp__sse_id_format writes for a sequence number taken from the input
 *     fits the 48 bytes the stream code gives it and reads back as that number; into a short
 *     buffer it is cut and NUL-terminated.
 * Built only with clang and -DRUNBOX_FUZZ=ON. The seed corpus (tests/fuzz/corpus/sse_id/) is
 * replayed through these same checks by tests/server/test_mcp_wire.c, which includes this file.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/mcp/mcp_wire.h"
#include "tests/fuzz/fuzz_check.h"

/* The parse as mcp_get_handler did it on the header's NUL-terminated copy s (len bytes). */
static int sse_id_reference(const char *s, size_t len, const char *boot, uint64_t *seq)
{
    size_t blen = strlen(boot);
    if (len > blen + 1 && strncmp(s, boot, blen) == 0 && s[blen] == '-') {
        char *end;
        *seq = strtoull(s + blen + 1, &end, 10);
        return *end == '\0';
    }
    return 0;
}

static void sse_id_check(const char *v, const char *cstr, size_t n, const char *boot)
{
    uint64_t seq = 0, want = 0;
    int ok = mcp__sse_id_parse(v, n, boot, &seq);
    FUZZ_CHECK(ok == sse_id_reference(cstr, n, boot, &want));
    if (ok) {
        FUZZ_CHECK(seq == want);
        FUZZ_CHECK(memcmp(v, boot, strlen(boot)) == 0 && v[strlen(boot)] == '-');
    }
    /* an id of another boot is never one of this boot's */
    FUZZ_CHECK(!(ok && mcp__sse_id_foreign(v, n, boot)));
}

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n)
{
    char *copy = malloc(n > 0 ? n : 1);
    char *cstr = malloc(n + 1);
    if (n > 0) {
        memcpy(copy, in, n);
        memcpy(cstr, in, n);
    } else {
        copy[0] = '\0'; /* never read: initialised for the compiler */
    }
    cstr[n] = '\0';
    sse_id_check(copy, cstr, n, "0a1b2c3d");
    sse_id_check(copy, cstr, n, "ffffffff");
    free(cstr);
    free(copy);

    uint64_t seq = 0;
    for (size_t i = 0; i < n && i < 8; i++)
        seq = seq << 8 | in[i];
    char id[48], back_id[48];
    mcp__sse_id_format("0a1b2c3d", seq, id, sizeof(id));
    size_t len = strlen(id);
    FUZZ_CHECK(len < sizeof(id) - 1);
    uint64_t back = 0;
    FUZZ_CHECK(mcp__sse_id_parse(id, len, "0a1b2c3d", &back) && back == seq);
    mcp__sse_id_format("0a1b2c3d", back, back_id, sizeof(back_id));
    FUZZ_CHECK(strcmp(id, back_id) == 0);
    char small[12];
    mcp__sse_id_format("0a1b2c3d", seq, small, sizeof(small));
    FUZZ_CHECK(strlen(small) < sizeof(small) && strncmp(small, id, strlen(small)) == 0);
    return 0;
}
