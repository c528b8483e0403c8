/* Whole-file reads with a size cap, all-or-nothing writes (temporary file beside the
 * target, fsync, rename) and sorted directory listings: the file patterns every module
 * needs -- image and gallery files, JSON configs, video outputs, folders of photos --
 * written once here. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "facefuse/core.h"

static ffu_status errno_status(int err, const char *path, const char *what)
{
    char buf[128];
    const char *text = strerror_r(err, buf, sizeof buf); /* GNU: returns the text */
    if (err == ENOENT || err == ENOTDIR)
        return ffu_error_set(FFU_ERR_NOT_FOUND, "%s: %s", path, text);
    return ffu_error_set(FFU_ERR_IO, "%s: %s: %s", path, what, text);
}

ffu_status ffu_file_read(const char *path, size_t cap, uint8_t **out, size_t *size)
{
    if (!out || !size) return ffu_error_set(FFU_ERR_INVALID, "ffu_file_read: NULL output");
    *out = NULL;
    *size = 0;
    if (!path) return ffu_error_set(FFU_ERR_INVALID, "ffu_file_read: NULL path");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno_status(errno, path, "cannot open");
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int err = errno;
        close(fd);
        return errno_status(err, path, "cannot stat");
    }
    if (S_ISDIR(st.st_mode)) {
        close(fd);
        return ffu_error_set(FFU_ERR_INVALID, "%s: is a directory, not a file", path);
    }
    if (S_ISREG(st.st_mode) && (uint64_t)st.st_size > cap) {
        close(fd);
        return ffu_error_set(FFU_ERR_TOO_LARGE, "%s: file of %lld bytes exceeds the cap of %zu",
                             path, (long long)st.st_size, cap);
    }
    /* Sized from stat for regular files (+1 to see a file that grows, +1 for the NUL);
     * grown for pipes and files that change. */
    size_t alloc = S_ISREG(st.st_mode) ? (size_t)st.st_size + 2 : 65536, len = 0;
    if (alloc > cap + 2) alloc = cap + 2;
    uint8_t *buf = ffu_alloc_large(alloc);
    if (!buf) {
        close(fd);
        return ffu_error_set(FFU_ERR_NOMEM, "%s: cannot allocate %zu bytes", path, alloc);
    }
    for (;;) {
        if (len + 1 == alloc) {
            if (len > cap) { /* read more than cap bytes: too large */
                free(buf);
                close(fd);
                return ffu_error_set(FFU_ERR_TOO_LARGE, "%s: file exceeds the cap of %zu",
                                     path, cap);
            }
            size_t na = alloc * 2 > cap + 2 ? cap + 2 : alloc * 2;
            uint8_t *nb = realloc(buf, na);
            if (!nb) {
                free(buf);
                close(fd);
                return ffu_error_set(FFU_ERR_NOMEM, "%s: cannot allocate %zu bytes", path, na);
            }
            buf = nb;
            alloc = na;
        }
        ssize_t n = read(fd, buf + len, alloc - 1 - len);
        if (n == 0) break;
        if (n < 0) {
            if (errno == EINTR) continue;
            int err = errno;
            free(buf);
            close(fd);
            return errno_status(err, path, "read failed");
        }
        len += (size_t)n;
    }
    close(fd);
    if (len > cap) {
        free(buf);
        return ffu_error_set(FFU_ERR_TOO_LARGE, "%s: file exceeds the cap of %zu", path, cap);
    }
    buf[len] = 0;
    *out = buf;
    *size = len;
    return FFU_OK;
}

ffu_status ffu_file_create_temp(const char *path, char **tmp, int *fd)
{
    static atomic_uint counter; /* distinct names for threads of one process */
    if (tmp) *tmp = NULL;
    if (fd) *fd = -1;
    if (!path || !tmp) return ffu_error_set(FFU_ERR_INVALID, "ffu_file_create_temp: NULL argument");
    const char *slash = strrchr(path, '/');
    int dirlen = slash ? (int)(slash - path + 1) : 0;
    size_t cap = strlen(path) + 64;
    char *name = malloc(cap);
    if (!name) return ffu_error_set(FFU_ERR_NOMEM, "%s: out of memory", path);
    for (int attempt = 0; attempt < 100; attempt++) {
        snprintf(name, cap, "%.*s.%s.tmp-%ld-%u", dirlen, path, path + dirlen, (long)getpid(),
                 atomic_fetch_add(&counter, 1u));
        /* mode 0666 less the umask: what the final file would get */
        int f = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (f >= 0) {
            if (fd) *fd = f;
            else close(f);
            *tmp = name;
            return FFU_OK;
        }
        if (errno != EEXIST) {
            int err = errno;
            free(name);
            return errno_status(err, path, "cannot create a file there");
        }
    }
    free(name);
    return ffu_error_set(FFU_ERR_IO, "%s: no free temporary file name", path);
}

ffu_status ffu_file_write_atomic(const char *path, const void *data, size_t size)
{
    if (!path || (!data && size))
        return ffu_error_set(FFU_ERR_INVALID, "ffu_file_write_atomic: NULL argument");
    char *tmp;
    int fd;
    ffu_status st = ffu_file_create_temp(path, &tmp, &fd);
    if (st) return st;
    const uint8_t *p = data;
    size_t done = 0;
    int err = 0;
    const char *what = "write failed";
    while (!err && done < size) {
        ssize_t n = write(fd, p + done, size - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) err = n < 0 ? errno : EIO;
        else done += (size_t)n;
    }
    /* fsync before rename: after a crash the file is either old or whole, never empty. */
    if (!err && fsync(fd) != 0 && errno != EINVAL && errno != EROFS)
        err = errno, what = "fsync failed";
    if (close(fd) != 0 && !err) err = errno, what = "close failed";
    if (!err && rename(tmp, path) != 0) {
        /* The directory exists (the temporary file was made in it): not "not found". */
        int e = errno;
        char buf[128];
        unlink(tmp);
        free(tmp);
        return ffu_error_set(FFU_ERR_IO, "%s: cannot rename into place: %s", path,
                             strerror_r(e, buf, sizeof buf));
    }
    if (err) {
        unlink(tmp);
        free(tmp);
        return errno_status(err, path, what);
    }
    free(tmp);
    return FFU_OK;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

ffu_status ffu_dir_make(const char *dir)
{
    char buf[4096];
    if (!dir || !*dir) return ffu_error_set(FFU_ERR_INVALID, "no folder named");
    if (snprintf(buf, sizeof buf, "%s", dir) >= (int)sizeof buf)
        return ffu_error_set(FFU_ERR_IO, "%.64s...: %s", dir, strerror(ENAMETOOLONG));
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(buf, 0777) < 0 && errno != EEXIST)
                return ffu_error_set(FFU_ERR_IO, "%s: %s", dir, strerror(errno));
            *p = '/';
        }
    struct stat st;
    if (mkdir(buf, 0777) < 0 && errno != EEXIST)
        return ffu_error_set(FFU_ERR_IO, "%s: %s", dir, strerror(errno));
    if (stat(buf, &st) != 0) return ffu_error_set(FFU_ERR_IO, "%s: %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode)) return ffu_error_set(FFU_ERR_IO, "%s: %s", dir, strerror(ENOTDIR));
    return FFU_OK;
}

int ffu_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return a && b && stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

ffu_status ffu_dir_list(const char *dir, int (*keep)(const char *dir, const char *name, void *ctx),
                        void *ctx, char ***names, int *count)
{
    if (!names || !count) return ffu_error_set(FFU_ERR_INVALID, "ffu_dir_list: NULL output");
    *names = NULL;
    *count = 0;
    if (!dir) return ffu_error_set(FFU_ERR_INVALID, "ffu_dir_list: NULL directory");
    DIR *d = opendir(dir);
    if (!d) return errno_status(errno, dir, "cannot open the directory");
    char **v = NULL;
    int n = 0, cap = 0;
    ffu_status st = FFU_OK;
    for (;;) {
        errno = 0; /* readdir's end and its errors differ only in errno; keep may set it */
        const struct dirent *e = readdir(d);
        if (!e) break;
        if (e->d_name[0] == '.' || (keep && !keep(dir, e->d_name, ctx))) continue;
        if (n == cap) {
            char **nv =
                n < INT32_MAX / 2 ? realloc(v, sizeof *v * (size_t)(cap ? 2 * cap : 32)) : NULL;
            if (!nv) {
                st = ffu_error_set(FFU_ERR_NOMEM, "%s: out of memory listing it", dir);
                break;
            }
            v = nv, cap = cap ? 2 * cap : 32;
        }
        if (!(v[n] = strdup(e->d_name))) {
            st = ffu_error_set(FFU_ERR_NOMEM, "%s: out of memory listing it", dir);
            break;
        }
        n++;
    }
    if (!st && errno) st = errno_status(errno, dir, "cannot read the directory");
    closedir(d);
    if (st) {
        ffu_dir_list_free(v, n);
        return st;
    }
    if (n) qsort(v, (size_t)n, sizeof *v, cmp_name);
    *names = v;
    *count = n;
    return FFU_OK;
}

void ffu_dir_list_free(char **names, int count)
{
    for (int i = 0; i < count; i++)
        free(names[i]);
    free(names);
}
