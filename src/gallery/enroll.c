/* Enrolling a directory of photos into a gallery: the way a watchlist is usually
 * handed over (a folder per person, or "Name.jpg" / "Name_2.jpg" files). Photos are
 * visited in sorted order so the same folder always gives the same gallery. Every
 * template is computed first and only then added, with room reserved beforehand, so a
 * failure part-way (out of memory, a broken analyzer) leaves the gallery as it was. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "face/face_internal.h"
#include "gallery_internal.h"

typedef struct job {
    char *path;
    char *name; /* identity */
} job;

typedef struct job_list {
    job *items;
    int count, cap;
} job_list;

static void jobs_free(job_list *l)
{
    for (int i = 0; i < l->count; i++) {
        free(l->items[i].path);
        free(l->items[i].name);
    }
    free(l->items);
}

static int is_photo(const char *name)
{
    const char *dot = strrchr(name, '.');
    return dot && dot != name && ffu_image_name_known(name);
}

static char *join(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    char *s = malloc(la + lb + 2);
    if (s) {
        memcpy(s, a, la);
        s[la] = '/';
        memcpy(s + la + 1, b, lb + 1);
    }
    return s;
}

/* "Barack Obama_2.jpg" -> "Barack Obama": the stem, less a trailing '_' + digits. */
static char *loose_name(const char *file)
{
    size_t n = (size_t)(strrchr(file, '.') - file);
    size_t u = n;
    while (u > 0 && file[u - 1] >= '0' && file[u - 1] <= '9')
        u--;
    if (u < n && u > 1 && file[u - 1] == '_')
        n = u - 1;
    return strndup(file, n);
}

/* Takes ownership of path and name (both freed on failure). */
static ffu_status jobs_push(job_list *l, char *path, char *name)
{
    if (!path || !name)
        goto nomem;
    if (l->count == l->cap) {
        int cap = l->cap ? l->cap * 2 : 64;
        job *nj = realloc(l->items, sizeof *nj * (size_t)cap);
        if (!nj)
            goto nomem;
        l->items = nj;
        l->cap = cap;
    }
    l->items[l->count++] = (job){path, name};
    return FFU_OK;
nomem:
    free(path);
    free(name);
    return ffu_error_set(FFU_ERR_NOMEM, "gallery: photo list");
}

/* Every photo of the layout: DIR/PERSON/photo.jpg and DIR/Name[_N].jpg. */
static ffu_status collect(const ffu_gallery *g, const char *dir, job_list *jobs)
{
    char **top;
    int ntop;
    ffu_status st = ffu_dir_list(dir, NULL, NULL, &top, &ntop);
    for (int i = 0; !st && i < ntop; i++) {
        char *path = join(dir, top[i]);
        struct stat sb;
        if (!path) {
            st = ffu_error_set(FFU_ERR_NOMEM, "gallery: path");
        } else if (stat(path, &sb) != 0) {
            free(path); /* a dangling link: nothing to enrol */
        } else if (S_ISDIR(sb.st_mode)) {
            char **sub;
            int nsub;
            st = ffu_dir_list(path, NULL, NULL, &sub, &nsub);
            if (st && st != FFU_ERR_NOMEM) {
                FFU_LOG(g, FFU_LOG_WARN, "skipped: %s", ffu_error_message());
                st = FFU_OK; /* one unreadable folder does not spoil the rest */
            }
            for (int j = 0; !st && j < nsub; j++) {
                if (!is_photo(sub[j]))
                    continue;
                char *p = join(path, sub[j]);
                struct stat fb;
                if (p && (stat(p, &fb) != 0 || !S_ISREG(fb.st_mode))) {
                    free(p);
                    continue;
                }
                st = jobs_push(jobs, p, strdup(top[i]));
            }
            ffu_dir_list_free(sub, nsub);
            free(path);
        } else if (S_ISREG(sb.st_mode) && is_photo(top[i])) {
            st = jobs_push(jobs, path, loose_name(top[i]));
        } else {
            free(path);
        }
    }
    ffu_dir_list_free(top, ntop);
    return st;
}

/* Templates computed and waiting to be added. */
typedef struct staged {
    int job;  /* index into the job list (its name) */
    char *src;
} staged;

static ffu_status enroll_photo(ffu_gallery *g, ffu_analyzer *a, const char *path,
                               ffu_face_list *faces, float *unit, int *ok)
{
    *ok = 0;
    ffu_image img = {0};
    ffu_status st = ffu_image_load(path, FFU_PIX_RGB24, &img);
    if (st == FFU_ERR_NOMEM)
        return st;
    if (st) {
        FFU_LOG(g, FFU_LOG_WARN, "%s: skipped: %s", path, ffu_error_message());
        return FFU_OK;
    }
    st = ffu_analyzer_run(a, &img, faces);
    float side = 0; /* the smallest face looked for: says whether min_face would help */
    if (!st && faces->count == 0 &&
        ffu_detector_smallest_face(ffu_analyzer_detector(a), img.width, img.height, &side))
        ffu_error_clear();
    ffu_image_release(&img);
    if (st) return ffu_error_prefix(st, path);
    if (faces->count == 0) {
        if (side > 0)
            FFU_LOG(g, FFU_LOG_WARN, "%s: no face found (faces under %.0f px are not looked "
                    "for), skipped", path, side);
        else
            FFU_LOG(g, FFU_LOG_WARN, "%s: no face found, skipped", path);
        return FFU_OK;
    }
    const ffu_face *best = &faces->faces[face_list_largest(faces)];
    if (best->embedding_dim == 0)
        return ffu_error_set(FFU_ERR_INVALID,
                             "gallery: the analyzer does not embed (add FFU_STAGE_EMBED)");
    if (best->embedding_dim != g->dim)
        return ffu_error_set(FFU_ERR_INVALID,
                             "gallery holds %d-float templates of %s; the analyzer's embedder "
                             "gives %d floats",
                             g->dim, g->model, best->embedding_dim);
    if (!gallery_normalize(best->embedding, g->dim, unit)) {
        FFU_LOG(g, FFU_LOG_WARN, "%s: the embedding is zero or not finite, skipped", path);
        return FFU_OK;
    }
    *ok = 1;
    return FFU_OK;
}

void ffu_gallery_set_progress(ffu_gallery *g, ffu_gallery_progress_fn fn, void *user)
{
    if (!g)
        return;
    g->progress = fn;
    g->progress_user = fn ? user : NULL;
}

ffu_status ffu_gallery_enroll_dir(ffu_gallery *g, ffu_analyzer *a, const char *dir,
                                  int *skipped)
{
    if (skipped)
        *skipped = 0;
    if (!g || !a || !dir)
        return ffu_error_set(FFU_ERR_INVALID, "ffu_gallery_enroll_dir: NULL argument");
    job_list jobs = {0};
    ffu_status st = collect(g, dir, &jobs);
    if (!st && jobs.count == 0)
        st = ffu_error_set(FFU_ERR_NOT_FOUND,
                           "%s: no JPEG, PNG or WebP photo (neither PERSON/photo.jpg nor Name.jpg)",
                           dir);
    staged *stg = NULL;
    float *units = NULL;
    int nst = 0, nskip = 0;
    ffu_face_list faces = {0};
    if (!st) {
        stg = malloc(sizeof *stg * (size_t)jobs.count);
        units = malloc(sizeof *units * (size_t)jobs.count * (size_t)g->dim);
        if (!stg || !units)
            st = ffu_error_set(FFU_ERR_NOMEM, "gallery: %d photos", jobs.count);
    }
    for (int i = 0; !st && i < jobs.count; i++) {
        const job *j = &jobs.items[i];
        const char *why = gallery_check_name(j->name, strlen(j->name), FFU_GALLERY_NAME_MAX);
        int ok = 0;
        if (why) {
            FFU_LOG(g, FFU_LOG_WARN, "%s: skipped: identity name \"%.40s\" is %s", j->path,
                    j->name, why);
        } else if (strlen(j->path) >= GALLERY_SOURCE_MAX) {
            FFU_LOG(g, FFU_LOG_WARN, "%.80s...: skipped: path too long", j->path);
        } else {
            st = enroll_photo(g, a, j->path, &faces, units + (size_t)nst * (size_t)g->dim, &ok);
        }
        if (!st && ok) {
            stg[nst].job = i;
            stg[nst].src = jobs.items[i].path;
            jobs.items[i].path = NULL; /* now owned by the staged entry */
            nst++;
        } else if (!st) {
            nskip++;
        }
        if (!st && g->progress)
            g->progress(g->progress_user, i + 1, jobs.count);
    }
    ffu_face_list_free(&faces);
    if (!st)
        st = gallery_reserve(g, nst, nst);
    if (!st) {
        for (int i = 0; i < nst; i++) {
            const char *name = jobs.items[stg[i].job].name;
            gallery_insert(g, name, strlen(name), units + (size_t)i * (size_t)g->dim, stg[i].src);
            stg[i].src = NULL;
        }
        FFU_LOG(g, FFU_LOG_INFO, "%s: enrolled %d photos, skipped %d; %d identities", dir, nst,
                nskip, g->nid);
        if (skipped)
            *skipped = nskip;
    } else {
        for (int i = 0; i < nst; i++)
            free(stg[i].src);
    }
    free(stg);
    free(units);
    jobs_free(&jobs);
    return st;
}
