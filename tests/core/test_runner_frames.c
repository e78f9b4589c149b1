/*
 * test_runner_frames.c: core/runner_frames.c without Docker: a sandbox's stdout cut into lines
 * (pieces joined, the maximum, over-long lines dropped up to their end) and lines read into
 * typed events (each type's fields, malformed lines refused), and a replay of the libFuzzer seed
 * corpus in tests/fuzz/corpus/runner/ through the checks of tests/fuzz/fuzz_runner.c.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "core/runner_frames.h"
#include "tests/common/corpus.h"

/* The fuzz target, with its checks as Criterion assertions naming the seed. */
static const char *replay_seed = "";
#define FUZZ_CHECK(cond) cr_assert(cond, "%s: check failed: %s", replay_seed, #cond)
#include "tests/fuzz/fuzz_runner.c"

/* Feeds text to rl in pieces of step bytes and records what comes out, one entry per line:
 * "L:<line>" or "T:<dropped>". */
static void feed(runner_lines *rl, const char *text, size_t step, char *log, size_t cap)
{
    size_t n = strlen(text), off = 0;
    log[0] = '\0';
    while (off < n) {
        size_t piece = n - off < step ? n - off : step;
        const char *buf = text + off;
        size_t len = piece;
        for (;;) {
            rb_buf line;
            size_t dropped = 0;
            runner_lines_status st = runner_lines_next(rl, &buf, &len, &line, &dropped);
            size_t used = strlen(log);
            if (st == RUNNER_LINES_MORE)
                break;
            if (st == RUNNER_LINES_TOOLONG) {
                snprintf(log + used, cap - used, "T:%zu|", dropped);
            } else {
                cr_assert(line.data == NULL || line.data[line.len] == '\0');
                snprintf(log + used, cap - used, "L:%.*s|", (int)line.len, line.data ? line.data : "");
                rb_buf_dispose(&line);
            }
        }
        cr_assert_eq(len, 0);
        off += piece;
    }
}

Test(runner_lines, whole_lines_in_any_pieces)
{
    static const char text[] = "{\"a\":1}\n\nxyz\npartial";
    for (size_t step = 1; step <= sizeof(text); step++) {
        runner_lines rl;
        char log[256];
        runner_lines_init(&rl, 64);
        feed(&rl, text, step, log, sizeof(log));
        cr_assert_str_eq(log, "L:{\"a\":1}|L:|L:xyz|", "step %zu", step);
        cr_assert_eq(rl.line.len, 7, "the partial line is kept");
        runner_lines_dispose(&rl);
    }
}

Test(runner_lines, maximum_is_inclusive)
{
    runner_lines rl;
    char log[256];
    runner_lines_init(&rl, 4);
    feed(&rl, "abcd\nabcde\nok\n", 100, log, sizeof(log));
    cr_assert_str_eq(log, "L:abcd|T:5|L:ok|");
    runner_lines_dispose(&rl);
}

Test(runner_lines, an_over_long_line_is_dropped_to_its_end)
{
    runner_lines rl;
    char log[256];
    /* the line crosses the maximum in the first piece: 6 bytes counted, the rest skipped */
    runner_lines_init(&rl, 4);
    feed(&rl, "abcdefghij\nok\n", 6, log, sizeof(log));
    cr_assert_str_eq(log, "T:6|L:ok|");
    cr_assert_eq(rl.skipping, 0);
    runner_lines_dispose(&rl);
    /* byte by byte: it is noticed at the fifth byte */
    runner_lines_init(&rl, 4);
    feed(&rl, "abcdefghij\nok\n", 1, log, sizeof(log));
    cr_assert_str_eq(log, "T:5|L:ok|");
    runner_lines_dispose(&rl);
    /* still unterminated: reported once, then skipped */
    runner_lines_init(&rl, 4);
    feed(&rl, "abcdefghij", 3, log, sizeof(log));
    cr_assert_str_eq(log, "T:6|");
    cr_assert_eq(rl.skipping, 1);
    cr_assert_eq(rl.line.len, 0);
    runner_lines_dispose(&rl);
}

Test(runner_lines, no_bytes)
{
    runner_lines rl;
    runner_lines_init(&rl, 4);
    const char *buf = "";
    size_t len = 0, dropped = 0;
    rb_buf line;
    cr_assert_eq(runner_lines_next(&rl, &buf, &len, &line, &dropped), RUNNER_LINES_MORE);
    runner_lines_dispose(&rl);
}

static runner_event parse_ok(const char *text)
{
    runner_event ev;
    char err[RB_ERR_LEN];
    cr_assert_eq(runner_event_parse(text, strlen(text), &ev, err), RB_OK, "%s: %s", text, err);
    cr_assert(json_is_object(ev.json));
    return ev;
}

Test(runner_event, types_and_fields)
{
    runner_event ev = parse_ok("{\"type\":\"pong\",\"id\":\"p_1\",\"busy\":\"e_2\",\"language\":\"python\"}");
    cr_assert_eq(ev.type, RUNNER_EV_PONG);
    cr_assert_str_eq(ev.id, "p_1");
    cr_assert_str_eq(ev.busy, "e_2");
    runner_event_dispose(&ev);
    cr_assert_null(ev.json);

    ev = parse_ok("{\"type\":\"pong\",\"id\":\"p_1\",\"busy\":null}");
    cr_assert_null(ev.busy);
    cr_assert_eq(ev.warming, 0);
    runner_event_dispose(&ev);

    ev = parse_ok("{\"type\":\"pong\",\"id\":\"p_1\",\"warming\":true}");
    cr_assert_eq(ev.warming, 1);
    runner_event_dispose(&ev);
    ev = parse_ok("{\"type\":\"pong\",\"id\":\"p_1\",\"warming\":\"yes\"}");
    cr_assert_eq(ev.warming, 0); /* only true is true */
    runner_event_dispose(&ev);

    ev = parse_ok("{\"type\":\"warm\",\"preload\":[\"numpy\"],\"ms\":900}");
    cr_assert_eq(ev.type, RUNNER_EV_WARM);
    cr_assert_eq(ev.warming, 0);
    runner_event_dispose(&ev);

    ev = parse_ok("{\"type\":\"ready\",\"language\":\"bash\",\"version\":1}");
    cr_assert_eq(ev.type, RUNNER_EV_READY);
    cr_assert_null(ev.id);
    runner_event_dispose(&ev);

    ev = parse_ok("{\"type\":\"error_reply\",\"id\":\"x\",\"message\":\"unknown op\"}");
    cr_assert_eq(ev.type, RUNNER_EV_ERROR_REPLY);
    cr_assert_str_eq(ev.message, "unknown op");
    runner_event_dispose(&ev);

    ev = parse_ok("{\"type\":\"stream\",\"id\":\"e_1\",\"name\":\"stdout\",\"text\":\"hi\\n\"}");
    cr_assert_eq(ev.type, RUNNER_EV_OUTPUT);
    cr_assert_str_eq(ev.type_name, "stream");
    runner_event_dispose(&ev);

    ev = parse_ok("{\"type\":\"something-new\",\"id\":\"e_1\"}");
    cr_assert_eq(ev.type, RUNNER_EV_OUTPUT);
    runner_event_dispose(&ev);

    ev = parse_ok("{\"type\":7,\"id\":5}");
    cr_assert_eq(ev.type, RUNNER_EV_NONE);
    cr_assert_null(ev.type_name);
    cr_assert_null(ev.id);
    runner_event_dispose(&ev);
}

Test(runner_event, done)
{
    runner_event ev = parse_ok("{\"type\":\"done\",\"id\":\"e_1\",\"status\":\"timeout\",\"reset\":true,"
                               "\"reset_reason\":\"killed\",\"dropped\":12,\"files_written\":[{\"path\":\"a\"}]}");
    cr_assert_eq(ev.type, RUNNER_EV_DONE);
    cr_assert_str_eq(ev.status, "timeout");
    cr_assert_eq(ev.reset, 1);
    cr_assert_str_eq(ev.reset_reason, "killed");
    cr_assert_eq(ev.dropped, 12);
    cr_assert(json_is_array(ev.files_written));
    runner_event_dispose(&ev);

    /* anything unexpected reads as the safe value */
    ev = parse_ok("{\"type\":\"done\",\"id\":\"e_1\",\"status\":\"won\",\"reset\":1,\"dropped\":-5,"
                  "\"files_written\":\"x\"}");
    cr_assert_str_eq(ev.status, "error");
    cr_assert_eq(ev.reset, 0);
    cr_assert_null(ev.reset_reason);
    cr_assert_eq(ev.dropped, 0);
    cr_assert(json_is_string(ev.files_written));
    runner_event_dispose(&ev);

    ev = parse_ok("{\"type\":\"done\",\"id\":\"e_1\",\"dropped\":1.5}");
    cr_assert_str_eq(ev.status, "error");
    cr_assert_eq(ev.dropped, 0);
    cr_assert_null(ev.files_written);
    runner_event_dispose(&ev);
}

/* sandbox_runner.c adds dropped to the execution's own count: a forged count near INT64_MAX overflowed
 * it (undefined behaviour) once the execution had dropped anything itself. */
Test(runner_event, done_dropped_is_bounded)
{
    runner_event ev = parse_ok("{\"type\":\"done\",\"id\":\"e_1\",\"dropped\":9223372036854775807}");
    cr_assert_eq(ev.dropped, RUNNER_DROPPED_MAX);
    int64_t own = 16 * 1024 * 1024;
    cr_assert_leq(ev.dropped, INT64_MAX - own);
    runner_event_dispose(&ev);
    ev = parse_ok("{\"type\":\"done\",\"id\":\"e_1\",\"dropped\":4611686018427387903}");
    cr_assert_eq(ev.dropped, RUNNER_DROPPED_MAX - 1);
    runner_event_dispose(&ev);
}

Test(runner_event, malformed_lines_are_refused)
{
    static const char *const bad[] = {"", "{", "[1,2]", "\"done\"", "null", "{\"type\":\"done\",\"type\":\"pong\"}",
                                      "{\"text\":\"a\\u0000b\"}", "{} {}"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        runner_event ev;
        char err[RB_ERR_LEN] = "";
        cr_assert_eq(runner_event_parse(bad[i], strlen(bad[i]), &ev, err), RB_EINVAL, "%s", bad[i]);
        cr_assert_neq(err[0], '\0', "%s", bad[i]);
        cr_assert_null(ev.json);
        runner_event_dispose(&ev);
    }
}

static void check_runner_seed(void *data, const char *seed, const char *path, const char *buf, size_t len)
{
    (void)data;
    (void)path;
    replay_seed = seed;
    LLVMFuzzerTestOneInput((const uint8_t *)buf, len);
}

Test(runner_frames, fuzz_corpus_replay)
{
    cr_assert_geq(corpus_each("runner", check_runner_seed, NULL), 10);
}
