#!/usr/bin/env python3
"""A loopback RTSP server for the stream tests (tests/unit/test_video_rtsp.c).

FFmpeg can be an RTSP client but not a server, so the tests serve a clip with
GStreamer's RTSP server (Debian: python3-gi gir1.2-gst-rtsp-server-1.0
gstreamer1.0-plugins-good gstreamer1.0-plugins-bad). The H.264 of an MP4 is sent as it
is (qtdemux ! h264parse ! rtph264pay), without re-encoding, at the file's own pace,
to RTP over TCP or UDP as the client asks; each client gets its own pipeline from the
start of the file (the test makes the clip longer than it reads).

Usage: rtsp_server.py PORT FILE.mp4 [MOUNT]   (MOUNT defaults to /clip)
Prints "ready" on stdout once it listens. Exits 77 when python3-gi or the GStreamer
pieces are missing (the test then reports "skipped"), 1 on other set-up failures.
"""
import signal
import sys


def missing(why):
    sys.stderr.write("rtsp_server.py: %s\n" % why)
    sys.exit(77)


try:
    import gi

    gi.require_version("Gst", "1.0")
    gi.require_version("GstRtspServer", "1.0")
    from gi.repository import GLib, Gst, GstRtspServer
except (ImportError, ValueError) as e:
    missing("python3-gi or the GStreamer RTSP server typelib is missing (%s)" % e)


def main():
    if len(sys.argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    port, path = sys.argv[1], sys.argv[2]
    mount = sys.argv[3] if len(sys.argv) > 3 else "/clip"
    Gst.init(None)
    for name in ("filesrc", "qtdemux", "h264parse", "rtph264pay"):
        if Gst.ElementFactory.find(name) is None:
            missing("GStreamer element %s is missing (gstreamer1.0-plugins-good/-bad)" % name)

    server = GstRtspServer.RTSPServer()
    server.set_address("127.0.0.1")
    server.set_service(port)
    factory = GstRtspServer.RTSPMediaFactory()
    # Path quoted for gst-launch syntax; the tests pass plain temp paths.
    factory.set_launch(
        '( filesrc location="%s" ! qtdemux ! h264parse ! rtph264pay name=pay0 pt=96 '
        "config-interval=1 )" % path.replace('"', '\\"')
    )
    factory.set_shared(False)
    server.get_mount_points().add_factory(mount, factory)
    if server.attach(None) == 0:
        sys.stderr.write("rtsp_server.py: cannot listen on 127.0.0.1:%s\n" % port)
        return 1
    loop = GLib.MainLoop()
    GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGTERM, loop.quit)
    GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGINT, loop.quit)
    print("ready", flush=True)
    loop.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
