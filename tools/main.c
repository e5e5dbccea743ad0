// SPDX-License-Identifier: MIT
// nearby: the command-line tool. `nearby COMMAND [INPUT] [options]`.
//
// This file only dispatches: the commands live in cmd_*.c, the structures they run on in
// structures.c, option parsing in options.c and the shared helpers in cli.c. Exit status:
// 0 success, 1 out of memory / output error / library bug, 2 bad input or usage.
#include <nearby/nearby.h>

#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "options.h"

static const cliCommand *const commands[] = {
    &cli_cmd_pairs, &cli_cmd_within, &cli_cmd_knn,   &cli_cmd_join,
    &cli_cmd_demo,  &cli_cmd_render, &cli_cmd_boxes, &cli_cmd_overlaps,
};
#define COMMAND_COUNT (sizeof commands / sizeof commands[0])

static const cliCommand *find_command(const char *name)
{
    for (size_t k = 0; k < COMMAND_COUNT; k++)
        if (strcmp(commands[k]->name, name) == 0) return commands[k];
    return NULL;
}

static void print_version(void)
{
    uint32_t v = nb_version();
    printf("nearby %u.%u.%u\n", (unsigned)(v >> 16), (unsigned)((v >> 8) & 0xffu),
           (unsigned)(v & 0xffu));
}

static void help_main(void)
{
    printf("usage: nearby COMMAND [INPUT] [options]\n"
           "\n"
           "Exact neighbour queries on 2D and 3D points.\n"
           "\n"
           "commands:\n");
    char line[128];
    for (size_t k = 0; k < COMMAND_COUNT; k++) {
        snprintf(line, sizeof line, "%s %s", commands[k]->name, commands[k]->brief);
        printf("  %-37s %s\n", line, commands[k]->summary);
    }
    printf("  %-37s %s\n", "help [COMMAND]", "this text, or one command's options");
    printf("  %-37s %s\n", "--version", "print the version");
    printf("\n");
    cli_print_input_help();
    printf("Exit status: 0 success, 1 out of memory or output error, 2 bad input or usage.\n");
}

int main(int argc, char **argv)
{
    static char stdout_buffer[1 << 16];
    setvbuf(stdout, stdout_buffer, _IOFBF, sizeof stdout_buffer);
    if (argc < 2) {
        cli_fail("missing COMMAND (see nearby --help)");
        return CLI_EXIT_BAD_INPUT;
    }
    const char *name = argv[1];
    char q[200];
    nbio_quote(q, sizeof q, name, strlen(name));
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 ||
        (strcmp(name, "help") == 0 && argc == 2)) {
        help_main();
        return cli_finish_stdout();
    }
    if (strcmp(name, "--version") == 0) {
        if (argc > 2) {
            cli_fail("--version takes no arguments");
            return CLI_EXIT_BAD_INPUT;
        }
        print_version();
        return cli_finish_stdout();
    }
    if (strcmp(name, "help") == 0) {
        const cliCommand *c = find_command(argv[2]);
        if (c == NULL) {
            char names[256] = "";
            for (size_t k = 0; k < COMMAND_COUNT; k++) {
                if (k > 0) strncat(names, ", ", sizeof names - strlen(names) - 1);
                strncat(names, commands[k]->name, sizeof names - strlen(names) - 1);
            }
            nbio_quote(q, sizeof q, argv[2], strlen(argv[2]));
            cli_fail("help: unknown command %s (commands: %s)", q, names);
            return CLI_EXIT_BAD_INPUT;
        }
        if (argc > 3) {
            nbio_quote(q, sizeof q, argv[3], strlen(argv[3]));
            cli_fail("help: unexpected argument %s", q);
            return CLI_EXIT_BAD_INPUT;
        }
        c->help();
        return cli_finish_stdout();
    }
    const cliCommand *c = find_command(name);
    if (c == NULL) {
        cli_fail("unknown command %s (see nearby --help)", q);
        return CLI_EXIT_BAD_INPUT;
    }
    int status = c->run(argc - 2, argv + 2);
    if (status == CLI_EXIT_OK) return cli_finish_stdout();
    return status;
}
