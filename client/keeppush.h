/*
 * keeppush.h: `ferry push --keep-volumes SRC... host:DIR`: the sources
 * packed here, as `ferry pack` packs them (pack.h, the same loop), and
 * the volumes stored in DIR on the other side instead of unpacked
 * (engine/volume/volkeep.h), with their manifest and SHA256SUMS: what `ferry
 * pack SRC... DIR` run there would make.
 *
 * Nothing is staged on this disk: the packing runs in a thread of its
 * own whose volume sink turns the bytes into frames in a bounded queue,
 * which the connection's role drains as the link takes them. A re-run
 * resumes: volumes the agent holds are packed again here but not sent
 * when they come out the same (their SHA-256 is the one the agent read
 * back), so a cut costs the volume that was being sent.
 */
#ifndef FERRY_CLIENT_KEEPPUSH_H
#define FERRY_CLIENT_KEEPPUSH_H

#include "cli.h"

/* Runs the push cli describes (cli->keep_volumes set). Returns an exit
 * status (exitcode.h). */
int keeppush_main(const struct cli *cli);

#endif
