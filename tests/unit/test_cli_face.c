/* `facefuse detect`, `embed`, `compare`, `enroll` and `identify` run as a user would,
 * on the labelled photos of ../shared/data/face_recognition_examples: the JSON each
 * promises (boxes as [x, y, w, h] inside the image, scores, five keypoints inside their
 * box; similarity and the same/different decision), decisions that follow the photos'
 * identities, the embedding `embed` prints agreeing with `compare`'s similarity, a
 * gallery enrolled from the kNN training folders naming the people of other photos, and
 * the errors: several faces (which one is used), no face, a file that is not an image,
 * a missing file, each naming the file once with the documented exit code, the batch
 * commands going on past a bad file; a folder as input (a WebP in it found like its
 * JPEG); --all (every face: compare finding Obama beside a larger Biden, embed's
 * vectors). Skipped without the shared data or the default models. */
#include <sys/stat.h>

#include "face/eval.h"
#include "facefuse/core.h"
#include "facefuse/image.h"
#include "test.h"
#include "test_cli.h"

#define EX "data/face_recognition_examples/examples/"

static run_result r;
static char obama[4096], obama2[4096], biden[4096], two[4096], dogs[4096], people[4096],
    train[4096];

/* 1 when the photos are there and the default models load (a first detect works). */
static int have_data(void)
{
    static int state = -1;
    if (state >= 0) return state;
    state = 0;
    if (!test_shared_path(EX "obama.jpg", obama, sizeof obama) ||
        !test_shared_path(EX "obama2.jpg", obama2, sizeof obama2) ||
        !test_shared_path(EX "biden.jpg", biden, sizeof biden) ||
        !test_shared_path(EX "knn_examples/test/obama_and_biden.jpg", two, sizeof two) ||
        !test_shared_path("data/dlib_faces/dogs.jpg", dogs, sizeof dogs) ||
        !test_shared_path(EX "two_people.jpg", people, sizeof people) ||
        !test_shared_path(EX "knn_examples/train", train, sizeof train))
        return 0;
    run(&r, (const char *[]){"detect", obama, NULL});
    if (r.code != 0) fprintf(stderr, "probe detect failed (%d): %s", r.code, r.err);
    state = r.code == 0;
    return state;
}

static ffu_json *parse_out(void)
{
    ffu_json *j = NULL;
    if (ffu_json_parse(r.out, strlen(r.out), &j) != FFU_OK) {
        fprintf(stderr, "not JSON: %.300s\n", r.out);
        return NULL;
    }
    return j;
}

/* Occurrences of needle in hay. */
static int count_of(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

/* A file that is not an image, for the error cases; removed by the caller. */
static int write_bad_file(char *path)
{
    int fd = mkstemps(path, 4);
    if (fd < 0) return 0;
    int ok = write(fd, "this is not a picture\n", 22) == 22;
    close(fd);
    return ok;
}

/* A face object as detect, embed and compare print it: box [x, y, w, h] inside a
 * w x h image, score in (0, 1], five keypoints inside the box (grown by a quarter),
 * the image-left eye left of the other and above the mouth. 1 when it holds. */
static int face_ok(const ffu_json *face, int w, int h)
{
    const ffu_json *box = ffu_json_get(face, "box"), *kp = ffu_json_get(face, "keypoints");
    double score = ffu_json_number(ffu_json_get(face, "score"), -1);
    if (ffu_json_len(box) != 4 || ffu_json_len(kp) != 5 || !(score > 0 && score <= 1)) return 0;
    double b[4];
    for (int i = 0; i < 4; i++) b[i] = ffu_json_number(ffu_json_at(box, (size_t)i), NAN);
    if (!(b[2] > 10 && b[3] > 10 && b[0] > -0.1 * b[2] && b[1] > -0.1 * b[3] &&
          b[0] + b[2] < w + 0.1 * b[2] && b[1] + b[3] < h + 0.1 * b[3]))
        return 0;
    double p[5][2];
    for (int i = 0; i < 5; i++) {
        const ffu_json *pt = ffu_json_at(kp, (size_t)i);
        if (ffu_json_len(pt) != 2) return 0;
        p[i][0] = ffu_json_number(ffu_json_at(pt, 0), NAN);
        p[i][1] = ffu_json_number(ffu_json_at(pt, 1), NAN);
        if (!(p[i][0] > b[0] - 0.25 * b[2] && p[i][0] < b[0] + 1.25 * b[2] &&
              p[i][1] > b[1] - 0.25 * b[3] && p[i][1] < b[1] + 1.25 * b[3]))
            return 0;
    }
    return p[0][0] < p[1][0] && p[0][1] < p[3][1] && p[1][1] < p[4][1];
}

static void test_detect_json(void)
{
    if (!have_data()) TEST_SKIP("needs ../shared data and the default models");
    run(&r, (const char *[]){"detect", obama, two, "--json", NULL});
    CHECK_EQ_INT(r.code, 0);
    ffu_json *j = parse_out();
    CHECK(j);
    const ffu_json *imgs = ffu_json_get(j, "images");
    int ok = ffu_json_len(imgs) == 2;
    const char *paths[2] = {obama, two};
    const int want[2] = {1, 2}; /* obama_and_biden: the two in front (identities.csv) */
    for (size_t i = 0; ok && i < 2; i++) {
        const ffu_json *im = ffu_json_at(imgs, i), *faces = ffu_json_get(im, "faces");
        const char *p = ffu_json_string(ffu_json_get(im, "path"));
        int w = (int)ffu_json_int(ffu_json_get(im, "width"), 0);
        int h = (int)ffu_json_int(ffu_json_get(im, "height"), 0);
        ok = p && !strcmp(p, paths[i]) && w > 0 && h > 0 &&
             (int)ffu_json_len(faces) == want[i];
        for (size_t f = 0; ok && f < ffu_json_len(faces); f++)
            ok = face_ok(ffu_json_at(faces, f), w, h);
    }
    ffu_json_free(j);
    CHECK(ok);

    /* the text form: one line per image, one per face */
    run(&r, (const char *[]){"detect", two, NULL});
    CHECK_EQ_INT(r.code, 0);
    CHECK(strstr(r.out, "2 faces"));
    CHECK_EQ_INT(count_lines(r.out), 3);

    /* min_face: the smallest face the search looked for; without --min-face, in a
     * 900x916 photo, well over 20 px (the whole-frame view's), with it 20 */
    for (int tiles = 0; tiles < 2; tiles++) {
        run(&r, tiles ? (const char *[]){"detect", dogs, "--json", "--min-face", "20", NULL}
                      : (const char *[]){"detect", dogs, "--json", NULL});
        CHECK_EQ_INT(r.code, 0);
        j = parse_out();
        const ffu_json *im = ffu_json_at(ffu_json_get(j, "images"), 0);
        double side = ffu_json_number(ffu_json_get(im, "min_face"), -1);
        CHECK(tiles ? side == 20 : side > 40 && side < 916);
        CHECK_EQ_INT((int)ffu_json_len(ffu_json_get(im, "faces")), 0);
        ffu_json_free(j);
    }
    /* no face: the text form says why it may have missed them, once a run */
    run(&r, (const char *[]){"detect", dogs, dogs, NULL});
    CHECK_EQ_INT(r.code, 0);
    CHECK_EQ_INT(count_of(r.err, "no face found"), 1);
    CHECK(strstr(r.err, "--min-face 20"));
}

/* --draw writes the photo with its boxes: same size, and not the same pixels. */
static void test_detect_draw(void)
{
    if (!have_data()) TEST_SKIP("needs ../shared data and the default models");
    char out[] = "/tmp/ffu_cliface_XXXXXX.png";
    int fd = mkstemps(out, 4);
    CHECK(fd >= 0);
    close(fd);
    run(&r, (const char *[]){"detect", obama, "--draw", out, NULL});
    CHECK_EQ_INT(r.code, 0);
    ffu_image a = {0}, b = {0};
    int ok = ffu_image_load(obama, FFU_PIX_RGB24, &a) == FFU_OK &&
             ffu_image_load(out, FFU_PIX_RGB24, &b) == FFU_OK && a.width == b.width &&
             a.height == b.height;
    size_t differ = 0;
    for (int y = 0; ok && y < a.height; y++)
        differ += memcmp(a.data[0] + (size_t)y * a.stride[0], b.data[0] + (size_t)y * b.stride[0],
                         (size_t)a.width * 3) != 0;
    ffu_image_release(&a);
    ffu_image_release(&b);
    remove(out);
    CHECK(ok);
    CHECK(differ > 10); /* a box's rows changed, not the whole photo re-encoded only */
}

/* A folder given as input stands for its images in name order (hidden files, other
 * files and sub-folders left out); --draw then writes into a folder even for one
 * image; a folder without images is an error naming it, exit 4. */
/* A JSON box [x, y, w, h] into b (NAN where absent); 1 when it has four numbers. */
static int read_box(const ffu_json *box, double b[4])
{
    for (int k = 0; k < 4; k++)
        b[k] = ffu_json_number(ffu_json_at(box, (size_t)k), NAN);
    return ffu_json_len(box) == 4;
}

/* The first face's box of image i in detect's JSON (r.out), into b; 0 when absent. */
static int first_box(const ffu_json *j, size_t i, double b[4])
{
    const ffu_json *faces = ffu_json_get(ffu_json_at(ffu_json_get(j, "images"), i), "faces");
    return read_box(ffu_json_get(ffu_json_at(faces, 0), "box"), b);
}

static void test_detect_folder(void)
{
    if (!have_data()) TEST_SKIP("needs ../shared data and the default models");
    char dir[] = "/tmp/ffu_clidir_XXXXXX", drawn[] = "/tmp/ffu_clidraw_XXXXXX", p[4200];
    CHECK(mkdtemp(dir) && mkdtemp(drawn));
    const char *links[][2] = {
        {people, "a.JPG"}, {obama, "b.jpg"}, {biden, ".c.jpg"}, {obama2, "sub/d.jpg"}};
    snprintf(p, sizeof p, "%s/sub", dir);
    CHECK_EQ_INT(mkdir(p, 0700), 0);
    int ok = 1;
    for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, links[i][1]);
        ok &= symlink(links[i][0], p) == 0;
    }
    snprintf(p, sizeof p, "%s/notes.txt", dir);
    FILE *f = fopen(p, "w");
    ok &= f && fputs("not an image\n", f) >= 0;
    if (f) fclose(f);
    /* Biden's photo as a WebP, the format photos saved from the web often have. */
    ffu_image img = {0};
    snprintf(p, sizeof p, "%s/c.webp", dir);
    ok &= ffu_image_load(biden, FFU_PIX_RGB24, &img) == FFU_OK &&
          ffu_image_save(p, &img, 0) == FFU_OK;
    ffu_image_release(&img);
    CHECK(ok);

    run(&r, (const char *[]){"detect", dir, obama2, biden, "--json", NULL});
    CHECK_EQ_INT(r.code, 0);
    ffu_json *j = parse_out();
    CHECK(j);
    const ffu_json *imgs = ffu_json_get(j, "images");
    char want[5][4200];
    snprintf(want[0], sizeof want[0], "%s/a.JPG", dir);
    snprintf(want[1], sizeof want[1], "%s/b.jpg", dir);
    snprintf(want[2], sizeof want[2], "%s/c.webp", dir);
    snprintf(want[3], sizeof want[3], "%s", obama2);
    snprintf(want[4], sizeof want[4], "%s", biden);
    const int faces[5] = {2, 1, 1, 1, 1};
    ok = ffu_json_len(imgs) == 5;
    for (size_t i = 0; ok && i < 5; i++) {
        const char *path = ffu_json_string(ffu_json_get(ffu_json_at(imgs, i), "path"));
        ok = path && !strcmp(path, want[i]) &&
             (int)ffu_json_len(ffu_json_get(ffu_json_at(imgs, i), "faces")) == faces[i];
    }
    /* The WebP's face is where the JPEG's is, to a pixel or two of compression. */
    double bw[4], bj[4];
    ok = ok && first_box(j, 2, bw) && first_box(j, 4, bj);
    for (int k = 0; ok && k < 4; k++)
        ok = fabs(bw[k] - bj[k]) < 3;
    if (!ok) fprintf(stderr, "detect DIR: %.1200s\n", r.out);
    ffu_json_free(j);
    CHECK(ok);

    snprintf(p, sizeof p, "%s/sub", dir);
    run(&r, (const char *[]){"detect", p, "--draw", drawn, "-q", NULL});
    CHECK_EQ_INT(r.code, 0);
    snprintf(p, sizeof p, "%s/d.jpg", drawn);
    CHECK_EQ_INT(ffu_image_load(p, FFU_PIX_RGB24, &img), FFU_OK);
    ffu_image_release(&img);
    remove(p);

    run(&r, (const char *[]){"detect", drawn, NULL}); /* empty now */
    CHECK_EQ_INT(r.code, 4);
    CHECK_EQ_INT(count_of(r.err, drawn), 1);
    CHECK(strstr(r.err, "no .jpg"));

    for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, links[i][1]);
        remove(p);
    }
    static const char *files[] = {"notes.txt", "c.webp"};
    for (int i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        remove(p);
    }
    snprintf(p, sizeof p, "%s/sub", dir);
    rmdir(p);
    rmdir(dir);
    rmdir(drawn);
}

/* compare's decision follows identity, and equals the cosine of embed's vectors. */
static void test_compare_and_embed(void)
{
    if (!have_data()) TEST_SKIP("needs ../shared data and the default models");
    double sim[2], thr[2];
    const char *other[2] = {obama2, biden};
    for (int k = 0; k < 2; k++) {
        run(&r, (const char *[]){"compare", obama, other[k], "--json", NULL});
        CHECK_EQ_INT(r.code, 0);
        ffu_json *j = parse_out();
        CHECK(j);
        sim[k] = ffu_json_number(ffu_json_get(j, "similarity"), NAN);
        thr[k] = ffu_json_number(ffu_json_get(j, "threshold"), NAN);
        int same = ffu_json_bool(ffu_json_get(j, "same"), -1);
        int found = (int)ffu_json_int(ffu_json_get(ffu_json_get(j, "b"), "faces_found"), -1);
        ffu_json_free(j);
        CHECK_EQ_INT(same, k == 0); /* obama2 is Obama, biden is not */
        CHECK_EQ_INT(same, sim[k] >= thr[k]);
        CHECK_EQ_INT(found, 1);
    }
    CHECK(sim[0] > sim[1]);

    double e[2][1024];
    int dim[2] = {0, 0};
    const char *photos[2] = {obama, obama2};
    for (int k = 0; k < 2; k++) {
        run(&r, (const char *[]){"embed", photos[k], "--json", NULL});
        CHECK_EQ_INT(r.code, 0);
        ffu_json *j = parse_out();
        CHECK(j);
        const ffu_json *face = ffu_json_get(j, "face"), *v = ffu_json_get(face, "embedding");
        dim[k] = (int)ffu_json_len(v);
        for (int i = 0; i < dim[k] && i < 1024; i++)
            e[k][i] = ffu_json_number(ffu_json_at(v, (size_t)i), NAN);
        int ok = face_ok(face, 100000, 100000) &&
                 ffu_json_int(ffu_json_get(j, "faces_found"), -1) == 1 &&
                 ffu_json_string(ffu_json_get(j, "embedder"));
        ffu_json_free(j);
        CHECK(ok);
    }
    CHECK(dim[0] >= 64 && dim[0] <= 1024 && dim[0] == dim[1]);
    double dot = 0, n0 = 0, n1 = 0;
    for (int i = 0; i < dim[0]; i++) {
        dot += e[0][i] * e[1][i];
        n0 += e[0][i] * e[0][i];
        n1 += e[1][i] * e[1][i];
    }
    /* compare prints 4 decimals; embed's vectors are the same ones */
    CHECK_NEAR(dot / sqrt(n0 * n1), sim[0], 2e-4);
}

/* An embedding array as ffu_face_write_json prints it, into e (up to 1024 values). */
static int read_embedding(const ffu_json *face, double *e)
{
    const ffu_json *v = ffu_json_get(face, "embedding");
    int n = (int)ffu_json_len(v);
    for (int i = 0; i < n && i < 1024; i++)
        e[i] = ffu_json_number(ffu_json_at(v, (size_t)i), NAN);
    return n;
}

/* --all: two_people.jpg holds Obama (left) and Biden (right, the larger face). Plain
 * compare against obama.jpg takes Biden and says "different"; --all finds Obama in it,
 * lists both pairs most similar first and both faces left to right. embed --all gives
 * both faces, the right one's vector being plain embed's. */
static void test_all_faces(void)
{
    if (!have_data()) TEST_SKIP("needs ../shared data and the default models");
    run(&r, (const char *[]){"compare", people, obama, "--json", NULL});
    CHECK_EQ_INT(r.code, 0);
    ffu_json *j = parse_out();
    CHECK(j);
    CHECK_EQ_INT(ffu_json_bool(ffu_json_get(j, "same"), -1), 0);
    ffu_json_free(j);

    run(&r, (const char *[]){"compare", people, obama, "--all", "--json", NULL});
    CHECK_EQ_INT(r.code, 0);
    CHECK(!strstr(r.err, "using the largest"));
    j = parse_out();
    CHECK(j);
    const ffu_json *pairs = ffu_json_get(j, "pairs"), *a = ffu_json_get(j, "a");
    const ffu_json *boxes = ffu_json_get(a, "boxes");
    CHECK_EQ_INT((int)ffu_json_len(pairs), 2);
    CHECK_EQ_INT((int)ffu_json_len(boxes), 2);
    CHECK_EQ_INT((int)ffu_json_len(ffu_json_get(ffu_json_get(j, "b"), "boxes")), 1);
    CHECK_EQ_INT(ffu_json_bool(ffu_json_get(j, "same"), -1), 1);
    double best = ffu_json_number(ffu_json_get(j, "similarity"), NAN);
    const ffu_json *p0 = ffu_json_at(pairs, 0), *p1 = ffu_json_at(pairs, 1);
    CHECK_EQ_INT((int)ffu_json_int(ffu_json_get(p0, "a"), -1), 0); /* Obama, on the left */
    CHECK_EQ_INT(ffu_json_bool(ffu_json_get(p0, "same"), -1), 1);
    CHECK_EQ_INT((int)ffu_json_int(ffu_json_get(p1, "a"), -1), 1);
    CHECK_EQ_INT(ffu_json_bool(ffu_json_get(p1, "same"), -1), 0);
    CHECK(best == ffu_json_number(ffu_json_get(p0, "similarity"), NAN));
    CHECK(best > ffu_json_number(ffu_json_get(p1, "similarity"), NAN));
    double b0[4], b1[4], chosen[4];
    CHECK(read_box(ffu_json_at(boxes, 0), b0) && read_box(ffu_json_at(boxes, 1), b1) &&
          read_box(ffu_json_get(a, "box"), chosen));
    CHECK(b0[0] + b0[2] / 2 < b1[0] + b1[2] / 2);
    CHECK(chosen[0] == b0[0] && chosen[2] == b0[2]); /* a's box: the best pair's face */
    ffu_json_free(j);

    static double all[2][1024], one[1024];
    int dim[2] = {0, 0}, dim1 = 0;
    double x[2] = {NAN, NAN};
    run(&r, (const char *[]){"embed", people, "--all", "--json", NULL});
    CHECK_EQ_INT(r.code, 0);
    j = parse_out();
    CHECK(j);
    const ffu_json *faces = ffu_json_get(j, "faces");
    CHECK_EQ_INT((int)ffu_json_len(faces), 2);
    CHECK(!ffu_json_get(j, "face"));
    for (int k = 0; k < 2 && k < (int)ffu_json_len(faces); k++) {
        const ffu_json *f = ffu_json_at(faces, (size_t)k);
        CHECK(face_ok(f, 100000, 100000));
        dim[k] = read_embedding(f, all[k]);
        x[k] = ffu_json_number(ffu_json_at(ffu_json_get(f, "box"), 0), NAN);
    }
    ffu_json_free(j);
    CHECK(x[0] < x[1]);
    run(&r, (const char *[]){"embed", people, "--json", NULL});
    CHECK_EQ_INT(r.code, 0);
    j = parse_out();
    CHECK(j);
    dim1 = read_embedding(ffu_json_get(j, "face"), one);
    ffu_json_free(j);
    CHECK(dim1 >= 64 && dim[0] == dim1 && dim[1] == dim1);
    double worst = 0;
    for (int i = 0; i < dim1 && i < 1024; i++)
        worst = fmax(worst, fabs(all[1][i] - one[i]));
    CHECK(worst < 1e-5); /* the same face, batched with another */

    /* still an error when an image has no face */
    run(&r, (const char *[]){"compare", people, dogs, "--all", NULL});
    CHECK_EQ_INT(r.code, 3);
    CHECK(strstr(r.err, "no face"));
}

/* What a terminal shows of one line of terminal output: the text after its last
 * carriage return, less an erase-line sequence there; into buf. */
static const char *visible(const char *line, size_t len, char *buf, size_t cap)
{
    while (len && line[len - 1] == '\r')
        len--;
    const char *start = line;
    for (size_t i = 0; i < len; i++)
        if (line[i] == '\r') start = line + i + 1;
    len -= (size_t)(start - line);
    if (len >= 3 && !memcmp(start, "\033[K", 3)) start += 3, len -= 3;
    if (len >= cap) len = cap - 1;
    memcpy(buf, start, len);
    buf[len] = 0;
    return buf;
}

/* Counts the lines a terminal ends up showing with `marker`; *mixed gets those that
 * also show a progress bar (`bar`), i.e. text written after the bar on its line. */
static int shown_lines(const char *out, const char *marker, const char *bar, int *mixed)
{
    int n = 0;
    *mixed = 0;
    for (const char *p = out; *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char buf[2048];
        const char *v = visible(p, len, buf, sizeof buf);
        if (strstr(v, marker)) {
            n++;
            if (strstr(v, bar)) ++*mixed;
        }
        p += len + (e != NULL);
    }
    return n;
}

/* On a terminal, progress bars (detect over a folder, enroll) never share a line with
 * what else is printed: per-image results, an unreadable file's error, the library's
 * warning about a photo without a face. Before, each result line began after the bar's
 * text ("detect [###...] 1/12 ... ETA 2s photo.jpg: 1 face"). */
static void test_progress_on_terminal(void)
{
    if (!have_data()) TEST_SKIP("needs ../shared data and the default models");
    char dir[] = "/tmp/ffu_cli_bar_XXXXXX", p[128], bad[128];
    CHECK(mkdtemp(dir) != NULL);
    const char *photos[] = {obama, obama2, biden, people, dogs};
    for (int i = 0; i < 5; i++) {
        snprintf(p, sizeof p, "%s/p%d.jpg", dir, i);
        CHECK(symlink(photos[i], p) == 0);
    }
    snprintf(bad, sizeof bad, "%s/z-broken.jpg", dir);
    FILE *f = fopen(bad, "w");
    CHECK(f);
    if (f) fputs("not a picture", f), fclose(f);

    int mixed = -1;
    run_on_terminal(&r, (const char *[]){"detect", dir, NULL});
    CHECK_EQ_INT(r.code, 3); /* the broken file, at the end */
    CHECK(strstr(r.out, "detect [") != NULL);
    /* "p0.jpg: 1 face" ... "p4.jpg: 0 faces", the hint "...p4.jpg: no face found (...)"
     * and "...z-broken.jpg: not a JPEG..." */
    CHECK_EQ_INT(shown_lines(r.out, "jpg: ", "detect [", &mixed), 7);
    CHECK_EQ_INT(mixed, 0);
    CHECK_EQ_INT(shown_lines(r.out, "facefuse detect: ", "detect [", &mixed), 2);
    CHECK_EQ_INT(mixed, 0);
    run_on_terminal(&r, (const char *[]){"detect", dir, "--json", NULL});
    CHECK_EQ_INT(shown_lines(r.out, "facefuse detect: ", "detect [", &mixed), 1);
    CHECK_EQ_INT(mixed, 0);

    /* enroll: one person, five photos, dogs.jpg without a face (a logged warning) */
    char people_dir[64], out[64];
    snprintf(people_dir, sizeof people_dir, "%s/people", dir);
    snprintf(p, sizeof p, "%s/someone", people_dir);
    CHECK(mkdir(people_dir, 0755) == 0 && mkdir(p, 0755) == 0);
    for (int i = 0; i < 5; i++) {
        char q[256];
        snprintf(q, sizeof q, "%s/p%d.jpg", p, i);
        CHECK(symlink(photos[i], q) == 0);
    }
    snprintf(out, sizeof out, "%s/g.ffgl", dir);
    run_on_terminal(&r, (const char *[]){"enroll", people_dir, "-o", out, NULL});
    CHECK_EQ_INT(r.code, 0);
    CHECK(strstr(r.out, "enroll [") != NULL);
    CHECK(strstr(r.out, "5/5 100.0%") != NULL);
    CHECK_EQ_INT(shown_lines(r.out, "no face found", "enroll [", &mixed), 1);
    CHECK_EQ_INT(mixed, 0);
    if (r.code != 0 || mixed) fprintf(stderr, "%s\n", r.out);

    for (int i = 0; i < 5; i++) {
        snprintf(p, sizeof p, "%s/p%d.jpg", dir, i);
        unlink(p);
        snprintf(p, sizeof p, "%s/people/someone/p%d.jpg", dir, i);
        unlink(p);
    }
    snprintf(p, sizeof p, "%s/people/someone", dir);
    rmdir(p);
    rmdir(people_dir);
    unlink(bad);
    unlink(out);
    rmdir(dir);
}

static void test_errors(void)
{
    if (!have_data()) TEST_SKIP("needs ../shared data and the default models");
    /* several faces: the largest is used, and stderr says so */
    run(&r, (const char *[]){"compare", obama, two, NULL});
    CHECK_EQ_INT(r.code, 0);
    CHECK(strstr(r.err, "2 faces") && strstr(r.err, "largest"));
    CHECK(strstr(r.out, "similarity"));

    /* no face: exit 3 (data), the file named, a hint */
    run(&r, (const char *[]){"embed", dogs, NULL});
    CHECK_EQ_INT(r.code, 3);
    CHECK(strstr(r.err, dogs) && strstr(r.err, "no face"));
    CHECK(strstr(r.err, "--min-face 20")); /* the whole-frame view misses small faces */
    run(&r, (const char *[]){"embed", dogs, "--min-face", "20", NULL});
    CHECK_EQ_INT(r.code, 3);
    CHECK(strstr(r.err, "no face") && !strstr(r.err, "--min-face"));

    /* not an image: exit 3, the path named once; detect goes on with the next file */
    char bad[] = "/tmp/ffu_cliface_XXXXXX.jpg";
    CHECK(write_bad_file(bad));
    const char *const *cases[] = {
        (const char *[]){"embed", bad, NULL},
        (const char *[]){"compare", obama, bad, NULL},
        (const char *[]){"detect", bad, obama, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run(&r, cases[i]);
        if (r.code != 3 || count_of(r.err, bad) != 1 || !strstr(r.err, "not a JPEG, PNG or WebP")) {
            fprintf(stderr, "%s: exit %d, stderr: %s", cases[i][0], r.code, r.err);
            remove(bad);
            CHECK(0);
        }
    }
    CHECK(strstr(r.out, "1 face")); /* detect reported the good photo after the bad one */
    run(&r, (const char *[]){"detect", bad, "--json", NULL});
    remove(bad);
    CHECK_EQ_INT(r.code, 3);
    ffu_json *j = parse_out();
    CHECK(j);
    const char *err = ffu_json_string(ffu_json_get(ffu_json_at(ffu_json_get(j, "images"), 0), "error"));
    int ok = err && count_of(err, bad) == 1;
    ffu_json_free(j);
    CHECK(ok);

    /* a missing file: exit 4; with --json also an error object on stdout */
    run(&r, (const char *[]){"compare", obama, "/nonexistent/face.jpg", NULL});
    CHECK_EQ_INT(r.code, 4);
    CHECK_EQ_INT(count_of(r.err, "/nonexistent/face.jpg"), 1);
    run(&r, (const char *[]){"compare", obama, "/nonexistent/face.jpg", "--json", NULL});
    CHECK_EQ_INT(r.code, 4);
    j = parse_out();
    int json_err = j && !ffu_json_bool(ffu_json_get(j, "ok"), 1) &&
                   ffu_json_int(ffu_json_get(j, "exit_code"), 0) == 4;
    ffu_json_free(j);
    CHECK(json_err);
    /* usage errors: exit 2 */
    run(&r, (const char *[]){"compare", obama, NULL});
    CHECK_EQ_INT(r.code, 2);
    run(&r, (const char *[]){"detect", obama, "--min-score", "2", NULL});
    CHECK_EQ_INT(r.code, 2);

    /* an unknown detector among several for `eval wider`: exit 4 before any row (no
     * table header on stdout), the name in one error line */
    char wider[4096];
    if (test_shared_path("data/widerface", wider, sizeof wider)) {
        run(&r, (const char *[]){"eval", "wider", "--detector", "blazeface,nosuch", NULL});
        CHECK_EQ_INT(r.code, 4);
        CHECK_EQ_INT((int)strlen(r.out), 0);
        CHECK_EQ_INT(count_of(r.err, "nosuch"), 1);
        /* the operating point a user gets: the zoo threshold, and precision / recall of
         * the detections at or above it */
        run(&r, (const char *[]){"eval", "wider", "--detector", "blazeface", "--limit", "20",
                                 "--json", NULL});
        CHECK_EQ_INT(r.code, 0);
        ffu_json *wj = parse_out();
        const ffu_json *d0 = ffu_json_at(ffu_json_get(wj, "detectors"), 0);
        double p = ffu_json_number(ffu_json_get(d0, "default_precision"), -1),
               rec = ffu_json_number(ffu_json_get(d0, "default_recall"), -1);
        CHECK_NEAR(ffu_json_number(ffu_json_get(d0, "default_score"), -1), 0.75, 1e-12);
        CHECK(p > 0.5 && p <= 1);
        CHECK(rec > 0 && rec <= 1);
        ffu_json_free(wj);

        /* --detections: boxes made elsewhere, scored by the same code. The first three
         * images' own ground truth scores AP 1 on the three images; a name the ground
         * truth lacks is exit 3, the file named */
        wider_gt *gt = NULL;
        char dets[] = "/tmp/ffu_cli_dets_XXXXXX";
        int fd = mkstemp(dets);
        CHECK(fd >= 0 && wider_gt_load(wider, &gt) == FFU_OK && gt->count >= 3);
        FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
        int total = 0;
        for (int i = 0; f && gt && i < 3; i++) {
            const wider_image *im = &gt->images[i];
            fprintf(f, "%s\n%d\n", im->name, im->nfaces);
            for (int k = 0; k < im->nfaces; k++, total++)
                fprintf(f, "%g %g %g %g %g\n", im->faces[k].x, im->faces[k].y, im->faces[k].w,
                        im->faces[k].h, 1.0 - 0.001 * k);
        }
        if (f) fclose(f);
        run(&r, (const char *[]){"eval", "wider", "--detections", dets, "--limit", "3", "--json",
                                 NULL});
        CHECK_EQ_INT(r.code, 0);
        wj = parse_out();
        d0 = ffu_json_at(ffu_json_get(wj, "detectors"), 0);
        CHECK_NEAR(ffu_json_number(ffu_json_get(d0, "ap_hard"), -1), 1.0, 1e-9);
        CHECK_EQ_INT((int)ffu_json_int(ffu_json_get(d0, "detections"), -1), total);
        CHECK(ffu_json_get(d0, "default_score") == NULL); /* no threshold of ours */
        CHECK_STR(ffu_json_string(ffu_json_get(d0, "detector")), dets);
        ffu_json_free(wj);
        f = fopen(dets, "w");
        if (f) fputs("no--Event/nothing.jpg\n0\n", f), fclose(f);
        run(&r, (const char *[]){"eval", "wider", "--detections", dets, NULL});
        CHECK_EQ_INT(r.code, 3);
        CHECK(strstr(r.err, dets) != NULL && strstr(r.err, "not an image") != NULL);
        run(&r, (const char *[]){"eval", "wider", "--detections", dets, "-d", "blazeface", NULL});
        CHECK_EQ_INT(r.code, 2); /* one or the other */
        unlink(dets);
        wider_gt_free(gt);
    }
    char lfw[4096];
    if (test_shared_path("data/lfw", lfw, sizeof lfw)) {
        run(&r, (const char *[]){"eval", "lfw", "--embedder", "nosuch", NULL});
        CHECK_EQ_INT(r.code, 4);
        CHECK_EQ_INT((int)strlen(r.out), 0);
        /* --limit N takes N pairs spread over the list: every fold keeps both classes
         * (the first N would be one fold's same pairs), and too few is a usage error */
        run(&r, (const char *[]){"eval", "lfw", "--limit", "5", NULL});
        CHECK_EQ_INT(r.code, 2);
        CHECK(strstr(r.err, "--limit 5") != NULL);
        run(&r, (const char *[]){"eval", "lfw", "--limit", "10", "--json", NULL});
        CHECK_EQ_INT(r.code, 0);
        ffu_json *lj = parse_out();
        const ffu_json *e0 = ffu_json_at(ffu_json_get(lj, "embedders"), 0);
        CHECK_EQ_INT((int)ffu_json_int(ffu_json_get(lj, "pairs"), -1), 10);
        CHECK(e0 && ffu_json_get(e0, "accuracy_mean") != NULL);
        ffu_json_free(lj);
        /* eval rotations: 6 photos turned four ways; every one found and (with the
         * referee) its rotation right: the default detector got obama.jpg's wrong in
         * every turn, and 57 of 1200 LFW turns, before it */
        run(&r, (const char *[]){"eval", "rotations", "--limit", "6", "--json", NULL});
        CHECK_EQ_INT(r.code, 0);
        ffu_json *rj = parse_out();
        const ffu_json *d0 = ffu_json_at(ffu_json_get(rj, "detectors"), 0);
        int images = (int)ffu_json_int(ffu_json_get(rj, "images"), -1);
        int right = (int)ffu_json_int(ffu_json_get(d0, "right"), -1);
        int wrong = (int)ffu_json_int(ffu_json_get(d0, "wrong_rotation"), -1);
        int missed = (int)ffu_json_int(ffu_json_get(d0, "not_found"), -1);
        ffu_json_free(rj);
        CHECK_EQ_INT(images, 6);
        CHECK_EQ_INT(right + wrong + missed, 24);
        CHECK(right >= 23);
        /* eval small-faces: 24 LFW faces, one frame per size; with the default --min-face
         * (20) most faces of 20 px and up are found, without tiles none of 20 px (the
         * background, dogs.jpg, is one of the photos this test needs) */
        run(&r, (const char *[]){"eval", "small-faces", "--limit", "24", "--json", NULL});
        CHECK_EQ_INT(r.code, 0);
        ffu_json *sj = parse_out();
        CHECK_EQ_INT((int)ffu_json_int(ffu_json_get(sj, "min_face"), -1), 20);
        const ffu_json *s0 = ffu_json_at(ffu_json_get(sj, "detectors"), 0);
        int faces = (int)ffu_json_int(ffu_json_get(s0, "faces"), -1);
        CHECK(faces >= 20 && faces <= 24);
        const ffu_json *sizes = ffu_json_get(s0, "sizes");
        CHECK(ffu_json_at(sizes, 5) != NULL && ffu_json_at(sizes, 6) == NULL);
        const ffu_json *z20 = ffu_json_at(sizes, 2);
        CHECK_EQ_INT((int)ffu_json_int(ffu_json_get(z20, "side_px"), -1), 20);
        int found20 = (int)ffu_json_int(ffu_json_get(z20, "found"), -1);
        CHECK(found20 >= faces * 7 / 10);
        CHECK((int)ffu_json_int(ffu_json_get(ffu_json_at(sizes, 5), "found"), -1) >=
              faces * 9 / 10);
        ffu_json_free(sj);
        run(&r, (const char *[]){"eval", "small-faces", "--limit", "24", "--min-face", "0",
                                 "--json", NULL});
        CHECK_EQ_INT(r.code, 0);
        sj = parse_out();
        s0 = ffu_json_at(ffu_json_get(sj, "detectors"), 0);
        z20 = ffu_json_at(ffu_json_get(s0, "sizes"), 2);
        CHECK_EQ_INT((int)ffu_json_int(ffu_json_get(z20, "found"), -1), 0);
        ffu_json_free(sj);
    }
    /* eval liveness: one image is one class, a usage error; --limit 2 takes a live and
     * a spoof image (the list is sorted by class); a list of live faces only is refused
     * with a reason instead of printing NaN rates */
    char nuaa[4096];
    if (test_shared_path("data/antispoof_nuaa", nuaa, sizeof nuaa)) {
        run(&r, (const char *[]){"eval", "liveness", "--limit", "1", NULL});
        CHECK_EQ_INT(r.code, 2);
        CHECK_EQ_INT((int)strlen(r.out), 0);
        run(&r, (const char *[]){"eval", "liveness", "--limit", "2", "--json", NULL});
        CHECK_EQ_INT(r.code, 0);
        ffu_json *vj = parse_out();
        CHECK_EQ_INT((int)ffu_json_int(ffu_json_get(vj, "live"), -1), 1);
        CHECK_EQ_INT((int)ffu_json_int(ffu_json_get(vj, "spoof"), -1), 1);
        ffu_json_free(vj);
        char dir[] = "/tmp/ffu_cliface_nuaa_XXXXXX", csv[64], img[4200];
        CHECK(mkdtemp(dir) != NULL);
        snprintf(csv, sizeof csv, "%s/labels.csv", dir);
        snprintf(img, sizeof img, "%s/ClientRaw/0007/0007_01_05_03_10.jpg", nuaa);
        /* rows name images under the data folder: "root" links to / */
        char link[128];
        snprintf(link, sizeof link, "%s/root", dir);
        CHECK(symlink("/", link) == 0);
        FILE *f = fopen(csv, "w");
        CHECK(f != NULL);
        if (f) {
            fprintf(f, "path,label\nroot%s,1\nroot%s,1\n", img, img);
            fclose(f);
        }
        run(&r, (const char *[]){"eval", "liveness", "--data", dir, NULL});
        CHECK_EQ_INT(r.code, 3);
        CHECK(strstr(r.err, "all live") != NULL && strstr(r.out, "nan") == NULL);
        remove(link);
        remove(csv);
        rmdir(dir);
    }
}

/* enroll the kNN training photos (a folder per person), then identify two other photos
 * after a bad file: the bad one is reported, the others still named, exit 3. */
static void test_enroll_identify(void)
{
    if (!have_data()) TEST_SKIP("needs ../shared data and the default models");
    char gal[] = "/tmp/ffu_cliface_XXXXXX.ffgl", bad[] = "/tmp/ffu_cliface_XXXXXX.jpg";
    int fd = mkstemps(gal, 5);
    CHECK(fd >= 0);
    close(fd);
    /* an output that cannot be written is refused before any photo is enrolled */
    run(&r, (const char *[]){"enroll", train, "-o", "/nonexistent/dir/g.ffgl", NULL});
    CHECK_EQ_INT(r.code, 4);
    CHECK_EQ_INT((int)strlen(r.out), 0);
    CHECK(strstr(r.err, "enrolled") == NULL && strstr(r.err, "--output") != NULL);
    /* nor does a gallery replace a photo (one of those enrolled, named by a slip): it did */
    char photo[] = "/tmp/ffu_cliface_XXXXXX.jpg";
    size_t n = 0, m = 0;
    uint8_t *jpeg = test_read_all(obama, &n), *after = NULL;
    fd = mkstemps(photo, 4);
    CHECK(jpeg && fd >= 0 && close(fd) == 0 && test_write_file(photo, jpeg, n) == 0);
    run(&r, (const char *[]){"enroll", train, "-o", photo, NULL});
    CHECK_EQ_INT(r.code, 2);
    CHECK(strstr(r.err, "is an image") != NULL && strstr(r.err, "enrolled") == NULL);
    CHECK((after = test_read_all(photo, &m)) && m == n && !memcmp(after, jpeg, n));
    remove(photo);
    free(jpeg), free(after);
    run(&r, (const char *[]){"enroll", train, "-o", gal, NULL});
    CHECK_EQ_INT(r.code, 0);
    CHECK(strstr(r.out, "5 identities"));
    CHECK(write_bad_file(bad));
    /* a photo without a face: its line says so, and why faces may have been missed */
    run(&r, (const char *[]){"identify", "--gallery", gal, dogs, NULL});
    CHECK_EQ_INT(r.code, 0);
    CHECK(strstr(r.out, "no face (faces under") && strstr(r.out, "--min-face 20"));
    run(&r, (const char *[]){"identify", "--gallery", gal, bad, people, obama, "--json", NULL});
    remove(gal);
    remove(bad);
    CHECK_EQ_INT(r.code, 3);
    CHECK_EQ_INT(count_of(r.err, bad), 1);
    ffu_json *j = parse_out();
    CHECK(j);
    const ffu_json *imgs = ffu_json_get(j, "images");
    const ffu_json *f2 = ffu_json_get(ffu_json_at(imgs, 1), "faces");
    const ffu_json *f3 = ffu_json_get(ffu_json_at(imgs, 2), "faces");
    /* two_people.jpg: Obama then Biden, left to right (identities.csv) */
    int left = ffu_json_number(ffu_json_at(ffu_json_get(ffu_json_at(f2, 0), "box"), 0), 0) <
                       ffu_json_number(ffu_json_at(ffu_json_get(ffu_json_at(f2, 1), "box"), 0), 0)
                   ? 0
                   : 1;
    const char *n0 = ffu_json_string(ffu_json_get(ffu_json_at(f2, (size_t)left), "identity"));
    const char *n1 = ffu_json_string(ffu_json_get(ffu_json_at(f2, (size_t)(1 - left)), "identity"));
    const char *n2 = ffu_json_string(ffu_json_get(ffu_json_at(f3, 0), "identity"));
    int ok = ffu_json_len(imgs) == 3 &&
             ffu_json_string(ffu_json_get(ffu_json_at(imgs, 0), "error")) &&
             ffu_json_len(f2) == 2 && ffu_json_len(f3) == 1 && n0 && n1 && n2 &&
             !strcmp(n0, "obama") && !strcmp(n1, "biden") && !strcmp(n2, "obama") &&
             ffu_json_number(ffu_json_get(ffu_json_at(imgs, 1), "min_face"), 0) > 0;
    if (!ok) fprintf(stderr, "identify: %.600s\n", r.out);
    ffu_json_free(j);
    CHECK(ok);
}

/* bench face times detection and the stages --with names, no others; a stage it does
 * not know is a usage error; --min-face reaches the detector. */
static void test_bench_face_stages(void)
{
    if (!have_data()) TEST_SKIP("needs ../shared data and the default models");
    run(&r, (const char *[]){"bench", "face", obama, "--size", "0x0", "--with", "landmarks,embed",
                             "--runs", "2", "--warmup", "0", "--json", NULL});
    CHECK_EQ_INT(r.code, 0);
    ffu_json *j = parse_out();
    CHECK(j);
    const ffu_json *med = ffu_json_get(j, "median_ms");
    double det = ffu_json_number(ffu_json_get(med, "detect"), -1);
    double lm = ffu_json_number(ffu_json_get(med, "landmarks"), -1);
    double emb = ffu_json_number(ffu_json_get(med, "embed"), -1);
    double sum = ffu_json_number(ffu_json_get(j, "sum_of_medians_ms"), -1);
    int only = ffu_json_len(med) == 3 && !ffu_json_get(med, "attributes") &&
               !ffu_json_get(med, "liveness") &&
               (int)ffu_json_int(ffu_json_get(j, "faces"), 0) == 1;
    int64_t ws_few = ffu_json_int(ffu_json_get(j, "workspace_bytes"), -1);
    /* the engine's FLOPs per stage: FaceMesh's two passes, the ensemble's two members
     * (over 0.9 GFLOP), BlazeFace's 0.38; "at peak" their time at the measured peak */
    const ffu_json *gf = ffu_json_get(j, "gflop"), *pk = ffu_json_get(j, "at_peak_ms");
    double gdet = ffu_json_number(ffu_json_get(gf, "detect"), -1);
    double glm = ffu_json_number(ffu_json_get(gf, "landmarks"), -1);
    double gemb = ffu_json_number(ffu_json_get(gf, "embed"), -1);
    double peak = ffu_json_number(ffu_json_get(j, "fma_peak_gflops"), -1);
    double pemb = ffu_json_number(ffu_json_get(pk, "embed"), -1);
    double ptot = ffu_json_number(ffu_json_get(pk, "total"), -1);
    CHECK(gdet > 0.3 && gdet < 0.5 && glm > 0.1 && glm < 0.2 && gemb > 0.9 && gemb < 1.1);
    CHECK(peak > 0 && fabs(pemb - 1e3 * gemb / peak) < 1e-6 * pemb);
    CHECK(fabs(ptot - 1e3 * (gdet + glm + gemb) / peak) < 1e-6 * ptot);
    ffu_json_free(j);
    CHECK(only);
    CHECK(det > 0 && lm > 0 && emb > 0 && fabs(sum - (det + lm + emb)) < 1e-6 * sum);
    /* the stages share one workspace: the largest stage's activations, which grow when
     * GEAR (the attributes) joins */
    run(&r, (const char *[]){"bench", "face", obama, "--size", "0x0", "--runs", "1", "--warmup",
                             "0", "--json", NULL});
    CHECK_EQ_INT(r.code, 0);
    j = parse_out();
    CHECK(j);
    int64_t ws_all = ffu_json_int(ffu_json_get(j, "workspace_bytes"), -1);
    ffu_json_free(j);
    CHECK(ws_few > ((int64_t)1 << 20) && ws_all > ws_few);
    run(&r, (const char *[]){"bench", "face", obama, "--with", "landmarks,ears", NULL});
    CHECK_EQ_INT(r.code, 2);
    CHECK(strstr(r.err, "ears"));
    /* --min-face reaches the detector: MTCNN's pyramid starts there, so from 40 px it
     * does under half the arithmetic it does from its own 20 */
    double g[2];
    for (int k = 0; k < 2; k++) {
        run(&r, (const char *[]){"bench", "face", obama, "--size", "0x0", "--detector", "mtcnn",
                                 "--min-face", k ? "40" : "0", "--with", "quality", "--runs",
                                 "1", "--warmup", "0", "--json", NULL});
        CHECK_EQ_INT(r.code, 0);
        j = parse_out();
        CHECK(j);
        g[k] = ffu_json_number(ffu_json_get(ffu_json_get(j, "gflop"), "detect"), -1);
        CHECK_EQ_INT((int)ffu_json_int(ffu_json_get(j, "min_face"), -1), k ? 40 : 0);
        CHECK_EQ_INT((int)ffu_json_int(ffu_json_get(j, "faces"), 0), 1);
        ffu_json_free(j);
    }
    CHECK(g[0] > 0 && g[1] > 0 && g[1] < 0.5 * g[0]);
}

TEST_MAIN(test_detect_json, test_detect_draw, test_detect_folder, test_compare_and_embed,
          test_all_faces, test_progress_on_terminal, test_errors, test_enroll_identify,
          test_bench_face_stages)
