/* Helpers shared by the video tests (tests/unit/test_*video*.c): synthetic clips written
 * with the library's own writer, whole files, and loopback sockets and a stalling HTTP
 * server for the network cases. Header only, like test.h. */
#ifndef FFU_TEST_VIDEO_H
#define FFU_TEST_VIDEO_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "facefuse/image.h"
#include "facefuse/video.h"

/* Draws frame t of a synthetic clip into img (RGB24). */
typedef void (*test_frame_fn)(ffu_image *img, int t);

/* Writes n frames drawn by draw, frame i at pts i * fps_den / fps_num, with the writer
 * options o (size and rate required; the other fields as the writer defaults them) and
 * an optional "comment" tag. The output appears only when everything succeeded. */
static inline ffu_status test_write_clip(const char *path, const ffu_video_writer_opts *o, int n,
                                         test_frame_fn draw, const char *comment)
{
    ffu_video_writer *vw = NULL;
    ffu_status st = ffu_video_writer_open(&vw, path, o);
    if (st < 0) return st;
    if (comment && (st = ffu_video_writer_set_metadata(vw, "comment", comment)) < 0) {
        ffu_video_writer_abort(vw);
        return st;
    }
    ffu_image img;
    if ((st = ffu_image_create(&img, FFU_PIX_RGB24, o->width, o->height)) < 0) {
        ffu_video_writer_abort(vw);
        return st;
    }
    double step = (double)(o->fps_den ? o->fps_den : 1) / o->fps_num;
    for (int i = 0; i < n && st >= 0; i++) {
        draw(&img, i);
        st = ffu_video_writer_write(vw, &img, i * step);
    }
    ffu_image_release(&img);
    if (st < 0) {
        ffu_video_writer_abort(vw);
        return st;
    }
    return ffu_video_writer_close(vw);
}

/* A TCP socket bound to a free loopback port (*port), listening when do_listen (a server
 * that accepts nothing: connects succeed, then silence), -1 on failure. Closing it
 * without listening gives a port that refuses connections. */
static inline int test_loopback_socket(int *port, int do_listen)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || (do_listen && listen(fd, 8) != 0) ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        close(fd);
        return -1;
    }
    *port = ntohs(a.sin_port);
    return fd;
}

/* An HTTP server on a loopback port that answers each client with its headers and the
 * first `size` bytes of a video, then holds the connection open without another byte:
 * a live camera that stalls (a reader must time out, a stream must reconnect). A new
 * client replaces the held one; `clients` counts them. */
typedef struct test_stall_server {
    int fd; /* the listening socket */
    const uint8_t *data;
    size_t size;
    atomic_int stop, clients;
    pthread_t thread;
} test_stall_server;

static inline void *test_stall_server_main(void *arg)
{
    test_stall_server *s = arg;
    int held = -1;
    while (!atomic_load(&s->stop)) {
        /* poll, not a blocking accept: stop is seen even when no client ever comes */
        struct pollfd p = {.fd = s->fd, .events = POLLIN};
        if (poll(&p, 1, 50) <= 0) continue;
        int c = accept(s->fd, NULL, NULL);
        if (c < 0) continue;
        if (held >= 0) close(held);
        held = c;
        atomic_fetch_add(&s->clients, 1);
        char req[4096];
        ssize_t got = recv(c, req, sizeof req, 0); /* the GET; its content does not matter */
        (void)got;
        const char *hdr = "HTTP/1.0 200 OK\r\nContent-Type: video/x-matroska\r\n\r\n";
        if (send(c, hdr, strlen(hdr), MSG_NOSIGNAL) <= 0) continue;
        for (size_t off = 0; off < s->size;) {
            ssize_t k = send(c, s->data + off, s->size - off, MSG_NOSIGNAL);
            if (k <= 0) break;
            off += (size_t)k;
        }
    }
    if (held >= 0) close(held);
    return NULL;
}

/* Starts s serving the first size bytes of data (borrowed until stop) on a free
 * loopback port (*port); 0 on success, -1 (nothing left running) on failure. */
static inline int test_stall_server_start(test_stall_server *s, const uint8_t *data, size_t size,
                                          int *port)
{
    s->data = data;
    s->size = size;
    atomic_init(&s->stop, 0);
    atomic_init(&s->clients, 0);
    s->fd = test_loopback_socket(port, 1);
    if (s->fd < 0) return -1;
    if (pthread_create(&s->thread, NULL, test_stall_server_main, s) != 0) {
        close(s->fd);
        s->fd = -1;
        return -1;
    }
    return 0;
}

/* Stops the server's thread and closes its sockets. */
static inline void test_stall_server_stop(test_stall_server *s)
{
    atomic_store(&s->stop, 1);
    pthread_join(s->thread, NULL);
    close(s->fd);
}

#endif
