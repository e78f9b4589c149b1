/*
 * fuzz_codec.c: libFuzzer target for the decoders of base/codec.c, which read untrusted bytes
 * (model-supplied base64, client URIs, file contents tested for UTF-8). The input is fed, from a
 * private exact-size copy so any read past the end is caught, to:
 *   - codec_base64_decode: on success the output is NUL-terminated, no longer than the input
 *     allows, and encodes and decodes back to itself; codec_base64_encode(input) decodes to the
 *     input.
 *   - codec_percent_decode (the input up to its first NUL): on success no longer than the input
 *     and without NUL; codec_percent_encode of any string decodes back to it.
 *   - codec_utf8_text: agrees with a plain reference validator (RFC 3629) and is kept by a
 *     percent-encoding round trip.
 * Built only with clang and -DRUNBOX_FUZZ=ON; the seed corpus (tests/fuzz/corpus/codec/) is
 * replayed by tests/core/test_codec.c.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/codec.h"

/* RFC 3629 by its table of well-formed byte sequences, plus "no NUL". */
static int utf8_reference(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        unsigned char lo = 0x80, hi = 0xbf;
        size_t k;
        if (c == 0)
            return 0;
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xc2 && c <= 0xdf) {
            k = 1;
        } else if (c >= 0xe0 && c <= 0xef) {
            k = 2;
            if (c == 0xe0)
                lo = 0xa0;
            else if (c == 0xed)
                hi = 0x9f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            k = 3;
            if (c == 0xf0)
                lo = 0x90;
            else if (c == 0xf4)
                hi = 0x8f;
        } else {
            return 0;
        }
        if (n - i <= k)
            return 0;
        if (s[i + 1] < lo || s[i + 1] > hi)
            return 0;
        for (size_t j = 2; j <= k; j++)
            if (s[i + j] < 0x80 || s[i + j] > 0xbf)
                return 0;
        i += k + 1;
    }
    return 1;
}

static void check_base64(const char *in, size_t n)
{
    char err[RB_ERR_LEN];
    char *out = NULL;
    size_t outlen = 0;
    if (codec_base64_decode(in, n, &out, &outlen, err) == RB_OK) {
        if (outlen > n / 4 * 3 + 2 || out[outlen] != '\0')
            abort();
        char *again = codec_base64_encode(out, outlen);
        char *back = NULL;
        size_t backlen = 0;
        if (codec_base64_decode(again, strlen(again), &back, &backlen, err) != RB_OK || backlen != outlen ||
            memcmp(back, out, outlen) != 0)
            abort();
        free(back);
        free(again);
        free(out);
    } else if (memchr(err, '\0', RB_ERR_LEN) == NULL || err[0] == '\0') {
        abort();
    }

    /* decode(encode(x)) == x for any bytes x */
    char *enc = codec_base64_encode(in, n);
    size_t enclen = strlen(enc);
    if (enclen != (n + 2) / 3 * 4)
        abort();
    char *dec = NULL;
    size_t declen = 0;
    if (codec_base64_decode(enc, enclen, &dec, &declen, err) != RB_OK || declen != n ||
        (n > 0 && memcmp(dec, in, n) != 0))
        abort();
    free(dec);
    free(enc);
}

static void check_percent(const char *s)
{
    size_t n = strlen(s);
    char *dec = codec_percent_decode(s);
    if (dec != NULL) {
        if (strlen(dec) > n)
            abort();
        char *enc = codec_percent_encode(dec, "");
        char *back = codec_percent_decode(enc);
        if (back == NULL || strcmp(back, dec) != 0)
            abort();
        free(back);
        free(enc);
        free(dec);
    }

    /* decode(encode(x)) == x, whatever the kept set */
    static const char *const keeps[] = {"", "/", "/:@!$&'()*+,;=%"};
    for (size_t i = 0; i < sizeof(keeps) / sizeof(keeps[0]); i++) {
        char *enc = codec_percent_encode(s, keeps[i]);
        if (strlen(enc) > 3 * n)
            abort();
        char *back = codec_percent_decode(enc);
        /* a kept '%' makes the encoding ambiguous; only the strict sets must round-trip */
        if (i < 2 && (back == NULL || strcmp(back, s) != 0))
            abort();
        free(back);
        free(enc);
    }

    if (codec_utf8_text(s, n)) {
        char *enc = codec_percent_encode(s, "");
        char *back = codec_percent_decode(enc);
        if (back == NULL || !codec_utf8_text(back, strlen(back)))
            abort();
        free(back);
        free(enc);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n)
{
    /* a private copy of exactly n bytes, so reads past the end are caught exactly */
    char *copy = malloc(n > 0 ? n : 1);
    if (n > 0)
        memcpy(copy, in, n);
    check_base64(copy, n);
    if (codec_utf8_text(copy, n) != utf8_reference((const unsigned char *)copy, n))
        abort();
    free(copy);

    /* the string decoders take NUL-terminated text */
    char *str = malloc(n + 1);
    if (n > 0)
        memcpy(str, in, n);
    str[n] = '\0';
    check_percent(str);
    free(str);
    return 0;
}
