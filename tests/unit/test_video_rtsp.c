/* RTSP end to end (issue #5 item 9): a real RTSP server on loopback (GStreamer's, run by
 * tests/rtsp/rtsp_server.py) serves an H.264 clip written here; an ffu_stream reads it
 * over RTP/TCP and then RTP/UDP, the server is killed (SIGKILL) mid-run and restarted a
 * second later, and the stream must reconnect on its own: frames continue on the next
 * generation with increasing pts, nothing crashes, stop/close are clean (the ASan build
 * checks for leaks). Skipped (exit 77) when python3-gi or the GStreamer RTSP server is
 * not installed. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "facefuse/video.h"
#include "test.h"
#include "test_video.h"

#define SERVER_SCRIPT FFU_TEST_SOURCE_DIR "/tests/rtsp/rtsp_server.py"
#define CLIP_SECONDS 20 /* longer than one connection is read: each client starts at 0 */

static char tmpdir_buf[64], clip[128];

/* A loopback TCP port that was free a moment ago. */
static int free_port(void)
{
    int port = -1, fd = test_loopback_socket(&port, 0);
    if (fd < 0) return -1;
    close(fd);
    return port;
}

static void draw(ffu_image *img, int t)
{
    for (int y = 0; y < img->height; y++) {
        uint8_t *row = img->data[0] + (size_t)y * img->stride[0];
        for (int x = 0; x < img->width; x++) {
            row[3 * x] = (uint8_t)(x + 3 * t);
            row[3 * x + 1] = (uint8_t)(y - 2 * t);
            row[3 * x + 2] = (uint8_t)((x ^ y) + t);
        }
    }
}

static ffu_status write_clip(const char *path)
{
    ffu_video_writer_opts o = {.width = 320, .height = 240, .fps_num = 25, .fps_den = 1,
                               .crf = 28, .preset = "ultrafast", .gop = 25};
    return test_write_clip(path, &o, CLIP_SECONDS * 25, draw, NULL);
}

typedef struct server {
    pid_t pid;
    const char *python;
} server;

/* Starts the server and waits for its "ready" line. Returns 0, 77 when this machine
 * cannot run it (no python3, no GStreamer RTSP server), or -1. */
static int server_start(server *sv, int port)
{
    static const char *const pythons[] = {"/usr/bin/python3", "python3"};
    for (size_t k = 0; k < sizeof pythons / sizeof pythons[0]; k++) {
        if (sv->python && strcmp(sv->python, pythons[k]) != 0) continue;
        int fds[2];
        if (pipe2(fds, O_CLOEXEC) != 0) return -1;
        char port_s[16];
        snprintf(port_s, sizeof port_s, "%d", port);
        pid_t pid = fork();
        if (pid < 0) {
            close(fds[0]);
            close(fds[1]);
            return -1;
        }
        if (pid == 0) {
            dup2(fds[1], STDOUT_FILENO);
            execlp(pythons[k], pythons[k], SERVER_SCRIPT, port_s, clip, (char *)NULL);
            _exit(77); /* no such interpreter */
        }
        close(fds[1]);
        char line[64] = {0};
        size_t got = 0;
        int64_t deadline = ffu_clock_ns() + 15000000000LL;
        while (got < sizeof line - 1 && !strchr(line, '\n') && ffu_clock_ns() < deadline) {
            struct pollfd p = {.fd = fds[0], .events = POLLIN};
            if (poll(&p, 1, 200) <= 0) continue;
            ssize_t r = read(fds[0], line + got, sizeof line - 1 - got);
            if (r <= 0) break; /* the server exited */
            got += (size_t)r;
        }
        close(fds[0]);
        if (strncmp(line, "ready", 5) == 0) {
            sv->pid = pid;
            sv->python = pythons[k];
            return 0;
        }
        kill(pid, SIGKILL);
        int status = 0;
        waitpid(pid, &status, 0);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 77) continue; /* try the next */
        return -1;
    }
    return 77;
}

static void server_kill(server *sv, int sig)
{
    if (sv->pid <= 0) return;
    kill(sv->pid, sig);
    waitpid(sv->pid, NULL, 0);
    sv->pid = 0;
}

/* One transport: read, kill the server, restart it, read on. */
static void run_transport(server *sv, int port, ffu_rtsp_transport transport)
{
    const char *tname = transport == FFU_RTSP_TCP ? "tcp" : "udp";
    char url[128];
    snprintf(url, sizeof url, "rtsp://127.0.0.1:%d/clip", port);
    ffu_stream_opts o;
    ffu_stream_opts_default(&o);
    o.name = tname;
    o.sample_fps = 10;
    o.ring_capacity = 8;
    o.backoff_initial_s = 0.2;
    o.backoff_max_s = 1;
    o.stall_s = 3;
    o.reader.timeout_ms = 3000;
    o.reader.rtsp_transport = transport;
    o.reader.threads = 1;
    ffu_stream *s = NULL;
    CHECK_EQ_INT(ffu_stream_open(&s, url, &o), FFU_OK);
    ffu_stream_frame *f;
    double last = -1;
    int before = 0, after = 0;
    /* Frames from the first connection. */
    while (before < 10) {
        ffu_status st = ffu_stream_pop(s, &f, 15000);
        if (st != FFU_OK) {
            fprintf(stderr, "%s: pop: %s\n", tname, ffu_error_message());
            ffu_stream_close(s);
            CHECK_EQ_INT(st, FFU_OK);
        }
        CHECK(f->pts > last);
        CHECK_EQ_INT(f->generation, 0);
        CHECK_EQ_INT(f->image.width, 320);
        last = f->pts;
        before++;
        ffu_stream_release(s, f);
    }
    ffu_video_info info;
    ffu_stream_info(s, &info);
    CHECK_STR(info.codec, "h264");

    /* The server dies without a word; a second later it is back on the same port. */
    server_kill(sv, SIGKILL);
    int64_t back_at = ffu_clock_ns() + 1000000000LL;
    ffu_stream_health h;
    while (ffu_clock_ns() < back_at) {
        if (ffu_stream_pop(s, &f, 100) == FFU_OK) { /* what was still in the ring */
            CHECK(f->pts > last);
            last = f->pts;
            ffu_stream_release(s, f);
        }
    }
    ffu_stream_health_get(s, &h);
    printf("  %s: server killed; stream %s, errors %lld, last error \"%s\"\n", tname,
           ffu_stream_state_name(h.state), (long long)h.errors, h.last_error);
    int rc = -1;
    for (int i = 0; i < 5 && rc != 0; i++) /* the port may linger for a moment */
        if ((rc = server_start(sv, port)) != 0) usleep(300000);
    CHECK_EQ_INT(rc, 0);

    /* The stream finds it again by itself. */
    int64_t deadline = ffu_clock_ns() + 20000000000LL;
    while (after < 10 && ffu_clock_ns() < deadline) {
        ffu_status st = ffu_stream_pop(s, &f, 1000);
        if (st == FFU_ERR_TIMEOUT) continue;
        CHECK_EQ_INT(st, FFU_OK);
        CHECK(f->pts > last); /* the clock continues across the reconnect */
        if (f->generation >= 1) after++;
        last = f->pts;
        ffu_stream_release(s, f);
    }
    ffu_stream_health_get(s, &h);
    printf("  %s: %d frames before, %d after the restart; reconnects %lld, errors %lld, "
           "decoded %lld, dropped %lld, last pts %.2f, %s\n",
           tname, before, after, (long long)h.reconnects, (long long)h.errors, (long long)h.decoded,
           (long long)h.dropped, last, ffu_stream_state_name(h.state));
    CHECK_EQ_INT(after, 10);
    CHECK(h.reconnects >= 1);
    CHECK(h.state == FFU_STREAM_RUNNING);

    ffu_stream_stop(s);
    ffu_status st;
    while ((st = ffu_stream_pop(s, &f, 5000)) == FFU_OK)
        ffu_stream_release(s, f);
    CHECK_EQ_INT(st, FFU_EOF);
    ffu_stream_health_get(s, &h);
    CHECK_EQ_INT(h.state, FFU_STREAM_STOPPED);
    ffu_stream_close(s);
}

static server the_server;
static int server_port;

static void test_setup(void)
{
    ffu_video_route_ffmpeg_log(1);
    signal(SIGPIPE, SIG_IGN);
    snprintf(tmpdir_buf, sizeof tmpdir_buf, "/tmp/ffu_rtsp_test_XXXXXX");
    CHECK(mkdtemp(tmpdir_buf) != NULL);
    snprintf(clip, sizeof clip, "%s/clip.mp4", tmpdir_buf);
    CHECK_EQ_INT(write_clip(clip), FFU_OK);
    server_port = free_port();
    CHECK(server_port > 0);
    int rc = server_start(&the_server, server_port);
    if (rc == 77)
        TEST_SKIP("python3-gi or GStreamer's RTSP server is not installed "
                  "(python3-gi gir1.2-gst-rtsp-server-1.0 gstreamer1.0-plugins-good "
                  "gstreamer1.0-plugins-bad)");
    CHECK_EQ_INT(rc, 0);
}

static void test_rtsp_tcp(void)
{
    if (!the_server.pid) TEST_SKIP("no RTSP server");
    run_transport(&the_server, server_port, FFU_RTSP_TCP);
}

static void test_rtsp_udp(void)
{
    if (!the_server.pid) TEST_SKIP("no RTSP server");
    run_transport(&the_server, server_port, FFU_RTSP_UDP);
}

static void test_cleanup(void)
{
    int ran = the_server.python != NULL;
    server_kill(&the_server, SIGTERM);
    if (clip[0]) unlink(clip);
    if (tmpdir_buf[0]) CHECK(rmdir(tmpdir_buf) == 0);
    if (!ran) TEST_SKIP("no RTSP server"); /* so that the whole program reports skipped */
}

TEST_MAIN(test_setup, test_rtsp_tcp, test_rtsp_udp, test_cleanup)
