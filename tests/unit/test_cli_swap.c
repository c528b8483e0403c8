/* `facefuse swap` run as a user would: an image swap whose PNG (JPEG, WebP) carries the
 * provenance text, clear errors for a source or target without a face and for bad options, a
 * batch over a directory whose journal makes a rerun skip finished targets, and a
 * video batch interrupted with SIGINT (no partial file) then resumed. Skipped without
 * ../shared data or the default models. */
#include <dirent.h>
#include <signal.h>

#include "facefuse/image.h"
#include "facefuse/video.h"
#include "test.h"
#include "test_cli.h"

#define SOURCE "data/face_recognition_examples/examples/obama_small.jpg"
#define TARGET "data/face_recognition_examples/examples/alex-lacamoire.png"
#define TARGET2 "data/face_recognition_examples/examples/lin-manuel-miranda.png"
#define CLIP "data/videos/sadtalker_WDA_AlexandriaOcasioCortez_000.mp4"

/* run() of test_cli.h in two halves, so that a test can signal the running command. */
typedef struct {
    pid_t pid;
    int fo, fe;
    char outname[32], errname[32];
} spawned;

static void spawn(spawned *s, const char *const *args)
{
    snprintf(s->outname, sizeof s->outname, "/tmp/ffu_swapcli_out_XXXXXX");
    snprintf(s->errname, sizeof s->errname, "/tmp/ffu_swapcli_err_XXXXXX");
    s->fo = mkstemp(s->outname);
    s->fe = mkstemp(s->errname);
    s->pid = fork();
    if (s->pid == 0) {
        dup2(s->fo, 1);
        dup2(s->fe, 2);
        const char *argv[64] = {FACEFUSE};
        for (int i = 0; args[i] && i < 62; i++)
            argv[i + 1] = args[i];
        execv(FACEFUSE, (char *const *)argv);
        _exit(127);
    }
}

static void reap(spawned *s, run_result *r)
{
    int status = 0;
    waitpid(s->pid, &status, 0);
    r->code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    lseek(s->fo, 0, SEEK_SET);
    lseek(s->fe, 0, SEEK_SET);
    slurp(s->fo, r->out, sizeof r->out);
    slurp(s->fe, r->err, sizeof r->err);
    close(s->fo), close(s->fe);
    unlink(s->outname), unlink(s->errname);
}

static run_result r;
static char source[4096], target[4096], target2[4096], clip[4096];
static char dir[64];

/* 1 when the shared photos and the models are there (a first swap succeeds). */
static int have_data(void)
{
    static int state = -1;
    if (state >= 0) return state;
    state = 0;
    if (!test_shared_path(SOURCE, source, sizeof source) ||
        !test_shared_path(TARGET, target, sizeof target) ||
        !test_shared_path(TARGET2, target2, sizeof target2))
        return 0;
    snprintf(dir, sizeof dir, "/tmp/ffu_swapcli_XXXXXX");
    if (!mkdtemp(dir)) return 0;
    char out[256];
    snprintf(out, sizeof out, "%s/probe.png", dir);
    run(&r, (const char *[]){"swap", "--source", source, "--target", target, "-o", out, NULL});
    if (r.code != 0) fprintf(stderr, "probe swap failed (%d): %s", r.code, r.err);
    state = r.code == 0;
    remove(out);
    return state;
}

/* The value of the PNG tEXt chunk `key`, copied into val; 0 when absent. */
static int png_text(const char *path, const char *key, char *val, size_t cap)
{
    size_t size = 0;
    uint8_t *d = test_read_all(path, &size);
    int found = 0;
    if (!d || size < 8 || memcmp(d, "\x89PNG\r\n\x1a\n", 8)) {
        free(d);
        return 0;
    }
    for (size_t p = 8; p + 12 <= size && !found;) {
        uint32_t len =
            (uint32_t)d[p] << 24 | (uint32_t)d[p + 1] << 16 | (uint32_t)d[p + 2] << 8 | d[p + 3];
        if (len > size - p - 12) break;
        const uint8_t *data = d + p + 8;
        size_t klen = strlen(key);
        if (!memcmp(d + p + 4, "tEXt", 4) && len > klen && !memcmp(data, key, klen) &&
            data[klen] == 0) {
            size_t vlen = len - klen - 1 < cap - 1 ? len - klen - 1 : cap - 1;
            memcpy(val, data + klen + 1, vlen);
            val[vlen] = 0;
            found = 1;
        }
        p += 12 + len;
    }
    free(d);
    return found;
}

static void test_help(void)
{
    run(&r, (const char *[]){"swap", "--help", NULL});
    CHECK_EQ_INT(r.code, 0);
    CHECK(strstr(r.out, "--source") && strstr(r.out, "--output-dir") &&
          strstr(r.out, "--swapper") && strstr(r.out, "Examples:"));
    run(&r, (const char *[]){"swap", "--bogus", NULL});
    CHECK_EQ_INT(r.code, 2);
    CHECK(strstr(r.err, "--bogus"));
    CHECK_EQ_INT(count_lines(r.err), 1);
    run(&r, (const char *[]){"swap", "--target", "x.jpg", "-o", "y.png", NULL});
    CHECK_EQ_INT(r.code, 2);
    CHECK(strstr(r.err, "--source"));
    run(&r, (const char *[]){"swap", "--source", "a.jpg", "--target", "x.jpg", "--target", "z.jpg",
                             "-o", "y.png", NULL});
    CHECK_EQ_INT(r.code, 2);
    CHECK(strstr(r.err, "--output-dir"));
    run(&r, (const char *[]){"swap", "--source", "a.jpg", "--target", "x.jpg", "-o", "y.png",
                             "--select", "sideways", NULL});
    CHECK_EQ_INT(r.code, 2);
    CHECK(strstr(r.err, "--select"));
    run(&r, (const char *[]){"swap", "--source", "a.jpg", "--target", "x.jpg", "-o", "y.png",
                             "--mask", "box,hat", NULL});
    CHECK_EQ_INT(r.code, 2);
    CHECK(strstr(r.err, "--mask"));
}

static void test_image_swap(void)
{
    if (!have_data()) TEST_SKIP("needs ../shared data and the default models");
    char out[256], text[512];
    snprintf(out, sizeof out, "%s/swapped.png", dir);
    run(&r, (const char *[]){"swap", "--source", source, "--target", target, "--output", out,
                             "--json", NULL});
    CHECK_EQ_INT(r.code, 0);
    ffu_json *j = NULL;
    CHECK_EQ_INT(ffu_json_parse(r.out, strlen(r.out), &j), FFU_OK);
    int ok = ffu_json_bool(ffu_json_get(j, "ok"), 0) &&
             ffu_json_int(ffu_json_get(j, "faces_swapped"), 0) == 1 &&
             ffu_json_int(ffu_json_get(j, "done"), 0) == 1;
    ffu_json_free(j);
    CHECK(ok);
    CHECK(png_text(out, "Comment", text, sizeof text));
    CHECK(strstr(text, "synthetic") && strstr(text, "facefuse"));
    /* the picture changed where the face is, and only there */
    ffu_image a = {0}, b = {0};
    CHECK_EQ_INT(ffu_image_load(target, FFU_PIX_RGB24, &a), FFU_OK);
    CHECK_EQ_INT(ffu_image_load(out, FFU_PIX_RGB24, &b), FFU_OK);
    int same_size = a.width == b.width && a.height == b.height;
    long changed = 0, corner_changed = 0;
    for (int y = 0; same_size && y < a.height; y++)
        for (int x = 0; x < a.width * 3; x++) {
            int d =
                a.data[0][(size_t)y * a.stride[0] + x] != b.data[0][(size_t)y * b.stride[0] + x];
            changed += d;
            corner_changed += d && y < a.height / 10 && x < a.width * 3 / 10;
        }
    ffu_image_release(&a);
    ffu_image_release(&b);
    CHECK(same_size);
    CHECK(changed > 1000);
    CHECK_EQ_INT(corner_changed, 0);

    /* JPEG output: the provenance is a COM segment */
    snprintf(out, sizeof out, "%s/swapped.jpg", dir);
    run(&r, (const char *[]){"swap", "-s", source, "--target", target, "-o", out, "--quiet", NULL});
    CHECK_EQ_INT(r.code, 0);
    size_t size = 0;
    uint8_t *d = test_read_all(out, &size);
    int com = 0;
    for (size_t i = 2; d && i + 4 < size && !com; i++)
        com = d[i] == 0xff && d[i + 1] == 0xfe &&
              memmem(d + i, size - i < 300 ? size - i : 300, "synthetic", 9) != NULL;
    free(d);
    CHECK(com);
    remove(out);

    /* A WebP target (how photos saved from the web come) to a WebP output: an image by
     * its extension, the provenance in the file's XMP. */
    char wtarget[256];
    snprintf(wtarget, sizeof wtarget, "%s/target.webp", dir);
    snprintf(out, sizeof out, "%s/swapped.webp", dir);
    CHECK_EQ_INT(ffu_image_load(target, FFU_PIX_RGB24, &a), FFU_OK);
    CHECK_EQ_INT(ffu_image_save(wtarget, &a, 0), FFU_OK);
    run(&r, (const char *[]){"swap", "-s", source, "--target", wtarget, "-o", out, "--json", NULL});
    CHECK_EQ_INT(r.code, 0);
    CHECK(strstr(r.out, "\"faces_swapped\": 1"));
    d = test_read_all(out, &size);
    CHECK(d && size > 12 && !memcmp(d, "RIFF", 4) && !memcmp(d + 8, "WEBP", 4));
    CHECK(memmem(d, size, "<exif:UserComment>", 18) && memmem(d, size, "synthetic", 9));
    free(d);
    CHECK_EQ_INT(ffu_image_load(out, FFU_PIX_RGB24, &b), FFU_OK);
    CHECK(b.width == a.width && b.height == a.height);
    ffu_image_release(&a);
    ffu_image_release(&b);
    remove(out);
    remove(wtarget);

    /* a target named without an extension is known by its bytes: a JPEG is an image
     * (it was taken for a video, and an image output refused); --output-dir names its
     * output .png. A file that is no image is still taken for a video, and the refusal
     * says so. */
    char bare[256], odir[256], named[300];
    snprintf(bare, sizeof bare, "%s/photo", dir);
    snprintf(odir, sizeof odir, "%s/bare_out", dir);
    snprintf(named, sizeof named, "%s/photo.png", odir);
    size_t tsize = 0;
    uint8_t *t = test_read_all(target, &tsize);
    FILE *f = fopen(bare, "wb");
    CHECK(t && f && fwrite(t, 1, tsize, f) == tsize);
    if (f) fclose(f);
    free(t);
    run(&r, (const char *[]){"swap", "-s", source, "--target", bare, "-o", out, "--quiet", NULL});
    CHECK_EQ_INT(r.code, 0);
    CHECK(access(out, R_OK) == 0);
    run(&r, (const char *[]){"swap", "-s", source, "--target", bare, "--target", target,
                             "--output-dir", odir, "--quiet", NULL});
    CHECK_EQ_INT(r.code, 0);
    CHECK(access(named, R_OK) == 0);
    f = fopen(bare, "wb");
    CHECK(f && fputs("plain text, no picture", f) >= 0);
    if (f) fclose(f);
    run(&r, (const char *[]){"swap", "-s", source, "--target", bare, "-o", out, NULL});
    CHECK_EQ_INT(r.code, 2);
    CHECK(strstr(r.err, "not a JPEG, PNG or WebP image") != NULL);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s %s", bare, odir);
    CHECK_EQ_INT(system(cmd), 0);
    remove(out);
    snprintf(out, sizeof out, "%s/swapped.png", dir);
    remove(out);
}

static void make_flat_png(const char *path, int w, int h)
{
    ffu_image img;
    if (ffu_image_create(&img, FFU_PIX_RGB24, w, h) < 0) return;
    for (int y = 0; y < h; y++)
        memset(img.data[0] + (size_t)y * img.stride[0], 90 + y * 30 / h, (size_t)w * 3);
    ffu_image_save(path, &img, 0);
    ffu_image_release(&img);
}

/* A short video of flat frames (no face), w x h; 0 on failure. */
static int make_flat_video(const char *path, int w, int h, int frames)
{
    ffu_video_writer_opts wo = {.width = w, .height = h, .fps_num = 10, .preset = "ultrafast"};
    ffu_video_writer *vw = NULL;
    ffu_image img = {0};
    int ok = ffu_video_writer_open(&vw, path, &wo) == FFU_OK &&
             ffu_image_create(&img, FFU_PIX_RGB24, w, h) == FFU_OK;
    for (int y = 0; ok && y < h; y++)
        memset(img.data[0] + (size_t)y * img.stride[0], 90 + y * 30 / h, (size_t)w * 3);
    for (int i = 0; ok && i < frames; i++)
        ok = ffu_video_writer_write(vw, &img, i / 10.0) == FFU_OK;
    ffu_image_release(&img);
    if (!ok) {
        ffu_video_writer_abort(vw);
        return 0;
    }
    return ffu_video_writer_close(vw) == FFU_OK;
}

static void test_no_face(void)
{
    if (!have_data()) TEST_SKIP("needs ../shared data and the default models");
    char flat[256], out[256];
    snprintf(flat, sizeof flat, "%s/flat.png", dir);
    snprintf(out, sizeof out, "%s/out.png", dir);
    make_flat_png(flat, 160, 120);
    /* no face in the source: named, non-zero exit, nothing written */
    run(&r, (const char *[]){"swap", "--source", flat, "--target", target, "-o", out, NULL});
    CHECK(r.code != 0);
    CHECK_EQ_INT(r.code, 3);
    CHECK(strstr(r.err, "no face in --source") && strstr(r.err, "flat.png"));
    CHECK_EQ_INT(count_lines(r.err), 1);
    CHECK(access(out, F_OK) != 0);
    /* the second of two sources is the one named */
    run(&r,
        (const char *[]){"swap", "-s", source, "-s", flat, "--target", target, "-o", out, NULL});
    CHECK_EQ_INT(r.code, 3);
    CHECK(strstr(r.err, "no face in --source") && strstr(r.err, "flat.png"));
    /* a --source folder stands for its photos (it was "is a directory", exit 1): its one
     * photo is the one named; a folder without photos is exit 4 */
    char folder[300], inside[400];
    snprintf(folder, sizeof folder, "%s/sources", dir);
    snprintf(inside, sizeof inside, "%s/flat.png", folder);
    CHECK(mkdir(folder, 0755) == 0);
    run(&r, (const char *[]){"swap", "-s", folder, "--target", target, "-o", out, NULL});
    CHECK_EQ_INT(r.code, 4);
    CHECK(strstr(r.err, "--source") && strstr(r.err, "no .jpg"));
    make_flat_png(inside, 160, 120);
    run(&r, (const char *[]){"swap", "-s", folder, "--target", target, "-o", out, NULL});
    CHECK_EQ_INT(r.code, 3);
    CHECK(strstr(r.err, "no face in --source") && strstr(r.err, inside));
    CHECK(access(out, F_OK) != 0);
    /* no face in the target image: exit 3 like `facefuse detect`, with a hint */
    run(&r,
        (const char *[]){"swap", "--source", source, "--target", flat, "-o", out, "--json", NULL});
    CHECK_EQ_INT(r.code, 3);
    CHECK(strstr(r.err, "flat.png") && strstr(r.err, "no face") && strstr(r.err, "try"));
    CHECK(!strstr(r.err, "--min-face 20")); /* 160x120: the search already sees small faces */
    CHECK(access(out, F_OK) != 0);
    ffu_json *j = NULL;
    CHECK_EQ_INT(ffu_json_parse(r.out, strlen(r.out), &j), FFU_OK);
    int ok = ffu_json_int(ffu_json_get(j, "exit_code"), 0) == 3;
    ffu_json_free(j);
    CHECK(ok);
    /* in a large photo the whole-frame view misses small faces: the hint says so */
    char big[256];
    snprintf(big, sizeof big, "%s/big.png", dir);
    make_flat_png(big, 1600, 1200);
    run(&r, (const char *[]){"swap", "--source", source, "--target", big, "-o", out, NULL});
    CHECK_EQ_INT(r.code, 3);
    CHECK(strstr(r.err, "no face found (faces under") && strstr(r.err, "--min-face 20"));
    remove(big);
    /* a video without a face in any frame: written unchanged, and the same hint */
    char vid[256];
    snprintf(vid, sizeof vid, "%s/flat.mp4", dir);
    snprintf(big, sizeof big, "%s/out.mp4", dir);
    CHECK(make_flat_video(vid, 1280, 720, 5));
    run(&r, (const char *[]){"swap", "--source", source, "--target", vid, "-o", big, NULL});
    CHECK_EQ_INT(r.code, 0);
    CHECK(strstr(r.err, "in any of its 5 frames (faces under") &&
          strstr(r.err, "1280x720 frames: --min-face 20"));
    remove(vid);
    remove(big);
    /* unreadable files */
    run(&r, (const char *[]){"swap", "--source", "/nonexistent/s.jpg", "--target", target, "-o",
                             out, NULL});
    CHECK_EQ_INT(r.code, 4);
    CHECK(strstr(r.err, "/nonexistent/s.jpg"));
    run(&r, (const char *[]){"swap", "--source", source, "--target", "/nonexistent/t.jpg", "-o",
                             out, NULL});
    CHECK_EQ_INT(r.code, 4);
    CHECK(strstr(r.err, "/nonexistent/t.jpg"));
    /* an output in a missing folder: refused before the swap (it failed after, exit 1) */
    run(&r, (const char *[]){"swap", "--source", source, "--target", target, "-o",
                             "/nonexistent/o.jpg", NULL});
    CHECK_EQ_INT(r.code, 4);
    CHECK(strstr(r.err, "--output /nonexistent/o.jpg") != NULL);
    remove(flat);
}

static int64_t mtime_ns(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) return -1;
    return (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
}

static int copy_file(const char *from, const char *to)
{
    size_t size = 0;
    uint8_t *d = test_read_all(from, &size);
    FILE *f = d ? fopen(to, "wb") : NULL;
    int ok = f && fwrite(d, 1, size, f) == size;
    if (f) ok &= fclose(f) == 0;
    free(d);
    return ok ? 0 : -1;
}

static int64_t json_count(const char *key)
{
    ffu_json *j = NULL;
    if (ffu_json_parse(r.out, strlen(r.out), &j) < 0) return -1;
    int64_t v = ffu_json_int(ffu_json_get(j, key), -1);
    ffu_json_free(j);
    return v;
}

static void test_batch_journal(void)
{
    if (!have_data()) TEST_SKIP("needs ../shared data and the default models");
    char in[128], outdir[128], a[256], b[256], oa[256], ob[256], flat[256];
    snprintf(in, sizeof in, "%s/batch_in", dir);
    snprintf(outdir, sizeof outdir, "%s/batch_out", dir);
    CHECK(mkdir(in, 0777) == 0);
    snprintf(a, sizeof a, "%s/a.png", in);
    snprintf(b, sizeof b, "%s/b.png", in);
    snprintf(flat, sizeof flat, "%s/c_noface.png", in);
    snprintf(oa, sizeof oa, "%s/a.png", outdir);
    snprintf(ob, sizeof ob, "%s/b.png", outdir);
    CHECK(copy_file(target, a) == 0);
    CHECK(copy_file(target2, b) == 0);
    make_flat_png(flat, 160, 120);
    const char *args[] = {"swap",         "-s",   source,   "--target", in,
                          "--output-dir", outdir, "--json", NULL};
    run(&r, args);
    /* the faceless image fails (exit 3) but the others are written */
    CHECK_EQ_INT(r.code, 3);
    CHECK_EQ_INT(json_count("done"), 2);
    CHECK_EQ_INT(json_count("failed"), 1);
    CHECK_EQ_INT(json_count("skipped"), 0);
    CHECK(access(oa, F_OK) == 0 && access(ob, F_OK) == 0);
    char journal[300];
    snprintf(journal, sizeof journal, "%s/.facefuse-swap-journal", outdir);
    CHECK(access(journal, F_OK) == 0);
    int64_t ta = mtime_ns(oa), tb = mtime_ns(ob);
    remove(flat);

    /* the same command again: both skipped, files untouched */
    run(&r, args);
    CHECK_EQ_INT(r.code, 0);
    CHECK_EQ_INT(json_count("done"), 0);
    CHECK_EQ_INT(json_count("skipped"), 2);
    CHECK_EQ_INT(mtime_ns(oa), ta);
    CHECK_EQ_INT(mtime_ns(ob), tb);

    /* an output that went missing is redone; a changed option redoes everything */
    remove(ob);
    run(&r, args);
    CHECK_EQ_INT(r.code, 0);
    CHECK_EQ_INT(json_count("done"), 1);
    CHECK_EQ_INT(json_count("skipped"), 1);
    CHECK(access(ob, F_OK) == 0);
    CHECK_EQ_INT(mtime_ns(oa), ta);
    run(&r, (const char *[]){"swap", "-s", source, "--target", in, "--output-dir", outdir, "--json",
                             "--colour", "none", NULL});
    CHECK_EQ_INT(r.code, 0);
    CHECK_EQ_INT(json_count("done"), 2);
    CHECK_EQ_INT(json_count("skipped"), 0);
    /* human-readable rerun says what it skipped */
    run(&r, (const char *[]){"swap", "-s", source, "--target", in, "--output-dir", outdir,
                             "--colour", "none", NULL});
    CHECK_EQ_INT(r.code, 0);
    CHECK(strstr(r.out, "skipped"));
    remove(oa), remove(ob), remove(journal), remove(a), remove(b);
    rmdir(outdir), rmdir(in);
}

static int count_parts(const char *d)
{
    DIR *dd = opendir(d);
    int n = 0;
    struct dirent *e;
    while (dd && (e = readdir(dd)))
        n += strstr(e->d_name, ".tmp-") != NULL;
    if (dd) closedir(dd);
    return n;
}

/* A video batch stopped by SIGINT leaves no partial output; rerunning finishes it. */
static void test_video_interrupt_resume(void)
{
    if (!have_data() || !test_shared_path(CLIP, clip, sizeof clip))
        TEST_SKIP("needs ../shared data and the default models");
    char outdir[128], out[300], img[300];
    snprintf(outdir, sizeof outdir, "%s/video_out", dir);
    snprintf(out, sizeof out, "%s/sadtalker_WDA_AlexandriaOcasioCortez_000.mp4", outdir);
    snprintf(img, sizeof img, "%s/alex-lacamoire.png", outdir);
    const char *args[] = {"swap", "-s",           source, "--target",     clip, "--target",
                          target, "--output-dir", outdir, "--max-frames", "30", "--json",
                          NULL};
    spawned sp;
    spawn(&sp, args);
    /* wait until the video's temporary file exists, then Ctrl-C */
    int seen = 0;
    for (int i = 0; i < 6000 && !seen; i++) {
        mkdir(outdir, 0777);
        seen = count_parts(outdir) > 0;
        if (!seen) usleep(10000);
    }
    kill(sp.pid, SIGINT);
    reap(&sp, &r);
    CHECK(seen);
    CHECK_EQ_INT(r.code, 130);
    CHECK(strstr(r.err, "interrupted"));
    CHECK(access(out, F_OK) != 0);
    CHECK(access(img, F_OK) != 0); /* the image after the video was not started */
    CHECK_EQ_INT(count_parts(outdir), 0);

    run(&r, args);
    CHECK_EQ_INT(r.code, 0);
    CHECK_EQ_INT(json_count("done"), 2);
    CHECK_EQ_INT(json_count("frames"), 31); /* 30 video frames + 1 image */
    CHECK(access(out, F_OK) == 0 && access(img, F_OK) == 0);
    run(&r, args);
    CHECK_EQ_INT(r.code, 0);
    CHECK_EQ_INT(json_count("skipped"), 2);
    char journal[300];
    snprintf(journal, sizeof journal, "%s/.facefuse-swap-journal", outdir);
    remove(out), remove(img), remove(journal);
    rmdir(outdir);
}

static void test_cleanup(void)
{
    if (dir[0]) rmdir(dir);
}

TEST_MAIN(test_help, test_image_swap, test_no_face, test_batch_journal, test_video_interrupt_resume,
          test_cleanup)
