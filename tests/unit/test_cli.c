/* The facefuse command line, run as a user would: help and usage, exit codes,
 * one-line errors on stderr, --json documents that parse, --config files, and an
 * image round trip through `facefuse image`. */
#include "facefuse/face.h"
#include "facefuse/image.h"
#include "facefuse/models.h"
#include "facefuse/gpu.h"
#include "test.h"
#include "test_cli.h"

static run_result r;

static void test_help_and_usage(void)
{
    run(&r, (const char *[]){"--help", NULL});
    CHECK_EQ_INT(r.code, 0);
    CHECK(strstr(r.out, "commands:") && strstr(r.out, "info") && strstr(r.out, "image"));
    CHECK(strstr(r.out, "exit codes:"));
    run(&r, (const char *[]){NULL});
    CHECK_EQ_INT(r.code, 2);
    run(&r, (const char *[]){"frobnicate", NULL});
    CHECK_EQ_INT(r.code, 2);
    CHECK(strstr(r.err, "unknown command 'frobnicate'"));
    CHECK_EQ_INT(count_lines(r.err), 1);
    run(&r, (const char *[]){"image", "--help", NULL});
    CHECK_EQ_INT(r.code, 0);
    CHECK(strstr(r.out, "--resize") && strstr(r.out, "--interp"));
    run(&r, (const char *[]){"help", "info", NULL});
    CHECK_EQ_INT(r.code, 0);
    CHECK(strstr(r.out, "--require-models"));
    run(&r, (const char *[]){"info", "--bogus", NULL});
    CHECK_EQ_INT(r.code, 2);
    CHECK(strstr(r.err, "--bogus"));
    CHECK_EQ_INT(count_lines(r.err), 1);
}

static void test_version_json(void)
{
    run(&r, (const char *[]){"version", "--json", NULL});
    CHECK_EQ_INT(r.code, 0);
    ffu_json *j = NULL;
    CHECK_EQ_INT(ffu_json_parse(r.out, strlen(r.out), &j), FFU_OK);
    const char *v = ffu_json_string(ffu_json_get(j, "version"));
    int ok = v && strchr(v, '.');
    ffu_json_free(j);
    CHECK(ok);
    run(&r, (const char *[]){"--version", NULL});
    CHECK_EQ_INT(r.code, 0);
    CHECK(strncmp(r.out, "facefuse ", 9) == 0);
}

static void test_info_json(void)
{
    char dir[] = "/tmp/ffu_cli_models_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    setenv("FFU_MODEL_DIR", dir, 1); /* an empty cache: npm models are missing */
    run(&r, (const char *[]){"info", "--json", "--fast", NULL});
    CHECK_EQ_INT(r.code, 0);
    ffu_json *j = NULL;
    CHECK_EQ_INT(ffu_json_parse(r.out, strlen(r.out), &j), FFU_OK);
    const ffu_json *models = ffu_json_get(j, "models");
    int total = (int)ffu_json_int(ffu_json_get(models, "total"), -1);
    int nfiles = (int)ffu_json_len(ffu_json_get(models, "files"));
    char state0[32];
    snprintf(state0, sizeof state0, "%s",
             ffu_json_string(ffu_json_get(ffu_json_at(ffu_json_get(models, "files"), 0), "state")));
    int feats = ffu_json_typeof(ffu_json_get(ffu_json_get(j, "cpu"), "features")) == FFU_JSON_ARRAY;
    int cuda = ffu_json_typeof(ffu_json_get(ffu_json_get(j, "cuda"), "devices")) == FFU_JSON_NUMBER;
    int dir_ok = ffu_json_string(ffu_json_get(models, "dir")) &&
                 !strcmp(ffu_json_string(ffu_json_get(models, "dir")), dir);
    ffu_json_free(j);
    CHECK_EQ_INT(total, ffu_model_files_count());
    CHECK_EQ_INT(nfiles, total);
    CHECK_STR(state0, "missing");
    CHECK(feats && cuda && dir_ok);
    run(&r, (const char *[]){"info", "--fast", "--require-models", NULL});
    CHECK_EQ_INT(r.code, 4);
    CHECK(strstr(r.err, "scripts/setup"));
    unsetenv("FFU_MODEL_DIR");
    rmdir(dir);
}

/* bench nn says where it ran: the CPU with family and model, the measured FMA peak
 * (positive wherever a vector ISA the peak uses is there) and whether 512-bit FMAs run
 * as two halves (a yes or no: a timing, so not compared with this process's). */
static void test_bench_host(void)
{
    const char *model = FFU_TEST_SOURCE_DIR "/tests/fixtures/corpus/onnx/conv.onnx";
    run(&r, (const char *[]){"bench", "nn", model, "--runs", "2", "--warmup", "0", "--json", NULL});
    CHECK_EQ_INT(r.code, 0);
    ffu_json *j = NULL;
    CHECK_EQ_INT(ffu_json_parse(r.out, strlen(r.out), &j), FFU_OK);
    const char *cpu = ffu_json_string(ffu_json_get(j, "cpu"));
    double peak = ffu_json_number(ffu_json_get(j, "fma_peak_gflops"), -1);
    int named = cpu && cpu[0], family = cpu && strstr(cpu, "(family ");
    double median = ffu_json_number(ffu_json_get(j, "median_ms"), -1);
    const ffu_json *halves = ffu_json_get(j, "fma512_halves");
    CHECK(halves && ffu_json_bool(halves, -1) >= 0);
    ffu_json_free(j);
    unsigned f = ffu_cpu_features();
    int vec = (f & FFU_CPU_AVX512F) || ((f & FFU_CPU_AVX2) && (f & FFU_CPU_FMA));
    CHECK(named && median > 0);
#if defined(__x86_64__)
    CHECK(family || !strcmp(cpu ? cpu : "", "unknown"));
#else
    (void)family;
#endif
    CHECK(vec ? peak > 0 : peak == 0);
    run(&r, (const char *[]){"bench", "nn", model, "--runs", "2", "--warmup", "0", NULL});
    CHECK_EQ_INT(r.code, 0);
    CHECK(strstr(r.out, "host: ") && strstr(r.out, "GFLOP/s"));
}

/* bench nn --cold evicts the caches before every run with a buffer of at least 64 MiB,
 * which the peak RSS it reports does not count; the JSON says which kind of run it was. */
static void test_bench_cold(void)
{
    const char *model = FFU_TEST_SOURCE_DIR "/tests/fixtures/corpus/onnx/conv.onnx";
    for (int cold = 0; cold < 2; cold++) {
        const char *argv[] = {"bench", "nn", model, "--runs", "3", "--warmup", "1", "--json",
                              cold ? "--cold" : NULL, NULL};
        run(&r, argv);
        CHECK_EQ_INT(r.code, 0);
        ffu_json *j = NULL;
        CHECK_EQ_INT(ffu_json_parse(r.out, strlen(r.out), &j), FFU_OK);
        int is_cold = ffu_json_bool(ffu_json_get(j, "cold"), -1);
        double median = ffu_json_number(ffu_json_get(j, "median_ms"), -1);
        int64_t before = ffu_json_int(ffu_json_get(j, "rss_before_bytes"), -1);
        int64_t peak = ffu_json_int(ffu_json_get(j, "rss_peak_bytes"), -1);
        ffu_json_free(j);
        CHECK_EQ_INT(is_cold, cold);
        CHECK(median > 0);
        CHECK(before > 0 && peak >= before && peak - before < ((int64_t)32 << 20));
    }
    run(&r, (const char *[]){"bench", "nn", model, "--runs", "2", "--cold", NULL});
    CHECK_EQ_INT(r.code, 0);
    CHECK(strstr(r.out, "caches evicted before each run"));
}

static void make_png(const char *path, int w, int h)
{
    ffu_image img;
    if (ffu_image_create(&img, FFU_PIX_RGB24, w, h) < 0) return;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            uint8_t *p = img.data[0] + (size_t)y * img.stride[0] + 3 * x;
            p[0] = (uint8_t)(x * 4), p[1] = (uint8_t)(y * 4), p[2] = 128;
        }
    ffu_image_save(path, &img, 0);
    ffu_image_release(&img);
}

static void test_image_round_trip(void)
{
    char dir[] = "/tmp/ffu_cli_img_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char in[256], out[256], cfg[256];
    snprintf(in, sizeof in, "%s/in.png", dir);
    snprintf(out, sizeof out, "%s/out.jpg", dir);
    snprintf(cfg, sizeof cfg, "%s/cfg.json", dir);
    make_png(in, 60, 40);
    run(&r, (const char *[]){"image", in, "-o", out, "--resize", "30x0", "--rotate", "10",
                             "--label", "hi", "--json", NULL});
    CHECK_EQ_INT(r.code, 0);
    ffu_json *j = NULL;
    CHECK_EQ_INT(ffu_json_parse(r.out, strlen(r.out), &j), FFU_OK);
    const ffu_json *size = ffu_json_get(j, "output_size");
    int w = (int)ffu_json_int(ffu_json_at(size, 0), -1), h = (int)ffu_json_int(ffu_json_at(size, 1), -1);
    ffu_json_free(j);
    CHECK_EQ_INT(w, 30);
    CHECK_EQ_INT(h, 20);
    ffu_image img;
    CHECK_EQ_INT(ffu_image_load(out, FFU_PIX_RGB24, &img), FFU_OK);
    CHECK_EQ_INT(img.width, 30);
    CHECK_EQ_INT(img.height, 20);
    ffu_image_release(&img);

    /* --config applies, and the command line wins over it */
    FILE *f = fopen(cfg, "w");
    CHECK(f != NULL);
    fputs("{\"resize\": \"12x8\", \"gray\": true}", f);
    fclose(f);
    snprintf(out, sizeof out, "%s/out.png", dir);
    run(&r, (const char *[]){"image", in, "-o", out, "--config", cfg, NULL});
    CHECK_EQ_INT(r.code, 0);
    CHECK_EQ_INT(ffu_image_load(out, FFU_PIX_RGB24, &img), FFU_OK);
    int ok = img.width == 12 && img.height == 8;
    ffu_image_release(&img);
    CHECK(ok);
    run(&r, (const char *[]){"image", in, "-o", out, "--config", cfg, "--resize", "6x4", NULL});
    CHECK_EQ_INT(r.code, 0);
    CHECK_EQ_INT(ffu_image_load(out, FFU_PIX_GRAY8, &img), FFU_OK);
    ok = img.width == 6 && img.height == 4;
    ffu_image_release(&img);
    CHECK(ok);
    f = fopen(cfg, "w");
    fputs("{\"resize\": 5}", f);
    fclose(f);
    run(&r, (const char *[]){"image", in, "-o", out, "--config", cfg, NULL});
    CHECK_EQ_INT(r.code, 2);
    CHECK(strstr(r.err, "resize"));
    remove(cfg), remove(out), remove(in);
    snprintf(out, sizeof out, "%s/out.jpg", dir);
    remove(out);
    rmdir(dir);
}

static void test_image_errors(void)
{
    char dir[] = "/tmp/ffu_cli_err_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char bad[256], out[256];
    snprintf(bad, sizeof bad, "%s/bad.jpg", dir);
    snprintf(out, sizeof out, "%s/out.png", dir);
    FILE *f = fopen(bad, "wb");
    CHECK(f != NULL);
    fputs("\xff\xd8\xff\xe0 this is not really a jpeg", f);
    fclose(f);
    run(&r, (const char *[]){"image", bad, "-o", out, NULL});
    CHECK_EQ_INT(r.code, 3);
    CHECK(strstr(r.err, "bad.jpg"));
    CHECK_EQ_INT(count_lines(r.err), 1);
    CHECK(access(out, F_OK) != 0); /* nothing written */
    run(&r, (const char *[]){"image", "/nonexistent/x.png", "-o", out, "--json", NULL});
    CHECK_EQ_INT(r.code, 4);
    ffu_json *j = NULL;
    CHECK_EQ_INT(ffu_json_parse(r.out, strlen(r.out), &j), FFU_OK);
    int ok = ffu_json_bool(ffu_json_get(j, "ok"), 1) == 0 &&
             ffu_json_int(ffu_json_get(j, "exit_code"), 0) == 4;
    ffu_json_free(j);
    CHECK(ok);
    run(&r, (const char *[]){"image", bad, NULL});
    CHECK_EQ_INT(r.code, 2);
    CHECK(strstr(r.err, "-o"));
    /* an output folder that does not exist: exit 4 naming the option, before decoding */
    run(&r, (const char *[]){"image", bad, "-o", "/nonexistent/x.png", NULL});
    CHECK_EQ_INT(r.code, 4);
    CHECK(strstr(r.err, "--output /nonexistent/x.png") != NULL);
    run(&r, (const char *[]){"image", bad, "-o", out, "--resize", "axb", NULL});
    CHECK_EQ_INT(r.code, 2);
    run(&r, (const char *[]){"image", bad, "-o", out, "--quality", "101", NULL});
    CHECK_EQ_INT(r.code, 2);
    remove(bad);
    rmdir(dir);
}

/* GPU choices on a machine without a usable device: exit 5 with a one-line reason,
 * never a crash; `--hwaccel auto` quietly decodes on the CPU. With a device the same
 * commands must succeed (scripts/gpu-check runs this test there). */
static void test_gpu_options(void)
{
    char model[1024], clip[1024];
    int have_model = test_shared_path("models/mobilefacenet_insightface_pytorch.onnx", model,
                                      sizeof model) != NULL,
        have_clip = test_shared_path("data/videos/dlib_MOT20-05-raw_even_shorter.mp4", clip,
                                     sizeof clip) != NULL;
    if (!have_model || !have_clip) TEST_SKIP("../shared models or videos absent");
    int gpu = ffu_gpu_device_count() > 0;
    run(&r, (const char *[]){"bench", "nn", model, "--backend", "cuda", "--runs", "3", NULL});
    CHECK_EQ_INT(r.code, gpu ? 0 : 5);
    if (!gpu) CHECK(strstr(r.err, "CUDA") || strstr(r.err, "cuda"));
    run(&r, (const char *[]){"video", "info", clip, "--hwaccel", "cuda", NULL});
    CHECK_EQ_INT(r.code, gpu ? 0 : 5);
    if (!gpu) CHECK(strstr(r.err, "NVDEC") != NULL);
    run(&r, (const char *[]){"video", "info", clip, "--hwaccel", "auto", "--json", NULL});
    CHECK_EQ_INT(r.code, 0);
    CHECK(strstr(r.out, gpu ? "(nvdec)" : "h264 (cpu)") != NULL);
    run(&r, (const char *[]){"video", "info", clip, "--hwaccel", "vulkan", NULL});
    CHECK_EQ_INT(r.code, 2);
    CHECK(strstr(r.err, "none, auto, cuda") != NULL);
}

/* `nn run MODEL --input IMG -o DIR`: the outputs summarised and written, one file per
 * output, the folder made; a path that is not a folder, or a wrong number of inputs,
 * refused before the model runs (nothing on stdout). */
static void test_nn_run(void)
{
    char model[1024], img[1024];
    if (!test_shared_path("models/mobilefacenet_insightface_pytorch.onnx", model, sizeof model) ||
        !test_shared_path("data/face_recognition_examples/examples/obama.jpg", img, sizeof img))
        TEST_SKIP("../shared models or photos absent");
    char dir[] = "/tmp/ffu_cli_nnrun_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char out[1100], file[1200];
    snprintf(out, sizeof out, "%s/out", dir); /* made by the command */
    run(&r, (const char *[]){"nn", "run", model, "--input", img, "-o", out, "--json", NULL});
    CHECK_EQ_INT(r.code, 0);
    ffu_json *j = NULL;
    CHECK_EQ_INT(ffu_json_parse(r.out, strlen(r.out), &j), FFU_OK);
    const ffu_json *outs = ffu_json_get(j, "outputs");
    int nout = (int)ffu_json_len(outs), files = 0;
    for (int i = 0; i < nout; i++) {
        const char *f = ffu_json_string(ffu_json_get(ffu_json_at(outs, i), "file"));
        files += f && access(f, R_OK) == 0;
    }
    ffu_json_free(j);
    CHECK(nout >= 1);
    CHECK_EQ_INT(files, nout);
    /* a folder for the model is a usage error naming it (it was exit 1, an I/O failure) */
    run(&r, (const char *[]){"nn", "info", dir, NULL});
    CHECK_EQ_INT(r.code, 2);
    CHECK(strstr(r.err, dir) && strstr(r.err, "is a directory"));
    snprintf(file, sizeof file, "%s/plain", dir);
    FILE *fp = fopen(file, "w");
    CHECK(fp && fputs("x", fp) >= 0 && fclose(fp) == 0);
    run(&r, (const char *[]){"nn", "run", model, "--input", img, "-o", file, NULL});
    CHECK_EQ_INT(r.code, 1);
    CHECK_EQ_INT((int)strlen(r.out), 0);
    CHECK(strstr(r.err, file) != NULL);
    run(&r, (const char *[]){"nn", "run", model, "--input", img, "--input", img, NULL});
    CHECK_EQ_INT(r.code, 2);
    char cmd[1300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK_EQ_INT(system(cmd), 0);
}

/* --only-output NAME: `nn info` marks the other outputs not computed and plans less
 * memory, `nn run` gives only that output, `bench nn` runs; an unknown name is refused
 * (exit 4, naming it). */
static void test_nn_only_output(void)
{
    char model[1024], img[1024];
    if (!test_shared_path("models/ultraface_version-RFB-320.onnx", model, sizeof model) ||
        !test_shared_path("data/face_recognition_examples/examples/obama.jpg", img, sizeof img))
        TEST_SKIP("../shared models or photos absent");
    int64_t peak[2];
    for (int k = 0; k < 2; k++) {
        if (k)
            run(&r,
                (const char *[]){"nn", "info", model, "--only-output", "boxes", "--json", NULL});
        else
            run(&r, (const char *[]){"nn", "info", model, "--json", NULL});
        CHECK_EQ_INT(r.code, 0);
        ffu_json *j = NULL;
        CHECK_EQ_INT(ffu_json_parse(r.out, strlen(r.out), &j), FFU_OK);
        const ffu_json *plan = ffu_json_get(j, "plan");
        peak[k] = ffu_json_int(ffu_json_get(plan, "peak_bytes"), -1);
        const ffu_json *outs = ffu_json_get(plan, "outputs");
        CHECK_EQ_INT((int)ffu_json_len(outs), k ? 1 : 2);
        const char *last = ffu_json_string(ffu_json_at(outs, ffu_json_len(outs) - 1));
        CHECK(last && !strcmp(last, "boxes"));
        ffu_json_free(j);
    }
    CHECK(peak[1] > 0 && peak[1] < peak[0]);
    run(&r, (const char *[]){"nn", "info", model, "--only-output", "boxes", NULL});
    CHECK_EQ_INT(r.code, 0);
    const char *sc = strstr(r.out, "scores"), *bx = strstr(r.out, "boxes");
    CHECK(sc && bx && strstr(sc, "(not computed)") && strstr(sc, "(not computed)") < bx);
    run(&r, (const char *[]){"nn", "run", model, "--input", img, "--only-output", "boxes", "--json",
                             NULL});
    CHECK_EQ_INT(r.code, 0);
    ffu_json *j = NULL;
    CHECK_EQ_INT(ffu_json_parse(r.out, strlen(r.out), &j), FFU_OK);
    const ffu_json *outs = ffu_json_get(j, "outputs");
    CHECK_EQ_INT((int)ffu_json_len(outs), 1);
    const char *name = ffu_json_string(ffu_json_get(ffu_json_at(outs, 0), "name"));
    CHECK(name && !strcmp(name, "boxes"));
    ffu_json_free(j);
    run(&r, (const char *[]){"bench", "nn", model, "--runs", "2", "--warmup", "0", "--only-output",
                             "scores", NULL});
    CHECK_EQ_INT(r.code, 0);
    run(&r, (const char *[]){"nn", "run", model, "--input", img, "--only-output", "nope", NULL});
    CHECK_EQ_INT(r.code, 4);
    CHECK(strstr(r.err, "'nope'") != NULL);
    CHECK_EQ_INT((int)strlen(r.out), 0);
}

/* `analyze --heatmap DIR --snapshots DIR`: missing folders (and their parents) are made;
 * a file in the way is refused before any stream runs (exit 1, nothing on stdout),
 * where the heatmaps used to fail after the whole video and the snapshots only warned.
 * An --annotate or --events file (or an --annotate {name} pattern) in a missing folder
 * is refused the same way (exit 4): the annotated video used to fail at the stream's
 * first frame and the stream was analysed anyway to its end. */
static void test_analyze_output_dirs(void)
{
    char clip[1024];
    if (!test_shared_path("data/videos/dlib_MOT20-05-raw_even_shorter.mp4", clip, sizeof clip))
        TEST_SKIP("../shared videos absent");
    char dir[] = "/tmp/ffu_cli_analyze_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char heat[1100], file[1100], png[1300];
    snprintf(heat, sizeof heat, "%s/heat/maps", dir);
    snprintf(file, sizeof file, "%s/plain", dir);
    FILE *fp = fopen(file, "w");
    CHECK(fp && fputs("x", fp) >= 0 && fclose(fp) == 0);
    run(&r,
        (const char *[]){"analyze", "-i", clip, "--fps", "1", "--heatmap", heat, "--json", NULL});
    CHECK_EQ_INT(r.code, 0);
    snprintf(png, sizeof png, "%s/dlib_MOT20-05-raw_even_shorter.png", heat);
    CHECK(access(png, R_OK) == 0);
    /* each stream's smallest face looked for; the text summary names it for a stream
     * where no face was tracked and --min-face 20 would look for smaller ones */
    ffu_json *j = NULL;
    CHECK_EQ_INT(ffu_json_parse(r.out, strlen(r.out), &j), FFU_OK);
    const ffu_json *s0 = ffu_json_at(ffu_json_get(j, "streams"), 0);
    double side = ffu_json_number(ffu_json_get(s0, "min_face"), -1);
    int tracks = (int)ffu_json_int(ffu_json_get(s0, "tracks"), -1);
    ffu_json_free(j);
    CHECK(side > 0 && tracks >= 0);
    run(&r, (const char *[]){"analyze", "-i", clip, "--fps", "1", NULL});
    CHECK_EQ_INT(r.code, 0);
    CHECK_EQ_INT(strstr(r.out, "--min-face 20") != NULL, tracks == 0 && side >= 30);
    const char *flags[2] = {"--heatmap", "--snapshots"};
    for (int i = 0; i < 2; i++) {
        run(&r, (const char *[]){"analyze", "-i", clip, "--fps", "1", flags[i], file, NULL});
        CHECK_EQ_INT(r.code, 1);
        CHECK_EQ_INT((int)strlen(r.out), 0);
        CHECK(strstr(r.err, flags[i]) != NULL);
    }
    const char *files[3][2] = {{"--annotate", "/nonexistent/a.mp4"},
                               {"--annotate", "/nonexistent/{name}.mkv"},
                               {"--events", "/nonexistent/e.jsonl"}};
    for (int i = 0; i < 3; i++) {
        run(&r, (const char *[]){"analyze", "-i", clip, files[i][0], files[i][1], NULL});
        CHECK_EQ_INT(r.code, 4);
        CHECK_EQ_INT((int)strlen(r.out), 0);
        CHECK(strstr(r.err, files[i][0]) != NULL && strstr(r.err, files[i][1]) != NULL);
    }
    /* an annotated video that would be the input itself (a folder holding the input, as
     * DIR/NAME.mp4) is refused, the input untouched: it was replaced */
    char copy[1100];
    snprintf(copy, sizeof copy, "%s/clip.mp4", dir);
    size_t n = 0, n2 = 0;
    uint8_t *v = test_read_all(clip, &n);
    CHECK(v && test_write_file(copy, v, n) == 0);
    run(&r, (const char *[]){"analyze", "-i", copy, "-a", dir, NULL});
    CHECK_EQ_INT(r.code, 2);
    CHECK(strstr(r.err, "annotated video") != NULL && strstr(r.err, "is stream clip's input"));
    /* nor another stream's input (stream "clip" from sub/clip.mp4 annotated as
     * DIR/clip.mp4, the second input), nor the events file an input: --events was
     * opened (emptied) before any stream was read */
    char sub[1100], subclip[1200];
    snprintf(sub, sizeof sub, "%s/sub", dir);
    snprintf(subclip, sizeof subclip, "%s/clip.mp4", sub);
    CHECK(mkdir(sub, 0755) == 0 && test_write_file(subclip, v, n) == 0);
    run(&r, (const char *[]){"analyze", "-i", subclip, "-i", copy, "-a", dir, NULL});
    CHECK_EQ_INT(r.code, 2);
    CHECK(strstr(r.err, "stream clip's annotated video") != NULL &&
          strstr(r.err, "is stream clip-2's input") != NULL);
    run(&r, (const char *[]){"analyze", "-i", copy, "--events", copy, NULL});
    CHECK_EQ_INT(r.code, 2);
    CHECK(strstr(r.err, "--events") != NULL && strstr(r.err, "is a video") != NULL);
    uint8_t *after = test_read_all(copy, &n2);
    CHECK(after && n2 == n && !memcmp(after, v, n));
    free(after);
    after = test_read_all(subclip, &n2);
    CHECK(after && n2 == n && !memcmp(after, v, n));
    free(v), free(after);
    char cmd[1300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK_EQ_INT(system(cmd), 0);
}

/* `models list|verify [NAME...]`: the whole zoo with one default per role, a named model
 * alone, an unknown name or role refused before anything is checked. */
static void test_models_command(void)
{
    run(&r, (const char *[]){"models", "list", "--json", NULL});
    CHECK_EQ_INT(r.code, 0);
    ffu_json *j = NULL;
    CHECK_EQ_INT(ffu_json_parse(r.out, strlen(r.out), &j), FFU_OK);
    const ffu_json *ms = ffu_json_get(j, "models");
    int n = (int)ffu_json_len(ms), defaults[FFU_ROLE_COUNT] = {0};
    for (int i = 0; i < n; i++) {
        const ffu_json *m = ffu_json_at(ms, i);
        const char *role = ffu_json_string(ffu_json_get(m, "role"));
        for (int k = 0; k < FFU_ROLE_COUNT; k++)
            if (role && !strcmp(role, ffu_face_role_name((ffu_face_role)k)))
                defaults[k] += ffu_json_bool(ffu_json_get(m, "default"), 0);
    }
    ffu_json_free(j);
    CHECK(n >= 10);
    for (int k = 0; k < FFU_ROLE_COUNT; k++)
        CHECK_EQ_INT(defaults[k], 1);

    run(&r, (const char *[]){"models", "list", "facemesh", "--json", NULL});
    CHECK_EQ_INT(r.code, 0);
    CHECK_EQ_INT(ffu_json_parse(r.out, strlen(r.out), &j), FFU_OK);
    ms = ffu_json_get(j, "models");
    int one = ffu_json_len(ms) == 1 &&
              !strcmp(ffu_json_string(ffu_json_get(ffu_json_at(ms, 0), "name")), "facemesh");
    ffu_json_free(j);
    CHECK(one);

    /* verify one model: exit 0 exactly when it was found and loads */
    run(&r, (const char *[]){"models", "verify", "blazeface", "--json", NULL});
    CHECK_EQ_INT(ffu_json_parse(r.out, strlen(r.out), &j), FFU_OK);
    int checked = (int)ffu_json_int(ffu_json_get(j, "checked"), -1);
    int failed = (int)ffu_json_int(ffu_json_get(j, "failed"), -1);
    ffu_json_free(j);
    CHECK_EQ_INT(checked, 1);
    CHECK_EQ_INT(r.code, failed ? 4 : 0);

    run(&r, (const char *[]){"models", "verify", "nosuch", NULL});
    CHECK_EQ_INT(r.code, 4);
    CHECK_EQ_INT((int)strlen(r.out), 0);
    CHECK(strstr(r.err, "'nosuch'") != NULL);
    CHECK_EQ_INT(count_lines(r.err), 1);
    run(&r, (const char *[]){"models", "list", "--role", "nosuch", NULL});
    CHECK_EQ_INT(r.code, 2);
}

TEST_MAIN(test_help_and_usage, test_version_json, test_info_json, test_bench_host, test_bench_cold,
          test_image_round_trip, test_image_errors, test_gpu_options, test_models_command,
          test_nn_run, test_nn_only_output, test_analyze_output_dirs)
