/* facefuse: the command-line front end. Finds the subcommand, hands it the rest of
 * argv, and documents the exit codes every command shares. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "facefuse/video.h"
#include "ffu_config.h"

static const cli_command *const commands[] = {
    &cli_cmd_info,
    &cli_cmd_image,
    &cli_cmd_detect,
    &cli_cmd_embed,
    &cli_cmd_compare,
    &cli_cmd_analyze,
    &cli_cmd_swap,
    &cli_cmd_enroll,
    &cli_cmd_identify,
    &cli_cmd_models,
    &cli_cmd_video,
    &cli_cmd_eval,
    &cli_cmd_nn,
    &cli_cmd_bench,
    &cli_cmd_version,
};
#define NCOMMANDS ((int)(sizeof commands / sizeof commands[0]))

static void usage(FILE *out)
{
    fprintf(out,
            "usage: facefuse COMMAND [options] [arguments]\n"
            "\n"
            "GPU-accelerated face analysis and face swapping.\n"
            "\n"
            "commands:\n");
    for (int i = 0; i < NCOMMANDS; i++)
        fprintf(out, "  %-10s %s\n", commands[i]->name, commands[i]->summary);
    fprintf(out,
            "\n"
            "Every command takes --help, --json (machine-readable output on stdout),\n"
            "--config FILE (options from a JSON object), -q and -v.\n"
            "\n"
            "exit codes:\n"
            "  0   success\n"
            "  1   runtime failure (I/O error, out of memory, internal error)\n"
            "  2   bad command line or config\n"
            "  3   input data malformed, too large or unsupported\n"
            "  4   input file or model not found (run scripts/setup for models)\n"
            "  5   GPU requested but not usable\n"
            "  130 interrupted\n"
            "Errors are one line on stderr: \"facefuse COMMAND: reason\".\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (!strcmp(name, "--help") || !strcmp(name, "-h") || !strcmp(name, "help")) {
        if (argc > 2 && strcmp(name, "help") == 0) {
            /* "facefuse help CMD" = "facefuse CMD --help" */
            for (int i = 0; i < NCOMMANDS; i++)
                if (!strcmp(argv[2], commands[i]->name)) {
                    char *args[] = {"--help", NULL};
                    return commands[i]->run(commands[i], 1, args);
                }
        }
        usage(stdout);
        return CLI_EXIT_OK;
    }
    if (!strcmp(name, "--version") || !strcmp(name, "-V")) name = "version";
    /* FFmpeg's own chatter (x264's statistics, demuxer warnings) goes to our log at
     * debug level: -v shows it; every failure that matters comes back as a status. */
    ffu_video_route_ffmpeg_log(1);
    cli_log_init();
    for (int i = 0; i < NCOMMANDS; i++)
        if (!strcmp(name, commands[i]->name)) return commands[i]->run(commands[i], argc - 2, argv + 2);
    fprintf(stderr, "facefuse: unknown command '%s' (see facefuse --help)\n", name);
    return CLI_EXIT_USAGE;
}
