/* Option tables: defaults, every value type and CLI form, ranges, enums, lists,
 * positionals, JSON configs, error messages and the help text. */
#include <stddef.h>

#include "facefuse/core.h"
#include "test.h"

typedef struct cfg {
    int threads;
    double min_score;
    char *output;
    int select;
    int verbose;
    int color;
    ffu_strlist inputs;
    int offset;
} cfg;

static const char *const select_names[] = {"reference", "one", "many", NULL};

static const ffu_option opts[] = {
    {"threads", 'j', FFU_OPT_INT, offsetof(cfg, threads), "worker threads", "4", 0, 256, NULL, NULL},
    {"min-score", 0, FFU_OPT_FLOAT, offsetof(cfg, min_score), "detection threshold", "0.5", 0, 1, NULL, "S"},
    {"output", 'o', FFU_OPT_STRING, offsetof(cfg, output), "where to write", "out.jpg", 0, 0, NULL, "PATH"},
    {"select", 0, FFU_OPT_ENUM, offsetof(cfg, select), "face selection", "one", 0, 0, select_names, NULL},
    {"verbose", 'v', FFU_OPT_BOOL, offsetof(cfg, verbose), "say more", NULL, 0, 0, NULL, NULL},
    {"color", 'c', FFU_OPT_BOOL, offsetof(cfg, color), "colour output", "true", 0, 0, NULL, NULL},
    {"input", 'i', FFU_OPT_STRING_LIST, offsetof(cfg, inputs), "input files", "a.jpg,b.jpg", 0, 0, NULL, "PATH"},
    {"offset", 0, FFU_OPT_INT, offsetof(cfg, offset), "frame offset", NULL, 0, 0, NULL, NULL},
    {0},
};

static void test_defaults(void)
{
    cfg c;
    memset(&c, 0x5a, sizeof c); /* garbage: init must overwrite every field */
    CHECK_EQ_INT(ffu_options_init(opts, &c), FFU_OK);
    CHECK_EQ_INT(c.threads, 4);
    CHECK_NEAR(c.min_score, 0.5, 0);
    CHECK_STR(c.output, "out.jpg");
    CHECK_EQ_INT(c.select, 1);
    CHECK_EQ_INT(c.verbose, 0);
    CHECK_EQ_INT(c.color, 1);
    CHECK_EQ_INT(c.inputs.count, 2);
    CHECK_STR(c.inputs.items[1], "b.jpg");
    CHECK_EQ_INT(c.offset, 0);
    ffu_options_free(opts, &c);
    CHECK(c.output == NULL && c.inputs.items == NULL && c.inputs.count == 0);

    static const ffu_option bad[] = {
        {"mode", 0, FFU_OPT_ENUM, offsetof(cfg, select), "", "nope", 0, 0, select_names, NULL}, {0}};
    CHECK_EQ_INT(ffu_options_init(bad, &c), FFU_ERR_INVALID);
    CHECK(strstr(ffu_error_message(), "default of --mode"));
}

static int parse(cfg *c, int argc, char **argv, int *npos)
{
    ffu_options_init(opts, c);
    return ffu_options_parse_args(opts, c, argc, argv, npos);
}

static void test_parse_args(void)
{
    char *argv[] = {"in1.mp4", "--threads", "8", "--min_score=0.25", "-o", "x.png", "--select",
                    "many", "-v", "--no-color", "in2.mp4", "-i", "c.jpg", "--input=d.jpg",
                    "--offset", "-5", "-", "--", "--not-an-option", "-v"};
    int argc = (int)(sizeof argv / sizeof *argv);
    char *orig[sizeof argv / sizeof *argv];
    memcpy(orig, argv, sizeof argv);
    cfg c;
    int npos = -1;
    CHECK_EQ_INT(parse(&c, argc, argv, &npos), FFU_OK);
    CHECK_EQ_INT(c.threads, 8);
    CHECK_NEAR(c.min_score, 0.25, 0);
    CHECK_STR(c.output, "x.png");
    CHECK_EQ_INT(c.select, 2);
    CHECK_EQ_INT(c.verbose, 1);
    CHECK_EQ_INT(c.color, 0);
    CHECK_EQ_INT(c.offset, -5);
    CHECK_EQ_INT(c.inputs.count, 2); /* the CLI replaced the default list, then appended */
    CHECK_STR(c.inputs.items[0], "c.jpg");
    CHECK_STR(c.inputs.items[1], "d.jpg");
    CHECK_EQ_INT(npos, 5);
    CHECK_STR(argv[0], "in1.mp4");
    CHECK_STR(argv[1], "in2.mp4");
    CHECK_STR(argv[2], "-");
    CHECK_STR(argv[3], "--not-an-option");
    CHECK_STR(argv[4], "-v");
    for (int i = 0; i < argc; i++) { /* a permutation: nothing lost */
        int found = 0, want = 0; /* equal literals may share one pointer */
        for (int k = 0; k < argc; k++) found += argv[k] == orig[i], want += orig[k] == orig[i];
        CHECK_EQ_INT(found, want);
    }
    ffu_options_free(opts, &c);

    char *a2[] = {"-vj3", "-ofile.txt", "--verbose=false", "--color=yes", "-c"};
    CHECK_EQ_INT(parse(&c, 5, a2, &npos), FFU_OK);
    CHECK_EQ_INT(npos, 0);
    CHECK_EQ_INT(c.threads, 3);
    CHECK_STR(c.output, "file.txt");
    CHECK_EQ_INT(c.verbose, 0);
    CHECK_EQ_INT(c.color, 1);
    ffu_options_free(opts, &c);

    CHECK_EQ_INT(parse(&c, 0, NULL, &npos), FFU_OK);
    CHECK_EQ_INT(npos, 0);
    ffu_options_free(opts, &c);
}

static void expect_arg_error(const char *a, const char *b, const char *message)
{
    char *argv[] = {(char *)a, (char *)b};
    cfg c;
    int npos = 7;
    ffu_status s = parse(&c, b ? 2 : 1, argv, &npos);
    ffu_options_free(opts, &c);
    if (s != FFU_ERR_INVALID || npos != 0 || strcmp(ffu_error_message(), message) != 0) {
        fprintf(stderr, "%s %s: status %d npos %d message '%s', wanted '%s'\n", a, b ? b : "", s,
                npos, ffu_error_message(), message);
        test_failed_ = 1;
    }
}

static void test_parse_errors(void)
{
    expect_arg_error("--foo", NULL, "unknown option --foo (see --help)");
    expect_arg_error("--foo=1", NULL, "unknown option --foo (see --help)");
    expect_arg_error("-x", NULL, "unknown option -x (see --help)");
    expect_arg_error("--no-threads", NULL, "unknown option --no-threads (see --help)");
    expect_arg_error("--threads", NULL, "--threads needs a value");
    expect_arg_error("--threads", "many", "--threads: 'many' is not an integer");
    expect_arg_error("--threads", "4x", "--threads: '4x' is not an integer");
    expect_arg_error("--threads", "300", "--threads: 300 is out of range [0, 256]");
    expect_arg_error("--offset", "99999999999", "--offset: 99999999999 is out of range");
    expect_arg_error("--min-score", "1.5", "--min-score: 1.5 is out of range [0, 1]");
    expect_arg_error("--min-score", "nan", "--min-score: 'nan' is not a number");
    expect_arg_error("--min-score=", NULL, "--min-score: '' is not a number");
    expect_arg_error("--select", "x", "--select: 'x' is not one of reference, one, many");
    expect_arg_error("--verbose=maybe", NULL, "--verbose: 'maybe' is not a boolean (true/false)");
    expect_arg_error("--no-verbose=1", NULL, "--no-verbose takes no value");
    expect_arg_error("-j", "abc", "-j/--threads: 'abc' is not an integer");
    expect_arg_error("-o", NULL, "-o/--output needs a value");
}

static void test_set(void)
{
    cfg c;
    ffu_options_init(opts, &c);
    CHECK_EQ_INT(ffu_options_set(opts, &c, "min_score", "0.75"), FFU_OK);
    CHECK_NEAR(c.min_score, 0.75, 0);
    CHECK_EQ_INT(ffu_options_set(opts, &c, "input", "e.jpg"), FFU_OK); /* appends */
    CHECK_EQ_INT(c.inputs.count, 3);
    CHECK_EQ_INT(ffu_options_set(opts, &c, "verbose", NULL), FFU_OK);
    CHECK_EQ_INT(c.verbose, 1);
    CHECK_EQ_INT(ffu_options_set(opts, &c, "output", "o2"), FFU_OK);
    CHECK_STR(c.output, "o2");
    CHECK_EQ_INT(ffu_options_set(opts, &c, "nope", "1"), FFU_ERR_INVALID);
    CHECK(strstr(ffu_error_message(), "nope"));
    ffu_options_free(opts, &c);
}

static void test_json_config(void)
{
    const char *text = "{\"threads\": 16, \"min_score\": 0.9, \"output\": \"cfg.png\","
                       " \"select\": \"reference\", \"verbose\": true, \"input\": [\"x\", \"y\", \"z\"],"
                       " \"offset\": null}";
    ffu_json *j = NULL;
    CHECK_EQ_INT(ffu_json_parse(text, strlen(text), &j), FFU_OK);
    cfg c;
    ffu_options_init(opts, &c);
    CHECK_EQ_INT(ffu_options_apply_json(opts, &c, j), FFU_OK);
    ffu_json_free(j);
    CHECK_EQ_INT(c.threads, 16);
    CHECK_NEAR(c.min_score, 0.9, 0);
    CHECK_STR(c.output, "cfg.png");
    CHECK_EQ_INT(c.select, 0);
    CHECK_EQ_INT(c.verbose, 1);
    CHECK_EQ_INT(c.inputs.count, 3);
    CHECK_STR(c.inputs.items[2], "z");
    /* then the command line overrides the config */
    char *argv[] = {"--threads", "2", "--input", "cli.jpg"};
    CHECK_EQ_INT(ffu_options_parse_args(opts, &c, 4, argv, NULL), FFU_OK);
    CHECK_EQ_INT(c.threads, 2);
    CHECK_EQ_INT(c.inputs.count, 1);
    CHECK_STR(c.inputs.items[0], "cli.jpg");
    ffu_options_free(opts, &c);

    static const struct {
        const char *json, *message;
    } bad[] = {
        {"{\"thread\": 1}", "config: unknown key 'thread'"},
        {"{\"threads\": 1.5}", "config key 'threads': expected an integer, got number"},
        {"{\"threads\": \"4\"}", "config key 'threads': expected an integer, got string"},
        {"{\"threads\": 1000}", "config key 'threads': 1000 is out of range [0, 256]"},
        {"{\"min-score\": true}", "config key 'min-score': expected a number, got boolean"},
        {"{\"select\": \"all\"}", "config key 'select': 'all' is not one of reference, one, many"},
        {"{\"verbose\": 1}", "config key 'verbose': expected a boolean, got number"},
        {"{\"input\": [\"a\", 2]}", "config key 'input': item 1 is not a string"},
        {"{\"input\": {}}", "config key 'input': expected an array of strings, got object"},
        {"[1]", "config: expected a JSON object"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        CHECK_EQ_INT(ffu_json_parse(bad[i].json, strlen(bad[i].json), &j), FFU_OK);
        ffu_options_init(opts, &c);
        ffu_status s = ffu_options_apply_json(opts, &c, j);
        ffu_options_free(opts, &c);
        ffu_json_free(j);
        CHECK_EQ_INT(s, FFU_ERR_INVALID);
        CHECK_STR(ffu_error_message(), bad[i].message);
    }
    CHECK_EQ_INT(ffu_json_parse("{\"input\": \"one.jpg\"}", 20, &j), FFU_OK);
    ffu_options_init(opts, &c);
    CHECK_EQ_INT(ffu_options_apply_json(opts, &c, j), FFU_OK);
    CHECK_EQ_INT(c.inputs.count, 1);
    CHECK_STR(c.inputs.items[0], "one.jpg");
    ffu_options_free(opts, &c);
    ffu_json_free(j);
}

static void test_help(void)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    CHECK(f);
    ffu_options_print_help(opts, f);
    fclose(f);
    printf("%s", text);
    int ok = strstr(text, "  -j, --threads N") && strstr(text, "worker threads [0..256] (default: 4)") &&
             strstr(text, "      --min-score S") && strstr(text, "  -o, --output PATH") &&
             strstr(text, "(one of: reference, one, many) (default: one)") &&
             strstr(text, "--[no-]color") && strstr(text, "  -v, --verbose  ") &&
             strstr(text, "(repeatable)");
    /* help texts start in one column */
    const char *a = strstr(text, "worker threads"), *b = strstr(text, "say more");
    const char *la = a, *lb = b;
    while (la > text && la[-1] != '\n') la--;
    while (lb > text && lb[-1] != '\n') lb--;
    ok = ok && a - la == b - lb;
    free(text);
    CHECK(ok);
}

TEST_MAIN(test_defaults, test_parse_args, test_parse_errors, test_set, test_json_config, test_help)
