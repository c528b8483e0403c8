/* Shared pieces of the facefuse command line: the command table, the options every
 * command has (--help, --json, --config, -q, -v), parsing, exit codes and the one-line
 * error convention. Each command lives in its own cmd_*.c file. */
#ifndef FFU_CLI_H
#define FFU_CLI_H

#include <stddef.h>

#include "facefuse/core.h"
#include "facefuse/nn.h"

/* Exit codes, documented in `facefuse --help` and docs/CLI.md. */
enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_FAILURE = 1,  /* runtime failure: I/O, out of memory, internal */
    CLI_EXIT_USAGE = 2,    /* bad command line or config */
    CLI_EXIT_DATA = 3,     /* input data malformed, too large or unsupported */
    CLI_EXIT_NOT_FOUND = 4,/* input file or model not found */
    CLI_EXIT_DEVICE = 5,   /* GPU requested but unusable */
    CLI_EXIT_INTERRUPTED = 130,
};

/* Options every command accepts; embed as the FIRST member of a command's options. */
typedef struct cli_common {
    int help;
    int json;
    int quiet;
    int verbose;
    char *config;
} cli_common;

#define CLI_COMMON_OPTIONS                                                             \
    {"help", 'h', FFU_OPT_BOOL, offsetof(cli_common, help), "show this help and exit",  \
     NULL, 0, 0, NULL, NULL},                                                          \
    {"json", 0, FFU_OPT_BOOL, offsetof(cli_common, json),                              \
     "print machine-readable JSON on stdout", NULL, 0, 0, NULL, NULL},                 \
    {"config", 0, FFU_OPT_STRING, offsetof(cli_common, config),                        \
     "read options from a JSON object in FILE (the command line wins)", NULL, 0, 0,    \
     NULL, "FILE"},                                                                    \
    {"quiet", 'q', FFU_OPT_BOOL, offsetof(cli_common, quiet), "log errors only", NULL, \
     0, 0, NULL, NULL},                                                                \
    {"verbose", 'v', FFU_OPT_BOOL, offsetof(cli_common, verbose), "log debug detail",  \
     NULL, 0, 0, NULL, NULL}

typedef struct cli_command {
    const char *name;
    const char *summary;     /* one line for `facefuse --help` */
    const char *usage;       /* "facefuse image IN -o OUT [options]" */
    const char *description; /* a paragraph for `facefuse CMD --help`, may be NULL */
    int (*run)(const struct cli_command *cmd, int argc, char **argv);
} cli_command;

/* Parses argv for a command whose option struct starts with cli_common: applies
 * defaults, then --config FILE, then the command line. Handles --help (prints and
 * returns 0 with *done set), -q/-v. Returns an exit code; on success *npos holds the
 * number of positional arguments, moved to the front of argv. */
int cli_parse(const cli_command *cmd, const ffu_option *opts, void *obj, int argc,
              char **argv, int *npos, int *done);

/* Prints "facefuse CMD: message" on stderr (and, with --json, an error object on
 * stdout) and returns the exit code for the status. */
int cli_fail(const cli_command *cmd, const cli_common *common, ffu_status st);
int cli_fail_msg(const cli_command *cmd, const cli_common *common, int exit_code,
                 const char *fmt, ...) FFU_PRINTF(4, 5);
int cli_exit_code(ffu_status st);

/* Applies one --shape NAME=DIMS (or INDEX=DIMS) spec to a session. */
ffu_status cli_nn_apply_shape(ffu_nn_session *s, const ffu_nn_model *m, const char *spec);

/* A progress bar with ETA on stderr, drawn only when stderr is a terminal and the
 * command is not --quiet. */
typedef struct cli_progress_bar {
    const char *label;
    size_t total;
    double start, last;
    int enabled;
} cli_progress_bar;
void cli_progress_start(cli_progress_bar *p, const char *label, size_t total,
                        const cli_common *common);
void cli_progress(cli_progress_bar *p, size_t done); /* done == total ends the line */

/* Prints a finished JSON writer's text plus a newline on stdout. */
int cli_print_json(ffu_jw *w);

/* 1 when path names a directory (after links): the commands that take "a file or a
 * folder" (--draw, --gallery, swap targets) decide with it. */
int cli_is_dir(const char *path);

extern const cli_command cli_cmd_version, cli_cmd_info, cli_cmd_image;
extern const cli_command cli_cmd_nn, cli_cmd_bench, cli_cmd_models, cli_cmd_eval;
extern const cli_command cli_cmd_detect, cli_cmd_embed, cli_cmd_compare;
extern const cli_command cli_cmd_video, cli_cmd_analyze, cli_cmd_swap;
extern const cli_command cli_cmd_enroll, cli_cmd_identify;
/* `facefuse eval swap` (cmd_eval_swap.c), dispatched by `facefuse eval`. */
int cli_eval_swap(const cli_command *cmd, int argc, char **argv);

#endif
