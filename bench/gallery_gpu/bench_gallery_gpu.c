/* Gallery search throughput: probes per second of the GPU search
 * (ffu_gallery_gpu_search, fp32 and fp16 templates, probes from the host and probes
 * already on the device, by batch size) against the CPU search (ffu_gallery_search,
 * the AVX2 kernel when the CPU has it, one thread and all cores) in the same run, on
 * galleries of 1k, 10k and 100k identities of random 512-d unit vectors. Prints one
 * JSON object. Without a device the GPU part is null and the CPU numbers still come.
 * Also reports how often the GPU's top-1 equals the CPU's (a sanity check, not a test).
 * Build and run with bench/gallery_gpu/run. Not a test: nothing here passes or fails.
 *
 *   bench_gallery_gpu [--sizes 1000,10000,100000] [--batches 1,16,128,1024] [--dim 512]
 *                     [--k 10] [--seconds 0.3] [--threads N] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "facefuse/gallery.h"
#include "facefuse/gpu.h"

#define MAX_LIST 16

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t rng(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ULL;
}

static float rnd(uint64_t *s) { return (float)(rng(s) >> 40) / (float)(1u << 24) * 2 - 1; }

static int parse_list(const char *arg, int *out)
{
    int n = 0;
    for (const char *p = arg; *p && n < MAX_LIST;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 1 || v > 10000000)
            return 0;
        out[n++] = (int)v;
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',')
            return 0;
    }
    return n;
}

typedef struct cpu_job {
    const ffu_gallery *g;
    const float *probes;
    int nq, dim, k;
    ffu_gallery_match *out;
} cpu_job;

static void *cpu_worker(void *arg)
{
    cpu_job *j = arg;
    for (int q = 0; q < j->nq; q++)
        ffu_gallery_search(j->g, j->probes + (size_t)q * j->dim, j->out + (size_t)q * j->k, j->k);
    return NULL;
}

/* Probes per second of the CPU search with `threads` threads, each taking a share of
 * nq probes, repeated until `seconds` have passed. */
static double cpu_qps(const ffu_gallery *g, const float *probes, int nq, int k, int threads,
                      double seconds, ffu_gallery_match *out)
{
    int dim = ffu_gallery_dim(g);
    pthread_t tid[256];
    cpu_job jobs[256];
    if (threads > 256)
        threads = 256;
    long done = 0;
    double t0 = now_s(), t;
    do {
        int per = (nq + threads - 1) / threads, started = 0;
        for (int i = 0; i < threads; i++) {
            int lo = i * per, n = nq - lo < per ? nq - lo : per;
            if (n <= 0)
                break;
            jobs[i] = (cpu_job){g, probes + (size_t)lo * dim, n, dim, k, out + (size_t)lo * k};
            if (threads == 1 || pthread_create(&tid[started], NULL, cpu_worker, &jobs[i]) != 0)
                cpu_worker(&jobs[i]); /* on this thread when no other can start */
            else
                started++;
        }
        for (int i = 0; i < started; i++)
            pthread_join(tid[i], NULL);
        done += nq;
        t = now_s() - t0;
    } while (t < seconds);
    return (double)done / t;
}

/* Probes per second of the GPU search in batches of `batch` (probes at `probes`, host
 * or device), repeated until `seconds` have passed, after one warm-up call. */
static double gpu_qps(ffu_gallery_gpu *gg, ffu_gpu_stream *s, const float *probes, int batch,
                      int k, double seconds, ffu_gallery_match *out, int *counts)
{
    if (ffu_gallery_gpu_search(gg, s, probes, batch, k, out, counts) != FFU_OK)
        return -1;
    long done = 0;
    double t0 = now_s(), t;
    do {
        if (ffu_gallery_gpu_search(gg, s, probes, batch, k, out, counts) != FFU_OK)
            return -1;
        done += batch;
        t = now_s() - t0;
    } while (t < seconds);
    return (double)done / t;
}

int main(int argc, char **argv)
{
    int sizes[MAX_LIST] = {1000, 10000, 100000}, nsizes = 3;
    int batches[MAX_LIST] = {1, 16, 128, 1024}, nbatches = 4;
    int dim = 512, k = 10, threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    double seconds = 0.3;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int ok = v != NULL;
        if (ok && !strcmp(a, "--sizes"))
            ok = (nsizes = parse_list(v, sizes)) > 0;
        else if (ok && !strcmp(a, "--batches"))
            ok = (nbatches = parse_list(v, batches)) > 0;
        else if (ok && !strcmp(a, "--dim"))
            ok = (dim = atoi(v)) >= 1 && dim <= 1024;
        else if (ok && !strcmp(a, "--k"))
            ok = (k = atoi(v)) >= 1 && k <= FFU_GALLERY_GPU_MAX_K;
        else if (ok && !strcmp(a, "--seconds"))
            ok = (seconds = atof(v)) > 0;
        else if (ok && !strcmp(a, "--threads"))
            ok = (threads = atoi(v)) >= 1;
        else
            ok = 0;
        if (!ok) {
            fprintf(stderr, "usage: %s [--sizes N,..] [--batches B,..] [--dim D] [--k K] "
                    "[--seconds S] [--threads T]\n", argv[0]);
            return 2;
        }
        i++;
    }
    if (threads < 1)
        threads = 1;
    int maxb = 0;
    for (int i = 0; i < nbatches; i++)
        maxb = batches[i] > maxb ? batches[i] : maxb;
    int nprobe = maxb > 256 ? maxb : 256;

    /* the device, if any */
    ffu_gpu *gpu = NULL;
    ffu_gpu_stream *s = NULL;
    ffu_gpu_device_info info = {0};
    if (ffu_gpu_device_count() > 0 && ffu_gpu_open(0, &gpu) == FFU_OK) {
        ffu_gpu_device_info_get(0, &info);
        if (ffu_gpu_stream_create(gpu, &s) != FFU_OK) {
            ffu_gpu_close(gpu);
            gpu = NULL;
        }
    }
    float *probes = malloc(sizeof(float) * (size_t)nprobe * (size_t)dim);
    ffu_gallery_match *cpu_out = malloc(sizeof *cpu_out * (size_t)nprobe * (size_t)k);
    ffu_gallery_match *gpu_out = malloc(sizeof *gpu_out * (size_t)nprobe * (size_t)k);
    int *counts = malloc(sizeof(int) * (size_t)nprobe);
    float *v = malloc(sizeof(float) * (size_t)dim);
    if (!probes || !cpu_out || !gpu_out || !counts || !v) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    void *d_probes = NULL;
    if (gpu && (ffu_gpu_alloc(gpu, sizeof(float) * (size_t)nprobe * (size_t)dim, &d_probes) != FFU_OK))
        d_probes = NULL;

    printf("{\n  \"bench\": \"gallery_gpu\",\n  \"dim\": %d,\n  \"k\": %d,\n"
           "  \"cpu_threads\": %d,\n  \"device\": %s%s%s,\n  \"results\": [",
           dim, k, threads, gpu ? "\"" : "", gpu ? info.name : "null", gpu ? "\"" : "");
    for (int si = 0; si < nsizes; si++) {
        int n = sizes[si];
        uint64_t seed = 1234 + (uint64_t)n;
        ffu_gallery *g = NULL;
        if (ffu_gallery_create(dim, "bench", &g) != FFU_OK)
            return 1;
        char name[32];
        for (int i = 0; i < n; i++) {
            for (int d = 0; d < dim; d++)
                v[d] = rnd(&seed);
            snprintf(name, sizeof name, "id%d", i);
            if (ffu_gallery_add(g, name, v, NULL, NULL) != FFU_OK) {
                fprintf(stderr, "gallery: %s\n", ffu_error_message());
                return 1;
            }
            /* probes: noisy copies of the first identities */
            if (i < nprobe)
                for (int d = 0; d < dim; d++)
                    probes[(size_t)i * dim + d] = v[d] + 0.5f * rnd(&seed);
        }
        for (int i = n; i < nprobe; i++)
            for (int d = 0; d < dim; d++)
                probes[(size_t)i * dim + d] = rnd(&seed);
        /* the CPU on as many probes as fit the time: small galleries get many */
        int cpu_nq = n >= 100000 ? 16 : n >= 10000 ? 64 : 256;
        double c1 = cpu_qps(g, probes, cpu_nq, k, 1, seconds, cpu_out);
        double cm = cpu_qps(g, probes, cpu_nq, k, threads, seconds, cpu_out);
        printf("%s\n    {\"gallery\": %d, \"cpu_qps_1thread\": %.1f, \"cpu_qps_%dthreads\": %.1f,"
               " \"gpu\": ", si ? "," : "", n, c1, threads, cm);
        if (!gpu) {
            printf("null}");
            ffu_gallery_destroy(g);
            continue;
        }
        printf("[");
        for (int st = 0; st < FFU_GALLERY_GPU_STORAGE_COUNT; st++) {
            ffu_gallery_gpu *gg = NULL;
            double t0 = now_s();
            ffu_status rc = ffu_gallery_gpu_create(gpu, g, (ffu_gallery_gpu_storage)st, &gg);
            double upload = now_s() - t0;
            printf("%s\n      {\"storage\": \"%s\", ", st ? "," : "", st ? "f16" : "f32");
            if (rc != FFU_OK) {
                printf("\"error\": \"%s\"}", ffu_error_message());
                continue;
            }
            /* top-1 agreement with the CPU on cpu_nq probes */
            int agree = 0;
            if (ffu_gallery_gpu_search(gg, s, probes, cpu_nq, k, gpu_out, counts) == FFU_OK)
                for (int q = 0; q < cpu_nq; q++)
                    agree += gpu_out[(size_t)q * k].identity == cpu_out[(size_t)q * k].identity;
            printf("\"upload_ms\": %.2f, \"top1_agree\": \"%d/%d\", \"batches\": [", 1e3 * upload,
                   agree, cpu_nq);
            if (d_probes)
                ffu_gpu_copy(NULL, d_probes, probes, sizeof(float) * (size_t)nprobe * (size_t)dim);
            for (int bi = 0; bi < nbatches; bi++) {
                int b = batches[bi];
                double qh = gpu_qps(gg, s, probes, b, k, seconds, gpu_out, counts);
                double qd = d_probes ? gpu_qps(gg, s, d_probes, b, k, seconds, gpu_out, counts) : -1;
                printf("%s\n        {\"batch\": %d, \"qps_host_probes\": %.1f, "
                       "\"qps_device_probes\": %.1f, \"speedup_vs_cpu_%dthreads\": %.1f}",
                       bi ? "," : "", b, qh, qd, threads, cm > 0 ? qh / cm : 0);
            }
            printf("]}");
            ffu_gallery_gpu_destroy(gg);
        }
        printf("]}");
        ffu_gallery_destroy(g);
    }
    printf("\n  ]\n}\n");
    if (gpu) {
        ffu_gpu_free(gpu, d_probes);
        ffu_gpu_stream_destroy(s);
        ffu_gpu_close(gpu);
    }
    free(probes), free(cpu_out), free(gpu_out), free(counts), free(v);
    return 0;
}
