/* gen_mesh: computes the mesh swapper's fixed triangulation and writes it as C source
 * (src/swap/mesh_tables.c). Why a generated table: the triangulation must be one fixed
 * list (frames of a video and threads must agree on it), and it should be our own,
 * reviewable and reproducible, not copied from another project.
 *
 * 1. FaceMesh-468 points of real faces: every --step-th frame of the single-person clips
 *    in data/videos and every photo of data/face_recognition_examples/examples (largest
 *    face, default detector and landmarker); faces turned more than --max-yaw degrees
 *    (yaw or pitch, from the mesh's depth) are left out.
 * 2. Generalised Procrustes: each face's 2-D points are fitted onto the running mean by
 *    a similarity (ffu_estimate_similarity), the mean recomputed, five rounds.
 * 3. The mean is scaled so the face oval is 10000 units wide and rounded to integers:
 *    the triangulation is computed from those integers, so anyone can recompute it from
 *    the committed layout exactly (test_swap_mesh does).
 * 4. mesh_triangulate: Delaunay with the oval, lip and eye contours as constraints,
 *    triangles outside the oval dropped.
 *
 * Usage: tools/swap_mesh/run [--step N] [--max-yaw DEG] (see run). */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "facefuse/face.h"
#include "facefuse/video.h"
#include "swap/mesh_internal.h"

typedef struct faces {
    float *xy; /* n x 468 x 2 */
    int n, cap;
    int from_video, from_photo;
} faces;

typedef struct gen {
    ffu_detector *det;
    ffu_landmarker *lm;
    ffu_face_list list;
    float max_yaw;
    long seen, turned;
    double z_nose, z_oval; /* depth sums: nose tip vs oval (sign check) */
} gen;

static int add_face(gen *g, faces *f, const ffu_image *img)
{
    if (ffu_detector_detect(g->det, img, &g->list) != FFU_OK || g->list.count == 0) return 0;
    int best = 0;
    for (int i = 1; i < g->list.count; i++)
        if (g->list.faces[i].box[2] * g->list.faces[i].box[3] >
            g->list.faces[best].box[2] * g->list.faces[best].box[3])
            best = i;
    ffu_face *face = &g->list.faces[best];
    if (ffu_landmarker_run(g->lm, img, face) != FFU_OK || face->num_landmarks < MESH_N) return 0;
    if (ffu_face_quality_compute(img, face) != FFU_OK) return 0;
    g->seen++;
    if (!(fabsf(face->quality.yaw) < g->max_yaw) || !(fabsf(face->quality.pitch) < g->max_yaw)) {
        g->turned++;
        return 0;
    }
    if (f->n == f->cap) {
        int cap = f->cap ? 2 * f->cap : 256;
        float *p = realloc(f->xy, (size_t)cap * MESH_N * 2 * sizeof *p);
        if (!p) return 0;
        f->xy = p;
        f->cap = cap;
    }
    float *dst = f->xy + (size_t)f->n * MESH_N * 2;
    for (int i = 0; i < MESH_N; i++) {
        dst[2 * i] = face->landmarks[3 * i];
        dst[2 * i + 1] = face->landmarks[3 * i + 1];
    }
    g->z_nose += face->landmarks[3 * 1 + 2];
    double zo = 0;
    for (int i = 0; i < MESH_OVAL_N; i++)
        zo += face->landmarks[3 * mesh_oval[i] + 2];
    g->z_oval += zo / MESH_OVAL_N;
    f->n++;
    return 1;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Sorted names in dir ending in one of the suffixes (so the run is reproducible). */
static int list_dir(const char *dir, const char *prefix, const char *const *suffixes, char ***out)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    char **names = NULL;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (prefix && strncmp(e->d_name, prefix, strlen(prefix)) != 0) continue;
        int ok = 0;
        for (int i = 0; suffixes[i]; i++) {
            size_t sl = strlen(suffixes[i]);
            ok |= len > sl && strcmp(e->d_name + len - sl, suffixes[i]) == 0;
        }
        if (!ok) continue;
        char **p = realloc(names, (size_t)(n + 1) * sizeof *names);
        if (!p) break;
        names = p;
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    *out = names;
    return n;
}

static void centre_scale(float *xy)
{
    /* centroid 0, oval width 1: keeps the iteration from drifting */
    double cx = 0, cy = 0;
    for (int i = 0; i < MESH_N; i++)
        cx += xy[2 * i], cy += xy[2 * i + 1];
    cx /= MESH_N, cy /= MESH_N;
    float x0 = 1e30f, x1 = -1e30f;
    for (int i = 0; i < MESH_OVAL_N; i++) {
        float x = xy[2 * mesh_oval[i]];
        x0 = x < x0 ? x : x0;
        x1 = x > x1 ? x : x1;
    }
    double s = 1.0 / (x1 - x0);
    for (int i = 0; i < MESH_N; i++) {
        xy[2 * i] = (float)((xy[2 * i] - cx) * s);
        xy[2 * i + 1] = (float)((xy[2 * i + 1] - cy) * s);
    }
}

int main(int argc, char **argv)
{
    const char *data = "../shared/data", *out_path = "src/swap/mesh_tables.c";
    int step = 3;
    float max_yaw = 8.0f;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--data") && i + 1 < argc)
            data = argv[++i];
        else if (!strcmp(argv[i], "--out") && i + 1 < argc)
            out_path = argv[++i];
        else if (!strcmp(argv[i], "--step") && i + 1 < argc)
            step = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--max-yaw") && i + 1 < argc)
            max_yaw = (float)atof(argv[++i]);
        else {
            fprintf(stderr,
                    "usage: gen_mesh [--data DIR] [--out PATH] [--step N] [--max-yaw DEG]\n");
            return 2;
        }
    }
    if (step < 1) step = 1;
    gen g = {.max_yaw = max_yaw};
    ffu_detector_opts dopt;
    ffu_detector_opts_default(&dopt);
    ffu_landmarker_opts lopt;
    ffu_landmarker_opts_default(&lopt);
    if (ffu_detector_create(&dopt, &g.det) || ffu_landmarker_create(&lopt, &g.lm)) {
        fprintf(stderr, "gen_mesh: %s\n", ffu_error_message());
        return 1;
    }
    faces f = {0};
    char path[2048], dir[1024];
    /* the talking-head and single-person clips */
    snprintf(dir, sizeof dir, "%s/videos", data);
    static const char *const mp4[] = {".mp4", NULL};
    char **names = NULL;
    int nv = list_dir(dir, NULL, mp4, &names);
    for (int v = 0; v < nv; v++) {
        if (strncmp(names[v], "liveportrait_", 13) != 0 && strncmp(names[v], "sadtalker_", 10) != 0)
            continue; /* the crowd and multi-person clips have small or many faces */
        snprintf(path, sizeof path, "%s/%s", dir, names[v]);
        ffu_video_reader *r;
        if (ffu_video_reader_open(&r, path, NULL) != FFU_OK) {
            fprintf(stderr, "gen_mesh: %s\n", ffu_error_message());
            continue;
        }
        ffu_image frame = {0};
        int before = f.n;
        for (long k = 0; ffu_video_reader_read(r, &frame, NULL) == FFU_OK; k++)
            if (k % step == 0) f.from_video += add_face(&g, &f, &frame);
        ffu_image_release(&frame);
        ffu_video_reader_close(r);
        fprintf(stderr, "%-48s %5d faces\n", names[v], f.n - before);
    }
    for (int v = 0; v < nv; v++)
        free(names[v]);
    free(names);
    /* the photos */
    snprintf(dir, sizeof dir, "%s/face_recognition_examples/examples", data);
    static const char *const img_ext[] = {".jpg", ".png", NULL};
    int np = list_dir(dir, NULL, img_ext, &names);
    for (int v = 0; v < np; v++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[v]);
        ffu_image img = {0};
        if (ffu_image_load(path, FFU_PIX_RGB24, &img) == FFU_OK)
            f.from_photo += add_face(&g, &f, &img);
        ffu_image_release(&img);
        free(names[v]);
    }
    free(names);
    fprintf(stderr,
            "faces: %ld seen, %ld turned > %.0f deg, %d kept (%d video frames, %d photos)\n",
            g.seen, g.turned, (double)max_yaw, f.n, f.from_video, f.from_photo);
    if (f.n < 10) {
        fprintf(stderr, "gen_mesh: too few faces (is %s there?)\n", data);
        return 1;
    }
    fprintf(stderr, "mean depth: nose tip %.2f, oval %.2f (smaller = nearer the camera)\n",
            g.z_nose / f.n, g.z_oval / f.n);

    /* generalised Procrustes */
    float mean[MESH_N * 2], tmp[MESH_N * 2];
    memcpy(mean, f.xy, sizeof mean);
    centre_scale(mean);
    for (int round = 0; round < 5; round++) {
        double acc[MESH_N * 2] = {0};
        for (int k = 0; k < f.n; k++) {
            const float *p = f.xy + (size_t)k * MESH_N * 2;
            double m[6];
            if (ffu_estimate_similarity(p, mean, MESH_N, m) != FFU_OK) return 1;
            for (int i = 0; i < MESH_N; i++) {
                float x, y;
                ffu_transform_point(m, p[2 * i], p[2 * i + 1], &x, &y);
                acc[2 * i] += x;
                acc[2 * i + 1] += y;
            }
        }
        for (int i = 0; i < MESH_N * 2; i++)
            tmp[i] = (float)(acc[i] / f.n);
        centre_scale(tmp);
        double moved = 0;
        for (int i = 0; i < MESH_N * 2; i++)
            moved = fmax(moved, fabs((double)tmp[i] - mean[i]));
        memcpy(mean, tmp, sizeof mean);
        fprintf(stderr, "procrustes round %d: largest change %.6f oval widths\n", round, moved);
    }

    /* integers: oval bounding box corner at 0, width 10000 */
    float x0 = 1e30f, y0 = 1e30f;
    for (int i = 0; i < MESH_OVAL_N; i++) {
        x0 = fminf(x0, mean[2 * mesh_oval[i]]);
        y0 = fminf(y0, mean[2 * mesh_oval[i] + 1]);
    }
    int16_t layout[MESH_N * 2];
    double xy[MESH_N * 2];
    for (int i = 0; i < MESH_N; i++) {
        long x = lround((mean[2 * i] - x0) * 10000.0), y = lround((mean[2 * i + 1] - y0) * 10000.0);
        if (x < -32000 || x > 32000 || y < -32000 || y > 32000) {
            fprintf(stderr, "gen_mesh: point %d out of range\n", i);
            return 1;
        }
        layout[2 * i] = (int16_t)x;
        layout[2 * i + 1] = (int16_t)y;
        xy[2 * i] = (double)x;
        xy[2 * i + 1] = (double)y;
    }
    mesh_ring rings[MESH_RINGS];
    mesh_rings(rings);
    int *tri = NULL, ntri = 0;
    if (mesh_triangulate(xy, MESH_N, rings, MESH_RINGS, &tri, &ntri) != FFU_OK) {
        fprintf(stderr, "gen_mesh: %s\n", ffu_error_message());
        return 1;
    }
    /* a triangulated polygon with b boundary and i interior points has 2i + b - 2 */
    int expect = 2 * (MESH_N - MESH_OVAL_N) + MESH_OVAL_N - 2;
    fprintf(stderr, "triangles: %d (a full triangulation of the oval has %d)\n", ntri, expect);

    FILE *o = fopen(out_path, "w");
    if (!o) {
        perror(out_path);
        return 1;
    }
    fprintf(
        o,
        "/* GENERATED by tools/swap_mesh (gen_mesh.c): do not edit; rerun tools/swap_mesh/run.\n"
        " * The mesh swapper's canonical face layout and fixed triangulation (see\n"
        " * mesh_internal.h and docs/SWAP.md). Layout: the generalised-Procrustes mean of\n"
        " * the FaceMesh points of %d near-frontal real faces (|yaw|, |pitch| < %.0f deg;\n"
        " * %d frames of ../shared/data/videos liveportrait_* and sadtalker_* clips,\n"
        " * one frame in %d, and %d photos of face_recognition_examples), in 1/10000 of the "
        "oval's\n"
        " * width. Triangles: mesh_triangulate over those integers, with the oval, lip and\n"
        " * eye contours as constraints, inside the oval only. */\n",
        f.n, (double)max_yaw, f.from_video, step, f.from_photo);
    fprintf(o, "#include \"mesh_internal.h\"\n\nconst int16_t mesh_layout[MESH_N * 2] = {\n");
    for (int i = 0; i < MESH_N; i++)
        fprintf(o, "%s%d, %d,%s", i % 6 == 0 ? "    " : " ", layout[2 * i], layout[2 * i + 1],
                i % 6 == 5 || i == MESH_N - 1 ? "\n" : "");
    fprintf(o, "};\n\nconst int mesh_tri_count = %d;\n\nconst int16_t mesh_tris[][3] = {\n", ntri);
    for (int i = 0; i < ntri; i++)
        fprintf(o, "%s{%d, %d, %d},%s", i % 5 == 0 ? "    " : " ", tri[3 * i], tri[3 * i + 1],
                tri[3 * i + 2], i % 5 == 4 || i == ntri - 1 ? "\n" : "");
    fprintf(o, "};\n");
    fclose(o);
    fprintf(stderr, "wrote %s\n", out_path);
    free(tri);
    free(f.xy);
    ffu_face_list_free(&g.list);
    ffu_landmarker_destroy(g.lm);
    ffu_detector_destroy(g.det);
    return 0;
}
