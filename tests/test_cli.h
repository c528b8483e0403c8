/* Running the built facefuse binary from tests, as a user would: exit code, stdout and
 * stderr captured. Shared by the CLI tests (tests/unit/test_cli*.c). */
#ifndef FFU_TEST_CLI_H
#define FFU_TEST_CLI_H

#include <fcntl.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define FACEFUSE FFU_TEST_BINARY_DIR "/facefuse"

typedef struct {
    int code;
    char out[65536];
    char err[8192];
} run_result;

static inline void slurp(int fd, char *buf, size_t cap)
{
    size_t len = 0;
    ssize_t n;
    while ((n = read(fd, buf + len, cap - 1 - len)) > 0) len += (size_t)n;
    buf[len] = 0;
}

/* Runs facefuse with a NULL-terminated argument list. */
static inline void run(run_result *r, const char *const *args)
{
    char outname[] = "/tmp/ffu_cli_out_XXXXXX", errname[] = "/tmp/ffu_cli_err_XXXXXX";
    int fo = mkstemp(outname), fe = mkstemp(errname);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fo, 1);
        dup2(fe, 2);
        const char *argv[64] = {FACEFUSE};
        for (int i = 0; args[i] && i < 62; i++) argv[i + 1] = args[i];
        execv(FACEFUSE, (char *const *)argv);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    r->code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    lseek(fo, 0, SEEK_SET);
    lseek(fe, 0, SEEK_SET);
    slurp(fo, r->out, sizeof r->out);
    slurp(fe, r->err, sizeof r->err);
    close(fo), close(fe);
    unlink(outname), unlink(errname);
}

static inline int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

#endif
