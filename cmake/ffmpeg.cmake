# FFmpeg's libraries (Debian: libavformat-dev libavcodec-dev libavutil-dev libswscale-dev
# libswresample-dev; FFmpeg 5.1 in Debian 12) for the video module in src/video.
# Required at build time: the video reader and writer are built on their headers. Not
# linked: src/video/av_libs.c loads them (dlopen, by the sonames of these headers) when
# a process first opens a video. Linked, they brought some 125 shared libraries into
# every process, 60-100 ms before main for image commands too (docs/VIDEO.md "Loading
# FFmpeg"). Included by the top CMakeLists.txt before the library targets exist, so it
# only extends the FFU_* lists. Defines FFU_HAVE_AVDEVICE=0/1 for C code; FFMPEG is the
# imported target for programs that call FFmpeg themselves (tests, benchmarks).
pkg_check_modules(FFMPEG IMPORTED_TARGET libavformat libavcodec libavutil libswscale)
if(NOT FFMPEG_FOUND)
  message(FATAL_ERROR "The video module needs FFmpeg's libraries (Debian: apt-get install "
                      "libavformat-dev libavcodec-dev libavutil-dev libswscale-dev)")
endif()
include_directories(SYSTEM ${FFMPEG_INCLUDE_DIRS})
list(APPEND FFU_LINK_LIBS ${CMAKE_DL_LIBS})
string(APPEND FFU_PC_LIBS_PRIVATE " -ldl")

# libavdevice is not linked: src/video/common.c loads it (dlopen) when a camera is
# first opened. Linked, it brought ~80 more shared libraries (SDL, PulseAudio, flite
# voices, ...) into every process: `facefuse --version` 50 -> 32 MiB max RSS, 40 -> 20
# ms without them (docs/VIDEO.md). Its headers give the soname to load.
option(FFU_AVDEVICE "Open V4L2 cameras through libavdevice when it is installed" ON)
set(FFU_HAVE_AVDEVICE 0)
if(FFU_AVDEVICE)
  pkg_check_modules(AVDEVICE libavdevice)
  if(AVDEVICE_FOUND)
    set(FFU_HAVE_AVDEVICE 1)
    include_directories(SYSTEM ${AVDEVICE_INCLUDE_DIRS})
  endif()
endif()
add_compile_definitions(FFU_HAVE_AVDEVICE=${FFU_HAVE_AVDEVICE})
message(STATUS "facefuse: FFmpeg ${FFMPEG_libavformat_VERSION} (libavformat), "
               "libavdevice ${FFU_HAVE_AVDEVICE}")

# Writes the seed corpus of the video fuzzer (tests/fixtures/corpus/video) with our own
# writer: `make_video_corpus DIR`. Built with the tests so it keeps compiling.
if(FFU_BUILD_TESTS)
  add_executable(make_video_corpus ${CMAKE_CURRENT_SOURCE_DIR}/tests/fuzz/make_video_corpus.c)
  target_compile_options(make_video_corpus PRIVATE ${FFU_C_WARNINGS})
  target_compile_definitions(make_video_corpus PRIVATE _GNU_SOURCE)
  target_link_libraries(make_video_corpus PRIVATE facefuse_static)
endif()
