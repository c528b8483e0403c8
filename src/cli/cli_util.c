/* Command-line plumbing shared by every command: parsing with the common options,
 * config files, exit codes and error reporting. */
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "facefuse/face.h"

/* 1 while a progress bar's line is on stderr without its newline: whatever else goes
 * to stderr or the terminal erases it first (cli_bar_erase), so that no message starts
 * after the bar's text. Atomic: the library logs from worker threads too. */
static atomic_int bar_line;

static void cli_bar_erase(void)
{
    if (atomic_exchange(&bar_line, 0)) {
        fputs("\r\033[K", stderr); /* to the line's start, erase to its end */
        fflush(stderr);
    }
}

static void cli_log_sink(void *user, ffu_log_level level, const ffu_class *cls, const void *obj,
                         const char *msg)
{
    cli_bar_erase();
    ffu_log_to_stderr(user, level, cls, obj, msg);
}

void cli_log_init(void) { ffu_log_set_callback(cli_log_sink, NULL); }

int cli_exit_code(ffu_status st)
{
    switch (st) {
    case FFU_OK:
    case FFU_AGAIN:
    case FFU_EOF: return CLI_EXIT_OK;
    case FFU_ERR_INVALID: return CLI_EXIT_USAGE;
    case FFU_ERR_FORMAT:
    case FFU_ERR_TOO_LARGE:
    case FFU_ERR_UNSUPPORTED: return CLI_EXIT_DATA;
    case FFU_ERR_NOT_FOUND: return CLI_EXIT_NOT_FOUND;
    case FFU_ERR_DEVICE: return CLI_EXIT_DEVICE;
    default: return CLI_EXIT_FAILURE;
    }
}

static int report(const cli_command *cmd, const cli_common *common, int code,
                  const char *status_name, const char *msg)
{
    cli_bar_erase();
    fprintf(stderr, "facefuse %s: %s\n", cmd->name, msg);
    if (common && common->json) {
        ffu_jw *w;
        if (ffu_jw_create(&w, 0) == FFU_OK) {
            ffu_jw_begin_object(w);
            ffu_jw_key(w, "ok"), ffu_jw_bool(w, 0);
            ffu_jw_key(w, "command"), ffu_jw_string(w, cmd->name);
            ffu_jw_key(w, "error"), ffu_jw_string(w, msg);
            ffu_jw_key(w, "status"), ffu_jw_string(w, status_name);
            ffu_jw_key(w, "exit_code"), ffu_jw_int(w, code);
            ffu_jw_end_object(w);
            cli_print_json(w);
            ffu_jw_destroy(w);
        }
    }
    return code;
}

int cli_fail(const cli_command *cmd, const cli_common *common, ffu_status st)
{
    return report(cmd, common, cli_exit_code(st), ffu_status_str(st), ffu_error_message());
}

const char *cli_error_about(const char *path, char *buf, size_t size)
{
    const char *msg = ffu_error_message();
    size_t n = strlen(path);
    if (strncmp(msg, path, n) == 0 && msg[n] == ':')
        snprintf(buf, size, "%s", msg);
    else
        snprintf(buf, size, "%s: %s", path, msg);
    return buf;
}

int cli_fail_path(const cli_command *cmd, const cli_common *common, ffu_status st,
                  const char *path)
{
    char msg[1024];
    return report(cmd, common, cli_exit_code(st), ffu_status_str(st),
                  cli_error_about(path, msg, sizeof msg));
}

int cli_input_failed(const cli_command *cmd, ffu_status st, const char *path, ffu_jw *w)
{
    char msg[1024];
    cli_bar_erase();
    fprintf(stderr, "facefuse %s: %s\n", cmd->name, cli_error_about(path, msg, sizeof msg));
    if (w) {
        ffu_jw_begin_object(w);
        ffu_jw_key(w, "path"), ffu_jw_string(w, path);
        ffu_jw_key(w, "error"), ffu_jw_string(w, msg);
        ffu_jw_end_object(w);
    }
    return cli_exit_code(st);
}

int cli_fail_msg(const cli_command *cmd, const cli_common *common, int exit_code,
                 const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return report(cmd, common, exit_code, exit_code == CLI_EXIT_USAGE ? "usage" : "error", msg);
}

void cli_write_box(ffu_jw *w, const float box[4])
{
    ffu_jw_begin_array(w);
    for (int k = 0; k < 4; k++)
        ffu_jw_number(w, round((double)box[k] * 100) / 100);
    ffu_jw_end_array(w);
}

float cli_smallest_face(ffu_detector *det, int width, int height)
{
    float side = 0;
    if (ffu_detector_smallest_face(det, width, height, &side)) ffu_error_clear();
    return side;
}

const char *cli_small_faces_note(float side, int width, int height, int video, char *buf,
                                 size_t cap)
{
    if (!(side >= 30)) /* --min-face 20 would hardly look for smaller faces */
        return NULL;
    snprintf(buf, cap,
             "faces under %.0f px are not looked for in %s %dx%d %s: --min-face 20 finds "
             "smaller ones",
             side, video ? "these" : "this", width, height, video ? "frames" : "image");
    return buf;
}

/* A large photo's whole-frame view cannot see its small faces (150 px and under in a
 * 1080p frame for the default detector), the likeliest reason, so that comes first. */
const char *cli_no_face_hint(ffu_detector *det, int width, int height, int video, const char *rest,
                             char *buf, size_t cap)
{
    char note[160];
    if (cli_small_faces_note(cli_smallest_face(det, width, height), width, height, video, note,
                             sizeof note))
        snprintf(buf, cap, "%s; or try %s", note, rest);
    else
        snprintf(buf, cap, "try %s", rest);
    return buf;
}

int cli_print_json(ffu_jw *w)
{
    size_t len;
    const char *text = ffu_jw_text(w, &len);
    if (!text) {
        fprintf(stderr, "facefuse: could not format JSON output\n");
        return CLI_EXIT_FAILURE;
    }
    fwrite(text, 1, len, stdout);
    fputc('\n', stdout);
    return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
}

static int output_file_ok(const char *path)
{
    char dir[4096];
    struct stat st;
    if (!path || !*path || snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir) {
        errno = ENAMETOOLONG;
        return -1;
    }
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        errno = EISDIR;
        return -1;
    }
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = 0;
    else
        *slash = 0;
    if (stat(dir, &st) != 0) return -1;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

int cli_check_output_file(const cli_command *cmd, const cli_common *common, const char *option,
                          const char *path)
{
    if (output_file_ok(path) == 0) return CLI_EXIT_OK;
    int code = errno == ENOENT   ? CLI_EXIT_NOT_FOUND
               : errno == EISDIR ? CLI_EXIT_USAGE
                                 : CLI_EXIT_FAILURE;
    return cli_fail_msg(cmd, common, code, "%s %s: %s", option, path, strerror(errno));
}

int cli_sniff_media(const char *path)
{
    unsigned char b[192] = {0};
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(b, 1, sizeof b, f) : 0;
    if (f) fclose(f);
    if (ffu_image_format_of(b, n)) return CLI_MEDIA_IMAGE;
    if ((n >= 8 && !memcmp(b + 4, "ftyp", 4)) || (n >= 4 && !memcmp(b, "\x1a\x45\xdf\xa3", 4)) ||
        (n >= 12 && !memcmp(b, "RIFF", 4) && !memcmp(b + 8, "AVI ", 4)) ||
        (n >= 3 && !memcmp(b, "FLV", 3)) || (n >= 189 && b[0] == 0x47 && b[188] == 0x47))
        return CLI_MEDIA_VIDEO;
    return CLI_MEDIA_NONE;
}

int cli_check_data_output(const cli_command *cmd, const cli_common *common, const char *option,
                          const char *path)
{
    int rc = cli_check_output_file(cmd, common, option, path);
    const int media = rc ? CLI_MEDIA_NONE : cli_sniff_media(path);
    if (media == CLI_MEDIA_NONE) return rc;
    return cli_fail_msg(cmd, common, CLI_EXIT_USAGE, "%s %s is %s; refusing to replace it", option,
                        path, media == CLI_MEDIA_IMAGE ? "an image" : "a video");
}

int cli_parse_stages(const char *s, unsigned *out)
{
    static const struct {
        const char *name;
        unsigned bits;
    } names[] = {{"landmarks", FFU_STAGE_LANDMARKS}, {"quality", FFU_STAGE_QUALITY},
                 {"liveness", FFU_STAGE_LIVENESS},   {"attributes", FFU_STAGE_ATTRIBUTES},
                 {"embed", FFU_STAGE_EMBED},         {"embedding", FFU_STAGE_EMBED},
                 {"all", 0xffffffffu}};
    *out = 0;
    while (s && *s) {
        size_t n = strcspn(s, ",");
        int found = 0;
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            if (strlen(names[i].name) == n && !strncmp(names[i].name, s, n)) {
                *out |= names[i].bits;
                found = 1;
            }
        if (!found && n)
            return -1;
        s += n + (s[n] == ',');
    }
    *out &= FFU_STAGE_LANDMARKS | FFU_STAGE_EMBED | FFU_STAGE_LIVENESS | FFU_STAGE_ATTRIBUTES |
            FFU_STAGE_QUALITY;
    return 0;
}

int cli_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int cli_is_image_name(const char *name)
{
    const char *slash = strrchr(name, '/'), *dot = strrchr(name, '.');
    if (!dot || (slash && dot < slash) || dot == (slash ? slash + 1 : name)) return 0;
    return ffu_image_name_known(name);
}

char *cli_join_path(const char *dir, const char *name)
{
    size_t n = strlen(dir);
    int slash = n > 0 && dir[n - 1] == '/';
    size_t len = n + !slash + strlen(name) + 1;
    char *p = malloc(len);
    if (p) snprintf(p, len, "%s%s%s", dir, slash ? "" : "/", name);
    return p;
}

static int image_file(const char *dir, const char *name, void *ctx)
{
    (void)ctx;
    if (!cli_is_image_name(name)) return 0;
    char *p = cli_join_path(dir, name);
    struct stat st;
    int ok = p && stat(p, &st) == 0 && S_ISREG(st.st_mode);
    free(p);
    return ok;
}

ffu_status cli_expand_images(int argc, char **argv, char ***paths, int *count)
{
    *paths = NULL;
    *count = 0;
    char **v = NULL;
    int n = 0, cap = 0;
    ffu_status st = FFU_OK;
    for (int i = 0; !st && i < argc; i++) {
        char **names = NULL;
        int nn = 0;
        const int dir = cli_is_dir(argv[i]);
        if (dir) {
            st = ffu_dir_list(argv[i], image_file, NULL, &names, &nn);
            if (!st && nn == 0)
                st = ffu_error_set(FFU_ERR_NOT_FOUND,
                                   "%s: no .jpg, .jpeg, .png or .webp image in the folder",
                                   argv[i]);
        }
        for (int k = 0; !st && k < (dir ? nn : 1); k++) {
            if (n == cap) {
                char **nv = realloc(v, sizeof *v * (size_t)(cap ? 2 * cap : 16));
                if (!nv) {
                    st = ffu_error_set(FFU_ERR_NOMEM, "out of memory");
                    break;
                }
                v = nv, cap = cap ? 2 * cap : 16;
            }
            if (!(v[n] = dir ? cli_join_path(argv[i], names[k]) : strdup(argv[i])))
                st = ffu_error_set(FFU_ERR_NOMEM, "out of memory");
            else
                n++;
        }
        ffu_dir_list_free(names, nn);
    }
    if (st) {
        ffu_dir_list_free(v, n);
        return st;
    }
    *paths = v;
    *count = n;
    return FFU_OK;
}

/* --config must be applied before the command line so that the command line wins. */
static const char *find_config(int argc, char **argv)
{
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) break;
        if (strcmp(argv[i], "--config") == 0 && i + 1 < argc) return argv[i + 1];
        if (strncmp(argv[i], "--config=", 9) == 0) return argv[i] + 9;
    }
    return NULL;
}

static void print_help(const cli_command *cmd, const ffu_option *opts)
{
    printf("usage: %s\n\n%s\n", cmd->usage, cmd->summary);
    if (cmd->description) printf("\n%s\n", cmd->description);
    printf("\noptions:\n");
    ffu_options_print_help(opts, stdout);
}

int cli_parse(const cli_command *cmd, const ffu_option *opts, void *obj, int argc,
              char **argv, int *npos, int *done)
{
    cli_common *common = obj;
    ffu_status st;
    *done = 0;
    *npos = 0;
    if ((st = ffu_options_init(opts, obj)) < 0) return cli_fail(cmd, NULL, st);
    const char *config = find_config(argc, argv);
    if (config) {
        ffu_json *root = NULL;
        if ((st = ffu_json_parse_file(config, &root)) < 0) return cli_fail(cmd, NULL, st);
        if (ffu_json_typeof(root) != FFU_JSON_OBJECT) {
            ffu_json_free(root);
            return cli_fail_msg(cmd, NULL, CLI_EXIT_USAGE, "%s: config must be a JSON object",
                                config);
        }
        st = ffu_options_apply_json(opts, obj, root);
        ffu_json_free(root);
        if (st < 0) return cli_fail_msg(cmd, NULL, CLI_EXIT_USAGE, "%s: %s", config,
                                        ffu_error_message());
    }
    if ((st = ffu_options_parse_args(opts, obj, argc, argv, npos)) < 0) {
        /* --help anywhere wins over a parse error ("facefuse image --bogus --help") */
        for (int i = 0; i < argc; i++)
            if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
                print_help(cmd, opts);
                *done = 1;
                return CLI_EXIT_OK;
            }
        return cli_fail_msg(cmd, NULL, CLI_EXIT_USAGE, "%s", ffu_error_message());
    }
    if (common->help) {
        print_help(cmd, opts);
        *done = 1;
        return CLI_EXIT_OK;
    }
    if (common->quiet) ffu_log_set_level(FFU_LOG_ERROR);
    if (common->verbose) ffu_log_set_level(FFU_LOG_DEBUG);
    return CLI_EXIT_OK;
}

/* --shape NAME=DIMS (or INDEX=DIMS), e.g. input=1x3x480x640, shared by nn and bench. */
ffu_status cli_nn_apply_shape(ffu_nn_session *s, const ffu_nn_model *m, const char *spec)
{
    const char *eq = strrchr(spec, '=');
    if (!eq) return ffu_error_set(FFU_ERR_INVALID, "--shape '%s' is not NAME=DIMS", spec);
    char name[256], *end;
    snprintf(name, sizeof name, "%.*s", (int)(eq - spec), spec);
    int idx = ffu_nn_model_find_input(m, name);
    if (idx < 0) {
        long v = strtol(name, &end, 10);
        if (*name && !*end && v >= 0 && v < ffu_nn_model_num_inputs(m)) idx = (int)v;
    }
    if (idx < 0) return ffu_error_set(FFU_ERR_INVALID, "--shape: the model has no input '%s'", name);
    int64_t dims[FFU_NN_MAX_RANK];
    int rank = 0;
    const char *p = eq + 1;
    while (*p && rank < FFU_NN_MAX_RANK) {
        long long v = strtoll(p, &end, 10);
        if (end == p || v < 0) break;
        dims[rank++] = v;
        p = end;
        if (*p == 'x' || *p == 'X' || *p == ',') p++;
        else break;
    }
    if (*p) return ffu_error_set(FFU_ERR_INVALID, "--shape '%s': dims must look like 1x3x224x224", spec);
    return ffu_nn_session_set_input_shape(s, idx, rank, dims);
}

void cli_nn_only_outputs(const ffu_strlist *only, ffu_nn_session_opts *so)
{
    so->outputs = (const char *const *)only->items;
    so->noutputs = only->count;
}

int cli_nn_output_kept(const ffu_nn_model *m, const ffu_strlist *only, int i)
{
    if (!only->count) return 1;
    for (int k = 0; k < only->count; k++) /* by index, as the session picks them */
        if (ffu_nn_model_find_output(m, only->items[k]) == i) return 1;
    return 0;
}

void cli_progress(cli_progress_bar *p, size_t done)
{
    if (!p->enabled)
        return;
    double now = ffu_clock_sec();
    if (done < p->total && now - p->last < 0.1)
        return; /* redraw at most 10 times a second */
    p->last = now;
    double el = now - p->start;
    double frac = p->total ? (double)done / (double)p->total : 1.0;
    int fill = (int)(frac * 30);
    char bar[31];
    for (int i = 0; i < 30; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[30] = 0;
    double eta = done ? el * (double)(p->total - done) / (double)done : 0;
    fprintf(stderr, "\r%s [%s] %zu/%zu %5.1f%% %.0fs elapsed, ETA %.0fs ", p->label, bar, done,
            p->total, 100 * frac, el, eta);
    if (done >= p->total)
        fputc('\n', stderr);
    fflush(stderr);
    atomic_store(&bar_line, done < p->total);
}

void cli_progress_clear(cli_progress_bar *p)
{
    if (!p->enabled)
        return;
    cli_bar_erase();
    p->last = 0; /* the next cli_progress draws at once */
}

void cli_progress_start(cli_progress_bar *p, const char *label, size_t total,
                        const cli_common *common)
{
    p->label = label;
    p->total = total;
    p->start = ffu_clock_sec();
    p->last = 0;
    p->enabled = isatty(2) && !(common && common->quiet);
}

const char *const cli_backend_names[] = {"cpu", "ref", "cuda", NULL};
const char *const cli_hwaccel_names[] = {"none", "auto", "cuda", NULL};

int cli_arg_given(int argc, char **argv, const char *name)
{
    size_t n = strlen(name);
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--")) break;
        if (a[0] == '-' && a[1] == '-' && !strncmp(a + 2, name, n) &&
            (!a[2 + n] || a[2 + n] == '='))
            return 1;
    }
    return 0;
}
