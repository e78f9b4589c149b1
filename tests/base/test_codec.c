/*
 * test_codec.c: base/codec.c: base64 both ways, UTF-8 validation, hex and percent-encoding, and
 * a replay of the libFuzzer seed corpus in tests/fuzz/corpus/codec/ (tests/fuzz/fuzz_codec.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "base/codec.h"
#include "tests/common/corpus.h"

Test(codec, base64_encode_rfc4648_vectors)
{
    static const char *const plain[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    static const char *const coded[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
        char *s = codec_base64_encode(plain[i], strlen(plain[i]));
        cr_expect_str_eq(s, coded[i]);
        free(s);
    }
}

Test(codec, base64_decode_lenient_forms)
{
    static const char *const in[] = {"Zm9vYmFy", "Zm9vYg", "Zm9v\nYg==", "data:text/plain;base64,Zm9vYg==", "-_8="};
    static const char *const want[] = {"foobar", "foob", "foob", "foob", "\xfb\xff"};
    for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
        char *out = NULL;
        size_t len = 0;
        cr_assert_eq(codec_base64_decode(in[i], strlen(in[i]), &out, &len, NULL), RB_OK, "%s", in[i]);
        cr_expect_eq(len, strlen(want[i]));
        cr_expect_eq(memcmp(out, want[i], len), 0);
        cr_expect_eq(out[len], '\0');
        free(out);
    }
}

Test(codec, base64_decode_errors_say_where)
{
    char err[RB_ERR_LEN];
    char *out = NULL;
    size_t len = 0;
    cr_expect_eq(codec_base64_decode("Zm9*", 4, &out, &len, err), RB_EINVAL);
    cr_expect(strstr(err, "'*' at offset 3") != NULL, "%s", err);
    cr_expect_eq(codec_base64_decode("Zg==Zg==", 8, &out, &len, err), RB_EINVAL);
    cr_expect(strstr(err, "padding in the middle") != NULL, "%s", err);
    cr_expect_eq(codec_base64_decode("Zm9vY", 5, &out, &len, err), RB_EINVAL);
    cr_expect(strstr(err, "length is wrong") != NULL, "%s", err);
    cr_expect_null(out);
}

Test(codec, utf8_text)
{
    cr_expect(codec_utf8_text("h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80", 15));
    cr_expect_not(codec_utf8_text("a\0b", 3));             /* NUL */
    cr_expect_not(codec_utf8_text("\xc0\xaf", 2));         /* overlong */
    cr_expect_not(codec_utf8_text("\xed\xa0\x80", 3));     /* surrogate */
    cr_expect_not(codec_utf8_text("\xf4\x90\x80\x80", 4)); /* past U+10FFFF */
    cr_expect_not(codec_utf8_text("\xe2\x82", 2));         /* cut short */
}

Test(codec, name_form)
{
    /* the vectors the sandbox side (the file helper, the runner's name_form) produces too */
    static const struct {
        const char *raw;
        size_t n;
        const char *form;
    } v[] = {
        {"ok.txt", 6, "ok.txt"},
        {"bad\xff.bin", 8, "bad\\xff.bin"},
        {"new\nline", 8, "new\\x0aline"},
        {"back\\slash", 10, "back\\x5cslash"},
        {"caf\xc3\xa9", 5, "caf\xc3\xa9"},
        {"\xed\xa0\x80", 3, "\\xed\\xa0\\x80"},     /* a surrogate is not text */
        {"\xe2\x82" "a", 3, "\\xe2\\x82" "a"},         /* cut short, then text */
        {"\xc0\xaf", 2, "\\xc0\\xaf"},                 /* overlong */
        {"\x7f\x1b[0m", 5, "\\x7f\\x1b[0m"},
        {"a\0b", 3, "a\\x00b"},
        {"", 0, ""},
    };
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        char *form = codec_name_escape(v[i].raw, v[i].n);
        cr_expect_str_eq(form, v[i].form, "vector %zu", i);
        cr_expect(codec_utf8_text(form, strlen(form)), "vector %zu is text", i);
        char *raw;
        size_t n;
        cr_assert_eq(codec_name_unescape(form, &raw, &n, NULL), RB_OK, "vector %zu", i);
        cr_expect(n == v[i].n && memcmp(raw, v[i].raw, n) == 0, "vector %zu round trip", i);
        free(raw);
        free(form);
    }
    /* every byte alone, and every pair, comes back */
    for (int a = 0; a < 256; a++)
        for (int b = -1; b < 256; b++) {
            char in[2] = {(char)a, (char)b};
            size_t n = b < 0 ? 1 : 2;
            char *form = codec_name_escape(in, n), *raw;
            size_t m;
            cr_assert(codec_utf8_text(form, strlen(form)), "bytes %02x %02x", a, b);
            /* '/' stays as it is (a path's separator), and only a raw one gives one */
            cr_assert_eq(strchr(form, '/') != NULL, memchr(in, '/', n) != NULL, "bytes %02x %02x", a, b);
            cr_assert_eq(codec_name_unescape(form, &raw, &m, NULL), RB_OK);
            cr_assert(m == n && memcmp(raw, in, n) == 0, "bytes %02x %02x", a, b);
            free(raw);
            free(form);
        }
    /* upper-case hex is read too; a backslash that starts no escape is an error naming where */
    char *raw, err[RB_ERR_LEN];
    size_t n;
    cr_assert_eq(codec_name_unescape("a\\xFFb", &raw, &n, NULL), RB_OK);
    cr_expect(n == 3 && (unsigned char)raw[1] == 0xff);
    free(raw);
    static const char *const bad[] = {"a\\", "\\x", "\\x4", "\\xg0", "\\X41", "\\n"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        raw = NULL;
        cr_expect_eq(codec_name_unescape(bad[i], &raw, &n, err), RB_EINVAL, "%s", bad[i]);
        cr_expect_null(raw);
        cr_expect(strstr(err, "byte") != NULL, "%s", err);
    }
}

Test(codec, hex)
{
    char out[9];
    codec_hex_encode("\x00\x9f\xab\xff", 4, out);
    cr_expect_str_eq(out, "009fabff");
    cr_expect_eq(codec_hex_value('7'), 7);
    cr_expect_eq(codec_hex_value('b'), 11);
    cr_expect_eq(codec_hex_value('F'), 15);
    cr_expect_eq(codec_hex_value('g'), -1);
}

Test(codec, percent_round_trip)
{
    char *enc = codec_percent_encode("a b/c~d%\xc3\xa9", "/");
    cr_expect_str_eq(enc, "a%20b/c~d%25%C3%A9");
    char *dec = codec_percent_decode(enc);
    cr_expect_str_eq(dec, "a b/c~d%\xc3\xa9");
    free(enc);
    free(dec);
    enc = codec_percent_encode("a/b", "");
    cr_expect_str_eq(enc, "a%2Fb");
    free(enc);
    cr_expect_null(codec_percent_decode("a%2"));
    cr_expect_null(codec_percent_decode("a%zz"));
    cr_expect_null(codec_percent_decode("a%00b"));
}

/* Invariants of the codecs on one seed (the fuzz_codec target checks the same ones). */
static void check_codec_seed(void *data, const char *seed, const char *path, const char *t, size_t len)
{
    (void)data;
    (void)path;
    char err[RB_ERR_LEN];

    /* base64: whatever decodes re-encodes and decodes to the same bytes; any bytes round-trip */
    char *out = NULL;
    size_t outlen = 0;
    if (codec_base64_decode(t, len, &out, &outlen, err) == RB_OK) {
        cr_expect_eq(out[outlen], '\0', "%s", seed);
        char *enc = codec_base64_encode(out, outlen), *back = NULL;
        size_t backlen = 0;
        cr_assert_eq(codec_base64_decode(enc, strlen(enc), &back, &backlen, err), RB_OK, "%s", seed);
        cr_expect(backlen == outlen && memcmp(back, out, outlen) == 0, "%s", seed);
        free(back);
        free(enc);
        free(out);
    } else {
        cr_expect_neq(err[0], '\0', "%s", seed);
    }
    char *enc = codec_base64_encode(t, len), *dec = NULL;
    size_t declen = 0;
    cr_assert_eq(codec_base64_decode(enc, strlen(enc), &dec, &declen, err), RB_OK, "%s", seed);
    cr_expect(declen == len && memcmp(dec, t, len) == 0, "%s", seed);
    free(dec);
    free(enc);

    /* percent-encoding of the text up to its first NUL round-trips; decoding never grows it */
    char *pd = codec_percent_decode(t);
    if (pd != NULL)
        cr_expect_leq(strlen(pd), strlen(t), "%s", seed);
    free(pd);
    char *pe = codec_percent_encode(t, "/");
    char *pb = codec_percent_decode(pe);
    cr_assert_not_null(pb, "%s", seed);
    cr_expect_str_eq(pb, t, "%s", seed);
    free(pb);
    free(pe);

    (void)codec_utf8_text(t, len);
}

/* The items of list joined with '|', as codec_list_next gives them. */
static void list_items(const char *list, char *out, size_t n)
{
    const char *p = list, *item;
    size_t len, used = 0;
    out[0] = '\0';
    while (codec_list_next(&p, &item, &len))
        used += (size_t)snprintf(out + used, n - used, "%s%.*s", used ? "|" : "", (int)len, item);
}

Test(codec, list_items)
{
    char out[256];
    list_items("pypi.org, *.pythonhosted.org ,\tfiles.example:443\t", out, sizeof(out));
    cr_expect_str_eq(out, "pypi.org|*.pythonhosted.org|files.example:443");
    list_items(" , ,a,,b, ", out, sizeof(out));
    cr_expect_str_eq(out, "a|b");
    list_items("", out, sizeof(out));
    cr_expect_str_eq(out, "");
    list_items(NULL, out, sizeof(out));
    cr_expect_str_eq(out, "");
    list_items("one", out, sizeof(out));
    cr_expect_str_eq(out, "one");
    list_items("a b,c", out, sizeof(out)); /* spaces inside an item stay */
    cr_expect_str_eq(out, "a b|c");
}

Test(codec, fuzz_corpus_replay)
{
    int files = corpus_each("codec", check_codec_seed, NULL);
    cr_assert_geq(files, 10);
}
