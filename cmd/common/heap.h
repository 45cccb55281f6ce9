/* SPDX-License-Identifier: MIT */
/*
 * The command's heap, set up once at start (cmd_init() calls it): its
 * first 30 MiB are backed by 2 MiB pages where the kernel offers them,
 * so that a command on a small trace does not spend a sixth of its time
 * in page faults for buffers it fills once (heap.c says what it costs).
 * For commands, never the library: a program that links libtracekit
 * keeps its own malloc settings.
 */
#ifndef TK_CMD_HEAP_H
#define TK_CMD_HEAP_H

void cmd_heap_init(void);

#endif
