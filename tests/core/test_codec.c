/*
 * test_codec.c: core/codec.c: base64 both ways, UTF-8 validation, hex and percent-encoding.
 */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "core/codec.h"

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
