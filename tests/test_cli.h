/* Running the built facefuse binary from tests, as a user would: exit code, stdout and
 * stderr captured. Shared by the CLI tests (tests/unit/test_cli*.c). */
#ifndef FFU_TEST_CLI_H
#define FFU_TEST_CLI_H

#include <errno.h>
#include <fcntl.h>
#include <pty.h>
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

/* Runs facefuse on a pseudo-terminal, as at a shell: stdout and stderr are both the
 * terminal, and r->out gets what it shows in order (the terminal turns "\n" into
 * "\r\n"); r->err stays empty. */
static inline void run_on_terminal(run_result *r, const char *const *args)
{
    int master = -1;
    struct winsize ws = {.ws_row = 40, .ws_col = 250};
    r->out[0] = r->err[0] = 0;
    r->code = -1;
    pid_t pid = forkpty(&master, NULL, NULL, &ws);
    if (pid == 0) {
        const char *argv[64] = {FACEFUSE};
        for (int i = 0; args[i] && i < 62; i++)
            argv[i + 1] = args[i];
        execv(FACEFUSE, (char *const *)argv);
        _exit(127);
    }
    if (pid < 0) return;
    size_t len = 0;
    char spill[4096];
    for (;;) { /* until the child's side closes (EIO); past a full buffer, drain */
        int full = len + 1 >= sizeof r->out;
        ssize_t n = full ? read(master, spill, sizeof spill)
                         : read(master, r->out + len, sizeof r->out - 1 - len);
        if (n > 0 && !full)
            len += (size_t)n;
        else if (n < 0 && errno == EINTR)
            continue;
        else if (n <= 0)
            break;
    }
    r->out[len] = 0;
    close(master);
    int status = 0;
    waitpid(pid, &status, 0);
    r->code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static inline int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

#endif
