/* Readers for the landmark data the ERT test and benchmark share: dlib's imglab XML
 * (dlib_faces/ XML files named ..._with_face_landmarks.xml: image file, box top/left/width/height,
 * 68 parts) and 300-W .pts files (landmarks68/: 68 "x y" lines, optionally inside dlib's/iBUG's
 * "version / n_points / { }" wrapper), and the box rule used when only ground-truth points are
 * known. Header-only (static inline functions) for test and bench. */
#ifndef FFU_TESTS_ERT_DATA_H
#define FFU_TESTS_ERT_DATA_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ert_xml_face {
    char image[256]; /* file name relative to the XML's folder */
    long box[4];     /* left, top, width, height (dlib rectangle) */
    int nparts;
    float parts[2 * 68];
} ert_xml_face;

/* The value of attribute `name='...'` (or "...") in tag text [p, end); 0 when absent. */
static inline int ert_xml_attr(const char *p, const char *end, const char *name, char *out,
                               size_t len)
{
    size_t nl = strlen(name);
    for (const char *q = p; q + nl + 2 < end; q++) {
        if (strncmp(q, name, nl) || q[nl] != '=' || (q > p && q[-1] != ' ')) continue;
        char quote = q[nl + 1];
        const char *v = q + nl + 2, *e = memchr(v, quote, (size_t)(end - v));
        if (!e || (size_t)(e - v) >= len) return 0;
        memcpy(out, v, (size_t)(e - v));
        out[e - v] = 0;
        return 1;
    }
    return 0;
}

/* Reads up to max faces; returns the count or -1 when the file cannot be read. */
static inline int ert_xml_read(const char *path, ert_xml_face *faces, int max)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (!s || fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        fclose(f);
        return -1;
    }
    fclose(f);
    s[n] = 0;
    char image[256] = "", v[64];
    int count = 0;
    ert_xml_face *cur = NULL;
    for (char *p = strchr(s, '<'); p && count <= max; p = strchr(p + 1, '<')) {
        char *e = strchr(p, '>');
        if (!e) break;
        if (!strncmp(p, "<image ", 7)) {
            if (!ert_xml_attr(p, e, "file", image, sizeof image)) image[0] = 0;
        } else if (!strncmp(p, "<box ", 5)) {
            if (count == max) break;
            cur = &faces[count++];
            memset(cur, 0, sizeof *cur);
            snprintf(cur->image, sizeof cur->image, "%s", image);
            const char *keys[4] = {"left", "top", "width", "height"};
            for (int k = 0; k < 4; k++)
                if (ert_xml_attr(p, e, keys[k], v, sizeof v)) cur->box[k] = strtol(v, NULL, 10);
        } else if (!strncmp(p, "<part ", 6) && cur) {
            char x[32], y[32];
            if (ert_xml_attr(p, e, "name", v, sizeof v) && ert_xml_attr(p, e, "x", x, sizeof x) &&
                ert_xml_attr(p, e, "y", y, sizeof y)) {
                int i = atoi(v);
                if (i >= 0 && i < 68) {
                    cur->parts[2 * i] = strtof(x, NULL);
                    cur->parts[2 * i + 1] = strtof(y, NULL);
                    if (i + 1 > cur->nparts) cur->nparts = i + 1;
                }
            }
        }
    }
    free(s);
    return count;
}

/* 68 points from a .pts file; returns 0 on success. Lines that do not hold two numbers
 * (the optional header and braces) are skipped. */
static inline int ert_pts_read(const char *path, float *pts)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[256];
    int n = 0;
    while (n < 68 && fgets(line, sizeof line, f)) {
        float x, y;
        if (sscanf(line, "%f %f", &x, &y) == 2) {
            pts[2 * n] = x;
            pts[2 * n + 1] = y;
            n++;
        }
    }
    fclose(f);
    return n == 68 ? 0 : -1;
}

/* The box a detector like dlib's HOG one would give for these points: the square box
 * in which the model's mean shape (normalised box coordinates) fits the points best,
 * least squares over one scale and a shift (no rotation; HOG boxes are upright
 * squares), rounded to whole pixels. dlib maps normalised (0,0)..(1,1) to pixels
 * left..left+width-1, so width = scale + 1. */
static inline void ert_box_from_points(const float *mean, const float *pts, int n, float box[4])
{
    double mx = 0, my = 0, gx = 0, gy = 0, num = 0, den = 0;
    for (int i = 0; i < n; i++) {
        mx += mean[2 * i];
        my += mean[2 * i + 1];
        gx += pts[2 * i];
        gy += pts[2 * i + 1];
    }
    mx /= n, my /= n, gx /= n, gy /= n;
    for (int i = 0; i < n; i++) {
        double ax = mean[2 * i] - mx, ay = mean[2 * i + 1] - my;
        num += ax * (pts[2 * i] - gx) + ay * (pts[2 * i + 1] - gy);
        den += ax * ax + ay * ay;
    }
    double s = num / den;
    /* whole pixels, as a detector's rectangle */
    box[0] = (float)floor(gx - s * mx + 0.5);
    box[1] = (float)floor(gy - s * my + 0.5);
    box[2] = box[3] = (float)floor(s + 1 + 0.5);
}

/* Mean distance between corresponding points divided by the outer-eye-corner distance
 * (points 36 and 45 of the truth): the 300-W "inter-ocular" NME of one face. */
static inline double ert_nme68(const float *pred, const float *truth)
{
    double ex = truth[2 * 36] - truth[2 * 45], ey = truth[2 * 36 + 1] - truth[2 * 45 + 1];
    double iod = sqrt(ex * ex + ey * ey), sum = 0;
    for (int i = 0; i < 68; i++) {
        double dx = pred[2 * i] - truth[2 * i], dy = pred[2 * i + 1] - truth[2 * i + 1];
        sum += sqrt(dx * dx + dy * dy);
    }
    return sum / 68 / iod;
}

#endif
