/* Shared pieces of the facefuse command line: the command table, the options every
 * command has (--help, --json, --config, -q, -v), parsing, exit codes and the one-line
 * error convention. Each command lives in its own cmd_*.c file. */
#ifndef FFU_CLI_H
#define FFU_CLI_H

#include <stddef.h>

#include "facefuse/core.h"
#include "facefuse/face.h"
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
/* cli_fail for an error about the file at path: the message names the path once
 * (errors from loading it already start with it, later ones, such as analysis, do
 * not). */
int cli_fail_path(const cli_command *cmd, const cli_common *common, ffu_status st,
                  const char *path);
/* The last error about the file at path, naming the path once, written into buf. */
const char *cli_error_about(const char *path, char *buf, size_t size);
/* A batch command's failure on one of its input files (it goes on with the others):
 * "facefuse CMD: PATH: reason" on stderr and, when w is not NULL, {"path", "error"}
 * into w's open array. Returns the exit code for st. */
int cli_input_failed(const cli_command *cmd, ffu_status st, const char *path, ffu_jw *w);

/* Applies one --shape NAME=DIMS (or INDEX=DIMS) spec to a session. */
ffu_status cli_nn_apply_shape(ffu_nn_session *s, const ffu_nn_model *m, const char *spec);
/* --only-output NAME (repeatable): points so's outputs at the names (session creation
 * then refuses a name the model lacks: FFU_ERR_NOT_FOUND naming it); a no-op when the
 * list is empty. cli_nn_output_kept says whether output i is computed (1 for all
 * without). */
#define CLI_ONLY_OUTPUT_HELP                                                                       \
    "compute only this output (repeatable): nodes that only the others need are not run"
void cli_nn_only_outputs(const ffu_strlist *only, ffu_nn_session_opts *so);
int cli_nn_output_kept(const ffu_nn_model *m, const ffu_strlist *only, int i);

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
/* Erases the bar's line (redrawn by the next cli_progress): call it before printing a
 * line of results on stdout while a bar may be shown, so the two do not share a line.
 * Errors (cli_fail*, cli_input_failed) and log lines erase it themselves. */
void cli_progress_clear(cli_progress_bar *p);
/* Routes the library's log lines through the CLI (they erase a progress bar's line
 * first); main calls it once. */
void cli_log_init(void);

/* The engine backends every --backend option offers, in option-table order (NULL ends
 * the list), and the help text that goes with them. */
extern const char *const cli_backend_names[];
#define CLI_BACKEND_HELP "cpu (oneDNN, ref where it cannot), ref (plain C) or cuda (NVIDIA GPU)"

/* --hwaccel none|auto|cuda and --hw-device N for commands that decode video, into int
 * fields `hwaccel` (an ffu_video_hwaccel: the names are in enum order) and `hw_device`
 * of the command's options struct TYPE. */
extern const char *const cli_hwaccel_names[];
#define CLI_HWACCEL_OPTIONS(TYPE)                                                          \
    {"hwaccel", 0, FFU_OPT_ENUM, offsetof(TYPE, hwaccel),                                  \
     "decode video on: none (the CPU), auto (NVDEC when a CUDA device can, else the CPU) " \
     "or cuda (NVDEC, or fail)", "none", 0, 0, cli_hwaccel_names, NULL},                     \
    {"hw-device", 0, FFU_OPT_INT, offsetof(TYPE, hw_device), "CUDA device for --hwaccel",   \
     "0", 0, 63, NULL, "N"}

/* The models' device and precision: --device N and --fp16 for --backend cuda, --bf16 for
 * the cpu backend, into int fields `device`, `fp16` and `bf16` of TYPE. */
#define CLI_MODEL_OPTIONS(TYPE)                                                            \
    {"device", 0, FFU_OPT_INT, offsetof(TYPE, device),                                     \
     "--backend cuda: the CUDA device (0 = the first)", "0", 0, 63, NULL, "N"},              \
    {"fp16", 0, FFU_OPT_BOOL, offsetof(TYPE, fp16),                                        \
     "--backend cuda: fp16 compute where each layer's accuracy check against fp32 passes",  \
     NULL, 0, 0, NULL, NULL},                                                               \
    {"bf16", 0, FFU_OPT_BOOL, offsetof(TYPE, bf16),                                        \
     "--backend cpu: bf16 compute where the CPU has AVX512-BF16 and each layer's accuracy " \
     "check against f32 passes",                                                            \
     NULL, 0, 0, NULL, NULL}

/* The cpu backend's switches of nn and bench: --no-winograd, --no-bands (TYPE has ints
 * no_winograd and no_bands). */
#define CLI_ENGINE_OPTIONS(TYPE)                                                            \
    {"no-winograd", 0, FFU_OPT_BOOL, offsetof(TYPE, no_winograd),                          \
     "cpu: direct 3x3 convolutions only (by default Winograd where each node's check "      \
     "against direct passes)",                                                              \
     NULL, 0, 0, NULL, NULL},                                                               \
    {"no-bands", 0, FFU_OPT_BOOL, offsetof(TYPE, no_bands),                                \
     "cpu: every node on its own (by default runs of 1x1 and depthwise convolutions on "    \
     "large tensors are computed band by band, and on several threads runs of "             \
     "convolutions in thread strips)",                                                      \
     NULL, 0, 0, NULL, NULL}

/* 1 when argv (before any "--") holds --NAME or --NAME=VALUE: for defaults that depend on
 * other options ("--backend cuda" decodes with --hwaccel auto unless --hwaccel is given).
 * Call before cli_parse, which reorders argv. */
int cli_arg_given(int argc, char **argv, const char *name);

/* A face box [x, y, w, h] as a JSON array, pixels to two decimals. */
void cli_write_box(ffu_jw *w, const float box[4]);

/* The side (pixels) of the smallest face det looks for in a width x height image, as
 * ffu_detector_smallest_face gives it; 0 if unknown. */
float cli_smallest_face(ffu_detector *det, int width, int height);
/* Why faces may have been missed in a width x height image (video: its frames) where
 * the search looked for none under `side` px: "faces under 80 px are not looked for in
 * this 1024x819 image: --min-face 20 finds smaller ones", into buf (returned); NULL
 * when side is under 30 px (or unknown), where --min-face 20 would hardly look smaller. */
const char *cli_small_faces_note(float side, int width, int height, int video, char *buf,
                                 size_t cap);
/* What to try when an image (video: every frame) of that size gave no face, into buf
 * (returned): cli_small_faces_note for det's smallest face, then "try " and the
 * command's other options (rest). */
const char *cli_no_face_hint(ffu_detector *det, int width, int height, int video, const char *rest,
                             char *buf, size_t cap);
/* rest for the commands that run the analyzer */
#define CLI_NO_FACE_OPTIONS "--min-score lower, --rotations, or another --detector"

/* Prints a finished JSON writer's text plus a newline on stdout. */
int cli_print_json(ffu_jw *w);

/* Refuses, before any work, an output file that could not be written as far as folders
 * go: the folder that would hold it missing or not a folder, or path itself a folder.
 * Returns CLI_EXIT_OK, or prints "OPTION PATH: reason" and returns the exit code
 * (CLI_EXIT_NOT_FOUND for a missing folder, CLI_EXIT_USAGE when path is a folder,
 * CLI_EXIT_FAILURE otherwise). For commands that write a file after the work, so that
 * a typo costs nothing. */
int cli_check_output_file(const cli_command *cmd, const cli_common *common, const char *option,
                          const char *path);

/* What a file's first bytes say it is: CLI_MEDIA_IMAGE (JPEG, PNG, WebP), CLI_MEDIA_VIDEO
 * (MP4/MOV, Matroska, AVI, FLV, MPEG-TS), else CLI_MEDIA_NONE (no such file included). */
enum { CLI_MEDIA_NONE, CLI_MEDIA_IMAGE, CLI_MEDIA_VIDEO };
int cli_sniff_media(const char *path);

/* cli_check_output_file for an output that is data, not media (an events file, a
 * gallery), also refusing (CLI_EXIT_USAGE) to replace an existing image or video: such a
 * path is a slip (an input named where the output goes), and the media would be lost. */
int cli_check_data_output(const cli_command *cmd, const cli_common *common, const char *option,
                          const char *path);

/* --with STAGES (comma-separated: landmarks, quality, liveness, attributes, embed or
 * embedding, all) -> FFU_STAGE_* bits in *out; -1 on an unknown name. */
int cli_parse_stages(const char *s, unsigned *out);

/* 1 when path names a directory (after links): the commands that take "a file or a
 * folder" (--draw, --gallery, swap targets) decide with it. */
int cli_is_dir(const char *path);

/* dir/name in a malloc'd string, one slash between them (NULL when out of memory). */
char *cli_join_path(const char *dir, const char *name);

/* 1 when a file name ends in .jpg, .jpeg, .png or .webp (any case; ffu_image_name_known)
 * and is not hidden: the images a folder given as input contributes. */
int cli_is_image_name(const char *name);

/* The images of a command's inputs: each argument as given, a folder replaced by its
 * images (cli_is_image_name, regular files, not hidden, not in sub-folders) in sorted
 * order, as a malloc'd array of malloc'd paths (ffu_dir_list_free). A folder without
 * images, or one that cannot be read, is an error that names it. */
ffu_status cli_expand_images(int argc, char **argv, char ***paths, int *count);

extern const cli_command cli_cmd_version, cli_cmd_info, cli_cmd_image;
extern const cli_command cli_cmd_nn, cli_cmd_bench, cli_cmd_models, cli_cmd_eval;
extern const cli_command cli_cmd_detect, cli_cmd_embed, cli_cmd_compare;
extern const cli_command cli_cmd_video, cli_cmd_analyze, cli_cmd_swap;
extern const cli_command cli_cmd_enroll, cli_cmd_identify;
/* `facefuse eval swap` (cmd_eval_swap.c), dispatched by `facefuse eval`. */
int cli_eval_swap(const cli_command *cmd, int argc, char **argv);

#endif
