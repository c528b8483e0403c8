/* Files and folders (src/core/file.c): whole-file reads with their cap and errors, the
 * all-or-nothing write, and directory listings (sorted, hidden entries left out, the
 * caller's filter, errors that name the path). Everything happens in a fresh folder
 * under /tmp. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "facefuse/core.h"
#include "test.h"

static char root[64];

/* A fresh empty folder for one test, in root. */
static void new_root(void)
{
    snprintf(root, sizeof root, "/tmp/ffu_file_XXXXXX");
    CHECK(mkdtemp(root) != NULL);
}

static void path_of(char *out, size_t len, const char *name)
{
    snprintf(out, len, "%s/%s", root, name);
}

static void put(const char *name, const char *text)
{
    char p[512];
    path_of(p, sizeof p, name);
    FILE *f = fopen(p, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static void test_read_and_write(void)
{
    new_root();
    char p[512];
    path_of(p, sizeof p, "a.txt");
    CHECK_EQ_INT(ffu_file_write_atomic(p, "hello", 5), FFU_OK);
    uint8_t *data = NULL;
    size_t n = 0;
    CHECK_EQ_INT(ffu_file_read(p, 100, &data, &n), FFU_OK);
    CHECK(n == 5 && !memcmp(data, "hello", 5) && data[5] == 0);
    free(data);
    /* a second write replaces the whole content and leaves no temporary file */
    CHECK_EQ_INT(ffu_file_write_atomic(p, "hi", 2), FFU_OK);
    CHECK_EQ_INT(ffu_file_read(p, 100, &data, &n), FFU_OK);
    CHECK(n == 2 && !memcmp(data, "hi", 2));
    free(data);
    char **names = NULL;
    int count = 0;
    CHECK_EQ_INT(ffu_dir_list(root, NULL, NULL, &names, &count), FFU_OK);
    CHECK_EQ_INT(count, 1);
    ffu_dir_list_free(names, count);
    /* the cap, a folder, a missing file */
    CHECK_EQ_INT(ffu_file_read(p, 1, &data, &n), FFU_ERR_TOO_LARGE);
    CHECK(data == NULL && strstr(ffu_error_message(), p));
    CHECK_EQ_INT(ffu_file_read(root, 100, &data, &n), FFU_ERR_INVALID);
    CHECK(strstr(ffu_error_message(), "is a directory"));
    path_of(p, sizeof p, "missing.txt");
    CHECK_EQ_INT(ffu_file_read(p, 100, &data, &n), FFU_ERR_NOT_FOUND);
    CHECK(strstr(ffu_error_message(), p));
    path_of(p, sizeof p, "a.txt");
    remove(p);
    rmdir(root);
}

/* Keeps names that end in ".jpg"; counts its calls in *ctx. It leaves errno set for
 * the others, as a filter's failed stat would: not the listing's error. */
static int jpg_only(const char *dir, const char *name, void *ctx)
{
    *(int *)ctx += strcmp(dir, root) ? 1000 : 1; /* counts calls; the folder is root */
    size_t len = strlen(name);
    int keep = len > 4 && !strcmp(name + len - 4, ".jpg");
    if (!keep) errno = ENOENT;
    return keep;
}

static void test_dir_list(void)
{
    new_root();
    const char *files[] = {"b.jpg", "a.jpg", "c.txt", ".hidden.jpg", "B.jpg", "a10.jpg", "a9.jpg"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) put(files[i], "x");
    char sub[512];
    path_of(sub, sizeof sub, "sub.jpg"); /* a folder that passes the name filter */
    CHECK_EQ_INT(mkdir(sub, 0700), 0);
    char **names = NULL;
    int count = -1;
    CHECK_EQ_INT(ffu_dir_list(root, NULL, NULL, &names, &count), FFU_OK);
    /* every entry but the hidden one, in strcmp order */
    const char *all[] = {"B.jpg", "a.jpg", "a10.jpg", "a9.jpg", "b.jpg", "c.txt", "sub.jpg"};
    CHECK_EQ_INT(count, 7);
    for (int i = 0; i < count; i++) CHECK_STR(names[i], all[i]);
    ffu_dir_list_free(names, count);

    int asked = 0;
    CHECK_EQ_INT(ffu_dir_list(root, jpg_only, &asked, &names, &count), FFU_OK);
    CHECK_EQ_INT(asked, 7); /* the filter sees every entry but the hidden one */
    const char *jpgs[] = {"B.jpg", "a.jpg", "a10.jpg", "a9.jpg", "b.jpg", "sub.jpg"};
    CHECK_EQ_INT(count, 6);
    for (int i = 0; i < count; i++) CHECK_STR(names[i], jpgs[i]);
    ffu_dir_list_free(names, count);

    /* an empty folder lists nothing; a missing one and a file are errors naming them */
    char empty[512], p[512];
    path_of(empty, sizeof empty, "sub.jpg");
    CHECK_EQ_INT(ffu_dir_list(empty, NULL, NULL, &names, &count), FFU_OK);
    CHECK(count == 0 && names == NULL);
    path_of(p, sizeof p, "nowhere");
    CHECK_EQ_INT(ffu_dir_list(p, NULL, NULL, &names, &count), FFU_ERR_NOT_FOUND);
    CHECK(count == 0 && names == NULL && strstr(ffu_error_message(), p));
    path_of(p, sizeof p, "a.jpg");
    CHECK_EQ_INT(ffu_dir_list(p, NULL, NULL, &names, &count), FFU_ERR_NOT_FOUND);
    CHECK(strstr(ffu_error_message(), p));

    rmdir(sub);
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        path_of(p, sizeof p, files[i]);
        remove(p);
    }
    rmdir(root);
}

TEST_MAIN(test_read_and_write, test_dir_list)
