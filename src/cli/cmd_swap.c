/* `facefuse swap`: puts the face of --source photos onto the faces of --target images
 * and videos (include/facefuse/swap.h does the work; docs/SWAP.md explains it).
 *
 * One target goes to --output; many targets (several --target, or a directory) go to
 * --output-dir as a batch job with a journal (DIR/.facefuse-swap-journal) listing each
 * finished output with its size and a hash of what produced it (sources, options,
 * target). Running the same command again after an interruption skips what the journal
 * says is done and redoes the rest; Ctrl-C (SIGINT) or SIGTERM stops cleanly: a video
 * being written leaves no file behind (the writer renames its temporary file only on
 * success) and the journal only ever lists complete outputs.
 *
 * Every output says it is synthetic: PNG tEXt "Comment" / JPEG COM segment / WebP XMP
 * for images, the container's "comment" tag for videos, and --watermark adds a visible
 * mark. */
#include <dirent.h>
#include <stdarg.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "facefuse/image.h"
#include "facefuse/swap.h"
#include "facefuse/video.h"
#include "ffu_config.h"

#define JOURNAL_NAME ".facefuse-swap-journal"
#define JOURNAL_MAGIC "facefuse-swap-journal-v1"

static const char *const select_names[] = {"one", "many", "reference", NULL};
static const char *const order_names[] = {"large-small", "small-large", "left-right",
                                          "right-left",  "top-bottom",  "bottom-top",
                                          "best-worst",  "worst-best",  NULL};
static const char *const gender_names[] = {"any", "male", "female", NULL};
static const char *const colour_names[] = {"lab", "multiscale", "none", NULL};
static const char *const blend_names[] = {"auto", "poisson", "feather", NULL};

typedef struct {
    cli_common common;
    ffu_strlist source, target;
    char *output, *output_dir;
    char *swapper, *enhancer, *occluder;
    double enhancer_blend, codeformer_weight;
    int select;
    char *reference;
    int reference_face;
    double reference_distance;
    int order, gender;
    double age_min, age_max;
    char *mask, *mask_padding;
    int keep_mouth, keep_eyes;
    int colour, blend;
    double mask_blur;
    int watermark;
    int crf, quality;
    char *preset, *codec;
    int threads, model_threads;
    double smooth;
    int max_frames, audio;
    char *detector, *landmarker, *embedder;
    double min_score;
    int min_face, backend;
    int force;
    int hwaccel, hw_device;
    int device, fp16, bf16; /* CLI_MODEL_OPTIONS */
} swap_opts;

/* clang-format off */
#define OPT(name, type, field, help, def, lo, hi, choices, meta) \
    {name, 0, type, offsetof(swap_opts, field), help, def, lo, hi, choices, meta}
/* clang-format on */

static const ffu_option swap_options[] = {
    CLI_COMMON_OPTIONS,
    {"source", 's', FFU_OPT_STRING_LIST, offsetof(swap_opts, source),
     "photo of the face to put in (a folder: its photos); several photos of the same person "
     "help",
     NULL, 0, 0, NULL, "IMG"},
    OPT("target", FFU_OPT_STRING_LIST, target,
        "image (.jpg, .png), video (.mp4, .mov, .mkv, ...) or directory to swap faces in", NULL, 0,
        0, NULL, "PATH"),
    {"output", 'o', FFU_OPT_STRING, offsetof(swap_opts, output),
     "output file for a single target (.png/.jpg for images, .mp4/.mkv/.mov for videos)", NULL, 0,
     0, NULL, "OUT"},
    OPT("output-dir", FFU_OPT_STRING, output_dir,
        "directory for many targets (same names as the targets); resumable batch", NULL, 0, 0, NULL,
        "DIR"),
    OPT("swapper", FFU_OPT_STRING, swapper,
        "mesh (built in), or an ONNX swapper: inswapper:PATH, hyperswap:PATH, "
        "simswap:PATH, onnx:PATH",
        "mesh", 0, 0, NULL, "KIND[:PATH]"),
    OPT("enhancer", FFU_OPT_STRING, enhancer,
        "face enhancer after the swap: gfpgan:PATH, codeformer:PATH, onnx:PATH", NULL, 0, 0, NULL,
        "KIND:PATH"),
    OPT("enhancer-blend", FFU_OPT_FLOAT, enhancer_blend,
        "share of the enhanced face, 0..1 (0 = 0.8)", "0", 0, 1, NULL, "X"),
    OPT("codeformer-weight", FFU_OPT_FLOAT, codeformer_weight,
        "CodeFormer fidelity weight (0 = 0.5)", "0", 0, 1, NULL, "W"),
    OPT("select", FFU_OPT_ENUM, select,
        "which target faces: one (the first in --order), many (all), reference (those "
        "like --reference); --reference alone implies reference",
        "one", 0, 0, select_names, NULL),
    OPT("reference", FFU_OPT_STRING, reference,
        "photo of the person to replace (with --select reference)", NULL, 0, 0, NULL, "IMG"),
    OPT("reference-face", FFU_OPT_INT, reference_face,
        "which face of --reference (index in detector score order; -1 = the largest)", "-1", -1,
        1000, NULL, "N"),
    OPT("reference-distance", FFU_OPT_FLOAT, reference_distance,
        "largest (1 - cos) / 2 distance to the reference that still matches (0 = the "
        "embedder's own threshold)",
        "0", 0, 1, NULL, "X"),
    OPT("order", FFU_OPT_ENUM, order, "order of the target faces", "large-small", 0, 0, order_names,
        NULL),
    OPT("gender", FFU_OPT_ENUM, gender, "only faces of this gender", "any", 0, 0, gender_names,
        NULL),
    OPT("age-min", FFU_OPT_FLOAT, age_min, "only faces at least this old (0 = no limit)", "0", 0,
        200, NULL, "A"),
    OPT("age-max", FFU_OPT_FLOAT, age_max, "only faces at most this old (0 = no limit)", "0", 0,
        200, NULL, "B"),
    OPT("mask", FFU_OPT_STRING, mask,
        "masks, comma-separated: box, region, occlusion (default region for mesh, box for "
        "ONNX)",
        NULL, 0, 0, NULL, "LIST"),
    OPT("occluder", FFU_OPT_STRING, occluder, "occlusion model for --mask occlusion", NULL, 0, 0,
        NULL, "onnx:PATH"),
    OPT("keep-mouth", FFU_OPT_BOOL, keep_mouth, "keep the target's mouth interior", NULL, 0, 0,
        NULL, NULL),
    OPT("keep-eyes", FFU_OPT_BOOL, keep_eyes, "keep the target's eyes", NULL, 0, 0, NULL, NULL),
    OPT("colour", FFU_OPT_ENUM, colour, "colour matching of the swapped face", "lab", 0, 0,
        colour_names, NULL),
    OPT("blend", FFU_OPT_ENUM, blend,
        "blending at the mask's edge (auto: the swapper's "
        "best)",
        "auto", 0, 0, blend_names, NULL),
    OPT("mask-blur", FFU_OPT_FLOAT, mask_blur, "box mask blur, share of the crop side (0 = 0.3)",
        "0", 0, 1, NULL, "X"),
    OPT("mask-padding", FFU_OPT_STRING, mask_padding,
        "box mask padding in % of the crop: T,R,B,L (1 to 4 values, as in CSS)", NULL, 0, 0, NULL,
        "T,R,B,L"),
    OPT("watermark", FFU_OPT_BOOL, watermark, "also draw a visible SYNTHETIC mark", NULL, 0, 0,
        NULL, NULL),
    OPT("quality", FFU_OPT_INT, quality, "JPEG output quality", "92", 1, 100, NULL, "Q"),
    OPT("crf", FFU_OPT_INT, crf, "video quality, 1 (best) .. 51", "18", 1, 51, NULL, "N"),
    OPT("preset", FFU_OPT_STRING, preset, "x264 preset (ultrafast .. veryslow)", "veryfast", 0, 0,
        NULL, "P"),
    OPT("codec", FFU_OPT_STRING, codec, "video encoder (FFmpeg name)", "libx264", 0, 0, NULL, "C"),
    {"threads", 't', FFU_OPT_INT, offsetof(swap_opts, threads),
     "video: frames swapped at once, one swapper each (0 = one per CPU)", "0", 0, 64, NULL, "N"},
    OPT("model-threads", FFU_OPT_INT, model_threads,
        "threads per model inference (0 = CPUs / --threads for videos, all for images)", "0", 0,
        1024, NULL, "N"),
    OPT("smooth", FFU_OPT_FLOAT, smooth, "video: landmark smoothing strength 0..1 (0 = off)", "0.5",
        0, 1, NULL, "S"),
    OPT("max-frames", FFU_OPT_INT, max_frames, "video: stop after N frames (0 = all)", "0", 0,
        999999, NULL, "N"),
    OPT("audio", FFU_OPT_BOOL, audio, "video: copy the audio (--no-audio drops it)", "true", 0, 0,
        NULL, NULL),
    {"detector", 'd', FFU_OPT_STRING, offsetof(swap_opts, detector),
     "detector: a zoo name or FAMILY:PATH", NULL, 0, 0, NULL, "NAME[:PATH]"},
    OPT("min-score", FFU_OPT_FLOAT, min_score,
        "detection score threshold (0 = the detector's default)", "0", 0, 1, NULL, "S"),
    OPT("min-face", FFU_OPT_INT, min_face,
        "smallest face to find, pixels (tiles large "
        "frames)",
        "0", 0, 100000, NULL, "PX"),
    OPT("landmarker", FFU_OPT_STRING, landmarker, "landmark model (default facemesh)", NULL, 0, 0,
        NULL, "NAME[:PATH]"),
    {"embedder", 'e', FFU_OPT_STRING, offsetof(swap_opts, embedder),
     "embedder for --select reference and ONNX swappers", NULL, 0, 0, NULL, "NAME[:PATH]"},
    {"backend", 'b', FFU_OPT_ENUM, offsetof(swap_opts, backend), CLI_BACKEND_HELP, "cpu", 0, 0,
     cli_backend_names, NULL},
    OPT("force", FFU_OPT_BOOL, force,
        "--output-dir: redo every target even when the journal says it is done", NULL, 0, 0, NULL,
        NULL),
    CLI_HWACCEL_OPTIONS(swap_opts),
    CLI_MODEL_OPTIONS(swap_opts),
    {0},
};

/* ---- stopping on SIGINT / SIGTERM ------------------------------------------------------ */

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1; /* the handler is reset: a second Ctrl-C kills at once */
}

static void install_signals(struct sigaction old[2])
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old[0]);
    sigaction(SIGTERM, &sa, &old[1]);
}

static void restore_signals(const struct sigaction old[2])
{
    sigaction(SIGINT, &old[0], NULL);
    sigaction(SIGTERM, &old[1], NULL);
}

/* ---- targets ------------------------------------------------------------------------- */

typedef enum { KIND_IMAGE, KIND_VIDEO } target_kind;

typedef struct {
    char *path; /* the target as found */
    char *out;  /* where its output goes */
    char *name; /* the output's file name (journal key) */
    target_kind kind;
    /* result */
    const char *state; /* "done", "skipped", "failed", "pending" */
    int code;          /* exit code of a failure */
    char error[512];
    int faces;
    int64_t frames, frames_without_face;
    double fps, seconds;
} target;

static const char *ext_of(const char *path)
{
    const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');
    return dot && (!slash || dot > slash) && dot != (slash ? slash + 1 : path) ? dot + 1 : "";
}

static int is_video_ext(const char *e)
{
    static const char *const v[] = {"mp4",  "m4v", "mov", "mkv", "avi", "webm", "mpg",
                                    "mpeg", "ts",  "wmv", "flv", "3gp", "ogv",  NULL};
    for (int i = 0; v[i]; i++)
        if (!strcasecmp(e, v[i])) return 1;
    return 0;
}

/* A target's kind: by its extension, and by its first bytes when the extension is
 * neither an image's nor a video's (a JPEG, PNG or WebP without one is an image; anything
 * else is handed to the video reader, which knows more containers than we list). */
static target_kind kind_of(const char *path)
{
    if (cli_is_image_name(path)) return KIND_IMAGE;
    if (is_video_ext(ext_of(path))) return KIND_VIDEO;
    return cli_sniff_media(path) == CLI_MEDIA_IMAGE ? KIND_IMAGE : KIND_VIDEO;
}

/* Containers the writer makes; other video inputs get an .mp4 output. */
static int is_writable_video_ext(const char *e)
{
    return !strcasecmp(e, "mp4") || !strcasecmp(e, "m4v") || !strcasecmp(e, "mov") ||
           !strcasecmp(e, "mkv");
}

typedef struct {
    target *v;
    int count, cap;
} target_list;

static int push_target(target_list *l, const char *path)
{
    if (l->count == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        target *v = realloc(l->v, (size_t)cap * sizeof *v);
        if (!v) return -1;
        l->v = v, l->cap = cap;
    }
    target *t = &l->v[l->count];
    memset(t, 0, sizeof *t);
    t->state = "pending";
    if (!(t->path = strdup(path))) return -1;
    t->kind = kind_of(path);
    l->count++;
    return 0;
}

/* Images and videos by their extension (ffu_dir_list's filter). */
static int media_name(const char *dir, const char *name, void *ctx)
{
    (void)dir, (void)ctx;
    return cli_is_image_name(name) || is_video_ext(ext_of(name));
}

/* A directory's images and videos (not hidden ones, not subdirectories), sorted. */
static ffu_status add_dir(target_list *l, const char *dir)
{
    char **names;
    int n;
    ffu_status st = ffu_dir_list(dir, media_name, NULL, &names, &n);
    for (int i = 0; !st && i < n; i++) {
        char *path = cli_join_path(dir, names[i]);
        struct stat sb;
        if (!path || (stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && push_target(l, path) < 0))
            st = ffu_error_set(FFU_ERR_NOMEM, "out of memory");
        free(path);
    }
    ffu_dir_list_free(names, n);
    return st;
}

static void free_targets(target_list *l)
{
    for (int i = 0; i < l->count; i++) {
        free(l->v[i].path);
        free(l->v[i].out);
        free(l->v[i].name);
    }
    free(l->v);
}

/* ---- journal ------------------------------------------------------------------------- */

typedef struct {
    char key[65];
    long long size;
    char *name;
} journal_entry;

typedef struct {
    journal_entry *v;
    int count;
    FILE *append; /* open for appending while the batch runs */
} journal;

static void journal_free(journal *j)
{
    for (int i = 0; i < j->count; i++)
        free(j->v[i].name);
    free(j->v);
    if (j->append) fclose(j->append);
}

/* Lines: "facefuse-swap-journal-v1 KEY SIZE NAME". Unknown or damaged lines (a line cut
 * short by a kill) are ignored: the worst case is redoing a target. */
static void journal_load(journal *j, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return;
    char line[8192];
    while (fgets(line, sizeof line, f)) {
        size_t len = strlen(line);
        if (!len || line[len - 1] != '\n') continue;
        line[--len] = 0;
        char magic[64], key[65];
        long long size;
        int off = 0;
        if (sscanf(line, "%63s %64s %lld %n", magic, key, &size, &off) != 3 || !off ||
            strcmp(magic, JOURNAL_MAGIC) || strlen(key) != 64 || !line[off])
            continue;
        journal_entry *v = realloc(j->v, (size_t)(j->count + 1) * sizeof *v);
        if (!v) break;
        j->v = v;
        journal_entry *e = &v[j->count];
        memcpy(e->key, key, 65);
        e->size = size;
        if (!(e->name = strdup(line + off))) break;
        j->count++;
    }
    fclose(f);
}

/* Was `name` finished with the same key, and is the file still there, same size? */
static int journal_done(const journal *j, const char *name, const char *key, const char *out)
{
    for (int i = j->count - 1; i >= 0; i--) /* the latest entry for a name counts */
        if (!strcmp(j->v[i].name, name)) {
            struct stat st;
            return !strcmp(j->v[i].key, key) && stat(out, &st) == 0 && S_ISREG(st.st_mode) &&
                   (long long)st.st_size == j->v[i].size;
        }
    return 0;
}

/* Appends and flushes to the disk, so a kill right after still finds the line. */
static void journal_add(journal *j, const char *name, const char *key, const char *out)
{
    struct stat st;
    if (!j->append || strchr(name, '\n') || stat(out, &st) != 0) return;
    fprintf(j->append, "%s %s %lld %s\n", JOURNAL_MAGIC, key, (long long)st.st_size, name);
    fflush(j->append);
    fsync(fileno(j->append));
}

/* Removes temporary files ("DIR/.NAME.tmp-PID-N", ffu_file_create_temp's names for
 * videos and images being written) that a killed earlier run left for our outputs;
 * those of a process still running are left alone. */
static void remove_stale_parts(const char *dir, const target_list *l)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *part = strstr(e->d_name, ".tmp-");
        if (e->d_name[0] != '.' || !part) continue;
        long pid = strtol(strchr(part, '-') + 1, NULL, 10);
        if (pid <= 0 || pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        size_t nlen = (size_t)(part - e->d_name - 1);
        for (int i = 0; i < l->count; i++)
            if (strlen(l->v[i].name) == nlen && !strncmp(l->v[i].name, e->d_name + 1, nlen)) {
                char *p = cli_join_path(dir, e->d_name);
                if (p) unlink(p);
                free(p);
                break;
            }
    }
    closedir(d);
}

/* ---- options -> library ---------------------------------------------------------------- */

static int parse_masks(const char *s, unsigned *out)
{
    *out = 0;
    while (s && *s) {
        size_t n = strcspn(s, ",");
        if (n == 3 && !strncmp(s, "box", 3))
            *out |= FFU_SWAP_MASK_BOX;
        else if (n == 6 && !strncmp(s, "region", 6))
            *out |= FFU_SWAP_MASK_REGION;
        else if (n == 9 && !strncmp(s, "occlusion", 9))
            *out |= FFU_SWAP_MASK_OCCLUSION;
        else if (n)
            return -1;
        s += n + (s[n] == ',');
    }
    return 0;
}

/* 1 to 4 comma-separated percentages, CSS order (top, right, bottom, left). */
static int parse_padding(const char *s, float pad[4])
{
    double v[4];
    int n = 0;
    char *end;
    while (s && *s && n < 4) {
        v[n] = strtod(s, &end);
        if (end == s || v[n] < 0 || v[n] > 100) return -1;
        n++;
        s = end;
        if (*s == ',')
            s++;
        else if (*s)
            return -1;
    }
    if (!n || (s && *s)) return -1;
    double t = v[0], r = n > 1 ? v[1] : t, b = n > 2 ? v[2] : t, l = n > 3 ? v[3] : r;
    pad[0] = (float)t, pad[1] = (float)r, pad[2] = (float)b, pad[3] = (float)l;
    return 0;
}

static const char *model_spec(const char *s) { return s && *s ? s : NULL; }

/* ---- one target ------------------------------------------------------------------------ */

typedef struct {
    const cli_command *cmd;
    swap_opts *o;
    ffu_swapper_opts so;
    ffu_swapper *sw;
    char provenance[256];
    int batch;
    /* video progress */
    cli_progress_bar bar;
    char label[256];
    const char *label_name;
    int bar_open; /* a bar line is on screen without its newline */
} swap_ctx;

static void fail_target(target *t, ffu_status st, const char *fmt, ...) FFU_PRINTF(3, 4);
static void fail_target(target *t, ffu_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->error, sizeof t->error, fmt, ap);
    va_end(ap);
    t->state = "failed";
    t->code = cli_exit_code(st);
}

/* What "no face" means under the current selection, and what to try: with the
 * target's size (an image, or a video's frames), whether faces that small are looked
 * for (buf holds that hint). */
static void no_face_text(const swap_ctx *c, int width, int height, int video, char *buf, size_t cap,
                         const char **what, const char **hint)
{
    if (c->so.select == FFU_SWAP_SELECT_REFERENCE) {
        *what = "no face like --reference";
        *hint = "try a larger --reference-distance, or --select many";
    } else if (c->so.gender || c->so.age_min > 0 || c->so.age_max > 0) {
        *what = "no face passes --gender/--age-min/--age-max";
        *hint = "try wider limits";
    } else {
        *what = "no face found";
        *hint = cli_no_face_hint(ffu_swapper_detector(c->sw), width, height, video,
                                 "--min-score lower or another --detector", buf, cap);
    }
}

static void do_image(swap_ctx *c, target *t)
{
    ffu_image img = {0};
    int swapped = 0;
    double t0 = ffu_clock_sec();
    ffu_status st = ffu_image_load(t->path, FFU_PIX_RGB24, &img);
    if (st < 0) {
        fail_target(t, st, "%s", ffu_error_message());
        return;
    }
    /* swap_image also draws the --watermark (so->watermark) */
    if ((st = ffu_swapper_swap_image(c->sw, &img, &swapped)) < 0) {
        fail_target(t, st, "%s: %s", t->path, ffu_error_message());
        goto out;
    }
    if (swapped == 0) {
        const char *what, *hint;
        char buf[256];
        no_face_text(c, img.width, img.height, 0, buf, sizeof buf, &what, &hint);
        fail_target(t, FFU_ERR_FORMAT, "%s: %s (%s); nothing written", t->path, what, hint);
        t->code = CLI_EXIT_DATA;
        goto out;
    }
    const char *kv[] = {"Comment", c->provenance, "Software", "facefuse " FFU_VERSION_STRING, NULL};
    if ((st = ffu_image_save_with_text(t->out, &img, c->o->quality, kv)) < 0) {
        fail_target(t, st, "%s", ffu_error_message());
        goto out;
    }
    t->state = "done";
    t->faces = swapped;
    t->frames = 1;
    t->seconds = ffu_clock_sec() - t0;
out:
    ffu_image_release(&img);
}

static int on_progress(void *user, const ffu_swap_progress *p)
{
    swap_ctx *c = user;
    if (c->bar.enabled && p->frames_total > 0) {
        if (!c->bar.total) c->bar.total = (size_t)p->frames_total;
        snprintf(c->label, sizeof c->label, "%s %5.1f fps", c->label_name, p->fps);
        size_t done = (size_t)p->frames_done;
        if (done > c->bar.total) done = c->bar.total;
        cli_progress(&c->bar, done);
        c->bar_open = done < c->bar.total;
    }
    return stop_requested != 0;
}

static void do_video(swap_ctx *c, target *t)
{
    ffu_swap_video_stats stats;
    ffu_swap_video_opts vo;
    ffu_swap_video_opts_default(&vo);
    vo.threads = c->o->threads;
    vo.smooth = c->o->smooth > 0 ? (float)c->o->smooth : -1.0f;
    vo.codec = c->o->codec;
    vo.crf = c->o->crf;
    vo.preset = c->o->preset;
    vo.keep_audio = c->o->audio;
    vo.max_frames = c->o->max_frames;
    vo.hwaccel = c->o->hwaccel;
    vo.hw_device = c->o->hw_device;
    vo.progress = on_progress;
    vo.user = c;
    vo.stats = &stats;
    const char *base = strrchr(t->path, '/');
    c->label_name = base ? base + 1 : t->path;
    snprintf(c->label, sizeof c->label, "%s", c->label_name);
    cli_progress_start(&c->bar, c->label, 0, &c->o->common);
    c->bar_open = 0;
    ffu_status st = ffu_swap_video(c->sw, &c->so, t->path, t->out, &vo);
    if (c->bar_open) fputc('\n', stderr);
    t->frames = stats.frames;
    t->frames_without_face = stats.frames_without_face;
    t->faces = (int)stats.faces;
    t->fps = stats.fps;
    t->seconds = stats.seconds;
    if (st == FFU_ERR_CLOSED && stop_requested) {
        fail_target(t, st, "%s: interrupted after %lld frames; no output written", t->path,
                    (long long)stats.frames);
        t->code = CLI_EXIT_INTERRUPTED;
        return;
    }
    if (st < 0) {
        fail_target(t, st, "%s", ffu_error_message());
        return;
    }
    t->state = "done";
    if (t->frames_without_face && !c->o->common.quiet) {
        const char *what, *hint;
        char buf[256];
        no_face_text(c, stats.width, stats.height, 1, buf, sizeof buf, &what, &hint);
        if (t->frames_without_face == t->frames)
            fprintf(stderr,
                    "facefuse swap: %s: %s in any of its %lld frames (%s); written "
                    "re-encoded but unchanged\n",
                    t->path, what, (long long)t->frames, hint);
        else
            fprintf(stderr,
                    "facefuse swap: %s: no face to swap in %lld of %lld frames "
                    "(left as they were)\n",
                    t->path, (long long)t->frames_without_face, (long long)t->frames);
    }
}

/* ---- the command ------------------------------------------------------------------------ */

/* What decides an output's content besides the target: hashed into the journal key. */
static ffu_status options_digest(const swap_opts *o, const char *provenance, ffu_sha256 *h)
{
    char buf[4096];
    int n = snprintf(buf, sizeof buf,
                     "%s\n%s|%s|%s|%g|%g|%d|%d|%g|%d|%d|%g|%g|%s|%s|%d|%d|%d|%d|%g|%s|%d|%d|%d|"
                     "%s|%s|%g|%d|%d|%s|%s|%s|%g|%d|%d\n",
                     JOURNAL_MAGIC, provenance, o->swapper ? o->swapper : "",
                     o->enhancer ? o->enhancer : "", o->enhancer_blend, o->codeformer_weight,
                     o->select, o->reference_face, o->reference_distance, o->order, o->gender,
                     o->age_min, o->age_max, o->mask ? o->mask : "", o->occluder ? o->occluder : "",
                     o->keep_mouth, o->keep_eyes, o->colour, o->blend, o->mask_blur,
                     o->mask_padding ? o->mask_padding : "", o->watermark, o->crf, o->quality,
                     o->preset ? o->preset : "", o->codec ? o->codec : "", o->smooth, o->max_frames,
                     o->audio, o->detector ? o->detector : "", o->landmarker ? o->landmarker : "",
                     o->embedder ? o->embedder : "", o->min_score, o->min_face, o->backend);
    if (n < 0 || (size_t)n >= sizeof buf) return ffu_error_set(FFU_ERR_INVALID, "options too long");
    ffu_sha256_update(h, buf, (size_t)n);
    uint8_t d[32];
    for (int i = 0; i < o->source.count; i++) {
        ffu_status st = ffu_sha256_file(o->source.items[i], d);
        if (st < 0) return st;
        ffu_sha256_update(h, d, sizeof d);
    }
    if (o->reference) {
        ffu_status st = ffu_sha256_file(o->reference, d);
        if (st < 0) return st;
        ffu_sha256_update(h, d, sizeof d);
    }
    return FFU_OK;
}

/* The key of one target: the options' digest plus the target's name, size and time. */
static void target_key(const ffu_sha256 *opts_digest, const target *t, char hex[65])
{
    ffu_sha256 h = *opts_digest;
    struct stat st;
    const char *base = strrchr(t->path, '/');
    base = base ? base + 1 : t->path;
    char buf[1024];
    long long size = -1, sec = 0, nsec = 0;
    if (stat(t->path, &st) == 0)
        size = (long long)st.st_size, sec = (long long)st.st_mtim.tv_sec,
        nsec = (long long)st.st_mtim.tv_nsec;
    int n = snprintf(buf, sizeof buf, "%s\n%lld %lld.%09lld\n", base, size, sec, nsec);
    ffu_sha256_update(&h, buf, (size_t)(n > 0 && (size_t)n < sizeof buf ? n : 0));
    uint8_t d[32];
    ffu_sha256_final(&h, d);
    ffu_sha256_hex(d, hex);
}

/* Loads every --source photo and gives them to the swapper; names the photo without a
 * face when there is one. */
static int set_sources(const cli_command *cmd, swap_opts *o, ffu_swapper *sw)
{
    int n = o->source.count, rc = CLI_EXIT_OK;
    ffu_image *imgs = calloc((size_t)n, sizeof *imgs);
    if (!imgs) return cli_fail(cmd, &o->common, FFU_ERR_NOMEM);
    ffu_status st = FFU_OK;
    for (int i = 0; i < n; i++)
        if ((st = ffu_image_load(o->source.items[i], FFU_PIX_RGB24, &imgs[i])) < 0) {
            rc = cli_fail_msg(cmd, &o->common, cli_exit_code(st), "--source %s",
                              ffu_error_message());
            goto out;
        }
    if ((st = ffu_swapper_set_source(sw, imgs, n)) == FFU_ERR_NOT_FOUND) {
        /* Which photo? One at a time tells (only on this error path). */
        int bad = n == 1 ? 0 : -1;
        for (int i = 0; bad < 0 && i < n; i++)
            if (ffu_swapper_set_source(sw, &imgs[i], 1) == FFU_ERR_NOT_FOUND) bad = i;
        if (bad >= 0) {
            rc = cli_fail_msg(cmd, &o->common, CLI_EXIT_DATA,
                              "no face in --source %s (use a photo where the face is clearly "
                              "visible, or try --min-score lower / another --detector)",
                              o->source.items[bad]);
            goto out;
        }
    }
    if (st < 0) rc = cli_fail(cmd, &o->common, st);
out:
    for (int i = 0; i < n; i++)
        ffu_image_release(&imgs[i]);
    free(imgs);
    return rc;
}

static int set_reference(const cli_command *cmd, swap_opts *o, ffu_swapper *sw)
{
    ffu_image img = {0};
    ffu_status st = ffu_image_load(o->reference, FFU_PIX_RGB24, &img);
    if (st < 0)
        return cli_fail_msg(cmd, &o->common, cli_exit_code(st), "--reference %s",
                            ffu_error_message());
    st = ffu_swapper_set_reference(sw, &img, o->reference_face);
    ffu_image_release(&img);
    if (st == FFU_ERR_NOT_FOUND)
        return cli_fail_msg(cmd, &o->common, CLI_EXIT_DATA, "no face in --reference %s%s",
                            o->reference,
                            o->reference_face >= 0 ? " (or --reference-face "
                                                     "is past the last face)"
                                                   : "");
    if (st < 0) return cli_fail(cmd, &o->common, st);
    return CLI_EXIT_OK;
}

static int build_swapper_opts(const cli_command *cmd, swap_opts *o, int any_video,
                              ffu_swapper_opts *so)
{
    ffu_swapper_opts_default(so);
    so->swapper = o->swapper && strcmp(o->swapper, "mesh") ? o->swapper : NULL;
    so->enhancer = model_spec(o->enhancer);
    so->enhancer_blend = (float)o->enhancer_blend;
    so->codeformer_weight = (float)o->codeformer_weight;
    so->occluder = model_spec(o->occluder);
    if (parse_masks(o->mask, &so->masks) < 0)
        return cli_fail_msg(cmd, &o->common, CLI_EXIT_USAGE,
                            "--mask '%s': use box, region and/or occlusion, comma-separated",
                            o->mask);
    if ((so->masks & FFU_SWAP_MASK_OCCLUSION) && !so->occluder)
        return cli_fail_msg(cmd, &o->common, CLI_EXIT_USAGE,
                            "--mask occlusion needs --occluder onnx:PATH");
    so->mask_blur = (float)o->mask_blur;
    if (o->mask_padding && parse_padding(o->mask_padding, so->mask_padding) < 0)
        return cli_fail_msg(cmd, &o->common, CLI_EXIT_USAGE,
                            "--mask-padding '%s': want 1 to 4 percentages 0..100, "
                            "comma-separated (T,R,B,L)",
                            o->mask_padding);
    so->keep_mouth = o->keep_mouth;
    so->keep_eyes = o->keep_eyes;
    static const ffu_swap_colour colours[] = {FFU_SWAP_COLOUR_LAB, FFU_SWAP_COLOUR_MULTISCALE,
                                              FFU_SWAP_COLOUR_NONE};
    so->colour = colours[o->colour];
    if (o->blend) so->blend = o->blend == 1 ? FFU_SWAP_BLEND_POISSON : FFU_SWAP_BLEND_FEATHER;
    static const ffu_swap_select selects[] = {FFU_SWAP_SELECT_ONE, FFU_SWAP_SELECT_MANY,
                                              FFU_SWAP_SELECT_REFERENCE};
    so->select = selects[o->select];
    if (o->reference && so->select == FFU_SWAP_SELECT_ONE) so->select = FFU_SWAP_SELECT_REFERENCE;
    if (so->select == FFU_SWAP_SELECT_REFERENCE && !o->reference)
        return cli_fail_msg(cmd, &o->common, CLI_EXIT_USAGE,
                            "--select reference needs --reference IMG");
    if (o->reference && so->select != FFU_SWAP_SELECT_REFERENCE)
        return cli_fail_msg(cmd, &o->common, CLI_EXIT_USAGE,
                            "--reference is used with --select reference only");
    so->order = (ffu_swap_order)o->order; /* order_names follows ffu_swap_order */
    so->gender = o->gender == 1 ? "male" : o->gender == 2 ? "female" : NULL;
    so->age_min = (float)o->age_min;
    so->age_max = (float)o->age_max;
    if (o->age_max > 0 && o->age_min > o->age_max)
        return cli_fail_msg(cmd, &o->common, CLI_EXIT_USAGE, "--age-min is above --age-max");
    so->reference_distance = (float)o->reference_distance;
    const char *backend = cli_backend_names[o->backend];
    so->backend = backend;
    int threads = o->model_threads;
    if (!threads && any_video) {
        int workers = o->threads ? o->threads : ffu_cpu_count();
        threads = ffu_cpu_count() / workers;
        if (threads < 1) threads = 1;
    }
    so->threads = threads;
    so->device = o->device;
    so->fp16 = o->fp16;
    so->bf16 = o->bf16;
    so->detect.m.model = model_spec(o->detector);
    so->detect.m.backend = backend;
    so->detect.m.threads = threads;
    so->detect.min_score = (float)o->min_score;
    so->detect.min_face = o->min_face;
    so->landmarks.model = model_spec(o->landmarker);
    so->landmarks.backend = backend;
    so->landmarks.threads = threads;
    so->embed.model = model_spec(o->embedder);
    so->embed.backend = backend;
    so->embed.threads = threads;
    so->watermark = o->watermark;
    return CLI_EXIT_OK;
}

/* Output names: the target's name in --output-dir (other video containers -> .mp4). */
static int plan_outputs(const cli_command *cmd, swap_opts *o, target_list *tl)
{
    for (int i = 0; i < tl->count; i++) {
        target *t = &tl->v[i];
        if (!o->output_dir) {
            t->out = strdup(o->output);
            const int image_out = cli_is_image_name(o->output);
            if (t->kind == KIND_IMAGE && !image_out)
                return cli_fail_msg(cmd, &o->common, CLI_EXIT_USAGE,
                                    "--output %s: an image target needs a .png, .jpg or .webp "
                                    "output",
                                    o->output);
            if (t->kind == KIND_VIDEO && image_out)
                return cli_fail_msg(cmd, &o->common, CLI_EXIT_USAGE,
                                    "--output %s: %s is %s, which needs a video output "
                                    "(.mp4, .mkv, .mov)",
                                    o->output, t->path,
                                    is_video_ext(ext_of(t->path))
                                        ? "a video"
                                        : "not a JPEG, PNG or WebP image, so taken as a video");
            int rc = cli_check_output_file(cmd, &o->common, "--output", o->output);
            if (rc) return rc;
        } else {
            const char *base = strrchr(t->path, '/');
            base = base ? base + 1 : t->path;
            size_t len = strlen(base);
            char *name = malloc(len + 8);
            if (!name) return cli_fail(cmd, &o->common, FFU_ERR_NOMEM);
            memcpy(name, base, len + 1);
            if (t->kind == KIND_VIDEO && !is_writable_video_ext(ext_of(base))) {
                char *dot = strrchr(name, '.');
                strcpy(dot && dot != name ? dot : name + len, ".mp4");
            } else if (t->kind == KIND_IMAGE && !cli_is_image_name(base)) {
                strcpy(name + len, ".png"); /* an image known by its bytes */
            }
            t->name = name;
            t->out = cli_join_path(o->output_dir, name);
            for (int k = 0; k < i; k++)
                if (!strcmp(tl->v[k].name, name))
                    return cli_fail_msg(cmd, &o->common, CLI_EXIT_USAGE,
                                        "%s and %s would both write %s/%s", tl->v[k].path, t->path,
                                        o->output_dir, name);
        }
        if (!t->out) return cli_fail(cmd, &o->common, FFU_ERR_NOMEM);
        if (ffu_same_file(t->path, t->out))
            return cli_fail_msg(cmd, &o->common, CLI_EXIT_USAGE,
                                "%s: the output would overwrite the target", t->out);
    }
    return CLI_EXIT_OK;
}

static void print_summary(swap_ctx *c, const target_list *tl, int skipped, int failed,
                          double seconds)
{
    int64_t frames = 0, faces = 0;
    for (int i = 0; i < tl->count; i++)
        if (!strcmp(tl->v[i].state, "done")) frames += tl->v[i].frames, faces += tl->v[i].faces;
    if (!c->o->common.json) {
        for (int i = 0; i < tl->count; i++) {
            const target *t = &tl->v[i];
            if (!strcmp(t->state, "done") && t->kind == KIND_IMAGE)
                printf("%s -> %s: %d face%s swapped\n", t->path, t->out, t->faces,
                       t->faces == 1 ? "" : "s");
            else if (!strcmp(t->state, "done"))
                printf("%s -> %s: %lld frames (%lld without a face), %d faces swapped, "
                       "%.1f fps\n",
                       t->path, t->out, (long long)t->frames, (long long)t->frames_without_face,
                       t->faces, t->fps);
            else if (!strcmp(t->state, "skipped"))
                printf("%s -> %s: skipped (done before, see %s)\n", t->path, t->out, JOURNAL_NAME);
        }
        if (tl->count > 1)
            printf("%d done, %d skipped, %d failed\n", tl->count - skipped - failed, skipped,
                   failed);
        return;
    }
    ffu_jw *w;
    if (ffu_jw_create(&w, 1) < 0) return;
    ffu_jw_begin_object(w);
    ffu_jw_key(w, "ok"), ffu_jw_bool(w, failed == 0);
    ffu_jw_key(w, "swapper"), ffu_jw_string(w, ffu_swapper_kind(c->sw));
    ffu_jw_key(w, "provenance"), ffu_jw_string(w, c->provenance);
    ffu_jw_key(w, "outputs");
    ffu_jw_begin_array(w);
    for (int i = 0; i < tl->count; i++) {
        const target *t = &tl->v[i];
        ffu_jw_begin_object(w);
        ffu_jw_key(w, "target"), ffu_jw_string(w, t->path);
        ffu_jw_key(w, "output"), ffu_jw_string(w, t->out);
        ffu_jw_key(w, "kind"), ffu_jw_string(w, t->kind == KIND_IMAGE ? "image" : "video");
        ffu_jw_key(w, "state"), ffu_jw_string(w, t->state);
        if (!strcmp(t->state, "failed")) {
            ffu_jw_key(w, "error"), ffu_jw_string(w, t->error);
            ffu_jw_key(w, "exit_code"), ffu_jw_int(w, t->code);
        }
        if (!strcmp(t->state, "done")) {
            ffu_jw_key(w, "faces_swapped"), ffu_jw_int(w, t->faces);
            ffu_jw_key(w, "frames"), ffu_jw_int(w, t->frames);
            if (t->kind == KIND_VIDEO) {
                ffu_jw_key(w, "frames_without_face"), ffu_jw_int(w, t->frames_without_face);
                ffu_jw_key(w, "fps"), ffu_jw_number(w, round(t->fps * 100) / 100);
            }
            ffu_jw_key(w, "seconds"), ffu_jw_number(w, round(t->seconds * 1000) / 1000);
        }
        ffu_jw_end_object(w);
    }
    ffu_jw_end_array(w);
    ffu_jw_key(w, "done"), ffu_jw_int(w, tl->count - skipped - failed);
    ffu_jw_key(w, "skipped"), ffu_jw_int(w, skipped);
    ffu_jw_key(w, "failed"), ffu_jw_int(w, failed);
    ffu_jw_key(w, "faces_swapped"), ffu_jw_int(w, faces);
    ffu_jw_key(w, "frames"), ffu_jw_int(w, frames);
    ffu_jw_key(w, "seconds"), ffu_jw_number(w, round(seconds * 1000) / 1000);
    ffu_jw_key(w, "fps"),
        ffu_jw_number(w, seconds > 0 ? round((double)frames / seconds * 100) / 100 : 0);
    ffu_jw_end_object(w);
    cli_print_json(w);
    ffu_jw_destroy(w);
}

static int run_swap(const cli_command *cmd, int argc, char **argv)
{
    swap_opts o;
    int npos, done;
    target_list tl = {0};
    journal jn = {0};
    swap_ctx c;
    memset(&c, 0, sizeof c);
    struct sigaction old_sig[2];
    int signals = 0;
    int rc = cli_parse(cmd, swap_options, &o, argc, argv, &npos, &done);
    if (rc || done) goto out;
    c.cmd = cmd;
    c.o = &o;
    if (npos > 0) {
        rc = cli_fail_msg(cmd, &o.common, CLI_EXIT_USAGE,
                          "unexpected argument '%s' (targets go after --target)", argv[0]);
        goto out;
    }
    if (o.source.count < 1) {
        rc = cli_fail_msg(cmd, &o.common, CLI_EXIT_USAGE, "give --source IMG (see --help)");
        goto out;
    }
    if (o.target.count < 1) {
        rc = cli_fail_msg(cmd, &o.common, CLI_EXIT_USAGE, "give --target PATH (see --help)");
        goto out;
    }
    { /* a --source folder stands for its photos */
        char **paths = NULL;
        int n = 0;
        ffu_status st = cli_expand_images(o.source.count, o.source.items, &paths, &n);
        if (st) {
            const char *why = ffu_error_message();
            rc = cli_fail_msg(cmd, &o.common, cli_exit_code(st), "--source %s", why);
            goto out;
        }
        ffu_strlist_free(&o.source);
        o.source.items = paths, o.source.count = n;
    }
    if (o.output && o.output_dir) {
        rc = cli_fail_msg(cmd, &o.common, CLI_EXIT_USAGE,
                          "give --output for one target or --output-dir for many, not both");
        goto out;
    }
    int any_dir = 0;
    for (int i = 0; i < o.target.count; i++) {
        const char *p = o.target.items[i];
        ffu_status r = FFU_OK;
        if (cli_is_dir(p)) {
            any_dir = 1;
            r = add_dir(&tl, p);
        } else if (push_target(&tl, p) < 0) {
            r = ffu_error_set(FFU_ERR_NOMEM, "out of memory");
        }
        if (r) {
            rc = cli_fail_msg(cmd, &o.common, cli_exit_code(r), "--target %s: %s", p,
                              ffu_error_message());
            goto out;
        }
    }
    if (tl.count == 0) {
        rc = cli_fail_msg(cmd, &o.common, CLI_EXIT_NOT_FOUND,
                          "no images or videos in the --target director%s",
                          o.target.count > 1 ? "ies" : "y");
        goto out;
    }
    if (!o.output_dir && (tl.count > 1 || any_dir)) {
        rc = cli_fail_msg(cmd, &o.common, CLI_EXIT_USAGE,
                          "several targets (or a directory) need --output-dir DIR");
        goto out;
    }
    if (!o.output && !o.output_dir) {
        rc = cli_fail_msg(cmd, &o.common, CLI_EXIT_USAGE, "give --output OUT (see --help)");
        goto out;
    }
    c.batch = o.output_dir != NULL;
    if (c.batch && ffu_dir_make(o.output_dir) < 0) {
        rc = cli_fail_msg(cmd, &o.common, CLI_EXIT_FAILURE, "--output-dir %s", ffu_error_message());
        goto out;
    }
    if ((rc = plan_outputs(cmd, &o, &tl))) goto out;
    int any_video = 0;
    for (int i = 0; i < tl.count; i++)
        any_video |= tl.v[i].kind == KIND_VIDEO;
    if ((rc = build_swapper_opts(cmd, &o, any_video, &c.so))) goto out;

    ffu_status st = ffu_swapper_create(&c.so, &c.sw);
    if (st < 0) {
        rc = cli_fail(cmd, &o.common, st);
        goto out;
    }
    if ((rc = set_sources(cmd, &o, c.sw))) goto out;
    if (o.reference && (rc = set_reference(cmd, &o, c.sw))) goto out;
    ffu_swap_provenance(c.sw, c.provenance, sizeof c.provenance);

    ffu_sha256 opts_digest;
    ffu_sha256_init(&opts_digest);
    if (c.batch) {
        if ((st = options_digest(&o, c.provenance, &opts_digest)) < 0) {
            rc = cli_fail(cmd, &o.common, st);
            goto out;
        }
        char *jpath = cli_join_path(o.output_dir, JOURNAL_NAME);
        if (!jpath) {
            rc = cli_fail(cmd, &o.common, FFU_ERR_NOMEM);
            goto out;
        }
        journal_load(&jn, jpath);
        jn.append = fopen(jpath, "a");
        if (!jn.append)
            fprintf(stderr,
                    "facefuse swap: %s: %s; finished outputs will not be "
                    "remembered\n",
                    jpath, strerror(errno));
        free(jpath);
        remove_stale_parts(o.output_dir, &tl);
    }

    install_signals(old_sig);
    signals = 1;
    int skipped = 0, failed = 0, first_code = CLI_EXIT_OK;
    double t0 = ffu_clock_sec();
    for (int i = 0; i < tl.count && !stop_requested; i++) {
        target *t = &tl.v[i];
        char key[65] = "";
        if (c.batch) {
            target_key(&opts_digest, t, key);
            if (!o.force && journal_done(&jn, t->name, key, t->out)) {
                t->state = "skipped";
                skipped++;
                continue;
            }
            if (!o.common.quiet && !o.common.json)
                fprintf(stderr, "[%d/%d] %s\n", i + 1, tl.count, t->path);
        }
        if (t->kind == KIND_IMAGE)
            do_image(&c, t);
        else
            do_video(&c, t);
        if (!strcmp(t->state, "done")) {
            if (c.batch) journal_add(&jn, t->name, key, t->out);
        } else if (t->code != CLI_EXIT_INTERRUPTED) {
            failed++;
            if (!first_code) first_code = t->code;
            /* one target: the error is the command's error (JSON error object too) */
            if (tl.count == 1) {
                rc = cli_fail_msg(cmd, &o.common, t->code, "%s", t->error);
                goto out;
            }
            fprintf(stderr, "facefuse swap: %s\n", t->error);
        }
    }
    if (stop_requested) {
        int left = 0;
        for (int i = 0; i < tl.count; i++)
            left += !strcmp(tl.v[i].state, "pending") || tl.v[i].code == CLI_EXIT_INTERRUPTED;
        rc = cli_fail_msg(cmd, &o.common, CLI_EXIT_INTERRUPTED,
                          "interrupted: %d target%s not done%s", left, left == 1 ? "" : "s",
                          c.batch ? "; run the same command again to finish" : "");
        goto out;
    }
    print_summary(&c, &tl, skipped, failed, ffu_clock_sec() - t0);
    rc = first_code;
out:
    if (signals) restore_signals(old_sig);
    journal_free(&jn);
    free_targets(&tl);
    ffu_swapper_destroy(c.sw);
    ffu_options_free(swap_options, &o);
    return rc;
}

const cli_command cli_cmd_swap = {
    "swap",
    "put the face from --source photos onto the faces in images and videos",
    "facefuse swap --source S.jpg [--source S2.jpg] --target T [--target T2 ...] "
    "(--output OUT | --output-dir DIR) [options]",
    "Targets are images (.jpg, .png, .webp), videos (.mp4, .mov, .mkv, ...) or\n"
    "directories of them. The built-in mesh swapper needs no extra model; ONNX swappers\n"
    "in FaceFusion's conventions are used with --swapper inswapper:PATH (docs/SWAP.md).\n"
    "Every output is tagged as synthetic (PNG text chunk, JPEG comment, WebP XMP, video\n"
    "'comment' tag); --watermark adds a visible mark.\n"
    "\n"
    "Examples:\n"
    "  facefuse swap -s me.jpg --target group.jpg -o out.png --select many\n"
    "  facefuse swap -s me.jpg -s me2.jpg --target clip.mp4 -o out.mp4 --crf 20\n"
    "  facefuse swap -s me.jpg --target party.mp4 -o out.mp4 --reference bob.jpg\n"
    "  facefuse swap -s me.jpg --target clips/ --output-dir swapped/   (resumable)\n"
    "  facefuse swap -s me.jpg --target t.jpg -o o.png --swapper inswapper:inswapper_128.onnx\n"
    "\n"
    "A target image with no face to swap: nothing written, exit 3. Video frames without a\n"
    "face are kept as they are (a warning gives their count). With --output-dir, a journal\n"
    "(DIR/" JOURNAL_NAME ") lists finished outputs: after Ctrl-C, the same command\n"
    "skips them and redoes the rest (--force redoes everything). Exit 130 when\n"
    "interrupted. --json prints {outputs: [...], done, skipped, failed, faces_swapped,\n"
    "frames, fps}.",
    run_swap,
};
